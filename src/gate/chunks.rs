//! Splitting a Python file into its top-level statements with a small lexer, so that only the
//! statements that can matter are handed to tree-sitter (through included ranges, which keep
//! every position file-absolute). Parsing is the scan's main cost, and big generated modules
//! mention an arch token in a few places only.

use std::collections::HashSet;

use super::limits::{
    MAX_HELPER_BODY_BYTES, MAX_PLAIN_ASSIGN_BYTES, SPLIT_BLOCK_BYTES, TOKENLESS_HELPER_BYTES,
};
use super::tokens::Tokens;
use crate::words::{ascii_word_runs, is_word_byte, word_runs, words_in};

/// Files smaller than this are parsed whole: chunking would not pay for itself.
pub const CHUNK_MIN_FILE_BYTES: usize = 512;
/// Statements without a token but smaller than this are kept: imports, constants and flags
/// that resolution reads (`_is_cuda = is_cuda()`).
const SMALL_STATEMENT_BYTES: usize = 1_024;
/// `def` and `class` blocks without a token in their code are split from this size on.
const SPLIT_PLAIN_BLOCK_BYTES: usize = 1_024;
const SMALL_LOCAL_BYTES: usize = 300;

/// Byte ranges of the top-level statements, in order, covering the file.
pub fn top_level_statements(src: &[u8]) -> Vec<(usize, usize)> {
    let lines = statement_lines(lex_lines(src, 0, src.len()), 0);
    statements_at(lines, 0, src.len())
}

/// The lines where a statement starts at exactly `indent` spaces, as (line start, the line
/// past its indentation).
fn statement_lines<'s>(
    lines: impl Iterator<Item = Line<'s>>,
    indent: usize,
) -> impl Iterator<Item = (usize, &'s [u8])> {
    lines
        .filter(move |line| line.boundary && starts_statement(line.text, indent))
        .map(move |line| (line.start, &line.text[indent..]))
}

/// A line of source, and whether a statement can start at it (the lexer is outside brackets,
/// strings and continuations there).
#[derive(Clone, Copy)]
struct Line<'s> {
    start: usize,
    text: &'s [u8],
    boundary: bool,
}

/// The lines of `src[from..to)`, lexed as they are read (for walks that stop early). `from`
/// must be at a statement boundary.
fn lex_lines(src: &[u8], from: usize, to: usize) -> impl Iterator<Item = Line<'_>> {
    let mut lexer = Lexer::default();
    let mut at = from;
    std::iter::from_fn(move || {
        if at >= to {
            return None;
        }
        let end = memchr::memchr(b'\n', &src[at..to]).map_or(to, |i| at + i + 1);
        let line = Line {
            start: at,
            text: &src[at..end],
            boundary: lexer.at_statement_boundary(),
        };
        lexer.feed(line.text);
        at = end;
        Some(line)
    })
}

/// A clause of a split compound statement: its header, and its body statements.
type Clause = ((usize, usize), Vec<(usize, usize)>);

/// One lexing pass over a whole file: where each line starts and whether a statement can
/// start there. Chunking reads it at every nesting level, where lexing each big block again
/// cost a fifth of the chunker's time. A statement boundary leaves the lexer in its initial
/// state, so a block's lines read the same here as lexed from the block's first line.
struct FileLines<'s> {
    src: &'s [u8],
    /// Line start offsets, then the file's length.
    starts: Vec<usize>,
    /// Per line: whether a statement can start there.
    boundary: Vec<bool>,
    /// Per line: the indentation of the statement that starts there, or `NO_STATEMENT` (no
    /// boundary, a blank or comment line, or a tab after the spaces): what splitting at every
    /// nesting level asks of each line, without looking at its bytes again.
    indents: Vec<u32>,
}

const NO_STATEMENT: u32 = u32::MAX;

impl<'s> FileLines<'s> {
    fn new(src: &'s [u8]) -> FileLines<'s> {
        let capacity = src.len() / 32 + 2;
        let (mut starts, mut boundary) =
            (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
        let mut indents = Vec::with_capacity(capacity);
        for line in lex_lines(src, 0, src.len()) {
            starts.push(line.start);
            boundary.push(line.boundary);
            let spaces = line.text.iter().take_while(|c| **c == b' ').count();
            let starts_here = line.boundary && starts_statement(line.text, spaces);
            indents.push(match u32::try_from(spaces) {
                Ok(spaces) if starts_here => spaces,
                _ => NO_STATEMENT,
            });
        }
        starts.push(src.len());
        FileLines {
            src,
            starts,
            boundary,
            indents,
        }
    }

    /// `statement_lines` over `[from, to)` (`from` a line start), read from the table.
    fn statement_lines(
        &self,
        from: usize,
        to: usize,
        indent: usize,
    ) -> impl Iterator<Item = (usize, &'s [u8])> + '_ {
        let first = self.starts.partition_point(|&s| s < from);
        let last = self
            .starts
            .partition_point(|&s| s < to)
            .min(self.indents.len());
        let src = self.src;
        (first..last)
            .filter(move |&i| self.indents[i] as usize == indent)
            .map(move |i| {
                (
                    self.starts[i],
                    &src[self.starts[i] + indent..self.starts[i + 1]],
                )
            })
    }

    /// The lines from the one holding `from` up to `to` (a line start or the file's end).
    fn lines(&self, from: usize, to: usize) -> impl Iterator<Item = Line<'s>> + '_ {
        let first = self
            .starts
            .partition_point(|&s| s <= from)
            .saturating_sub(1);
        (first..self.boundary.len())
            .take_while(move |&i| self.starts[i] < to)
            .map(move |i| {
                let (start, end) = (self.starts[i], self.starts[i + 1].min(to));
                Line {
                    start,
                    text: &self.src[start..end],
                    boundary: self.boundary[i],
                }
            })
    }

    /// An `if`, `for`, `while` or `with` statement split into its clauses (`if`, each `elif`,
    /// `else`), each a header and its body statements; `None` for other statements and for
    /// clauses on one line. Dropping whole trailing clauses, or body statements but one,
    /// leaves valid Python; `try` is never split (its `except` clauses cannot go).
    fn split_compound(&self, (start, end): (usize, usize), indent: usize) -> Option<Vec<Clause>> {
        let code = self.src[start + indent..].trim_ascii_start();
        let code = code.strip_prefix(b"async ").unwrap_or(code);
        if ![&b"if "[..], b"for ", b"while ", b"with "]
            .iter()
            .any(|keyword| code.starts_with(keyword))
        {
            return None;
        }
        let mut clause_starts = vec![start];
        clause_starts.extend(
            self.statement_lines(start, end, indent)
                .filter(|&(line, code)| line > start && continues_compound(code))
                .map(|(line, _)| line),
        );
        let mut clauses = Vec::with_capacity(clause_starts.len());
        for (i, &from) in clause_starts.iter().enumerate() {
            let to = clause_starts.get(i + 1).copied().unwrap_or(end);
            let body_start = first_body_line(self.lines(from, to), from, indent)?;
            let body_indent = self.src[body_start..]
                .iter()
                .take_while(|c| **c == b' ')
                .count();
            let body = statements_at(
                self.statement_lines(body_start, to, body_indent),
                body_start,
                to,
            );
            clauses.push(((from, body_start), body));
        }
        Some(clauses)
    }

    /// `split_definition`, reading this table.
    fn split_definition(
        &self,
        range: (usize, usize),
        indent: usize,
    ) -> Option<Vec<(usize, usize)>> {
        split_definition_with(
            self.src,
            range,
            indent,
            |from, to| self.lines(from, to),
            |from, to, indent| statements_at(self.statement_lines(from, to, indent), from, to),
        )
    }
}

/// The statements inside `[from, to)`, given the lines where one starts at the indentation
/// wanted (`statement_lines`): each runs to the next, past `else:` clauses and decorated
/// definitions.
fn statements_at<'s>(
    lines: impl Iterator<Item = (usize, &'s [u8])>,
    from: usize,
    to: usize,
) -> Vec<(usize, usize)> {
    let mut starts = Vec::new();
    let mut after_decorator = false;
    for (start, code) in lines {
        if !after_decorator && !continues_compound(code) {
            starts.push(start);
        }
        after_decorator = code.first() == Some(&b'@');
    }
    if starts.first() != Some(&from) {
        starts.insert(0, from);
    }
    let mut ranges = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(to);
        if end > start {
            ranges.push((start, end));
        }
    }
    ranges
}

/// Whether a definition is big enough to be split whatever its tokens (`Splitter::flatten`).
/// Decorators and the blank and comment lines that trail the block do not count: a small
/// function is kept whole (and can be inferred as a helper without the whole module).
pub fn is_big_block(src: &[u8], (start, end): (usize, usize)) -> bool {
    end - start >= SPLIT_BLOCK_BYTES && own_bytes(src, (start, end)) >= SPLIT_BLOCK_BYTES
}

/// A `def` or `class` of any size split into its header and its body statements (`None` for
/// other statements and one-line definitions).
pub fn split_definition(
    src: &[u8],
    range: (usize, usize),
    indent: usize,
) -> Option<Vec<(usize, usize)>> {
    split_definition_with(
        src,
        range,
        indent,
        |from, to| lex_lines(src, from, to),
        |from, to, indent| {
            statements_at(statement_lines(lex_lines(src, from, to), indent), from, to)
        },
    )
}

/// `split_definition`, reading lines from `lines(from, to)` and the statements at an
/// indentation from `statements(from, to, indent)`.
fn split_definition_with<'s, I: Iterator<Item = Line<'s>>>(
    src: &[u8],
    (start, end): (usize, usize),
    indent: usize,
    lines: impl Fn(usize, usize) -> I,
    statements: impl Fn(usize, usize, usize) -> Vec<(usize, usize)>,
) -> Option<Vec<(usize, usize)>> {
    // Past decorators, which may span lines.
    definition_name(src, (start, end))?;
    let body_start = first_body_line(lines(start, end), start, indent)?;
    let body_indent = src[body_start..].iter().take_while(|c| **c == b' ').count();
    let mut parts = vec![(start, body_start)];
    parts.extend(statements(body_start, end, body_indent));
    Some(parts)
}

/// The names a file's top-level statements define or assign, read from its text once: the
/// resolver asks of a module's names by the thousand (whether `x` is assigned at top level,
/// whether `f` is a function there), each time it cannot find one in what it parsed.
#[derive(Debug, Default)]
pub struct TopLevelNames {
    /// Functions defined by a top-level `def` (decorated or not): the whole module's lowering
    /// would index a function of that name.
    pub functions: std::collections::HashSet<String>,
    pub classes: std::collections::HashSet<String>,
    /// Names a top-level statement assigns (`x = ...`, `x: T = ...`, `x: T`), as
    /// `has_top_level_assignment` reads them.
    pub assigned: std::collections::HashSet<String>,
}

impl TopLevelNames {
    pub fn of(src: &[u8]) -> TopLevelNames {
        let mut names = TopLevelNames::default();
        for range in top_level_statements(src) {
            match definition_name(src, range) {
                Some((name, Definition::Function)) => {
                    names.functions.insert(name.to_string());
                }
                Some((name, Definition::Class)) => {
                    names.classes.insert(name.to_string());
                }
                None => {}
            }
            // `has_top_level_assignment` asks whether the code starts with the name and then
            // `=` or `:`: for an identifier, that is the statement's leading identifier.
            let code = past_leading_comments(&src[range.0..range.1]);
            let len = code.iter().take_while(|&&b| is_word_byte(b)).count();
            if len > 0 && assigns_after(&code[len..]) {
                names
                    .assigned
                    .insert(String::from_utf8_lossy(&code[..len]).into_owned());
            }
        }
        names
    }

    /// `has_top_level_assignment` of the text these names were read from.
    pub fn assigns(&self, src: impl FnOnce() -> Option<Vec<u8>>, name: &str) -> bool {
        if !name.is_empty() && name.bytes().all(is_word_byte) {
            return self.assigned.contains(name);
        }
        src().is_some_and(|src| has_top_level_assignment(&src, name))
    }
}

/// Whether what follows a name assigns it: `= ...` (not `==`) or `: T`.
fn assigns_after(rest: &[u8]) -> bool {
    let rest = rest.trim_ascii_start();
    (rest.starts_with(b"=") && !rest.starts_with(b"==")) || rest.starts_with(b":")
}

/// What the text may define as `name`, anywhere in the file (a `def` or `class` keyword, then
/// blanks, then the name as a whole word): a necessary condition for a parse to find the
/// definition, read without parsing, so a module is parsed whole only when it may tell.
pub fn may_define(src: &[u8], name: &str) -> MayDefine {
    let mut found = MayDefine::default();
    if name.is_empty() {
        return found;
    }
    for at in memchr::memmem::find_iter(src, name.as_bytes()) {
        let end = at + name.len();
        if src.get(end).is_some_and(|&b| is_word_byte(b)) || (at > 0 && is_word_byte(src[at - 1])) {
            continue;
        }
        found.mentioned = true;
        let before = &src[..at];
        let keyword_end = before
            .iter()
            .rposition(|&b| b != b' ' && b != b'\t')
            .map_or(0, |i| i + 1);
        if keyword_end == at {
            continue;
        }
        let keyword = &before[..keyword_end];
        let keyword_start = keyword
            .iter()
            .rposition(|&b| !is_word_byte(b))
            .map_or(0, |i| i + 1);
        match &keyword[keyword_start..] {
            b"def" => found.function = true,
            b"class" => found.class = true,
            _ => {}
        }
    }
    found
}

/// See [`may_define`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MayDefine {
    /// The name occurs as a whole word: without it, no statement binds or imports it.
    pub mentioned: bool,
    pub function: bool,
    pub class: bool,
}

/// Whether a top-level statement of the file assigns `name` (`NAME = ...`, `NAME: T = ...`):
/// the chunking keeps a binding only for the readers in its own file, so a constant another
/// module imports may be missing from the scan's partial lowering.
pub fn has_top_level_assignment(src: &[u8], name: &str) -> bool {
    if memchr::memmem::find(src, name.as_bytes()).is_none() {
        return false;
    }
    top_level_statements(src).into_iter().any(|(start, end)| {
        let code = past_leading_comments(&src[start..end]);
        code.strip_prefix(name.as_bytes())
            .is_some_and(assigns_after)
    })
}

/// What a top-level statement defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Definition {
    Function,
    Class,
}

/// The name a `def` or `class` statement defines (`def f(`, `async def f[T](`, `class C`), from its first
/// line of code past decorators, comments and blank lines; `None` for other statements.
pub fn definition_name(src: &[u8], (start, end): (usize, usize)) -> Option<(&str, Definition)> {
    let mut lexer = Lexer::default();
    let mut offset = start;
    while offset < end {
        let line_end = memchr::memchr(b'\n', &src[offset..end]).map_or(end, |i| offset + i + 1);
        let line = &src[offset..line_end];
        let code = line.trim_ascii_start();
        let skip = code.is_empty() || code.starts_with(b"@") || code.starts_with(b"#");
        if lexer.at_statement_boundary() && !skip {
            let header = code.strip_prefix(b"async ").unwrap_or(code);
            let (rest, kind) = match header.strip_prefix(b"def ") {
                Some(rest) => (rest, Definition::Function),
                None => (header.strip_prefix(b"class ")?, Definition::Class),
            };
            let rest = rest.trim_ascii_start();
            let len = rest
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c >= 0x80)
                .count();
            let after = rest[len..].trim_ascii_start().first();
            let well_formed = match kind {
                Definition::Function => matches!(after, Some(b'(' | b'[')),
                Definition::Class => matches!(after, Some(b'(' | b'[' | b':')),
            };
            let name = std::str::from_utf8(&rest[..len]).ok()?;
            return (len > 0 && well_formed).then_some((name, kind));
        }
        lexer.feed(line);
        offset = line_end;
    }
    None
}

/// A lower bound on the size of the definition starting at `start` (its `def` keyword, at
/// column `indent`), as a whole parse would measure it: from the keyword to the first code
/// character of its last line. A partial parse ends a split definition at its last parsed
/// statement, which can make a big function look small. Also returns where the block ends
/// (the definition lies inside `start..end`).
pub fn definition_size_lower_bound(src: &[u8], start: usize, indent: usize) -> (usize, usize) {
    definition_extent(lex_lines(src, start, src.len()), start, indent, src.len())
}

/// `definition_size_lower_bound` over the lines from the one holding `start` (the keyword
/// may be mid-line: only whitespace precedes it) up to `to`.
fn definition_extent<'s>(
    lines: impl Iterator<Item = Line<'s>>,
    start: usize,
    indent: usize,
    to: usize,
) -> (usize, usize) {
    let mut last_code = start;
    for line in lines {
        let spaces = line
            .text
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
        let code = line.text.get(spaces).copied();
        let is_code = code.is_some_and(|c| c != b'#' && c != b'\n' && c != b'\r');
        if line.start > start && line.boundary && is_code && spaces <= indent {
            return (last_code.saturating_sub(start), line.start);
        }
        if is_code {
            last_code = line.start + spaces + 1;
        }
    }
    (last_code.saturating_sub(start), to)
}

/// The size of a block from its `def`/`class` keyword to the end of its last code line:
/// without its decorators and the blank and comment lines after it.
fn own_bytes(src: &[u8], (start, end): (usize, usize)) -> usize {
    let mut from = start;
    let mut lexer = Lexer::default();
    while from < end {
        let line_end = memchr::memchr(b'\n', &src[from..end]).map_or(end, |i| from + i + 1);
        let line = &src[from..line_end];
        let code = line.trim_ascii_start();
        if lexer.at_statement_boundary() && !code.is_empty() && code[0] != b'@' && code[0] != b'#' {
            from += line.len() - code.len();
            break;
        }
        lexer.feed(line);
        from = line_end;
    }
    let mut to = end;
    while to > from {
        let line_start = memchr::memrchr(b'\n', &src[from..to - 1]).map_or(from, |i| from + i + 1);
        let code = src[line_start..to].trim_ascii();
        if !code.is_empty() && code[0] != b'#' {
            to = line_start + src[line_start..to].trim_ascii_end().len();
            break;
        }
        to = line_start;
    }
    to.saturating_sub(from)
}

/// The first code line indented deeper than the header (whose keyword is at `start`, maybe
/// mid-line after whitespace), after the header's own lines; `None` for a one-line definition
/// or a tab-indented body.
fn first_body_line<'s>(
    lines: impl Iterator<Item = Line<'s>>,
    start: usize,
    indent: usize,
) -> Option<usize> {
    for line in lines {
        let spaces = line.text.iter().take_while(|c| **c == b' ').count();
        let code = line.text.get(spaces).copied();
        let is_code = code.is_some_and(|c| c != b'#' && c != b'\n' && c != b'\r');
        if line.boundary && line.start > start && spaces > indent && is_code {
            return Some(line.start);
        }
        if is_code && spaces > indent && code == Some(b'\t') {
            return None;
        }
    }
    None
}

/// One statement, or the header of a split block, with its place in the nesting.
struct Piece {
    range: (usize, usize),
    depth: usize,
    /// The header this piece is under: its block's, or for an `elif`/`else` clause, the
    /// `if` it continues (so that keeping the clause keeps the `if`).
    parent: Option<usize>,
    kind: PieceKind,
    /// The header of the function or class the piece is in (locals are shared within it).
    scope: Option<usize>,
    /// Whether the piece has a token in its code (`piece_has_token`).
    has_token: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PieceKind {
    Statement,
    /// The header of a split `def` or `class`, decorators included.
    Definition,
    /// The header of a clause of a split `if`, `for`, `while` or `with`: code that runs, read
    /// like a statement.
    Clause,
}

impl Piece {
    fn is_code(&self) -> bool {
        self.kind != PieceKind::Definition
    }

    /// Whether a name in the piece is read when it runs: not in a definition's header, whose
    /// body is judged apart, nor in a docstring. Lexes the piece: ask only when a name is in it.
    /// Naming an arch-dependent name makes such a piece matter, a plain call statement too
    /// (`self._set_dtype(major, q)`): its argument may feed the callee's parameter the device's
    /// value (`feed`), which the lowering can only see if the call is parsed.
    fn reads_names(&self, src: &[u8]) -> bool {
        self.is_code()
            && !(self.kind == PieceKind::Statement
                && is_bare_string(&src[self.range.0..self.range.1]))
    }
}

/// What splitting a file into pieces reads: its lines, and where its tokens are.
struct Splitter<'s> {
    lines: FileLines<'s>,
    /// Where each token occurrence starts, in order: one search over the file, rather than one
    /// per piece.
    token_starts: TokenStarts,
}

/// Where a statement being flattened sits.
#[derive(Clone, Copy)]
struct Place {
    depth: usize,
    parent: Option<usize>,
    scope: Option<usize>,
    /// Inside a function body (where compound statements may be split too).
    in_function: bool,
}

impl<'s> Splitter<'s> {
    fn new(src: &'s [u8], token_starts: TokenStarts) -> Splitter<'s> {
        Splitter {
            lines: FileLines::new(src),
            token_starts,
        }
    }

    fn has_token(&self, (start, end): (usize, usize)) -> bool {
        piece_has_token(self.lines.src, (start, end), &self.token_starts)
    }

    /// Adds a piece; `has_token` when already known.
    fn push(
        &self,
        out: &mut Vec<Piece>,
        (range, kind): ((usize, usize), PieceKind),
        place: Place,
        has_token: Option<bool>,
    ) -> usize {
        out.push(Piece {
            range,
            depth: place.depth,
            parent: place.parent,
            kind,
            scope: place.scope,
            has_token: has_token.unwrap_or_else(|| self.has_token(range)),
        });
        out.len() - 1
    }

    /// Flattens a statement into pieces, splitting a `def`/`class` block when it is big
    /// (`is_big_block`), a class from `SPLIT_PLAIN_BLOCK_BYTES` on, and a function from that
    /// size on when it has no token in its code: such a definition is kept only for the calls
    /// of arch-dependent names in it, and resolution never reads its body (calling it is a
    /// free condition). Inside a split function, `if`, `for`, `while` and `with` statements of
    /// that size are split into their clauses too.
    fn flatten(&self, range: (usize, usize), place: Place, out: &mut Vec<Piece>) {
        let src = self.lines.src;
        let indent = src[range.0..].iter().take_while(|c| **c == b' ').count();
        let statement = (range, PieceKind::Statement);
        if range.1 - range.0 < SPLIT_PLAIN_BLOCK_BYTES {
            self.push(out, statement, place, None);
            return;
        }
        let definition = definition_name(src, range).map(|(_, kind)| kind);
        let mut has_token = None;
        let worth_splitting = match definition {
            None => false,
            Some(_) if is_big_block(src, range) => true,
            // A class is never inferred as a whole: its methods are pieces of their own.
            Some(Definition::Class) => own_bytes(src, range) >= SPLIT_PLAIN_BLOCK_BYTES,
            Some(Definition::Function) => {
                own_bytes(src, range) >= SPLIT_PLAIN_BLOCK_BYTES
                    && !*has_token.insert(self.has_token(range))
            }
        };
        if let Some(parts) = worth_splitting
            .then(|| self.lines.split_definition(range, indent))
            .flatten()
        {
            let header = self.push(out, (parts[0], PieceKind::Definition), place, None);
            let inner = Place {
                depth: place.depth + 1,
                parent: Some(header),
                scope: Some(header),
                in_function: definition == Some(Definition::Function),
            };
            for &part in &parts[1..] {
                self.flatten(part, inner, out);
            }
        } else if let Some(clauses) = place
            .in_function
            .then(|| self.lines.split_compound(range, indent))
            .flatten()
        {
            let mut first = None;
            for (header, body) in clauses {
                let clause = Place {
                    parent: first.or(place.parent),
                    ..place
                };
                let at = self.push(out, (header, PieceKind::Clause), clause, None);
                first.get_or_insert(at);
                let inner = Place {
                    depth: place.depth + 1,
                    parent: Some(at),
                    ..place
                };
                for part in body {
                    self.flatten(part, inner, out);
                }
            }
        } else {
            self.push(out, statement, place, has_token);
        }
    }
}

/// The statements worth parsing: those with a token, the headers of blocks that hold them,
/// small top-level statements and the short assignments beside a kept statement, and those
/// naming a top-level name that a kept statement defines (to a fixpoint).
pub fn relevant_ranges(src: &[u8], tokens: &Tokens) -> Vec<(usize, usize)> {
    relevant_ranges_at(src, tokens.starts(src).collect())
}

/// `relevant_ranges`, with where the tokens occur in `src` already found (in order): the
/// scan's prefilter has searched the file for them.
pub fn relevant_ranges_at(src: &[u8], token_starts: Vec<usize>) -> Vec<(usize, usize)> {
    let splitter = Splitter::new(src, TokenStarts(token_starts));
    let mut pieces = Vec::new();
    let top = Place {
        depth: 0,
        parent: None,
        scope: None,
        in_function: false,
    };
    let top_level = splitter.lines.statement_lines(0, src.len(), 0);
    for statement in statements_at(top_level, 0, src.len()) {
        splitter.flatten(statement, top, &mut pieces);
    }
    let token_hit: Vec<bool> = pieces.iter().map(|p| p.has_token).collect();
    // Pieces are in file order and cover it from its first byte.
    let piece_starts: Vec<usize> = pieces.iter().map(|p| p.range.0).collect();
    let mut archy = token_hit.clone();
    let mut derived: Vec<String> = Vec::new();
    let mut harvested = vec![false; pieces.len()];
    let mut harvested_locals = vec![false; pieces.len()];
    let mut harvested_attrs = vec![false; pieces.len()];
    let mut attributes: Vec<String> = Vec::new();
    let mut methods = token_methods(&splitter, &pieces);
    loop {
        let holds = subtree_holds(&pieces, &archy);
        let mut new_names = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            if piece.depth > 0 || !holds[i] || harvested[i] {
                continue;
            }
            harvested[i] = true;
            // A split definition is judged whole: a call to a function too large to infer is
            // still a gate, which resolution reports as unknown.
            let (range, has_token) = match piece.kind {
                PieceKind::Definition => {
                    let whole = definition_range(&pieces, i, src.len());
                    (whole, splitter.has_token(whole))
                }
                _ => (piece.range, token_hit[i]),
            };
            new_names.extend(
                defined_name(src, range, has_token)
                    .into_iter()
                    .filter(|n| !derived.contains(n)),
            );
        }
        let locals_changed = mark_local_uses(&splitter, &pieces, &mut archy, &mut harvested_locals);
        let attributes_changed = mark_attribute_uses(
            src,
            &pieces,
            &piece_starts,
            &mut archy,
            &mut harvested_attrs,
            &mut attributes,
            std::mem::take(&mut methods),
        );
        if new_names.is_empty() {
            if locals_changed || attributes_changed {
                continue;
            }
            break;
        }
        new_names.sort();
        new_names.dedup();
        // Only the new names need looking for: pieces that name older ones are marked already.
        let names = matcher(&new_names);
        // One search over the file, each occurrence marking the piece it lies in.
        for at in names.whole_words(src) {
            let i = piece_starts.partition_point(|&start| start <= at);
            if let Some(i) = i.checked_sub(1)
                && !archy[i]
                && pieces[i].reads_names(src)
            {
                archy[i] = true;
            }
        }
        derived.extend(new_names);
    }
    keep_called_helpers(src, &pieces, &piece_starts, &mut archy);
    let holds = subtree_holds(&pieces, &archy);
    let mut keep = keep_bindings(src, &pieces, &holds);
    keep_a_body(&pieces, &mut keep);
    pieces
        .iter()
        .zip(keep)
        .filter_map(|(piece, keep)| keep.then_some(piece.range))
        .collect()
}

/// A small top-level function without a token that arch-dependent code calls
/// (`suffix = _cuda_arch_suffix(major, minor)`) may be handed a device value: the lowering
/// keeps its body and its comparisons on parameters become gates evaluated through that call,
/// so it is kept whole. Kept only, not made arch-dependent: its own uses elsewhere stay out.
fn keep_called_helpers(src: &[u8], pieces: &[Piece], piece_starts: &[usize], archy: &mut [bool]) {
    let holds = subtree_holds(pieces, archy);
    let mut helpers: Vec<(String, usize)> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        if piece.depth > 0
            || holds[i]
            || piece.kind != PieceKind::Statement
            || piece.range.1 - piece.range.0 > TOKENLESS_HELPER_BYTES
        {
            continue;
        }
        if let Some((name, Definition::Function)) = definition_name(src, piece.range) {
            helpers.push((name.to_string(), i));
        }
    }
    if helpers.is_empty() {
        return;
    }
    let names: Vec<String> = helpers.iter().map(|(n, _)| n.clone()).collect();
    let index_of: std::collections::HashMap<&[u8], usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_bytes(), i))
        .collect();
    let mut called = vec![false; helpers.len()];
    for at in matcher(&names).whole_words(src) {
        let Some(piece) = piece_starts
            .partition_point(|&start| start <= at)
            .checked_sub(1)
        else {
            continue;
        };
        if !archy[piece] {
            continue;
        }
        let rest = &src[at..];
        let word_len = rest
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .unwrap_or(rest.len());
        let Some(&index) = index_of.get(&rest[..word_len]) else {
            continue;
        };
        if rest[word_len..].trim_ascii_start().starts_with(b"(") {
            called[index] = true;
        }
    }
    for ((_, piece), called) in helpers.iter().zip(called) {
        if called {
            archy[*piece] = true;
        }
    }
}

/// Whether a piece has a token in its code. In a big generated table (a top-level
/// assignment whose value is over `MAX_PLAIN_ASSIGN_BYTES`) tokens inside string literals are
/// names, not checks, as `lower::Lowerer::value_archy` judges: such a table is not parsed.
fn piece_has_token(src: &[u8], range: (usize, usize), starts: &TokenStarts) -> bool {
    if !starts.code_hit(src, range, NotCode::CommentsAndBareStrings) {
        return false;
    }
    let text = &src[range.0..range.1];
    let first_line = memchr::memchr(b'\n', text).map_or(text.len(), |i| i + 1);
    // The value is at least the statement less its first line and a last-line comment.
    let big_value = || own_bytes(src, range) > MAX_PLAIN_ASSIGN_BYTES + first_line + 256;
    !(assigned_name(text).is_some()
        && big_value()
        && !starts.code_hit(src, range, NotCode::CommentsAndStrings))
}

/// Python rejects a header with nothing under it (`if x:` or `def f():` alone), and a parse
/// error would cost a parse of the whole file: a kept header without a kept body statement
/// keeps its smallest one (a plain statement if it has one; a header so kept gets a body in
/// turn, as it comes later in the order).
fn keep_a_body(pieces: &[Piece], keep: &mut [bool]) {
    let mut has_body = vec![false; pieces.len()];
    let mut smallest: Vec<Option<usize>> = vec![None; pieces.len()];
    let rank = |i: usize| {
        let piece = &pieces[i];
        (
            piece.kind != PieceKind::Statement,
            piece.range.1 - piece.range.0,
        )
    };
    for (i, piece) in pieces.iter().enumerate() {
        // Body statements sit one level below their header; `elif`/`else` clauses beside it.
        let Some(header) = piece.parent.filter(|&p| pieces[p].depth < piece.depth) else {
            continue;
        };
        has_body[header] |= keep[i];
        if smallest[header].is_none_or(|s| rank(i) < rank(s)) {
            smallest[header] = Some(i);
        }
    }
    for i in 0..pieces.len() {
        if keep[i]
            && pieces[i].kind != PieceKind::Statement
            && !has_body[i]
            && let Some(body) = smallest[i]
        {
            keep[body] = true;
        }
    }
}

/// Besides the arch-dependent pieces, keeps the small imports and assignments they need: a
/// binding statement beside a kept piece is kept when it binds a name a kept piece reads (to a
/// fixpoint, as `_is_sm90 = _is_cuda and ...` needs `_is_cuda = is_cuda()` and its import).
fn keep_bindings<'s>(src: &'s [u8], pieces: &[Piece], holds: &[bool]) -> Vec<bool> {
    let mut keep = holds.to_vec();
    let candidates: Vec<(usize, Vec<&[u8]>)> = pieces
        .iter()
        .enumerate()
        .filter(|(i, piece)| {
            let (s, e) = piece.range;
            !keep[*i] && piece.parent.is_none_or(|p| holds[p]) && small_enough(&src[s..e])
        })
        .map(|(i, piece)| (i, bound_names(&src[piece.range.0..piece.range.1])))
        .collect();
    // Only whether a candidate's names are read matters, so of the kept pieces' identifiers
    // only those that some candidate binds are recorded (a cheap filter first: most
    // identifiers are not), rather than every identifier of every kept piece.
    let mut wanted = WordFilter::default();
    for (_, names) in &candidates {
        for name in names {
            wanted.insert(name);
        }
    }
    // A name is read in the scopes around the piece that reads it: its function, the ones
    // around that (closures, a class's methods), and the module. A local binding is kept
    // only for readers in its own function, not for any piece of the file with a name alike.
    let mut used: FxSet<(usize, &'s [u8])> = FxSet::default();
    let record = |i: usize, used: &mut FxSet<(usize, &'s [u8])>| {
        let (s, e) = pieces[i].range;
        let mut words = FxSet::default();
        wanted.collect(identifiers(&src[s..e]), &mut words);
        let mut scope = pieces[i].scope;
        loop {
            let key = scope.unwrap_or(MODULE_SCOPE);
            used.extend(words.iter().map(|word| (key, *word)));
            let Some(header) = scope else { break };
            scope = pieces[header].scope;
        }
    };
    for (i, piece) in pieces.iter().enumerate() {
        if keep[i] && piece.is_code() {
            record(i, &mut used);
        }
    }
    loop {
        let mut changed = false;
        for (i, names) in &candidates {
            let scope = pieces[*i].scope.unwrap_or(MODULE_SCOPE);
            if !keep[*i]
                && names
                    .iter()
                    .any(|n| *n == b"*" || used.contains(&(scope, *n)))
            {
                keep[*i] = true;
                changed = true;
                record(*i, &mut used);
            }
        }
        if !changed {
            return keep;
        }
    }
}

/// The scope key of top-level pieces in `keep_bindings`.
const MODULE_SCOPE: usize = usize::MAX;

/// A set of words with a Bloom-style bit filter in front of it.
#[derive(Default)]
struct WordFilter<'a> {
    bits: [u64; 16],
    words: FxSet<&'a [u8]>,
}

impl<'a> WordFilter<'a> {
    fn bit(word: &[u8]) -> usize {
        let first = word.first().copied().unwrap_or(0) as usize;
        let last = word.last().copied().unwrap_or(0) as usize;
        (word.len().wrapping_mul(31) ^ first.wrapping_mul(7) ^ (last << 3)) & 1023
    }

    fn insert(&mut self, word: &'a [u8]) {
        let bit = Self::bit(word);
        self.bits[bit / 64] |= 1 << (bit % 64);
        self.words.insert(word);
    }

    /// Adds to `out` the words of `words` that are in the set.
    fn collect<'w>(&self, words: impl Iterator<Item = &'w [u8]>, out: &mut FxSet<&'w [u8]>) {
        for word in words {
            let bit = Self::bit(word);
            if self.bits[bit / 64] & (1 << (bit % 64)) != 0 && self.words.contains(word) {
                out.insert(word);
            }
        }
    }
}

/// Identifier-like words of a piece of source (strings and comments included: an over-match
/// only keeps one more small statement).
fn identifiers(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    ascii_word_runs(text)
        .map(move |(start, end)| &text[start..end])
        .filter(|word| !word[0].is_ascii_digit())
}

/// The names a small statement binds: import targets (`*` for a star import), assignment
/// targets that are plain names, and the same inside a guarding `try:` / `if` block. An
/// attribute or subscript target (`self.x = ...`) binds no name resolution reads, and the
/// lines that continue a statement bind nothing, except in a parenthesised import list.
fn bound_names(statement: &[u8]) -> Vec<&[u8]> {
    let mut names = Vec::new();
    // Inside an import list that goes on past its line: whether it is parenthesised (it ends
    // at the `)`) rather than continued by a backslash (it ends at a line without one).
    let mut open_list: Option<bool> = None;
    for line in statement.split(|c| *c == b'\n') {
        let code = line.trim_ascii();
        if let Some(parenthesised) = open_list {
            names.extend(import_list(code));
            open_list = import_list_goes_on(code, parenthesised);
        } else if let Some(rest) = code.strip_prefix(b"import ") {
            for part in rest.split(|c| *c == b',') {
                let part = part.trim_ascii();
                let alias = part
                    .split(|c| *c == b' ')
                    .rfind(|w| !w.is_empty())
                    .unwrap_or(part);
                names.push(alias.split(|c| *c == b'.').next().unwrap_or(alias));
            }
            open_list = import_list_goes_on(code, false);
        } else if code.starts_with(b"from ") {
            match memchr::memmem::find(code, b" import ") {
                Some(at) => {
                    let list = &code[at + 8..];
                    names.extend(import_list(list));
                    let parenthesised = list.trim_ascii_start().starts_with(b"(");
                    open_list = import_list_goes_on(list, parenthesised);
                }
                None => names.push(&b"*"[..]),
            }
        } else if is_assignment(code) {
            names.extend(assignment_targets(code));
        }
    }
    names
}

/// Whether an import list read up to the end of `text` goes on to the next line.
fn import_list_goes_on(text: &[u8], parenthesised: bool) -> Option<bool> {
    let goes_on = if parenthesised {
        !text.contains(&b')')
    } else {
        text.ends_with(b"\\")
    };
    goes_on.then_some(parenthesised)
}

/// The plain names an assignment line binds (`is_assignment` has vetted it): `a`, `a: T`,
/// `a, b`, `[a, b]`; not `self.a` nor `a[i]`, which the lowering does not follow.
fn assignment_targets(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    let eq = line.iter().position(|c| *c == b'=').unwrap_or(0);
    let targets = &line[..eq];
    let targets = match targets.iter().position(|c| *c == b':') {
        Some(colon) => &targets[..colon],
        None => targets,
    };
    targets.split(|c| *c == b',').filter_map(|part| {
        let is_wrapping = |c: &u8| matches!(c, b'[' | b']' | b' ');
        let start = part.iter().position(|c| !is_wrapping(c))?;
        let end = part.iter().rposition(|c| !is_wrapping(c))? + 1;
        let name = &part[start..end];
        // Bytes past ASCII are UTF-8 letters of a non-ASCII identifier.
        let is_name_byte = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c >= 0x80;
        (!name[0].is_ascii_digit() && name.iter().all(is_name_byte)).then_some(name)
    })
}

/// `a, b as c, (d` → a, c, d (the local names).
fn import_list(list: &[u8]) -> Vec<&[u8]> {
    list.split(|c| *c == b',')
        .filter_map(|part| {
            let words: Vec<&[u8]> = identifiers(part).collect();
            words.last().copied()
        })
        .collect()
}

/// Inside a split function or class, the locals an arch-dependent piece binds (`major, minor =
/// ...`) make the other pieces of that scope that read them arch-dependent too. Returns whether
/// any changed.
fn mark_local_uses(
    splitter: &Splitter,
    pieces: &[Piece],
    archy: &mut [bool],
    harvested: &mut [bool],
) -> bool {
    let src = splitter.lines.src;
    let mut by_scope: std::collections::HashMap<usize, Vec<String>> = Default::default();
    for (i, piece) in pieces.iter().enumerate() {
        let fresh = archy[i] && !harvested[i];
        if let Some(scope) = piece.scope
            && fresh
        {
            harvested[i] = true;
            let names = by_scope.entry(scope).or_default();
            names.extend(assigned_names(&src[piece.range.0..piece.range.1]));
            names.extend(nested_archy_assignments(splitter, piece.range));
        }
        // A split `def` whose header holds a token at a parameter (a parameter name a rule
        // declares, `def _get_fwd_config(*, arch: int, ...)`): that parameter is a local of
        // the body, as an assignment's target would be.
        if piece.kind == PieceKind::Definition && fresh {
            harvested[i] = true;
            let params = token_parameters(splitter, piece.range);
            if !params.is_empty() {
                by_scope.entry(i).or_default().extend(params);
            }
        }
    }
    let mut changed = false;
    for (scope, names) in by_scope {
        let matcher = matcher(&names);
        let within = subtree_end(pieces, scope);
        for (i, piece) in pieces.iter().enumerate().take(within).skip(scope + 1) {
            if piece.scope == Some(scope)
                && !archy[i]
                && matcher.is_match(&src[piece.range.0..piece.range.1])
                && piece.reads_names(src)
            {
                archy[i] = true;
                changed = true;
            }
        }
    }
    changed
}

/// The identifiers of a `def` header's parameter list that start at a token (the scan adds
/// the rule-declared parameter names to the token starts).
fn token_parameters(splitter: &Splitter, (start, end): (usize, usize)) -> Vec<String> {
    let src = splitter.lines.src;
    let header = &src[start..end];
    let Some(open) = memchr::memchr(b'(', header) else {
        return Vec::new();
    };
    let starts: Vec<usize> = splitter.token_starts.within((start, end)).collect();
    let mut names = Vec::new();
    for (from, to) in ascii_word_runs(&header[open..]) {
        let at = open + from;
        if starts.contains(&at) && !header[at].is_ascii_digit() {
            let name = String::from_utf8_lossy(&header[at..open + to]).into_owned();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Instance and class attributes an arch-dependent piece stores (`self._device_arch =
/// get_device_arch()`, `cls.IS_SM90 = ...`) are read by other methods of the class and of its
/// subclasses, which the resolver follows (issue 13's instance attributes): every piece of the
/// file that reads `.NAME` becomes arch-dependent too. File-wide, not per class, because
/// subclasses and other objects of the class read the attribute as well; a superset is safe.
/// Returns whether any piece changed.
/// `methods`: more names read the same way (`token_methods`).
fn mark_attribute_uses(
    src: &[u8],
    pieces: &[Piece],
    piece_starts: &[usize],
    archy: &mut [bool],
    harvested: &mut [bool],
    known: &mut Vec<String>,
    methods: Vec<String>,
) -> bool {
    let mut new_names: Vec<String> = methods
        .into_iter()
        .filter(|name| !known.contains(name))
        .collect();
    for (i, piece) in pieces.iter().enumerate() {
        if archy[i] && !harvested[i] && piece.is_code() {
            harvested[i] = true;
            for name in attribute_stores(&src[piece.range.0..piece.range.1]) {
                if !known.contains(&name) && !new_names.contains(&name) {
                    new_names.push(name);
                }
            }
        }
    }
    if new_names.is_empty() {
        return false;
    }
    let names = matcher(&new_names);
    let mut changed = false;
    for at in names.whole_words(src) {
        if at == 0 || src[at - 1] != b'.' {
            continue;
        }
        let i = piece_starts.partition_point(|&start| start <= at);
        if let Some(i) = i.checked_sub(1)
            && !archy[i]
            && pieces[i].reads_names(src)
        {
            archy[i] = true;
            changed = true;
        }
    }
    known.extend(new_names);
    changed
}

/// The methods (functions below the top level) small enough to be helpers that have a token
/// in their code (`def supports_fp8(cls): return cls.has_device_capability(89)`): a
/// `self.NAME(...)` or `cls.NAME(...)` call reads the device through one, which the lowering
/// takes as it takes a stored attribute (`Lowerer::token_methods`, which keeps only the
/// methods whose `return` is made from a token: this set is a superset), so the pieces that
/// read `.NAME` matter too (`mark_attribute_uses`). Sorted, without repeats.
fn token_methods(splitter: &Splitter, pieces: &[Piece]) -> Vec<String> {
    let src = splitter.lines.src;
    let mut names: Vec<String> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        if piece.depth == 0 {
            continue;
        }
        let Some((name, Definition::Function)) = definition_name(src, piece.range) else {
            continue;
        };
        let whole = match piece.kind {
            PieceKind::Definition => definition_range(pieces, i, src.len()),
            _ => piece.range,
        };
        // Sized from its `def` line, as the lowering sizes it (decorators left out).
        let def_at = splitter
            .lines
            .lines(whole.0, whole.1)
            .find(|line| {
                let code = line.text.trim_ascii_start();
                code.starts_with(b"def ") || code.starts_with(b"async def ")
            })
            .map_or(whole.0, |line| line.start);
        if whole.1 - def_at <= MAX_HELPER_BODY_BYTES && splitter.has_token(whole) {
            names.push(name.to_string());
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The attribute names stored through `self.` or `cls.` on the lines of a text: `self.x = ...`,
/// `self.x: T = ...`, `self.a, self.b = ...` (not `self.x == y`).
fn attribute_stores(text: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.split(|c| *c == b'\n') {
        let code = line.trim_ascii_start();
        if !(code.starts_with(b"self.") || code.starts_with(b"cls.")) {
            continue;
        }
        // `is_assignment` vets the first `=` (not `==`, not inside a call's keywords).
        let Some(eq) = is_assignment(code)
            .then(|| code.iter().position(|c| *c == b'='))
            .flatten()
        else {
            continue;
        };
        for target in code[..eq].split(|c| *c == b',') {
            let target = target.trim_ascii();
            let target = target
                .split(|c| *c == b':')
                .next()
                .unwrap_or_default()
                .trim_ascii();
            let Some(rest) = target
                .strip_prefix(b"self.")
                .or_else(|| target.strip_prefix(b"cls."))
            else {
                continue;
            };
            if rest.len() >= 2 && rest.iter().all(|c| is_word_byte(*c)) {
                names.push(String::from_utf8_lossy(rest).into_owned());
            }
        }
    }
    names
}

/// In an arch-dependent compound statement, the names bound by the assignments nested in it:
/// `family = _arch()` or `backend = "xqa"` in one branch of an `if`, read after it.
fn nested_archy_assignments(splitter: &Splitter, (start, end): (usize, usize)) -> Vec<String> {
    let src = splitter.lines.src;
    let starts: Vec<usize> = splitter
        .lines
        .lines(start, end)
        .filter(|line| line.boundary && line.start > start)
        .map(|line| line.start)
        .collect();
    let mut names = Vec::new();
    for (i, &at) in starts.iter().enumerate() {
        let line_end = starts.get(i + 1).copied().unwrap_or(end);
        let logical = &src[at..line_end];
        let code = logical.trim_ascii_start();
        // Any assignment nested in an arch-dependent statement binds a device value: the
        // model joins what each arm assigns under the arm's test (`if cc[0] == 12: backend =
        // "sparse"`), so the name depends on the device although its own line names nothing.
        if is_assignment(code) {
            names.extend(assigned_names(code));
        }
    }
    names
}

/// The names on the left of a simple assignment's first line, of two characters or more.
fn assigned_names(statement: &[u8]) -> Vec<String> {
    if !is_assignment(statement) {
        return Vec::new();
    }
    let line = statement.split(|c| *c == b'\n').next().unwrap_or_default();
    assignment_targets(line)
        .filter(|name| name.len() >= 2)
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// Whether any of a few names occurs in a piece of text as a whole identifier (`run` in
/// `run(x)` or `self.run`, not in `return` or `running`: Python binds whole names, and a
/// substring match keeps megabytes of unrelated statements on a big site). Matchers are built
/// per file and per function, so their build cost counts: up to `FEW_NAMES` names are
/// searched for with memmem finders (nearly free to build, SIMD search), more by looking
/// each identifier of the text up in a set (no build at all, a steady cost per byte).
enum Matcher {
    Few(Vec<memchr::memmem::Finder<'static>>),
    Many(FxSet<Vec<u8>>),
}

const FEW_NAMES: usize = 8;

impl Matcher {
    fn is_match(&self, text: &[u8]) -> bool {
        self.whole_words(text).next().is_some()
    }

    /// Where the names occur in the text as whole identifiers. Names never span a line, so
    /// over a file these are the occurrences in each of its line-aligned pieces.
    fn whole_words<'t>(&'t self, text: &'t [u8]) -> Box<dyn Iterator<Item = usize> + 't> {
        match self {
            Matcher::Few(finders) => Box::new(finders.iter().flat_map(move |finder| {
                let len = finder.needle().len();
                finder
                    .find_iter(text)
                    .filter(move |&start| is_whole_word(text, start, start + len))
            })),
            // A whole-word occurrence is exactly an identifier equal to a name.
            Matcher::Many(names) => Box::new(
                word_runs(text)
                    .filter(|&(start, end)| names.contains(&text[start..end]))
                    .map(|(start, _)| start),
            ),
        }
    }
}

/// Where `name` occurs in the text as a whole identifier.
pub(crate) fn whole_word_starts<'t>(
    text: &'t [u8],
    name: &'t str,
) -> impl Iterator<Item = usize> + 't {
    memchr::memmem::find_iter(text, name.as_bytes())
        .filter(move |&start| is_whole_word(text, start, start + name.len()))
}

fn is_whole_word(text: &[u8], start: usize, end: usize) -> bool {
    let before = start > 0 && is_word_byte(text[start - 1]);
    !before && !text.get(end).is_some_and(|c| is_word_byte(*c))
}

fn matcher(names: &[String]) -> Matcher {
    if names.len() <= FEW_NAMES {
        Matcher::Few(
            names
                .iter()
                .map(|n| memchr::memmem::Finder::new(n.as_bytes()).into_owned())
                .collect(),
        )
    } else {
        Matcher::Many(names.iter().map(|n| n.as_bytes().to_vec()).collect())
    }
}

/// FxHash (rustc's): the identifier sets below hash short byte strings by the million, for
/// which SipHash is several times slower. No untrusted-input concern: a slow file is all an
/// adversary could cause.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type FxSet<T> = HashSet<T, std::hash::BuildHasherDefault<FxHasher>>;

/// The whole text of a split definition (the piece `i` is its header): to the next piece
/// at its depth or above, or the end of the file (`len`).
fn definition_range(pieces: &[Piece], i: usize, len: usize) -> (usize, usize) {
    let end = pieces
        .get(subtree_end(pieces, i))
        .map_or(len, |p| p.range.0);
    (pieces[i].range.0, end)
}

/// One past the last piece under piece `i`: its pieces follow it, deeper than it.
fn subtree_end(pieces: &[Piece], i: usize) -> usize {
    let depth = pieces[i].depth;
    pieces[i + 1..]
        .iter()
        .position(|piece| piece.depth <= depth)
        .map_or(pieces.len(), |n| i + 1 + n)
}

/// Whether each piece, or any piece below it, is arch-dependent.
fn subtree_holds(pieces: &[Piece], archy: &[bool]) -> Vec<bool> {
    let mut holds = archy.to_vec();
    for i in (0..pieces.len()).rev() {
        if holds[i]
            && let Some(parent) = pieces[i].parent
        {
            holds[parent] = true;
        }
    }
    holds
}

/// Small top-level imports, assignments and guarded blocks are kept; inside a split block,
/// only short assignments and imports are, as locals a gate may read.
fn small_enough(statement: &[u8]) -> bool {
    // A statement's range starts after the one before it, so the comments above it come
    // first (`# Max size per device capability` over `SIZES: dict[...] = {`): what it binds
    // is read from its first line of code.
    let statement = past_leading_comments(statement);
    let code = statement.trim_ascii_start();
    let is_import = code.starts_with(b"import ") || code.starts_with(b"from ");
    let binds = is_import || is_assignment(statement);
    if statement.first() != Some(&b' ') {
        // Top level: also `try:` / `if` blocks, which guard imports and flags.
        let guards = code.starts_with(b"try:") || code.starts_with(b"if ");
        return statement.len() <= SMALL_STATEMENT_BYTES && (binds || guards);
    }
    // Indentation does not count: a call spread over indented lines is as small as it reads.
    binds && code_bytes(statement) <= SMALL_LOCAL_BYTES
}

/// `statement` from its first line that is neither blank nor a comment.
fn past_leading_comments(statement: &[u8]) -> &[u8] {
    let mut rest = statement;
    loop {
        let line_end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let line = rest[..line_end].trim_ascii();
        if line_end == rest.len() || !(line.is_empty() || line.starts_with(b"#")) {
            return rest;
        }
        rest = &rest[line_end..];
    }
}

fn code_bytes(statement: &[u8]) -> usize {
    statement
        .iter()
        .filter(|c| !c.is_ascii_whitespace())
        .count()
}

fn is_assignment(statement: &[u8]) -> bool {
    let line = statement.split(|c| *c == b'\n').next().unwrap_or_default();
    let Some(eq) = line.iter().position(|c| *c == b'=') else {
        return false;
    };
    let target_ok = line[..eq].iter().all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, b'_' | b' ' | b',' | b':' | b'[' | b']' | b'.')
    });
    target_ok && line.get(eq + 1) != Some(&b'=')
}

/// The name a top-level statement makes arch-dependent: a `def` with a token in its own code
/// (`has_token`; inferred as a helper by `lower::Lowerer::function` when small enough, else
/// reported as an unknown gate where called), or a simple assignment of an arch-dependent
/// value. Not a `def` that only calls such a function, nor a `class`: resolution infers
/// neither, so the statements that use their names need not be parsed. Imports bind names
/// too, but those are defined elsewhere: the importing file's uses carry their own tokens.
fn defined_name(src: &[u8], range: (usize, usize), has_token: bool) -> Vec<String> {
    let names = match definition_name(src, range) {
        Some((name, Definition::Function)) if has_token => vec![name.to_string()],
        Some(_) => return Vec::new(),
        None => {
            // Unpacking binds every target (`major, minor = get_device_capability()`): with
            // only the first name, a file big enough to be chunked lost the gates on `minor`,
            // and those on `major` when the first target was something else.
            let statement = &src[range.0..range.1];
            let mut names = assigned_names(statement);
            if names.is_empty() {
                names.extend(assigned_name(statement));
            }
            names
        }
    };
    names
        .into_iter()
        .filter(|name| name.len() >= 2 && !is_keyword(name))
        .collect()
}

/// `name = ...` or `name: T = ...` on the statement's first line.
fn assigned_name(statement: &[u8]) -> Option<String> {
    let line = statement.split(|c| *c == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    let name: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let after = text[name.len()..].trim_start();
    let binds = (after.starts_with('=') && !after.starts_with("==")) || after.starts_with(':');
    binds.then_some(name)
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "import"
            | "from"
            | "def"
            | "class"
            | "if"
            | "elif"
            | "else"
            | "for"
            | "while"
            | "try"
            | "with"
            | "return"
            | "assert"
            | "raise"
            | "del"
            | "pass"
            | "global"
            | "async"
            | "await"
            | "lambda"
            | "not"
            | "and"
            | "match"
            | "case"
    )
}

fn starts_statement(line: &[u8], indent: usize) -> bool {
    line.len() > indent
        && line[..indent].iter().all(|c| *c == b' ')
        && !line[indent].is_ascii_whitespace()
        && line[indent] != b'#'
}

/// `else:`, `elif`, `except`, `finally` and `case` continue the statement above them.
fn continues_compound(line: &[u8]) -> bool {
    [&b"else"[..], b"elif", b"except", b"finally"]
        .iter()
        .any(|kw| {
            line.starts_with(kw)
                && line
                    .get(kw.len())
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        })
}

/// The bytes `Lexer::feed` acts on outside strings.
const SPECIAL_BYTES: &[u8] = b"#\"'([{)]}\\";

const SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < SPECIAL_BYTES.len() {
        table[SPECIAL_BYTES[i] as usize] = true;
        i += 1;
    }
    table
};

/// Where the first `SPECIAL` byte at or after `from` is, or the line's length. Sixteen bytes
/// are compared at a time where SSE2 is (every x86-64): outside strings, most bytes of a
/// line are names, spaces and operators, and this loop is most of the lexing pass over each
/// file that hits.
#[inline]
fn next_special(line: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= line.len() {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8, _mm_setzero_si128,
        };
        // SAFETY: SSE2 is part of the x86-64 baseline, and the unaligned load reads the 16
        // bytes `line[i..i + 16]`, which the loop condition keeps inside the slice.
        let mask = unsafe {
            let block = _mm_loadu_si128(line.as_ptr().add(i).cast::<__m128i>());
            let any = SPECIAL_BYTES
                .iter()
                .fold(_mm_setzero_si128(), |any, &byte| {
                    _mm_or_si128(any, _mm_cmpeq_epi8(block, _mm_set1_epi8(byte as i8)))
                });
            _mm_movemask_epi8(any) as u32
        };
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i < line.len() && !SPECIAL[line[i] as usize] {
        i += 1;
    }
    i
}

/// Tracks brackets, strings and line continuations across lines.
#[derive(Default)]
struct Lexer {
    depth: i32,
    /// The quote byte and whether it is triple, while inside a string.
    string: Option<(u8, bool)>,
    continued: bool,
}

impl Lexer {
    fn at_statement_boundary(&self) -> bool {
        self.depth <= 0 && self.string.is_none() && !self.continued
    }

    /// Feeds one line; returns where a comment starts in it, if one does.
    fn feed(&mut self, line: &[u8]) -> Option<usize> {
        self.feed_with(line, |_| {})
    }

    /// `feed`, also reporting the spans of the line that lie inside string literals (quotes
    /// excluded).
    #[inline(always)]
    fn feed_with(
        &mut self,
        line: &[u8],
        mut in_string: impl FnMut(std::ops::Range<usize>),
    ) -> Option<usize> {
        self.continued = false;
        let mut string_from = self.string.map(|_| 0);
        let mut i = 0;
        while i < line.len() {
            // Skip to the next byte that can change the state: inside a string, a backslash,
            // the quote or a newline; outside, a byte of `SPECIAL`.
            match self.string {
                Some((quote, _)) => match memchr::memchr3(b'\\', quote, b'\n', &line[i..]) {
                    Some(at) => i += at,
                    None => break,
                },
                None => {
                    i = next_special(line, i);
                    if i == line.len() {
                        break;
                    }
                }
            }
            let c = line[i];
            if let Some((quote, triple)) = self.string {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
                let closes = if c == quote {
                    !triple || line[i..].starts_with(&[quote, quote, quote])
                } else {
                    // An unterminated single-quoted string ends at the line (a syntax error
                    // the parser will report); keep the lexer in step.
                    c == b'\n' && !triple
                };
                if closes {
                    self.string = None;
                    if let Some(from) = string_from.take() {
                        in_string(from..i);
                    }
                    i += if triple && c == quote { 3 } else { 1 };
                    continue;
                }
                i += 1;
                continue;
            }
            match c {
                b'#' => {
                    if self.depth < 0 {
                        self.depth = 0;
                    }
                    return Some(i);
                }
                b'"' | b'\'' => {
                    let triple = line[i..].starts_with(&[c, c, c]);
                    self.string = Some((c, triple));
                    i += if triple { 3 } else { 1 };
                    string_from = Some(i);
                    continue;
                }
                b'(' | b'[' | b'{' => self.depth += 1,
                b')' | b']' | b'}' => self.depth -= 1,
                b'\\' if line[i + 1..].iter().all(|b| *b == b'\n' || *b == b'\r') => {
                    self.continued = true;
                }
                _ => {}
            }
            i += 1;
        }
        if let Some(from) = string_from {
            in_string(from..line.len().max(from));
        }
        if self.depth < 0 {
            self.depth = 0;
        }
        None
    }
}

/// A module's text for resolution, without the bodies of the functions that have no token in
/// their code (by `statement_code_hit`, as the lowerer judges a helper). Resolution never reads
/// such a body (a call to the function is a free condition), but parsing it is most of the
/// cost of reading a big module whole.
pub struct PlainBodiesSkipped {
    /// The text, each skipped body's first statement turned into `0` so that its `def` still
    /// parses: every other byte, and so every position, is the file's.
    pub text: Vec<u8>,
    /// The byte ranges to parse: the file without the rest of the skipped bodies.
    pub ranges: Vec<(usize, usize)>,
}

/// `None` when no function body can be skipped.
pub fn skip_plain_bodies(src: &[u8], tokens: &Tokens) -> Option<PlainBodiesSkipped> {
    let globals = declared_globals(src);
    skip_bodies(src, |start, end| {
        // A function with a token stays whole, nested functions included: inference may
        // run them. So does one that names a global some function of the file declares
        // (`return _CUDA_ARCH`): the lowering takes it for a device reader when a store to
        // that global is (`lower::Lowerer::reads_device_global`).
        let names_a_global =
            || words_in(&src[start..end]).any(|word| globals.iter().any(|g| g.as_slice() == word));
        statement_code_hit(tokens, &src[start..end]) || names_a_global()
    })
}

/// A module's text for reading what it binds to one name at a time (`gate::index`): every
/// function body stubbed (its signatures, classes, imports and module code at a fraction of a
/// whole parse), and its top-level statements.
pub struct Skeleton {
    /// The file's text, each skipped body's first statement stubbed (positions unchanged).
    pub text: Vec<u8>,
    /// The ranges of `text` a parse reads: the file without the rest of the skipped bodies.
    pub ranges: Vec<(usize, usize)>,
    /// The file's top-level statements, in order, covering it.
    pub statements: Vec<(usize, usize)>,
}

/// The `Skeleton` of a file, from one lexing of its lines.
pub fn skeleton(src: &[u8]) -> Skeleton {
    let lines = FileLines::new(src);
    let statements = statements_at(lines.statement_lines(0, src.len(), 0), 0, src.len());
    let (text, ranges) = match skip_bodies_in(&lines, src, |_, _| false) {
        Some(skipped) => (skipped.text, skipped.ranges),
        None => (src.to_vec(), vec![(0, src.len())]),
    };
    Skeleton {
        text,
        ranges,
        statements,
    }
}

impl Skeleton {
    /// The parts of `ranges` in the top-level statements whose parsed text has `name` as a
    /// whole word. A `def`, a `class` or an import that binds the name at top level names
    /// it in the part that is parsed (a header, an import list), so a parse of these parts
    /// finds every top-level binding of the name that a parse of all of `ranges` finds.
    pub fn ranges_naming(&self, name: &str) -> Vec<(usize, usize)> {
        // A word of the part as the parse sees it: its edges are word boundaries.
        let names = |(start, end): (usize, usize)| {
            whole_word_starts(&self.text[start..end], name)
                .next()
                .is_some()
        };
        let mut out = Vec::new();
        let mut first = 0;
        for &(start, end) in &self.statements {
            // The parsed parts of this statement: `ranges` is sorted, as `statements` is.
            while self.ranges.get(first).is_some_and(|&(_, e)| e <= start) {
                first += 1;
            }
            let parts: Vec<(usize, usize)> = self.ranges[first..]
                .iter()
                .take_while(|&&(s, _)| s < end)
                .map(|&(s, e)| (s.max(start), e.min(end)))
                .filter(|(s, e)| s < e)
                .collect();
            if parts.iter().any(|&part| names(part)) {
                out.extend(parts);
            }
        }
        out
    }
}

/// The file with the body of each outermost `def` that `keep(start, end)` rejects replaced by
/// a stub; `None` when none is.
fn skip_bodies(src: &[u8], keep: impl Fn(usize, usize) -> bool) -> Option<PlainBodiesSkipped> {
    skip_bodies_in(&FileLines::new(src), src, keep)
}

/// `skip_bodies` with the file's lines already lexed.
fn skip_bodies_in(
    lines: &FileLines,
    src: &[u8],
    keep: impl Fn(usize, usize) -> bool,
) -> Option<PlainBodiesSkipped> {
    let mut text: Option<Vec<u8>> = None;
    let mut ranges = Vec::new();
    let mut parsed_from = 0;
    // Lines before this offset lie in a function already judged.
    let mut resume = 0;
    for line in lines.lines(0, src.len()) {
        if line.start < resume || !line.boundary {
            continue;
        }
        let indent = line.text.iter().take_while(|c| **c == b' ').count();
        let code = &line.text[indent..];
        if !(code.starts_with(b"def ") || code.starts_with(b"async def ")) {
            continue;
        }
        let start = line.start + indent;
        let (_, end) = definition_extent(lines.lines(start, src.len()), start, indent, src.len());
        let Some(body) = first_body_line(lines.lines(start, end), start, indent) else {
            continue;
        };
        if !keep(start, end) {
            let text = text.get_or_insert_with(|| src.to_vec());
            let kept_to = stub_first_statement(text, body);
            ranges.push((parsed_from, kept_to));
            parsed_from = end;
        }
        resume = end;
    }
    ranges.push((parsed_from, src.len()));
    Some(PlainBodiesSkipped {
        text: text?,
        ranges,
    })
}

/// The names `global` statements of the file declare (`global _CUDA_ARCH, _INIT`).
fn declared_globals(src: &[u8]) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    for line in src.split(|&b| b == b'\n') {
        let code = line.trim_ascii_start();
        let Some(rest) = code.strip_prefix(b"global ") else {
            continue;
        };
        let rest = rest.split(|&b| b == b'#').next().unwrap_or(rest);
        for name in rest.split(|&b| b == b',' || b == b';') {
            let name = name.trim_ascii();
            if !name.is_empty() && name.iter().all(|&b| is_word_byte(b)) {
                names.push(name.to_vec());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Turns the line at `body` into `0` and spaces; returns where that line ends.
fn stub_first_statement(text: &mut [u8], body: usize) -> usize {
    let line_end = memchr::memchr(b'\n', &text[body..]).map_or(text.len(), |i| body + i + 1);
    let first_code = body
        + text[body..line_end]
            .iter()
            .take_while(|c| **c == b' ')
            .count();
    text[first_code] = b'0';
    for byte in &mut text[first_code + 1..line_end] {
        if !matches!(byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    line_end
}

/// Where a file's token occurrences start, found by one search over the file: each test of a
/// piece or line then looks its occurrences up instead of searching again. The ranges asked
/// about start at a line's start or its code and end at a line's end, so an occurrence never
/// straddles one.
struct TokenStarts(Vec<usize>);

impl TokenStarts {
    /// The occurrences in `start..end`, relative to `start`.
    fn within(&self, (start, end): (usize, usize)) -> impl Iterator<Item = usize> + '_ {
        let first = self.0.partition_point(|&at| at < start);
        self.0[first..]
            .iter()
            .take_while(move |&&at| at < end)
            .map(move |&at| at - start)
    }

    /// `code_hit` of `src[start..end]`.
    fn code_hit(&self, src: &[u8], (start, end): (usize, usize), skip: NotCode) -> bool {
        code_hit_from(&src[start..end], self.within((start, end)), skip)
    }
}

/// Whether a token occurs in a statement's code, not only in its comments or in bare string
/// statements (docstrings): a `# needs compute capability 9.0` note or a docstring that
/// mentions `is_sm90_supported()` does not make a statement arch-dependent. `text` starts at
/// a statement boundary.
pub fn statement_code_hit(tokens: &Tokens, text: &[u8]) -> bool {
    code_hit(tokens, text, NotCode::CommentsAndBareStrings)
}

/// Whether a token occurs in an expression's code, not only in its comments. A bare string
/// expression counts: it may be a probe-table entry naming a helper.
pub fn expression_code_hit(tokens: &Tokens, text: &[u8]) -> bool {
    code_hit(tokens, text, NotCode::Comments)
}

/// Whether a token occurs outside the comments and string literals of an expression: for big
/// generated tables, whose arch-looking entries are names in strings (`"cudaDeviceGetAttribute"`),
/// never a check.
pub fn code_hit_outside_strings(tokens: &Tokens, text: &[u8]) -> bool {
    code_hit(tokens, text, NotCode::CommentsAndStrings)
}

/// What a token search skips besides code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NotCode {
    Comments,
    CommentsAndBareStrings,
    CommentsAndStrings,
}

/// Judges each token occurrence where it stands, lexing only as far as the first one in code:
/// a token never holds a quote, a `#` or a line break, so an occurrence lies wholly in code,
/// in a string or in a comment. A statement that may be a bare string holds its occurrences
/// until its end shows whether it was one.
fn code_hit(tokens: &Tokens, text: &[u8], skip: NotCode) -> bool {
    // Occurrences are searched for as far as the lexing goes: most texts that hold a token
    // have one in code early on.
    code_hit_from(text, tokens.starts(text), skip)
}

/// `code_hit` with the occurrences given: where they start in `text`, in order.
fn code_hit_from(text: &[u8], starts: impl Iterator<Item = usize>, skip: NotCode) -> bool {
    let mut starts = starts.peekable();
    if starts.peek().is_none() {
        return false;
    }
    let mut lexer = Lexer::default();
    let mut offset = 0;
    // Inside a statement that starts with a string, and whether it has an occurrence in code.
    let (mut maybe_bare, mut pending) = (false, false);
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    while offset < text.len() {
        let line_end =
            memchr::memchr(b'\n', &text[offset..]).map_or(text.len(), |i| offset + i + 1);
        let line = &text[offset..line_end];
        if skip == NotCode::CommentsAndBareStrings
            && lexer.at_statement_boundary()
            && starts_with_string(line.trim_ascii_start())
        {
            maybe_bare = true;
        }
        spans.clear();
        let here = starts.peek().is_some_and(|&at| at < line_end);
        let comment = if here && skip == NotCode::CommentsAndStrings {
            lexer.feed_with(line, |span| {
                spans.push(offset + span.start..offset + span.end)
            })
        } else {
            lexer.feed(line)
        };
        let code_end = offset + comment.unwrap_or(line.len());
        while let Some(at) = starts.next_if(|&at| at < line_end) {
            if at < code_end && !spans.iter().any(|span| span.contains(&at)) {
                if !maybe_bare {
                    return true;
                }
                pending = true;
            }
        }
        if maybe_bare && lexer.at_statement_boundary() {
            // The statement ended on this line: it was a bare string if nothing follows
            // its closing quote (`"""doc"""`, not `"a".join(x)`).
            let bare = line[..code_end - offset]
                .trim_ascii_end()
                .last()
                .is_some_and(|c| matches!(c, b'"' | b'\''));
            if pending && !bare {
                return true;
            }
            (maybe_bare, pending) = (false, false);
        }
        if !maybe_bare && starts.peek().is_none() {
            return false;
        }
        offset = line_end;
    }
    // A statement cut off by the end of the text counts as code.
    pending
}

/// Whether a statement is string literals only: a docstring, which reads no name and runs
/// nothing, so a name it mentions never makes it worth parsing. Conservative: brackets,
/// operators, words and f-strings (whose fields are code) all count as code.
fn is_bare_string(text: &[u8]) -> bool {
    let code = text.trim_ascii_start();
    if !starts_with_string(code) {
        return false;
    }
    // Outside its literals, such a statement holds only quotes, prefixes, whitespace and line
    // continuations (before any comment).
    let quoting = |c: &u8| {
        matches!(
            c,
            b'"' | b'\'' | b'r' | b'R' | b'b' | b'B' | b'u' | b'U' | b'\\'
        ) || c.is_ascii_whitespace()
    };
    let mut lexer = Lexer::default();
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    for line in code.split_inclusive(|c| *c == b'\n') {
        spans.clear();
        let comment = lexer.feed_with(line, |span| spans.push(span));
        let end = comment.unwrap_or(line.len());
        let mut outside_from = 0;
        for span in spans.iter().cloned().chain(std::iter::once(end..end)) {
            let outside = line.get(outside_from..span.start).unwrap_or_default();
            if !outside.iter().all(quoting) {
                return false;
            }
            outside_from = span.end;
        }
    }
    true
}

/// `"..."`, `'''...`, `r"..."`, `f"..."` and friends.
fn starts_with_string(code: &[u8]) -> bool {
    let prefix = code
        .iter()
        .take_while(|c| matches!(c.to_ascii_lowercase(), b'r' | b'u' | b'b' | b'f'))
        .count();
    prefix <= 2 && matches!(code.get(prefix), Some(b'"' | b'\''))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn may_define_finds_def_and_class_of_the_whole_word_only() {
        let src = b"if x:\n    def  fast(cap):\n        pass\nclass\tRunner(Base): ...\nfaster = fast_path\nundefined(fast)\n";
        assert_eq!(
            may_define(src, "fast"),
            MayDefine {
                mentioned: true,
                function: true,
                class: false
            }
        );
        assert_eq!(
            may_define(src, "Runner"),
            MayDefine {
                mentioned: true,
                function: false,
                class: true
            }
        );
        let only_mentioned = MayDefine {
            mentioned: true,
            ..MayDefine::default()
        };
        assert_eq!(may_define(src, "fast_path"), only_mentioned);
        assert_eq!(may_define(src, "undefined"), only_mentioned);
        assert_eq!(may_define(src, "faste"), MayDefine::default());
        assert_eq!(may_define(src, "ast"), MayDefine::default());
        assert_eq!(may_define(src, ""), MayDefine::default());
    }

    #[test]
    fn decorators_and_trailing_comments_do_not_make_a_block_big() {
        let body = "    x = 1\n".repeat(300);
        let decorators = "@functools.lru_cache(maxsize=64)\n".repeat(40);
        let trailer = "# a comment line\n\n".repeat(150);
        let src = format!("{decorators}def f():\n{body}{trailer}y = 2\n");
        let end = src.find("y = 2").unwrap();
        assert!(end > SPLIT_BLOCK_BYTES);
        assert_eq!(own_bytes(src.as_bytes(), (0, end)), 9 + body.len() - 1);
        assert!(!is_big_block(src.as_bytes(), (0, end)));
        let big = format!("def f():\n{}", "    x = 1\n".repeat(500));
        assert!(is_big_block(big.as_bytes(), (0, big.len())));
        assert!(split_definition(big.as_bytes(), (0, big.len()), 0).is_some());
    }

    #[test]
    fn defined_names_past_multi_line_decorators() {
        let src = b"# header\n@register(\n    name='x',\n)\ndef f(a):\n    pass\nclass C:\n    pass\nx = 1\n";
        let names: Vec<_> = top_level_statements(src)
            .into_iter()
            .filter_map(|r| definition_name(src, r))
            .collect();
        assert_eq!(
            names,
            [("f", Definition::Function), ("C", Definition::Class)]
        );
    }

    #[test]
    fn finds_top_level_defs_only() {
        let src = b"@cache\ndef f(x):\n    def g():\n        pass\ns = '''\ndef h():\n'''\nasync def k():\n    pass\n";
        let names = TopLevelNames::of(src);
        let mut functions: Vec<&str> = names.functions.iter().map(String::as_str).collect();
        functions.sort();
        assert_eq!(functions, ["f", "k"]);
        assert!(names.classes.is_empty());
    }

    #[test]
    fn top_level_assignments_read_once_answer_as_the_text_scan_does() {
        let src = "# c\nx = 1\ny: int = 2\nz : str\nw == 3\nv.a = 4\nu[0] = 5\nt, s = 6, 7\n\
            r=8\nclass C:\n    q = 9\ndef f():\n    p = 10\nif a:\n    o = 11\n\
            # lead\nn = (\n  12)\nm\t= 13\n_\u{e9} = 14\nfor k in ks: pass\nx2 += 1\n";
        let names = TopLevelNames::of(src.as_bytes());
        let text = src;
        let src = src.as_bytes();
        let words: std::collections::BTreeSet<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let mut assigned = Vec::new();
        for word in words.iter().copied().chain(["v.a", "x ", ""]) {
            let read_once = names.assigns(|| Some(src.to_vec()), word);
            assert_eq!(read_once, has_top_level_assignment(src, word), "{word:?}");
            if read_once {
                assigned.push(word);
            }
        }
        // Names that are not identifiers are read from the text as before (`v.a = 4`).
        assert_eq!(
            assigned,
            ["_\u{e9}", "m", "n", "r", "x", "y", "z", "v.a", "x "]
        );
    }

    #[test]
    fn definition_size_lower_bound_reaches_the_last_line() {
        let src = "class A:\n    def f(self):\n        s = '''\nx\n'''\n        return s\n    # c\n\n    def g(self):\n        pass\n";
        let start = src.find("def f").unwrap();
        let last = src.find("return s").unwrap();
        let end = src.find("    def g").unwrap();
        assert_eq!(
            definition_size_lower_bound(src.as_bytes(), start, 4),
            (last + 1 - start, end)
        );
    }

    /// The byte-at-a-time lexer `Lexer::feed` replaced; the fast one must agree with it.
    fn reference_feed(lexer: &mut Lexer, line: &[u8]) -> Option<usize> {
        lexer.continued = false;
        let mut i = 0;
        while i < line.len() {
            let c = line[i];
            if let Some((quote, triple)) = lexer.string {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == quote {
                    if !triple {
                        lexer.string = None;
                    } else if line[i..].starts_with(&[quote, quote, quote]) {
                        lexer.string = None;
                        i += 3;
                        continue;
                    }
                } else if c == b'\n' && !triple {
                    lexer.string = None;
                }
                i += 1;
                continue;
            }
            match c {
                b'#' => {
                    lexer.depth = lexer.depth.max(0);
                    return Some(i);
                }
                b'"' | b'\'' => {
                    let triple = line[i..].starts_with(&[c, c, c]);
                    lexer.string = Some((c, triple));
                    i += if triple { 3 } else { 1 };
                    continue;
                }
                b'(' | b'[' | b'{' => lexer.depth += 1,
                b')' | b']' | b'}' => lexer.depth -= 1,
                b'\\' if line[i + 1..].iter().all(|b| *b == b'\n' || *b == b'\r') => {
                    lexer.continued = true;
                }
                _ => {}
            }
            i += 1;
        }
        if lexer.depth < 0 {
            lexer.depth = 0;
        }
        None
    }

    proptest::proptest! {
        /// The 16-byte search finds the same byte as a byte-by-byte look at `SPECIAL`, also
        /// across long runs of plain bytes.
        #[test]
        fn next_special_agrees_with_the_byte_loop(
            line in proptest::collection::vec(
                // Mostly plain bytes, so that whole 16-byte blocks without a special occur.
                proptest::sample::select(
                    [b"abcdefgh_=. :,xyz0123456789".repeat(5), b"#'\"\\()[]{}".to_vec()].concat(),
                ),
                0..120,
            ),
            from in 0usize..130,
        ) {
            let from = from.min(line.len());
            let expected = (from..line.len())
                .find(|&i| SPECIAL[line[i] as usize])
                .unwrap_or(line.len());
            proptest::prop_assert_eq!(next_special(&line, from), expected);
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_lexer_agrees_with_reference(
            text in proptest::collection::vec(
                proptest::sample::select(b"ab #'\"\\()[]{}\n\r=:".to_vec()),
                0..200,
            )
        ) {
            let (mut fast, mut slow) = (Lexer::default(), Lexer::default());
            for line in text.split_inclusive(|c| *c == b'\n') {
                let comments = (fast.feed(line), reference_feed(&mut slow, line));
                proptest::prop_assert_eq!(comments.0, comments.1);
                proptest::prop_assert_eq!(
                    (fast.depth, fast.string, fast.continued),
                    (slow.depth, slow.string, slow.continued)
                );
            }
        }
    }

    proptest::proptest! {
        /// The premise of `FileLines`: from any line where a statement can start, lexing
        /// afresh reads the rest of the file as the one pass over the whole file did.
        #[test]
        fn a_boundary_line_lexes_as_a_fresh_start(
            fragments in proptest::collection::vec(
                proptest::sample::select(vec![
                    "def f(x):\n", "    y = (1,\n", "2)\n", "    s = '''doc\n", "''' + x\n",
                    "    return x  # (\n", "class C:\n", "  z = [\n", "]\n", "a = 1 \\\n",
                    "    b\n", "\n", "    t = 'it''s'\n", "@d(\n", "    k=1)\n", "x = \"#\"\n",
                ]),
                0..40,
            )
        ) {
            let src = fragments.concat();
            let src = src.as_bytes();
            let table = FileLines::new(src);
            let read = |lines: &mut dyn Iterator<Item = Line>| -> Vec<(usize, bool)> {
                lines.map(|line| (line.start, line.boundary)).collect()
            };
            for line in table.lines(0, src.len()).filter(|line| line.boundary) {
                proptest::prop_assert_eq!(
                    read(&mut table.lines(line.start, src.len())),
                    read(&mut lex_lines(src, line.start, src.len()))
                );
            }
        }
    }

    /// The blanking `code_hit` that the early-exit one replaced: blank comments (and strings,
    /// and bare string statements, as `skip` says) and search again.
    fn reference_code_hit(tokens: &Tokens, text: &[u8], skip: NotCode) -> bool {
        let mut code = text.to_vec();
        let mut lexer = Lexer::default();
        let mut offset = 0;
        let mut bare_string: Option<usize> = None;
        while offset < text.len() {
            let line_end =
                memchr::memchr(b'\n', &text[offset..]).map_or(text.len(), |i| offset + i + 1);
            let line = &text[offset..line_end];
            if skip == NotCode::CommentsAndBareStrings
                && lexer.at_statement_boundary()
                && starts_with_string(line.trim_ascii_start())
            {
                bare_string = Some(offset);
            }
            let comment = lexer.feed_with(line, |span| {
                if skip == NotCode::CommentsAndStrings {
                    code[offset + span.start..offset + span.end].fill(b' ');
                }
            });
            if let Some(at) = comment {
                code[offset + at..line_end].fill(b' ');
            }
            if let Some(start) = bare_string
                && lexer.at_statement_boundary()
            {
                let rest = &line[..comment.unwrap_or(line.len())];
                if rest
                    .trim_ascii_end()
                    .last()
                    .is_some_and(|c| matches!(c, b'"' | b'\''))
                {
                    code[start..line_end].fill(b' ');
                }
                bare_string = None;
            }
            offset = line_end;
        }
        tokens.hit(&code)
    }

    proptest::proptest! {
        #[test]
        fn code_hit_agrees_with_blanking(
            fragments in proptest::collection::vec(
                proptest::sample::select(vec![
                    "x = is_sm90()\n", "# is_sm90\n", "\"\"\"is_sm90\n", "\"\"\"\n",
                    "'is_sm90'\n", "y = 'is_sm90' + z\n", "f(\n", ")\n", "\"a\".join(is_sm90)\n",
                    "    pass  # is_sm90\n", "s = '''\n", "def f():\n", "    \"doc\"\n",
                    "r\"is_sm90\" \\\n", "v\n", "'it''s' is_sm90\n", "\n", "    is_sm90 = 1\n",
                ]),
                0..24,
            )
        ) {
            let tokens = Tokens::new(["is_sm"]);
            let text = fragments.concat();
            for skip in [NotCode::Comments, NotCode::CommentsAndBareStrings, NotCode::CommentsAndStrings] {
                proptest::prop_assert_eq!(
                    code_hit(&tokens, text.as_bytes(), skip),
                    reference_code_hit(&tokens, text.as_bytes(), skip),
                    "{:?}", text
                );
            }
        }
    }

    fn chunks(src: &str) -> Vec<&str> {
        top_level_statements(src.as_bytes())
            .into_iter()
            .map(|(s, e)| &src[s..e])
            .collect()
    }

    #[test]
    fn splits_top_level_statements_only() {
        let src = "import os\n\
                   x = (1,\n2)\n\
                   @cache\n\
                   def f():\n    return 1\n\
                   if a:\n    pass\nelse:\n    pass\n\
                   s = '''\nnot = a statement\n'''\n\
                   y = 1 + \\\n2\n\
                   # comment\n\
                   z = \"#(\"\n";
        assert_eq!(
            chunks(src),
            vec![
                "import os\n",
                "x = (1,\n2)\n",
                "@cache\ndef f():\n    return 1\n",
                "if a:\n    pass\nelse:\n    pass\n",
                "s = '''\nnot = a statement\n'''\n",
                "y = 1 + \\\n2\n# comment\n",
                "z = \"#(\"\n",
            ]
        );
    }

    #[test]
    fn keeps_token_statements_and_what_they_define() {
        let big = "a".repeat(2_000);
        let src = format!(
            "@cache\ndef fast():\n    return is_sm100()\nFAST = fast()\ndef user():\n    x = '{big}'\n    return FAST\ndef other():\n    y = '{big}'\n"
        );
        // `user` and `other` have no token and are over a kilobyte: split, so that of `user`
        // only its header and the statement naming `FAST` are parsed.
        let kept = kept(&src, &Tokens::new(["is_sm"]));
        assert_eq!(
            kept,
            [
                "@cache\ndef fast():\n    return is_sm100()\n",
                "FAST = fast()\n",
                "def user():\n",
                "    return FAST\n"
            ]
        );
    }

    fn kept(src: &str, tokens: &Tokens) -> Vec<String> {
        relevant_ranges(src.as_bytes(), tokens)
            .into_iter()
            .map(|(s, e)| src[s..e].to_string())
            .collect()
    }

    /// The first line of each kept piece, trimmed.
    fn kept_heads(src: &str, tokens: &Tokens) -> Vec<String> {
        kept(src, tokens)
            .iter()
            .map(|k| k.lines().next().unwrap_or_default().trim().to_string())
            .collect()
    }

    #[test]
    fn plain_definitions_and_classes_are_split_to_what_can_matter() {
        let src = include_str!("../../testdata/sites/mixed/sglang/srt/layers/dispatch.py");
        let tokens = Tokens::new(super::super::tokens::FORM_TOKENS);
        let text = kept(src, &tokens).concat();
        // Padding statements (`cfg["option_N"] = ...`) are in every big block; none is kept.
        assert!(!text.contains("option_"), "{text}");
        // `choose_backend` has no token: its header, the assignment from the helper nested in
        // an `if` branch, and the test that reads it are kept.
        assert!(text.contains("def choose_backend(args):\n"));
        assert!(text.contains("family = _resolve_family(args.arch)"));
        assert!(text.contains("if family == \"sm100\":"));
        // A class is split into its methods whatever its tokens; only `wide` has one.
        assert!(text.contains("class TileConfig:\n"));
        assert!(text.contains("def wide(self):"));
        assert!(!text.contains("def describe(self):") && !text.contains("def __init__"));
        // A big function is split past a decorator that spans lines.
        assert!(text.contains("@register(\n"));
        assert!(text.contains("if is_sm100_supported():"));
        // In `route`, the `if` chain is split into clauses: the `elif` that calls the helper
        // is kept, with the `if` before it and the smallest statement of each body, so that
        // the pieces still parse; the `else` clause is dropped.
        assert!(text.contains("    if args.mode == \"eager\":\n        cfg[\"eager\"] = True\n"));
        assert!(text.contains("    elif _resolve_family(args.arch) == \"sm100\":\n"));
        assert!(!text.contains("cfg[\"default\"]"));
        // A call to a function too large to infer (it has a token) is kept, as is its reader.
        assert!(text.contains("tiles = _pick_tiles(x)\n    if tiles > 64:"));
        let ranges = relevant_ranges(src.as_bytes(), &tokens);
        let tree = crate::syntax::parse_ranges(src.as_bytes(), &ranges);
        assert!(!tree.root_node().has_error());
    }

    #[test]
    fn bound_names_reads_plain_targets_and_import_lists_to_their_end() {
        let names = |statement: &str| -> Vec<String> {
            bound_names(statement.as_bytes())
                .iter()
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect()
        };
        assert_eq!(
            names("from m import (\n    a,\n    b as c,\n)\nfoo(d)\n"),
            ["a", "c"]
        );
        // A backslash continues the list one line only: `x.y = z` binds nothing.
        assert_eq!(names("from m import a, \\\n    b\nx.y = z\n"), ["a", "b"]);
        assert_eq!(names("[a, b] = f()"), ["a", "b"]);
        assert!(names("self.x: int = 1").is_empty());
        assert_eq!(
            names("try:\n    import torch.cuda\nexcept ImportError:\n    torch = None\n"),
            ["torch", "torch"]
        );
    }

    #[test]
    fn attribute_targets_and_continuation_lines_bind_no_name() {
        let pad =
            "    cfg['k'] = cfg.get('k', 0) + len('padding padding padding padding')\n".repeat(60);
        // `self.dev = ...` binds no name the lowering follows, and the lines that continue a
        // call bind nothing; a plain target, a tuple and an import list do.
        let src = format!(
            "def a(self, cfg):\n    self.dev = pick()\n    opts = make(\n        dev,\n    )\n\
             {pad}    major, _minor = caps()\n    from m import (\n        x,\n        y as z,\n    )\n\
             {pad}    if is_sm90(self.dev, dev, major, z):\n        return 1\n"
        );
        let kept = kept(&src, &Tokens::new(["is_sm"])).concat();
        assert!(!kept.contains("self.dev = pick()"), "{kept}");
        assert!(!kept.contains("opts = make("), "{kept}");
        assert!(kept.contains("major, _minor = caps()"), "{kept}");
        assert!(kept.contains("y as z"), "{kept}");
    }

    #[test]
    fn a_plain_call_naming_a_derived_name_is_kept() {
        let pad =
            "    cfg['k'] = cfg.get('k', 0) + len('padding padding padding padding')\n".repeat(60);
        // `_fast` is derived (its body has a token). Every statement naming it is parsed: a
        // plain call may pass it on to a callee's parameter. One that does not name it is not.
        let src = format!(
            "def _fast():\n    return is_sm90()\n\n\
             def run(cfg):\n    launch(cfg, _fast())\n{pad}    log(_fast)\n    \
             launch(1 if _fast() else 2)\n    ok = _fast()\n    cfg.flag == _fast()\n    \
             log(cfg)\n"
        );
        let kept = kept_heads(&src, &Tokens::new(["is_sm"]));
        let has = |head: &str| kept.iter().any(|k| k == head);
        assert!(!has("log(cfg)"), "{kept:?}");
        for head in [
            "launch(cfg, _fast())",
            "log(_fast)",
            "launch(1 if _fast() else 2)",
            "ok = _fast()",
            "cfg.flag == _fast()",
        ] {
            assert!(has(head), "{head}: {kept:?}");
        }
    }

    #[test]
    fn a_local_binding_is_kept_for_readers_in_its_own_function_only() {
        let pad =
            "    cfg['k'] = cfg.get('k', 0) + len('padding padding padding padding')\n".repeat(60);
        let src = format!(
            "def a(cfg):\n    dev = pick()\n{pad}    if is_sm90(dev):\n        return 1\n\n\
             def b(cfg):\n    dev = other()\n{pad}    if is_sm90():\n        return 2\n"
        );
        let kept = kept(&src, &Tokens::new(["is_sm"])).concat();
        assert!(kept.contains("dev = pick()"), "{kept}");
        assert!(!kept.contains("dev = other()"), "{kept}");
    }

    #[test]
    fn derived_names_match_whole_identifiers_only() {
        let big = "a".repeat(2_000);
        let src = format!(
            "def run():\n    return is_sm100()\n\
             def user():\n    x = '{big}'\n    return run()\n\
             def unrelated():\n    y = '{big}'\n    running = 1\n    return running\n\
             def method_use():\n    z = '{big}'\n    return self.run\n"
        );
        let heads = kept_heads(&src, &Tokens::new(["is_sm"]));
        assert_eq!(
            heads,
            [
                "def run():",
                "def user():",
                "return run()",
                "def method_use():",
                "return self.run"
            ]
        );
    }

    #[test]
    fn a_docstring_naming_a_derived_name_is_not_kept() {
        let big = "a".repeat(2_000);
        let src = format!(
            "def run():\n    return is_sm100()\n\
             def user():\n    \"\"\"Calls run() when\n    it can.\"\"\"\n    x = '{big}'\n    \
             return run()\n"
        );
        let kept = kept(&src, &Tokens::new(["is_sm"]));
        assert!(kept.iter().all(|k| !k.contains("Calls run()")), "{kept:?}");
        assert!(kept.iter().any(|k| k.contains("return run()")), "{kept:?}");
    }

    #[test]
    fn bare_strings_are_string_literals_only() {
        for bare in [
            "\"\"\"Doc.\"\"\"\n",
            "    r'''Raw\n    doc'''  # note (x)\n",
            "'a' \"b\" \\\n    rb'c'\n",
        ] {
            assert!(is_bare_string(bare.as_bytes()), "{bare}");
        }
        for code in [
            "x = 'a'\n",
            "'a'.join(run())\n",
            "'a' if run() else 'b'\n",
            "f'{run()}'\n",
            "('a'\n 'b')\n",
            "'a' + b\n",
        ] {
            assert!(!is_bare_string(code.as_bytes()), "{code}");
        }
    }

    #[test]
    fn tokens_in_comments_and_docstrings_are_not_code() {
        let tokens = Tokens::new(["is_sm", "capabilit"]);
        let statement = |text: &str| statement_code_hit(&tokens, text.as_bytes());
        let expression = |text: &str| expression_code_hit(&tokens, text.as_bytes());
        assert!(!statement(
            "def f(x):\n    # needs compute capability 9.0\n    return x\n"
        ));
        assert!(!statement(
            "def f(x):\n    \"\"\"Runs on\n    is_sm90 devices.\"\"\"\n    return x\n"
        ));
        assert!(!statement(
            "def f(x):\n    r'is_sm90 only'  # capability\n    return x\n"
        ));
        assert!(statement(
            "def f(x):\n    \"\"\"Doc.\"\"\"\n    return is_sm90(x)  # fast\n"
        ));
        // A string in code may name a helper (probe tables): it counts.
        assert!(statement("PROBES = {\"sm100\": \"is_sm100_supported\"}\n"));
        assert!(statement("def f():\n    \"is_sm90\".join(x)\n"));
        assert!(expression("\"is_sm100_supported\""));
        assert!(!expression("(a  # is_sm90 elsewhere\n and b)"));
        // A `#` inside a string does not start a comment.
        assert!(statement("x = \"#\" + str(is_sm90())\n"));
    }

    #[test]
    fn a_file_whose_tokens_are_all_in_comments_keeps_nothing() {
        let src = "# Needs compute capability 9.0 (is_sm90).\nimport os\n\n\ndef f():\n    \"\"\"Blackwell: is_sm100.\"\"\"\n    return os.sep\n";
        assert!(kept(src, &Tokens::new(["is_sm", "capabilit"])).is_empty());
    }

    /// The text a skipping parse hands tree-sitter.
    fn parsed_text(skipped: &PlainBodiesSkipped) -> String {
        skipped
            .ranges
            .iter()
            .map(|&(s, e)| String::from_utf8_lossy(&skipped.text[s..e]).into_owned())
            .collect()
    }

    #[test]
    fn plain_function_bodies_are_skipped_for_resolution() {
        let src = "import torch\n\
                   \n\
                   def plain(x):\n    \"\"\"Doc: is_sm90.\"\"\"\n    y = x + 1\n    return y\n\
                   \n\
                   def fast():\n    def inner():\n        return 1\n    return is_sm90() and inner()\n\
                   class C:\n    def method(self):\n        return self.x\n\n    def check(self):\n        return is_sm100()\n\
                   def one_line(): return 2\n\
                   FLAG = plain(3)\n";
        let tokens = Tokens::new(["is_sm"]);
        let skipped = skip_plain_bodies(src.as_bytes(), &tokens).expect("bodies to skip");
        assert_eq!(skipped.text.len(), src.len());
        let parsed = parsed_text(&skipped);
        // Plain bodies become `0`; functions with a token keep theirs, nested ones included.
        assert!(parsed.contains("def plain(x):\n    0"), "{parsed}");
        assert!(!parsed.contains("y = x + 1"));
        assert!(parsed.contains("def inner():\n        return 1"));
        assert!(parsed.contains("def method(self):\n        0"));
        assert!(!parsed.contains("self.x"));
        assert!(parsed.contains("return is_sm100()"));
        assert!(parsed.contains("def one_line(): return 2\nFLAG = plain(3)\n"));
        let tree = crate::syntax::parse_ranges(&skipped.text, &skipped.ranges);
        assert!(!tree.root_node().has_error());
        // Positions are the file's.
        let flag = src.find("FLAG").unwrap();
        let node = tree
            .root_node()
            .descendant_for_byte_range(flag, flag + 4)
            .unwrap();
        assert_eq!(node.start_position().row, src[..flag].matches('\n').count());
        assert!(skip_plain_bodies(b"def f():\n    return is_sm90()\n", &tokens).is_none());
    }

    #[test]
    fn every_function_body_is_skipped_for_signatures() {
        let src = "import torch\n\
                   \n\
                   def fast(x, arch=90):\n    def inner():\n        return 1\n    return is_sm90() and inner()\n\
                   class C(Base):\n    def __init__(self, cc):\n        self.cc = is_sm100(cc)\n\n    def check(self, *, major):\n        return major >= 9\n\
                   FLAG = fast(3)\n";
        let file = skeleton(src.as_bytes());
        let parsed: String = file
            .ranges
            .iter()
            .map(|&(s, e)| String::from_utf8_lossy(&file.text[s..e]).into_owned())
            .collect();
        // Token or not, every body is a stub; signatures, classes and module code stay.
        assert!(parsed.contains("def fast(x, arch=90):\n    0"), "{parsed}");
        assert!(!parsed.contains("inner"), "{parsed}");
        assert!(parsed.contains("class C(Base):\n    def __init__(self, cc):\n        0"));
        assert!(!parsed.contains("self.cc"));
        assert!(parsed.contains("def check(self, *, major):\n        0"));
        assert!(!parsed.contains("major >= 9"));
        assert!(parsed.contains("import torch\n") && parsed.contains("FLAG = fast(3)\n"));
        let tree = crate::syntax::parse_ranges(&file.text, &file.ranges);
        assert!(!tree.root_node().has_error());
    }

    #[test]
    fn a_skeleton_parses_the_statements_that_name_one_name() {
        let src = "import torch\n\
                   from .base import (\n    Base,\n    helper as fast_helper,\n)\n\
                   \n\
                   @register\ndef fast(x, arch=90):\n    return fast_inner(x)\n\
                   class C(Base):\n    def __init__(self, cc):\n        self.fast = cc\n\
                   try:\n    from .ext import fast_kernel\nexcept ImportError:\n    fast_kernel = None\n\
                   if TYPE:\n    def fast(x, y): ...\n\
                   FLAG = fast(3)\n";
        let file = skeleton(src.as_bytes());
        // Each part's text, its trailing blanks (a stub's, a line's end) left out.
        let text = |name: &str| -> Vec<String> {
            file.ranges_naming(name)
                .iter()
                .map(|&(s, e)| {
                    String::from_utf8_lossy(&file.text[s..e])
                        .trim_end()
                        .to_string()
                })
                .collect()
        };
        // The decorated definition whole (decorator, header, stub), the `if` that defines it
        // again and the use; not the class that names it only in a skipped body, not
        // `fast_kernel` or `fast_helper`.
        assert_eq!(
            text("fast"),
            [
                "@register\ndef fast(x, arch=90):\n    0",
                "if TYPE:\n    def fast(x, y): ...",
                "FLAG = fast(3)",
            ]
        );
        assert_eq!(
            text("Base"),
            [
                "from .base import (\n    Base,\n    helper as fast_helper,\n)",
                "class C(Base):\n    def __init__(self, cc):\n        0",
            ]
        );
        assert_eq!(
            text("fast_kernel"),
            ["try:\n    from .ext import fast_kernel\nexcept ImportError:\n    fast_kernel = None"]
        );
        // Named only in a skipped body, or nowhere.
        assert!(text("fast_inner").is_empty() && text("missing").is_empty());
        // A file without a function body is its own skeleton.
        let plain = skeleton(b"import os\nX = 1\n");
        assert_eq!(plain.text, b"import os\nX = 1\n");
        assert_eq!(plain.ranges_naming("X"), [(10, 16)]);
    }

    #[test]
    fn an_indented_local_binding_is_as_small_as_its_code() {
        let call = format!(
            "    wide = pick_wide(\n{}    )\n",
            "        argument_name=argument_value,\n".repeat(9)
        );
        assert!(call.len() > SMALL_LOCAL_BYTES);
        assert!(small_enough(call.as_bytes()));
        assert!(!small_enough(
            format!("    x = {}\n", "a".repeat(SMALL_LOCAL_BYTES)).as_bytes()
        ));
    }

    #[test]
    fn a_class_name_is_not_derived_but_a_multi_line_decorated_helper_is() {
        let big = "a".repeat(2_000);
        let src = format!(
            "class Platform:\n    def ok(self):\n        return is_sm100()\n\
             def uses_class():\n    x = '{big}'\n    return Platform()\n\
             @register(\n    name='fast',\n)\ndef fast():\n    return is_sm90()\n\
             def uses_fast():\n    y = '{big}'\n    return fast()\n"
        );
        let heads = kept_heads(&src, &Tokens::new(["is_sm"]));
        assert_eq!(
            heads,
            [
                "class Platform:",
                "@register(",
                "def uses_fast():",
                "return fast()"
            ]
        );
    }

    #[test]
    fn only_functions_with_a_token_derive_their_callers() {
        // `wrapper` calls the helper but has no token itself: the lowerer infers no helper
        // without one (`lower::Lowerer::function`), so neither the statements that call
        // `wrapper` nor a flag bound to its result can be gates, and none is kept.
        let big = "a".repeat(2_000);
        let src = format!(
            "def helper():\n    return is_sm90()\n\
             def wrapper():\n    return helper()\n\
             FLAG = wrapper()\n\
             def calls_wrapper():\n    x = '{big}'\n    return wrapper()\n\
             FAST = helper()\n\
             def reads_fast():\n    y = '{big}'\n    return FAST\n"
        );
        let heads = kept_heads(&src, &Tokens::new(["is_sm"]));
        assert_eq!(
            heads,
            [
                "def helper():",
                "def wrapper():",
                "FAST = helper()",
                "def reads_fast():",
                "return FAST"
            ]
        );
    }

    #[test]
    fn a_big_table_of_names_is_not_parsed_but_a_small_probe_table_is() {
        let rows: String = (0..200)
            .map(|i| {
                format!("    \"cudaDevAttrComputeCapabilityMajor{i}\": (\"hipAttr{i}\", API),\n")
            })
            .collect();
        let src = format!(
            "MAP = {{\n{rows}}}\n\
             PROBES = {{\"sm100\": \"is_sm100_supported\"}}\n\
             CHECKED = {{\n{rows}    \"x\": is_sm90(),\n}}\n"
        );
        let heads = kept_heads(&src, &Tokens::new(["capabilit", "is_sm"]));
        assert_eq!(
            heads,
            [
                "PROBES = {\"sm100\": \"is_sm100_supported\"}",
                "CHECKED = {"
            ]
        );
        let tokens = Tokens::new(["capabilit"]);
        assert!(!code_hit_outside_strings(
            &tokens,
            b"{\"ComputeCapability\": 1}  # capability"
        ));
        assert!(code_hit_outside_strings(
            &tokens,
            b"{\"a\": get_device_capability()}"
        ));
        assert!(code_hit_outside_strings(
            &tokens,
            b"'''\nx\n''' + get_device_capability()"
        ));
    }

    #[test]
    fn commented_constants_are_small_bindings_and_found_by_name() {
        let src = b"import os\n\n# Sizes per device capability\n# (kept for importers)\nSIZES: dict[int, int] = {\n    90: 1,\n}\nOTHER == 3\n";
        assert!(has_top_level_assignment(src, "SIZES"));
        assert!(!has_top_level_assignment(src, "OTHER"));
        assert!(!has_top_level_assignment(src, "MISSING"));
        assert!(small_enough(b"# a comment\nSIZES = {90: 1}\n"));
        assert!(small_enough(b"# a comment\n\nimport torch\n"));
    }
}
