//! The C preprocessor's conditionals, evaluated per target without running a preprocessor:
//! which lines of a CUDA source survive `#if` / `#ifdef` / `#ifndef` / `#elif` / `#else` /
//! `#endif` when nvcc compiles it for one arch (device pass, `__CUDA_ARCH__` set) or for the
//! host (no `__CUDA_ARCH__`).
//!
//! Values are three-valued: a macro gatefix cannot know (a `-D` flag it did not see, a
//! toolkit version it was not told) is `Unknown`, never guessed; `0 && x` is still `0` and
//! `1 || x` still `1`. Every input is handled in bounded time: expressions nest at most
//! [`MAX_DEPTH`] deep, and the line walk is one pass.

use std::collections::HashMap;

use crate::arch::{Arch, Variant};

/// Deeper `#if` expressions are `Unknown` (real guards nest a few levels).
pub const MAX_DEPTH: usize = 64;

/// A truth value that may be unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tri {
    Yes,
    No,
    Unknown,
}

impl Tri {
    pub fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::No, _) | (_, Tri::No) => Tri::No,
            (Tri::Yes, Tri::Yes) => Tri::Yes,
            _ => Tri::Unknown,
        }
    }
    pub fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
            (Tri::No, Tri::No) => Tri::No,
            _ => Tri::Unknown,
        }
    }
    pub fn negate(self) -> Tri {
        match self {
            Tri::Yes => Tri::No,
            Tri::No => Tri::Yes,
            Tri::Unknown => Tri::Unknown,
        }
    }
    /// `0` is false, other integers true, `None` unknown.
    pub fn of(value: Option<i64>) -> Tri {
        match value {
            Some(0) => Tri::No,
            Some(_) => Tri::Yes,
            None => Tri::Unknown,
        }
    }
}

/// What a macro is in one compilation pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Macro {
    /// Defined, with this integer value (`1` for a bare `-DX`).
    Value(i64),
    /// Defined, value not an integer gatefix can read.
    Defined,
    Undefined,
    /// gatefix cannot tell whether it is defined.
    Unknown,
}

/// The macros of one pass: the compiler's own (`__CUDA_ARCH__`, the feature macros, the
/// toolkit version when known) and the `-D` flags of the build. Names not listed are
/// [`Macro::Unknown`], except the `__CUDA_ARCH*` family, which the compiler alone defines.
#[derive(Debug, Clone, Default)]
pub struct Env {
    macros: HashMap<String, Macro>,
}

impl Env {
    /// nvcc's device pass for `target`, built as `variant` (`None`: not known whether the
    /// build uses the `a`, `f` or plain target, so the feature macros are unknown), with the
    /// toolkit version `cuda` (`(12, 9)`) when known.
    pub fn device(target: Arch, variant: Option<Variant>, cuda: Option<(u32, u32)>) -> Env {
        let mut env = Env::common(cuda);
        let arch = i64::from(target.sm()) * 10;
        env.set("__CUDA_ARCH__", Macro::Value(arch));
        let (specific, family) = match variant {
            Some(Variant::A) => (Macro::Value(arch), Macro::Value(arch)),
            Some(Variant::F) => (Macro::Undefined, Macro::Value(arch)),
            Some(Variant::Plain) => (Macro::Undefined, Macro::Undefined),
            None => (Macro::Unknown, Macro::Unknown),
        };
        env.set("__CUDA_ARCH_SPECIFIC__", specific);
        env.set("__CUDA_ARCH_FAMILY_SPECIFIC__", family);
        env.set(&format!("__CUDA_ARCH_FEAT_SM{}_ALL", target.sm()), specific);
        env
    }

    /// nvcc's host pass: no `__CUDA_ARCH__`.
    pub fn host(cuda: Option<(u32, u32)>) -> Env {
        Env::common(cuda)
    }

    fn common(cuda: Option<(u32, u32)>) -> Env {
        let mut env = Env::default();
        env.set("__CUDACC__", Macro::Value(1));
        env.set("__NVCC__", Macro::Value(1));
        env.set("__CUDA_ARCH__", Macro::Undefined);
        env.set("__CUDA_ARCH_SPECIFIC__", Macro::Undefined);
        env.set("__CUDA_ARCH_FAMILY_SPECIFIC__", Macro::Undefined);
        env.set("__HIP_PLATFORM_AMD__", Macro::Undefined);
        env.set("__HIPCC__", Macro::Undefined);
        if let Some((major, minor)) = cuda {
            let (major, minor) = (i64::from(major), i64::from(minor));
            env.set("__CUDACC_VER_MAJOR__", Macro::Value(major));
            env.set("__CUDACC_VER_MINOR__", Macro::Value(minor));
            env.set("CUDA_VERSION", Macro::Value(major * 1000 + minor * 10));
            env.set("CUDART_VERSION", Macro::Value(major * 1000 + minor * 10));
        }
        env
    }

    pub fn set(&mut self, name: &str, value: Macro) {
        self.macros.insert(name.to_string(), value);
    }

    /// `-DNAME` / `-DNAME=VALUE` flags of the build.
    pub fn define_flags<'a>(&mut self, flags: impl IntoIterator<Item = &'a str>) {
        for flag in flags {
            let Some(body) = flag.strip_prefix("-D") else {
                continue;
            };
            let (name, value) = body.split_once('=').unwrap_or((body, "1"));
            if !is_identifier(name) {
                continue;
            }
            let value = parse_int(value).map_or(Macro::Defined, Macro::Value);
            self.set(name, value);
        }
    }

    pub fn get(&self, name: &str) -> Macro {
        match self.macros.get(name) {
            Some(m) => *m,
            // Only the compiler defines these; a name of the family it did not set is unset.
            None if name.starts_with("__CUDA_ARCH") => Macro::Undefined,
            None => Macro::Unknown,
        }
    }
}

fn is_identifier(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

/// `900`, `0x10`, `12080L`, `1u`; `None` for anything else.
pub fn parse_int(text: &str) -> Option<i64> {
    let text = text.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    if text.len() > 1 && text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit()) {
        return i64::from_str_radix(&text[1..], 8).ok();
    }
    text.parse().ok()
}

/// Whether a condition names an architecture macro: only such guards can differ between
/// targets.
pub fn names_arch(condition: &str) -> bool {
    condition.contains("__CUDA_ARCH")
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Ident(String),
    Op(&'static str),
    /// Something the expression grammar has no place for (a string, a stray byte).
    Bad,
}

const OPS: &[&str] = &[
    "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "(", ")", "!", "~", "*", "/", "%", "+", "-",
    "<", ">", "&", "^", "|", "?", ":", ",",
];

fn tokenize(text: &str) -> Vec<Tok> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            out.push(parse_int(&text[start..i]).map_or(Tok::Bad, Tok::Num));
        } else if b == b'_' || b.is_ascii_alphabetic() {
            let start = i;
            while i < bytes.len() && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(Tok::Ident(text[start..i].to_string()));
        } else if b == b'\'' {
            // A character literal: its value is rarely what a guard tests; unknown.
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += 1;
            }
            i += 1;
            out.push(Tok::Bad);
        } else if let Some(op) = OPS.iter().find(|op| bytes[i..].starts_with(op.as_bytes())) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            out.push(Tok::Bad);
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The value of a `#if` expression; `None` when it depends on something unknown.
pub fn eval(condition: &str, env: &Env) -> Option<i64> {
    let tokens = tokenize(condition);
    let mut parser = Parser {
        tokens: &tokens,
        pos: 0,
        env,
        depth: 0,
    };
    let value = parser.ternary();
    if parser.pos != tokens.len() {
        return None;
    }
    value.ok().flatten()
}

/// The truth of a `#if` expression.
pub fn truth(condition: &str, env: &Env) -> Tri {
    Tri::of(eval(condition, env))
}

/// The parse failed (the expression is malformed): the whole condition is unknown.
struct Malformed;

type Value = Result<Option<i64>, Malformed>;

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    env: &'a Env,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ternary(&mut self) -> Value {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Malformed);
        }
        let cond = self.binary(0)?;
        let value = if self.eat("?") {
            let yes = self.ternary()?;
            if !self.eat(":") {
                return Err(Malformed);
            }
            let no = self.ternary()?;
            match cond {
                Some(0) => no,
                Some(_) => yes,
                None if yes == no => yes,
                None => None,
            }
        } else {
            cond
        };
        self.depth -= 1;
        Ok(value)
    }

    fn binary(&mut self, min_prec: u8) -> Value {
        let mut left = self.unary()?;
        while let Some(Tok::Op(op)) = self.peek() {
            let op = *op;
            let Some(prec) = precedence(op) else { break };
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let right = self.binary(prec + 1)?;
            left = apply(op, left, right);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Value {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Malformed);
        }
        let value = match self.tokens.get(self.pos).cloned() {
            Some(Tok::Op("!")) => {
                self.pos += 1;
                self.unary()?.map(|v| i64::from(v == 0))
            }
            Some(Tok::Op("-")) => {
                self.pos += 1;
                self.unary()?.map(i64::wrapping_neg)
            }
            Some(Tok::Op("+")) => {
                self.pos += 1;
                self.unary()?
            }
            Some(Tok::Op("~")) => {
                self.pos += 1;
                self.unary()?.map(|v| !v)
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let v = self.ternary()?;
                if !self.eat(")") {
                    return Err(Malformed);
                }
                v
            }
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Some(n)
            }
            Some(Tok::Ident(name)) if name == "defined" => {
                self.pos += 1;
                let paren = self.eat("(");
                let Some(Tok::Ident(name)) = self.tokens.get(self.pos).cloned() else {
                    return Err(Malformed);
                };
                self.pos += 1;
                if paren && !self.eat(")") {
                    return Err(Malformed);
                }
                match self.env.get(&name) {
                    Macro::Value(_) | Macro::Defined => Some(1),
                    Macro::Undefined => Some(0),
                    Macro::Unknown => None,
                }
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if matches!(self.peek(), Some(Tok::Op("("))) {
                    // A function-like macro: skip its balanced arguments; value unknown.
                    let mut depth = 0usize;
                    while let Some(tok) = self.peek().cloned() {
                        self.pos += 1;
                        match tok {
                            Tok::Op("(") => depth += 1,
                            Tok::Op(")") => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    None
                } else {
                    match self.env.get(&name) {
                        Macro::Value(v) => Some(v),
                        // An undefined name is 0 in `#if` (C11 6.10.1).
                        Macro::Undefined => Some(0),
                        Macro::Defined | Macro::Unknown => None,
                    }
                }
            }
            _ => return Err(Malformed),
        };
        self.depth -= 1;
        Ok(value)
    }
}

fn precedence(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | "<=" | ">" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

fn apply(op: &str, left: Option<i64>, right: Option<i64>) -> Option<i64> {
    match op {
        "&&" => match (left, right) {
            (Some(0), _) | (_, Some(0)) => Some(0),
            (Some(_), Some(_)) => Some(1),
            _ => None,
        },
        "||" => match (left, right) {
            (Some(l), _) if l != 0 => Some(1),
            (_, Some(r)) if r != 0 => Some(1),
            (Some(_), Some(_)) => Some(0),
            _ => None,
        },
        _ => {
            let (l, r) = (left?, right?);
            Some(match op {
                "|" => l | r,
                "^" => l ^ r,
                "&" => l & r,
                "==" => i64::from(l == r),
                "!=" => i64::from(l != r),
                "<" => i64::from(l < r),
                "<=" => i64::from(l <= r),
                ">" => i64::from(l > r),
                ">=" => i64::from(l >= r),
                "<<" => l.checked_shl(u32::try_from(r).ok()?)?,
                ">>" => l.checked_shr(u32::try_from(r).ok()?)?,
                "+" => l.wrapping_add(r),
                "-" => l.wrapping_sub(r),
                "*" => l.wrapping_mul(r),
                "/" => l.checked_div(r)?,
                "%" => l.checked_rem(r)?,
                _ => return None,
            })
        }
    }
}

/// One preprocessor directive of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// 1-based line of the `#`.
    pub line: u32,
    pub kind: DirectiveKind,
    /// The rest of the directive, continuation lines joined and comments removed.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectiveKind {
    If,
    Ifdef,
    Ifndef,
    Elif,
    Else,
    Endif,
    Define,
    Undef,
    Include,
    Other,
}

/// The directives of a file, and how many lines it has. `code` must be the file with
/// comments and strings blanked (`cpp::blank`), so that a `#` inside them is not read.
pub fn directives(code: &str) -> (Vec<Directive>, u32) {
    let mut out = Vec::new();
    let lines: Vec<&str> = code.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let trimmed = lines[i].trim_start();
        if let Some(rest) = trimmed.strip_prefix('#') {
            let mut text = rest.trim_end().to_string();
            while text.ends_with('\\') && i + 1 < lines.len() {
                text.pop();
                i += 1;
                text.push(' ');
                text.push_str(lines[i].trim());
            }
            let text = text.trim_start();
            let word_end = text
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(text.len());
            let (word, rest) = text.split_at(word_end);
            let kind = match word {
                "if" => DirectiveKind::If,
                "ifdef" => DirectiveKind::Ifdef,
                "ifndef" => DirectiveKind::Ifndef,
                "elif" => DirectiveKind::Elif,
                "else" => DirectiveKind::Else,
                "endif" => DirectiveKind::Endif,
                "define" => DirectiveKind::Define,
                "undef" => DirectiveKind::Undef,
                "include" => DirectiveKind::Include,
                _ => DirectiveKind::Other,
            };
            out.push(Directive {
                line: start as u32 + 1,
                kind,
                text: rest.trim().to_string(),
            });
        }
        i += 1;
    }
    (out, lines.len() as u32)
}

/// The liveness of every line of a file in one pass.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Index 0 is line 1. Directive lines themselves are `Yes` at top level.
    pub lines: Vec<Tri>,
    /// For each line, the innermost enclosing conditional directive (index into the
    /// directives) whose branch is not `Yes`: the guard that removes or clouds it.
    pub guard: Vec<Option<u32>>,
}

/// Walks the conditionals once. `#define` / `#undef` reached on a live branch update the
/// environment (a macro defined on an unknown branch becomes unknown). An `#ifndef X`
/// directly followed by `#define X` is an include guard: true on first inclusion.
pub fn liveness(dirs: &[Directive], line_count: u32, env: &Env) -> Liveness {
    struct Frame {
        parent: Tri,
        parent_guard: Option<u32>,
        taken: Tri,
        current: Tri,
        directive: u32,
    }
    let mut env = env.clone();
    let mut stack: Vec<Frame> = Vec::new();
    let mut lines = vec![Tri::Yes; line_count as usize];
    let mut guard = vec![None; line_count as usize];
    let mut next_line = 1u32;
    // The top frame alone answers, in constant time (hostile input nests deeply).
    let state = |stack: &Vec<Frame>| match stack.last() {
        None => (Tri::Yes, None),
        Some(f) if f.current != Tri::Yes => (f.current, Some(f.directive)),
        Some(f) => (f.current, f.parent_guard),
    };
    for (index, dir) in dirs.iter().enumerate() {
        let (live, parent_guard) = state(&stack);
        let g = parent_guard;
        for line in next_line..dir.line.min(line_count + 1) {
            lines[line as usize - 1] = live;
            guard[line as usize - 1] = g;
        }
        next_line = dir.line.max(next_line);
        let word = || dir.text.split_whitespace().next().unwrap_or("").to_string();
        let index = index as u32;
        match dir.kind {
            DirectiveKind::If | DirectiveKind::Ifdef | DirectiveKind::Ifndef => {
                let value = match dir.kind {
                    DirectiveKind::If => truth(&dir.text, &env),
                    DirectiveKind::Ifdef => truth(&format!("defined({})", word()), &env),
                    _ => {
                        let name = word();
                        let include_guard = dirs.get(index as usize + 1).is_some_and(|next| {
                            next.kind == DirectiveKind::Define
                                && next.text.split_whitespace().next() == Some(&name)
                        }) && env.get(&name) == Macro::Unknown;
                        if include_guard {
                            Tri::Yes
                        } else {
                            truth(&format!("!defined({name})"), &env)
                        }
                    }
                };
                stack.push(Frame {
                    parent: live,
                    parent_guard,
                    taken: value,
                    current: live.and(value),
                    directive: index,
                });
            }
            DirectiveKind::Elif => {
                if let Some(frame) = stack.last_mut() {
                    let value = truth(&dir.text, &env);
                    frame.current = frame.parent.and(frame.taken.negate()).and(value);
                    frame.taken = frame.taken.or(value);
                    frame.directive = index;
                }
            }
            DirectiveKind::Else => {
                if let Some(frame) = stack.last_mut() {
                    frame.current = frame.parent.and(frame.taken.negate());
                    frame.taken = Tri::Yes;
                    frame.directive = index;
                }
            }
            DirectiveKind::Endif => {
                stack.pop();
            }
            DirectiveKind::Define | DirectiveKind::Undef => {
                let name = word();
                let name = name.split('(').next().unwrap_or("");
                if is_identifier(name) && live != Tri::No {
                    let value = if dir.kind == DirectiveKind::Undef {
                        Macro::Undefined
                    } else if live == Tri::Unknown {
                        Macro::Unknown
                    } else {
                        let body =
                            dir.text[dir.text.find(name).map_or(0, |i| i + name.len())..].trim();
                        if body.is_empty() {
                            Macro::Defined
                        } else {
                            parse_int(body).map_or(Macro::Defined, Macro::Value)
                        }
                    };
                    // A macro defined in terms of others (`#define X (A > 1)`) is only
                    // known as defined; its value is not read.
                    let value = if dir.kind == DirectiveKind::Undef && live == Tri::Unknown {
                        Macro::Unknown
                    } else {
                        value
                    };
                    env.set(name, value);
                }
            }
            DirectiveKind::Include | DirectiveKind::Other => {}
        }
        // The directive line itself takes the state after it (an `#else` line belongs to
        // its branch), which only matters for reporting.
        if let Some(slot) = lines.get_mut(dir.line as usize - 1) {
            let (live, g) = state(&stack);
            *slot = live;
            guard[dir.line as usize - 1] = g;
        }
        next_line = next_line.max(dir.line + 1);
    }
    let (live, g) = state(&stack);
    for line in next_line..=line_count {
        lines[line as usize - 1] = live;
        guard[line as usize - 1] = g;
    }
    Liveness { lines, guard }
}

impl Liveness {
    pub fn at(&self, line: u32) -> Tri {
        line.checked_sub(1)
            .and_then(|i| self.lines.get(i as usize))
            .copied()
            .unwrap_or(Tri::Unknown)
    }
    pub fn guard_of(&self, line: u32) -> Option<u32> {
        line.checked_sub(1)
            .and_then(|i| self.guard.get(i as usize))
            .copied()
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(sm: u32) -> Env {
        Env::device(Arch::from_sm(sm, Variant::Plain), Some(Variant::A), None)
    }

    #[test]
    fn arch_comparisons() {
        let guard = "(defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))";
        assert_eq!(truth(guard, &dev(90)), Tri::Yes);
        assert_eq!(truth(guard, &dev(100)), Tri::Yes);
        assert_eq!(truth(guard, &dev(120)), Tri::No);
        assert_eq!(truth(guard, &dev(121)), Tri::No);
        assert_eq!(truth(guard, &Env::host(None)), Tri::No);
        assert_eq!(truth("__CUDA_ARCH__ == 1210", &dev(121)), Tri::Yes);
        assert_eq!(
            truth(
                "__CUDA_ARCH__ >= 800 || !defined(__CUDA_ARCH__)",
                &Env::host(None)
            ),
            Tri::Yes
        );
        assert_eq!(
            truth("defined(__CUDA_ARCH_FEAT_SM100_ALL)", &dev(100)),
            Tri::Yes
        );
        assert_eq!(
            truth("defined(__CUDA_ARCH_FEAT_SM100_ALL)", &dev(103)),
            Tri::No
        );
        let family = Env::device(Arch::new(12, 0), Some(Variant::F), None);
        assert_eq!(
            truth("defined(__CUDA_ARCH_FEAT_SM120_ALL)", &family),
            Tri::No
        );
        assert_eq!(
            truth("__CUDA_ARCH_FAMILY_SPECIFIC__ == 1200", &family),
            Tri::Yes
        );
        let unknown_variant = Env::device(Arch::new(12, 0), None, None);
        assert_eq!(
            truth("defined(__CUDA_ARCH_SPECIFIC__)", &unknown_variant),
            Tri::Unknown
        );
    }

    #[test]
    fn unknown_macros_stay_unknown_unless_decided() {
        let env = dev(120);
        assert_eq!(truth("defined(ENABLE_FP8)", &env), Tri::Unknown);
        assert_eq!(
            truth("defined(ENABLE_FP8) && __CUDA_ARCH__ < 900", &env),
            Tri::No
        );
        assert_eq!(
            truth("defined(ENABLE_FP8) || __CUDA_ARCH__ >= 900", &env),
            Tri::Yes
        );
        assert_eq!(truth("CUDA_VERSION >= 12080", &env), Tri::Unknown);
        let known = Env::device(Arch::new(12, 0), Some(Variant::A), Some((12, 8)));
        assert_eq!(truth("CUDA_VERSION >= 12080", &known), Tri::Yes);
        assert_eq!(
            truth(
                "(__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10 >= 12090)",
                &known
            ),
            Tri::No
        );
        assert_eq!(truth("FOO(1) > 2", &env), Tri::Unknown);
        assert_eq!(truth("(1", &env), Tri::Unknown);
        assert_eq!(truth("1 ? 2 : 0", &env), Tri::Yes);
        assert_eq!(eval("0x10 + 010 - 1u", &env), Some(23));
    }

    fn live(src: &str, env: &Env) -> Vec<Tri> {
        let (dirs, n) = directives(src);
        liveness(&dirs, n, env).lines
    }

    #[test]
    fn chains_nesting_and_include_guards() {
        use Tri::*;
        let src = "#ifndef G\n#define G\n#if __CUDA_ARCH__ >= 1000\na\n#elif __CUDA_ARCH__ == 900\nb\n#else\nc\n#ifdef X\nd\n#endif\n#endif\n#endif\n";
        let at90 = live(src, &dev(90));
        assert_eq!((at90[3], at90[5], at90[7], at90[9]), (No, Yes, No, No));
        let at120 = live(src, &dev(120));
        assert_eq!((at120[3], at120[5], at120[7]), (Yes, No, No));
        let host = live(src, &Env::host(None));
        assert_eq!((host[3], host[5], host[7], host[9]), (No, No, Yes, Unknown));
        // Local defines are read in order.
        let src = "#define N 3\n#if N > 2\nx\n#endif\n#undef N\n#if defined(N)\ny\n#endif\n";
        let l = live(src, &dev(90));
        assert_eq!((l[2], l[6]), (Yes, No));
    }
}
