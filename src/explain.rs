//! `gatefix explain`: from an error message (or the last exception of a log) to the `raise`
//! and check sites of a site that can produce it. Python `raise`/`assert` statements and C/C++
//! check macros (`*CHECK*(cond, "...")`, `throw`) are read lexically; their message becomes a
//! template in which f-string fields, `.format` fields, `%`-conversions and non-literal
//! operands are placeholders, matched against the message (where `...` is a placeholder too).
//! What the sites mean at a target (gates, JIT generators, verdicts, patches) is put together by
//! `cli::explain` from the other stages; this module only finds and matches text.

use std::path::Path;

use memchr::memmem;

/// One piece of a message template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// A placeholder, with the expression that fills it when the source names one.
    Hole(String),
}

/// A `raise`, `assert` or check site whose message template was read.
#[derive(Debug, Clone)]
pub struct Site {
    /// Relative to the site root, `/`-separated.
    pub file: String,
    pub line: u32,
    /// The enclosing Python function (`def` name), when there is one.
    pub function: Option<String>,
    /// `raise`, `assert` or the macro name (`FLASHINFER_CHECK`, `throw`).
    pub kind: String,
    /// The statement's first line, trimmed (for display).
    pub source: String,
    /// A C/C++ check's condition (its first argument).
    pub condition: Option<String>,
    pub template: Vec<Piece>,
}

impl Site {
    /// The template as text, placeholders as `{expr}` (or `{…}`).
    pub fn template_text(&self) -> String {
        self.template
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Hole(e) if e.is_empty() => "{…}".to_string(),
                Piece::Hole(e) => format!("{{{e}}}"),
            })
            .collect()
    }

    fn literal_len(&self) -> usize {
        self.template
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.chars().count(),
                Piece::Hole(_) => 0,
            })
            .sum()
    }
}

/// A site whose template matches the message, with what each placeholder stood for (when the
/// message had no `...` of its own).
#[derive(Debug, Clone)]
pub struct Match {
    pub site: Site,
    pub captures: Vec<(String, String)>,
    /// Matched only as a part of the message (the message has more around it).
    pub partial: bool,
}

/// The exception type and message of the last exception in a log: the last `Name: message`
/// line whose name looks like an exception, after the last `Traceback` when there is one.
pub fn last_exception(log: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| {
            l.trim_start()
                .starts_with("Traceback (most recent call last)")
        })
        .unwrap_or(0);
    lines[start..]
        .iter()
        .rev()
        .find_map(|l| split_exception(l.trim()))
}

/// `RuntimeError: text` → (`RuntimeError`, `text`); `None` when the line does not start with
/// an exception name.
pub fn split_exception(line: &str) -> Option<(String, String)> {
    let (name, rest) = line.split_once(": ")?;
    let last = name.rsplit('.').next()?;
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && ["Error", "Exception", "Exit", "Warning", "Interrupt"]
            .iter()
            .any(|s| last.ends_with(s));
    is_name.then(|| (name.to_string(), rest.trim().to_string()))
}

/// Whitespace runs become one space; ends are trimmed, and so is one final `.`.
fn normalise(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.strip_suffix('.').unwrap_or(&joined).to_string()
}

/// The message as a pattern: `...` and `…` are placeholders.
fn message_pattern(message: &str) -> Vec<Tok> {
    let text = normalise(message).replace("...", "\u{2026}");
    let mut out = Vec::new();
    for c in text.chars() {
        if c == '\u{2026}' {
            out.push(Tok::Any);
        } else {
            out.push(Tok::Char(c));
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Char(char),
    Any,
}

fn template_pattern(template: &[Piece], anchored: bool) -> Vec<Tok> {
    let mut text = String::new();
    let mut holes = Vec::new();
    for piece in template {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Hole(_) => {
                holes.push(text.chars().count());
                text.push('\u{0}');
            }
        }
    }
    let text = normalise(&text);
    let mut out: Vec<Tok> = text
        .chars()
        .map(|c| if c == '\u{0}' { Tok::Any } else { Tok::Char(c) })
        .collect();
    if !anchored {
        out.insert(0, Tok::Any);
        out.push(Tok::Any);
    }
    out
}

/// Whether some string matches both patterns (`Any` matches any run, empty included) with
/// most of the message's own text matched by the template's text, not swallowed by its
/// placeholders: at least [`MIN_EXPLAINED`] of `b`'s characters meet a character of `a`.
fn intersects(a: &[Tok], b: &[Tok]) -> bool {
    // best[i][j]: the most char-to-char meetings with which a[..i] and b[..j] can match the
    // same string; None when they cannot.
    let (n, m) = (a.len(), b.len());
    let mut best: Vec<Vec<Option<usize>>> = vec![vec![None; m + 1]; n + 1];
    best[0][0] = Some(0);
    let raise = |cell: &mut Option<usize>, v: usize| {
        if cell.is_none_or(|c| c < v) {
            *cell = Some(v);
        }
    };
    for i in 0..=n {
        for j in 0..=m {
            let Some(here) = best[i][j] else {
                continue;
            };
            if i < n && a[i] == Tok::Any {
                raise(&mut best[i + 1][j], here); // the run ends
                if j < m {
                    raise(&mut best[i][j + 1], here); // it takes b's next char or run
                }
            }
            if j < m && b[j] == Tok::Any {
                raise(&mut best[i][j + 1], here);
                if i < n {
                    raise(&mut best[i + 1][j], here);
                }
            }
            if i < n
                && j < m
                && let (Tok::Char(x), Tok::Char(y)) = (a[i], b[j])
                && x == y
            {
                raise(&mut best[i + 1][j + 1], here + 1);
            }
        }
    }
    let own = b.iter().filter(|t| matches!(t, Tok::Char(_))).count();
    best[n][m].is_some_and(|met| met * 100 >= own * MIN_EXPLAINED)
}

/// The share of the message's characters (percent) that the template's own text must match.
const MIN_EXPLAINED: usize = 60;

/// What each placeholder of `template` stood for in `message` (a plain message, no `...`):
/// the shortest runs, left to right, that make the whole match.
fn captures(template: &[Piece], message: &str) -> Option<Vec<(String, String)>> {
    let names: Vec<String> = template
        .iter()
        .filter_map(|p| match p {
            Piece::Hole(e) => Some(e.clone()),
            Piece::Text(_) => None,
        })
        .collect();
    let pattern = template_pattern(template, true);
    let text: Vec<char> = normalise(message).chars().collect();
    let mut spans = Vec::new();
    if !capture_from(&pattern, &text, 0, 0, &mut spans) {
        return None;
    }
    Some(
        names
            .into_iter()
            .zip(spans)
            .map(|(name, (s, e))| (name, text[s..e].iter().collect()))
            .collect(),
    )
}

fn capture_from(
    pattern: &[Tok],
    text: &[char],
    p: usize,
    t: usize,
    spans: &mut Vec<(usize, usize)>,
) -> bool {
    if p == pattern.len() {
        return t == text.len();
    }
    match pattern[p] {
        Tok::Char(c) => {
            t < text.len() && text[t] == c && capture_from(pattern, text, p + 1, t + 1, spans)
        }
        Tok::Any => {
            for end in t..=text.len() {
                spans.push((t, end));
                if capture_from(pattern, text, p + 1, end, spans) {
                    return true;
                }
                spans.pop();
            }
            false
        }
    }
}

/// The longest run of letters in the message: every matching file contains it (placeholders
/// stand between words, not inside them, in any message worth matching).
fn anchor_word(message: &str) -> Option<String> {
    normalise(message)
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .max_by_key(|w| w.chars().count())
        .map(str::to_string)
}

/// File kinds searched: Python sources and the C/C++ sources and headers shipped for JIT.
fn searched(path: &str) -> Option<Lang> {
    let ext = path.rsplit('.').next()?;
    match ext {
        "py" => Some(Lang::Python),
        "h" | "hpp" | "hh" | "cuh" | "cu" | "cc" | "cpp" | "cxx" | "inl" => Some(Lang::Cpp),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Cpp,
}

/// Every raise/check site under `root` whose message matches `message`, best first (whole
/// matches before partial ones, longer literal text first).
pub fn find(root: &Path, message: &str) -> Vec<Match> {
    let Some(word) = anchor_word(message) else {
        return Vec::new();
    };
    let finder = memmem::Finder::new(word.as_bytes());
    let pattern = message_pattern(message);
    let plain = !pattern.contains(&Tok::Any);
    let mut sites = Vec::new();
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
    {
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        if relative.contains("__pycache__") {
            continue;
        }
        let Some(lang) = searched(&relative) else {
            continue;
        };
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if finder.find(&bytes).is_none() {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        sites.extend(read_sites(&relative, &text, lang));
    }
    let mut out = Vec::new();
    for partial in [false, true] {
        for site in &sites {
            // A partial match needs enough literal text to mean something.
            if partial && site.literal_len() < 12 {
                continue;
            }
            if intersects(&template_pattern(&site.template, !partial), &pattern) {
                let captures = if plain && !partial {
                    captures(&site.template, message).unwrap_or_default()
                } else {
                    Vec::new()
                };
                out.push(Match {
                    site: site.clone(),
                    captures,
                    partial,
                });
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out.sort_by(|a, b| {
        b.site
            .literal_len()
            .cmp(&a.site.literal_len())
            .then_with(|| (&a.site.file, a.site.line).cmp(&(&b.site.file, b.site.line)))
    });
    out
}

/// The raise/check sites of one file whose message has literal text.
fn read_sites(file: &str, text: &str, lang: Lang) -> Vec<Site> {
    let mut out = Vec::new();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    for (index, &start) in line_starts.iter().enumerate() {
        let end = line_starts.get(index + 1).copied().unwrap_or(text.len());
        let line = &text[start..end];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let found = match lang {
            Lang::Python => python_site(trimmed),
            Lang::Cpp => cpp_site(trimmed),
        };
        let Some((kind, offset)) = found else {
            continue;
        };
        let body = &text[start + indent + offset..];
        let statement = match lang {
            Lang::Python => python_statement(body),
            Lang::Cpp => cpp_statement(body),
        };
        let (template, condition) = match lang {
            Lang::Python => (python_template(&statement, kind == "assert"), None),
            Lang::Cpp => cpp_template(&statement),
        };
        if !template
            .iter()
            .any(|p| matches!(p, Piece::Text(t) if !t.trim().is_empty()))
        {
            continue;
        }
        let function = match lang {
            Lang::Python => enclosing_def(&line_starts[..index], text, indent),
            Lang::Cpp => None,
        };
        out.push(Site {
            file: file.to_string(),
            line: index as u32 + 1,
            function,
            kind,
            source: trimmed.trim_end().to_string(),
            condition,
            template,
        });
    }
    out
}

/// `raise X(...)` or `assert cond, msg`: the keyword, and where the rest starts.
fn python_site(line: &str) -> Option<(String, usize)> {
    for keyword in ["raise ", "assert "] {
        if line.starts_with(keyword) {
            return Some((keyword.trim().to_string(), keyword.len()));
        }
    }
    None
}

/// A check macro (`TORCH_CHECK(`, `FLASHINFER_CHECK(`, ...) or `throw`.
fn cpp_site(line: &str) -> Option<(String, usize)> {
    if let Some(rest) = line.strip_prefix("throw ") {
        return Some(("throw".to_string(), line.len() - rest.len()));
    }
    let name: String = line
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let after = line[name.len()..].trim_start();
    (name.contains("CHECK") && after.starts_with('('))
        .then(|| (name.clone(), line.len() - after.len() + 1))
}

/// The Python statement from `body` on: until a newline outside brackets and strings.
fn python_statement(body: &str) -> String {
    scan_statement(body, true)
}

/// A C/C++ macro call's arguments from `body` on: until the call's closing `)` or a `;`.
fn cpp_statement(body: &str) -> String {
    scan_statement(body, false)
}

fn scan_statement(body: &str, python: bool) -> String {
    let mut depth: i32 = 0;
    let mut quote: Option<(char, bool)> = None; // (quote char, triple)
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let limit = chars.len().min(4000);
    while i < limit {
        let c = chars[i];
        if let Some((q, triple)) = quote {
            if c == '\\' {
                i += 2;
                continue;
            }
            if c == q {
                if !triple {
                    quote = None;
                } else if chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q) {
                    quote = None;
                    i += 3;
                    continue;
                }
            }
            if c == '\n' && !triple && !python {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            '"' | '\'' => {
                let triple = python && chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
                quote = Some((c, triple));
                if triple {
                    i += 3;
                    continue;
                }
            }
            '#' if python => {
                while i < limit && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if !python && depth < 0 {
                    break;
                }
            }
            ';' if !python && depth <= 0 => break,
            '\n' if python && depth <= 0 => {
                let before: String = chars[..i].iter().collect();
                if !before.trim_end().ends_with('\\') {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars[..i.min(chars.len())].iter().collect()
}

/// A string literal of the statement: its decoded text and whether it is formatted.
struct Literal {
    start: usize,
    end: usize,
    prefix: String,
    body: String,
}

fn literals(statement: &str) -> Vec<Literal> {
    let chars: Vec<char> = statement.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            let mut p = i;
            while p > 0 && chars[p - 1].is_ascii_alphabetic() && "fFrRbBuU".contains(chars[p - 1]) {
                p -= 1;
            }
            let prefix: String = chars[p..i].iter().collect::<String>().to_ascii_lowercase();
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let open = if triple { 3 } else { 1 };
            let mut j = i + open;
            let mut body = String::new();
            while j < chars.len() {
                if chars[j] == '\\' && j + 1 < chars.len() {
                    body.push(chars[j]);
                    body.push(chars[j + 1]);
                    j += 2;
                    continue;
                }
                let closes = if triple {
                    chars[j] == c && chars.get(j + 1) == Some(&c) && chars.get(j + 2) == Some(&c)
                } else {
                    chars[j] == c
                };
                if closes {
                    break;
                }
                body.push(chars[j]);
                j += 1;
            }
            let end = (j + open).min(chars.len());
            out.push(Literal {
                start: p,
                end,
                prefix,
                body,
            });
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

fn unescape(body: &str, raw: bool) -> String {
    if raw {
        return body.to_string();
    }
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') | Some('t') | Some('\n') => out.push(' '),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Splits a literal's text into text and placeholders: `{...}` fields when `braces`,
/// `%s`-style conversions when `percent`.
fn pieces_of(text: &str, braces: bool, percent: bool) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush = |current: &mut String, out: &mut Vec<Piece>| {
        if !current.is_empty() {
            out.push(Piece::Text(std::mem::take(current)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if braces && c == '{' {
            if chars.get(i + 1) == Some(&'{') {
                current.push('{');
                i += 2;
                continue;
            }
            let mut depth = 1;
            let mut j = i + 1;
            while j < chars.len() && depth > 0 {
                match chars[j] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            let inner: String = chars[i + 1..j.saturating_sub(1).max(i + 1)]
                .iter()
                .collect();
            let expr = inner
                .split(['!', ':', '='])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            flush(&mut current, &mut out);
            out.push(Piece::Hole(expr));
            i = j;
            continue;
        }
        if braces && c == '}' && chars.get(i + 1) == Some(&'}') {
            current.push('}');
            i += 2;
            continue;
        }
        if percent && c == '%' {
            if chars.get(i + 1) == Some(&'%') {
                current.push('%');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            let mut name = String::new();
            if chars.get(j) == Some(&'(') {
                while j < chars.len() && chars[j] != ')' {
                    if chars[j] != '(' {
                        name.push(chars[j]);
                    }
                    j += 1;
                }
                j += 1;
            }
            while j < chars.len() && "-+ #0123456789.lhz".contains(chars[j]) {
                j += 1;
            }
            if j < chars.len() && "sdirfgeExXuc".contains(chars[j]) {
                flush(&mut current, &mut out);
                out.push(Piece::Hole(name));
                i = j + 1;
                continue;
            }
        }
        current.push(c);
        i += 1;
    }
    flush(&mut current, &mut out);
    out
}

/// The message template of a `raise`/`assert` statement (after the `raise `/`assert `).
fn python_template(statement: &str, assert: bool) -> Vec<Piece> {
    let lits = literals(statement);
    // assert cond, msg: only the message part counts.
    let from = if assert {
        top_level_comma(statement).unwrap_or(statement.chars().count())
    } else {
        0
    };
    let lits: Vec<&Literal> = lits.iter().filter(|l| l.start >= from).collect();
    let chars: Vec<char> = statement.chars().collect();
    let mut out = Vec::new();
    let Some(first) = lits.first() else {
        return out;
    };
    // Code before the first literal inside the call (`raise E(name + "...")`) is a hole.
    let open = if assert {
        from + 1
    } else {
        chars.iter().position(|&c| c == '(').map_or(0, |p| p + 1)
    };
    let lead: String = chars[open.min(first.start)..first.start].iter().collect();
    if !lead.trim().is_empty() && !lead.trim().starts_with('(') {
        out.push(Piece::Hole(String::new()));
    }
    for (n, lit) in lits.iter().enumerate() {
        let after: String = match lits.get(n + 1) {
            Some(next) => chars[lit.end..next.start].iter().collect(),
            None => chars[lit.end..].iter().collect(),
        };
        let after = after.trim();
        let formatted = lit.prefix.contains('f');
        let dot_format = after.starts_with(".format");
        let percent = after.starts_with('%');
        let raw = lit.prefix.contains('r');
        out.extend(pieces_of(
            &unescape(&lit.body, raw),
            formatted || dot_format,
            percent,
        ));
        let joins_next = lits.get(n + 1).is_some() && after.is_empty();
        let last = lits.get(n + 1).is_none();
        let tail = after.trim_start_matches(')').trim();
        if !joins_next
            && (!last
                || (!tail.is_empty() && !tail.starts_with("from ") && !dot_format && !percent))
        {
            out.push(Piece::Hole(String::new()));
        }
    }
    merge_holes(out)
}

/// A C/C++ check's template: the literals of its arguments after the condition (adjacent ones
/// join; other arguments are holes), and the condition.
fn cpp_template(statement: &str) -> (Vec<Piece>, Option<String>) {
    let comma = top_level_comma(statement);
    let chars: Vec<char> = statement.chars().collect();
    let condition = comma.map(|c| {
        chars[..c]
            .iter()
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    });
    let from = comma.unwrap_or(0);
    let lits: Vec<Literal> = literals(statement)
        .into_iter()
        .filter(|l| l.start >= from)
        .collect();
    let mut out = Vec::new();
    for (n, lit) in lits.iter().enumerate() {
        out.extend(pieces_of(&unescape(&lit.body, false), false, true));
        let after: String = match lits.get(n + 1) {
            Some(next) => chars[lit.end..next.start].iter().collect(),
            None => chars[lit.end..].iter().collect(),
        };
        let after = after.trim().trim_end_matches(')').trim();
        if !after.is_empty() {
            out.push(Piece::Hole(String::new()));
        }
    }
    (merge_holes(out), condition)
}

fn merge_holes(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (&piece, out.last_mut()) {
            (Piece::Hole(_), Some(Piece::Hole(_))) => {}
            (Piece::Text(t), Some(Piece::Text(prev))) => prev.push_str(t),
            _ => out.push(piece),
        }
    }
    out
}

/// The character index of the first comma outside brackets and strings.
fn top_level_comma(statement: &str) -> Option<usize> {
    let lits = literals(statement);
    let mut depth = 0i32;
    for (i, c) in statement.chars().enumerate() {
        if lits.iter().any(|l| i >= l.start && i < l.end) {
            continue;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// The name of the nearest `def` above, indented less than the statement.
fn enclosing_def(line_starts: &[usize], text: &str, indent: usize) -> Option<String> {
    for &start in line_starts.iter().rev() {
        let line = text[start..].lines().next().unwrap_or_default();
        let trimmed = line.trim_start();
        let this = line.len() - trimmed.len();
        if trimmed.is_empty() || this >= indent {
            continue;
        }
        let rest = trimmed
            .strip_prefix("async def ")
            .or_else(|| trimmed.strip_prefix("def "));
        if let Some(rest) = rest {
            return Some(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
        // A top-level statement (not a signature's closing `) -> T:` or a decorator) ends
        // the search: the site is at module level.
        if this == 0
            && trimmed.starts_with(|c: char| c.is_alphabetic())
            && !trimmed.starts_with("class ")
        {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(source: &str) -> String {
        let sites = read_sites("m.py", source, Lang::Python);
        assert_eq!(sites.len(), 1, "{source}");
        sites[0].template_text()
    }

    #[test]
    fn python_templates_mark_their_placeholders() {
        assert_eq!(
            template("raise RuntimeError(\n    f\"No archs for {versions}.\"\n)\n"),
            "No archs for {versions}."
        );
        assert_eq!(
            template("raise ValueError(\"Unsupported architecture: {}\".format(x))\n"),
            "Unsupported architecture: {…}"
        );
        assert_eq!(template("raise ValueError(\"a %s b\" % x)\n"), "a {…} b");
        assert_eq!(
            template("raise ValueError(\"part one \"\n  \"part two\")\n"),
            "part one part two"
        );
        assert_eq!(template("raise ValueError(\"x: \" + str(y))\n"), "x: {…}");
        assert_eq!(template("assert x == \"auto\", f\"bad {x}\"\n"), "bad {x}");
        assert_eq!(
            template("raise E(f\"{{literal}} {a!r:>4}\")\n"),
            "{literal} {a}"
        );
    }

    #[test]
    fn cpp_checks_read_condition_and_message() {
        let sites = read_sites(
            "k.cuh",
            "  FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, \"Unsupported architecture\");\n\
             TORCH_CHECK(a.dim() == 2, \"expected 2D, got \", a.dim(), \" dims\");\n",
            Lang::Cpp,
        );
        assert_eq!(sites.len(), 2);
        assert_eq!(sites[0].template_text(), "Unsupported architecture");
        assert_eq!(
            sites[0].condition.as_deref(),
            Some("mSM == kSM_100 || mSM == kSM_103")
        );
        assert_eq!(sites[1].template_text(), "expected 2D, got {…} dims");
    }

    #[test]
    fn matching_with_placeholders_on_both_sides() {
        let t = vec![
            Piece::Text("No archs for ".into()),
            Piece::Hole("v".into()),
            Piece::Text(".".into()),
        ];
        let yes = |m: &str| intersects(&template_pattern(&t, true), &message_pattern(m));
        assert!(yes("No archs for [9, 10]"));
        assert!(yes("No archs for [9, 10]."));
        assert!(yes("... archs for [9]"));
        assert!(!yes("No kernels for [9, 10]"));
        // A placeholder does not stand for the message's own words.
        let loose = vec![
            Piece::Text("Setup failed".into()),
            Piece::Hole(String::new()),
        ];
        let loose_yes = |m: &str| intersects(&template_pattern(&loose, true), &message_pattern(m));
        assert!(!loose_yes("... is only supported on SM90, SM100 GPUs"));
        assert!(loose_yes("Setup failed: no GPU"));
        assert_eq!(
            captures(&t, "No archs for [9, 10]").unwrap(),
            vec![("v".to_string(), "[9, 10]".to_string())]
        );
    }

    #[test]
    fn the_last_exception_of_a_log() {
        let log = "INFO start\nTraceback (most recent call last):\n  File \"a.py\", line 1\n\
                   ValueError: first\nTraceback (most recent call last):\n  File \"b.py\"\n\
                   RuntimeError: No archs for [9, 10].\nINFO: shutting down\n";
        assert_eq!(
            last_exception(log),
            Some(("RuntimeError".into(), "No archs for [9, 10].".into()))
        );
        assert_eq!(split_exception("INFO: x"), None);
        assert_eq!(
            split_exception("torch.AcceleratorError: CUDA error"),
            Some(("torch.AcceleratorError".into(), "CUDA error".into()))
        );
    }

    #[test]
    fn the_enclosing_function_is_named() {
        let sites = read_sites(
            "m.py",
            "class C:\n    def get(self, v):\n        if not v:\n            raise E(f\"none for {v}\")\n",
            Lang::Python,
        );
        assert_eq!(sites[0].function.as_deref(), Some("get"));
        assert_eq!(sites[0].line, 4);
        let sites = read_sites(
            "m.py",
            "def run(\n    a,\n) -> int:\n    if a:\n        raise E(\"no a\")\nraise E(\"top\")\n",
            Lang::Python,
        );
        assert_eq!(sites[0].function.as_deref(), Some("run"));
        assert_eq!(sites[1].function, None);
    }
}
