//! Reading CUDA C++ sources without compiling them: comments and strings blanked, the
//! `__global__` kernels with their bodies, quoted `#include`s, and host-side checks (a check
//! macro call, or `if (...) throw`) parsed with the tree-sitter C++ grammar.
//!
//! tree-sitter is error-tolerant: CUDA's `__global__` and `<<<...>>>` parse as error nodes
//! around which the rest of the file still reads, so a file is never dropped. Every walk is
//! bounded by the input's length.

use std::sync::OnceLock;

use tree_sitter::{Language, Node, Parser};

use super::cpp_items;

/// The file with comments, string and character literals replaced by spaces (newlines
/// kept), so that line numbers and byte offsets stay those of the original.
pub fn blank(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let blank_range = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |e| i + e);
                blank_range(&mut out, i, end);
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = memchr::memmem::find(&bytes[i + 2..], b"*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                blank_range(&mut out, i, end);
                i = end;
            }
            quote @ (b'"' | b'\'') => {
                // A raw string R"(...)" is read as an ordinary one: close enough for blanking.
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(bytes.len());
                // Keep the quotes so `#include "x"` stays readable from the original.
                blank_range(&mut out, (i + 1).min(end), j.min(bytes.len()));
                i = end;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced by ASCII spaces; multi-byte characters inside comments
    // may be cut, so convert lossily.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> u32 {
    let end = offset.min(text.len());
    memchr::memchr_iter(b'\n', &text.as_bytes()[..end]).count() as u32 + 1
}

/// A `__global__` function with a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDef {
    pub name: String,
    /// Line of `__global__`.
    pub line: u32,
    /// Lines of the body's `{` and `}`.
    pub open_line: u32,
    pub close_line: u32,
    /// Byte range of the body, braces excluded, in the blanked text.
    pub body: (usize, usize),
    /// Declared under `template <...>`: compiled only where the host code instantiates it.
    pub template: bool,
}

/// Kernels with bodies, from blanked code. A `__global__` declaration without a body is
/// skipped; an unbalanced body ends at the end of the file.
pub fn kernels(code: &str) -> Vec<KernelDef> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(hit) = memchr::memmem::find(&bytes[from..], b"__global__") {
        let at = from + hit;
        from = at + "__global__".len();
        let word_start = at == 0 || !cpp_items::is_ident(bytes[at - 1]);
        if !word_start || bytes.get(from).is_some_and(|&b| cpp_items::is_ident(b)) {
            continue;
        }
        // The name is the identifier before the first `(` at template depth 0.
        let mut i = from;
        let mut angle = 0i32;
        // A declaration head is short; a hostile file must not make every hit scan far.
        let limit = bytes.len().min(from + 4096);
        while i < limit && !(bytes[i] == b'(' && angle <= 0) && bytes[i] != b';' && bytes[i] != b'{'
        {
            match bytes[i] {
                b'<' => angle += 1,
                b'>' => angle -= 1,
                _ => {}
            }
            i += 1;
        }
        // `__launch_bounds__(...)` and other `__x__(...)` attributes come before the name.
        let mut name = String::new();
        let mut guard = 0;
        while bytes.get(i) == Some(&b'(') && guard < 16 {
            guard += 1;
            let mut name_end = i;
            while name_end > from && bytes[name_end - 1].is_ascii_whitespace() {
                name_end -= 1;
            }
            let mut name_start = name_end;
            while name_start > from && cpp_items::is_ident(bytes[name_start - 1]) {
                name_start -= 1;
            }
            let word = &code[name_start..name_end];
            if word.len() > 4 && word.starts_with("__") && word.ends_with("__") {
                let Some(close) = matching(bytes, i, b'(', b')') else {
                    return out;
                };
                i = close + 1;
                while i < bytes.len() && bytes[i] != b'(' && bytes[i] != b';' && bytes[i] != b'{' {
                    i += 1;
                }
                continue;
            }
            name = word.to_string();
            break;
        }
        if name.is_empty() || bytes.get(i) != Some(&b'(') {
            continue;
        }
        // Unbalanced to the end of the file: no later list can close either.
        let Some(close_paren) = matching(bytes, i, b'(', b')') else {
            break;
        };
        // Between `)` and the body: qualifiers, `__launch_bounds__(...)`, a trailing return.
        let mut j = close_paren + 1;
        let limit = bytes.len().min(close_paren + 4096);
        while j < limit && bytes[j] != b'{' && bytes[j] != b';' {
            if bytes[j] == b'(' {
                j = matching(bytes, j, b'(', b')').unwrap_or(bytes.len());
            }
            j += 1;
        }
        if bytes.get(j) != Some(&b'{') {
            continue;
        }
        let Some(close) = matching(bytes, j, b'{', b'}') else {
            // Unbalanced to the end of the file: the body runs to it, and nothing after it
            // can be another kernel's (this also keeps hostile input linear).
            out.push(KernelDef {
                name,
                line: line_of(code, at),
                open_line: line_of(code, j),
                close_line: line_of(code, bytes.len()),
                body: (j + 1, bytes.len()),
                template: declared_as_template(code, at),
            });
            break;
        };
        out.push(KernelDef {
            name,
            line: line_of(code, at),
            open_line: line_of(code, j),
            close_line: line_of(code, close),
            body: (j + 1, close),
            template: declared_as_template(code, at),
        });
        from = from.max(close + 1);
    }
    out
}

/// Whether the declaration holding the `__global__` at `at` starts with `template`: the words
/// back to the end of the statement or block before it.
fn declared_as_template(code: &str, at: usize) -> bool {
    let head = code[..at].rfind([';', '{', '}']).map_or(0, |p| p + 1);
    code[head..at]
        .split(|c: char| !cpp_items::is_ident(c as u8) || !c.is_ascii())
        .any(|word| word == "template")
}

/// The contents of the string literals on a line (escapes as written), read from the line as
/// `blank` leaves it: its string literals keep their quotes with the contents blanked, while
/// comments and character literals are blanked whole, so the quotes left pair up (a string
/// that runs past the line ends with it). Where inline PTX is written.
pub fn string_contents<'t>(original: &'t str, blanked: &str) -> Vec<&'t str> {
    if original.len() != blanked.len() {
        return Vec::new();
    }
    let quotes: Vec<usize> = memchr::memchr_iter(b'"', blanked.as_bytes()).collect();
    quotes
        .chunks(2)
        .filter_map(|pair| {
            let end = pair.get(1).copied().unwrap_or(original.len());
            original.get(pair[0] + 1..end)
        })
        .collect()
}

/// The offset of the bracket closing the one at `open`.
fn matching(bytes: &[u8], open: usize, left: u8, right: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &b) in bytes.iter().enumerate().skip(open) {
        if b == left {
            depth += 1;
        } else if b == right {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// An `#include "path"` or `#include <path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    pub line: u32,
    pub path: String,
    /// `<path>`: searched in the include folders only, and a system header when not there.
    pub angled: bool,
}

/// The includes, read from the original text at the directive lines.
pub fn includes(text: &str, dirs: &[super::preproc::Directive]) -> Vec<Include> {
    let lines: Vec<&str> = text.split('\n').collect();
    dirs.iter()
        .filter(|d| d.kind == super::preproc::DirectiveKind::Include)
        .filter_map(|d| {
            let original = lines.get(d.line as usize - 1)?;
            let after = original.split_once("include")?.1.trim_start();
            let (close, angled) = match after.chars().next()? {
                '"' => ('"', false),
                '<' => ('>', true),
                _ => return None,
            };
            let rest = &after[1..];
            let path = &rest[..rest.find(close)?];
            (!path.is_empty()).then(|| Include {
                line: d.line,
                path: path.to_string(),
                angled,
            })
        })
        .collect()
}

/// Calls of the functions and macros named in a kernel body, for naming what a guard
/// removes: `cudaGridDependencySynchronize()`.
pub fn calls_in(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if cpp_items::is_ident(bytes[i]) && (i == 0 || !cpp_items::is_ident(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && cpp_items::is_ident(bytes[i]) {
                i += 1;
            }
            let word = &code[start..i];
            let mut k = i;
            while k < bytes.len() && bytes[k] == b' ' {
                k += 1;
            }
            let keyword = matches!(
                word,
                "if" | "for"
                    | "while"
                    | "switch"
                    | "return"
                    | "sizeof"
                    | "static_assert"
                    | "decltype"
                    | "alignof"
                    | "defined"
                    // `asm volatile("...")` is inline PTX, not a call.
                    | "asm"
                    | "__asm__"
                    | "volatile"
                    | "__volatile__"
            );
            if bytes.get(k) == Some(&b'(')
                && !keyword
                && !word.as_bytes()[0].is_ascii_digit()
                && !out.iter().any(|w| w == word)
            {
                out.push(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `asm("trap;")` (the string is blanked, so it is read from the original), `__trap()`, or
/// `assert(false ...)`.
pub fn is_trap(original_line: &str) -> bool {
    let compact: String = original_line
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    compact.contains("__trap()")
        || compact.contains("asm(\"trap;\")")
        || compact.contains("asmvolatile(\"trap;\")")
        || compact.contains("__builtin_trap()")
        // A stub that asserts: it traps in a debug build and is empty under -DNDEBUG.
        || compact.contains("assert(false")
}

// ------------------------------------------------------------------------------------------
// Host checks, with a real C++ grammar.
// ------------------------------------------------------------------------------------------

fn language() -> &'static Language {
    static LANGUAGE: OnceLock<Language> = OnceLock::new();
    LANGUAGE.get_or_init(|| tree_sitter_cpp::LANGUAGE.into())
}

/// A host-side condition, lowered from C++: what must hold for the code to go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CExpr {
    Int(i64),
    /// A name or call as written (whitespace removed): `major`, `getSMVersion()`.
    Name(String),
    Not(Box<CExpr>),
    Bin(String, Box<CExpr>, Box<CExpr>),
    /// Something else (a string, a cast, a member call on a tensor).
    Opaque(String),
}

/// One host check: the condition that must hold, where, and how it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub line: u32,
    /// `TVM_FFI_ICHECK_EQ`, or `if-throw`.
    pub how: String,
    /// The condition that must be true for the launch to go on.
    pub must_hold: CExpr,
    /// The source text of the check (first line).
    pub text: String,
    /// Conditions of the enclosing `if`s (negated for an `else` branch): the check runs only
    /// when they hold.
    pub context: Vec<CExpr>,
    /// The same conditions as written (`!(...)` for an `else` branch).
    pub context_text: Vec<String>,
}

/// How a check macro reads its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckShape {
    /// `CHECK(cond, ...)`: the first argument must hold.
    Condition,
    /// `CHECK_EQ(a, b)` and friends: `a op b` must hold.
    Compare(&'static str),
}

/// What a file's host code says about launching at a target: its checks and its requests
/// for dynamic shared memory, with the integer constants those are written with.
#[derive(Debug, Default)]
pub struct HostCode {
    pub checks: Vec<Check>,
    pub shared_memory: Vec<SharedMemoryRequest>,
    /// `constexpr int MAX_SMEM = 227 * 1024;`, by name: the constants the requests are
    /// written with, and those these are written with (others may be left unread).
    pub constants: Vec<(String, CExpr)>,
}

/// The host checks of a file (with `macros`, each macro name with its shape) and its
/// shared-memory requests (with `shared_memory`), from one parse of the top-level items that
/// can hold them (`host_code_items`; the whole file when its braces do not balance). A file
/// the grammar cannot read at all gives nothing (never an error): tree-sitter always returns
/// a tree.
pub fn host_code(
    text: &str,
    macros: Option<&[(String, CheckShape)]>,
    shared_memory: bool,
) -> HostCode {
    read_host_code(text, macros, shared_memory, true)
}

/// `host_code` from a parse of the whole file: the reference the item-wise parse is checked
/// against (`tests/real_kernels.rs`).
pub fn host_code_whole_file(
    text: &str,
    macros: Option<&[(String, CheckShape)]>,
    shared_memory: bool,
) -> HostCode {
    read_host_code(text, macros, shared_memory, false)
}

/// `host_code`, from the kept items (`by_items`) or from the whole file.
fn read_host_code(
    text: &str,
    macros: Option<&[(String, CheckShape)]>,
    shared_memory: bool,
    by_items: bool,
) -> HostCode {
    if macros.is_none() && !shared_memory {
        return HostCode::default();
    }
    let items = by_items
        .then(|| host_code_items(text, macros, shared_memory))
        .flatten();
    let tree = match items {
        Some(items) if items.is_empty() => return HostCode::default(),
        Some(items) => parse_ranges(text, &included_ranges(text, &items)),
        None => parse(text),
    };
    tree.map_or_else(HostCode::default, |tree| {
        host_code_from(&tree, text, macros, shared_memory)
    })
}

/// The items of `text` (`cpp_items`) that can hold what `host_code` looks for: a check
/// macro's name or `throw` (with `macros`), the shared-memory attribute (with
/// `shared_memory`), and the `constexpr` declarations of the names a request is written
/// with, and of the names those are written with (found as `NAME =` or `NAME{` in an item
/// that says `constexpr`: `constexpr_constant` reads no other). `None`: parse the whole file.
fn host_code_items(
    text: &str,
    macros: Option<&[(String, CheckShape)]>,
    shared_memory: bool,
) -> Option<Vec<cpp_items::Item>> {
    let code = blank(text);
    let items = cpp_items::items(&code)?;
    let mut words: Vec<&str> = Vec::new();
    if let Some(macros) = macros {
        words.extend(macros.iter().map(|(m, _)| m.as_str()));
        words.push("throw");
    }
    if shared_memory {
        words.push(SHARED_MEMORY_ATTRIBUTE);
    }
    let mut keep: Vec<bool> = items
        .iter()
        .map(|item| words.iter().any(|w| code[item.clone()].contains(w)))
        .collect();
    if shared_memory {
        // The names after each request's attribute, to the end of its statement.
        let mut needed: Vec<&str> =
            memchr::memmem::find_iter(code.as_bytes(), SHARED_MEMORY_ATTRIBUTE)
                .flat_map(|at| {
                    let end = code[at..].find(';').map_or(code.len(), |e| at + e);
                    cpp_items::identifiers(&code[at + SHARED_MEMORY_ATTRIBUTE.len()..end])
                })
                .collect();
        let constexpr: Vec<usize> = (0..items.len())
            .filter(|&i| cpp_items::has_word(&code[items[i].clone()], "constexpr"))
            .collect();
        let mut seen: std::collections::HashSet<&str> = needed.iter().copied().collect();
        let mut looked = 0;
        while looked < needed.len() {
            let name = needed[looked];
            looked += 1;
            for &i in &constexpr {
                let item = &code[items[i].clone()];
                // Only the items that define it (`NAME = ...`, `NAME{...}`), and from each
                // definition's statement the names its value is written with: the names a
                // statement merely uses (types, functions) would pull in half the file.
                for at in cpp_items::definitions(item, name) {
                    keep[i] = true;
                    let from = item[..at].rfind([';', '{', '}']).map_or(0, |p| p + 1);
                    let to = item[at..].find(';').map_or(item.len(), |p| at + p);
                    for word in cpp_items::identifiers(&item[from..to]) {
                        if seen.insert(word) {
                            needed.push(word);
                        }
                    }
                }
            }
        }
    }
    Some(
        items
            .into_iter()
            .zip(keep)
            .filter_map(|(item, keep)| keep.then_some(item))
            .collect(),
    )
}

/// tree-sitter's ranges for `items` of `text`.
fn included_ranges(text: &str, items: &[cpp_items::Item]) -> Vec<tree_sitter::Range> {
    let mut line = 0usize;
    let mut line_start = 0usize;
    let mut scanned = 0usize;
    let mut point = |offset: usize| {
        for newline in memchr::memchr_iter(b'\n', &text.as_bytes()[scanned..offset]) {
            line += 1;
            line_start = scanned + newline + 1;
        }
        scanned = offset;
        tree_sitter::Point {
            row: line,
            column: offset - line_start,
        }
    };
    items
        .iter()
        .map(|item| {
            let start_point = point(item.start);
            let end_point = point(item.end);
            tree_sitter::Range {
                start_byte: item.start,
                end_byte: item.end,
                start_point,
                end_point,
            }
        })
        .collect()
}

/// What `host_code` reads from a tree of `text`.
fn host_code_from(
    tree: &tree_sitter::Tree,
    text: &str,
    macros: Option<&[(String, CheckShape)]>,
    shared_memory: bool,
) -> HostCode {
    let mut out = HostCode::default();
    let src = text.as_bytes();
    walk(tree, |node| match node.kind() {
        "call_expression" => {
            if let Some(macros) = macros {
                out.checks.extend(macro_check(node, src, macros));
            }
            if shared_memory {
                out.shared_memory.extend(shared_memory_request(node, src));
            }
        }
        "if_statement" if macros.is_some() => out.checks.extend(if_throw(node, src)),
        "init_declarator" if shared_memory => {
            out.constants.extend(constexpr_constant(node, src));
        }
        _ => {}
    });
    // Contexts come from the tree again, walking up from each line.
    for check in &mut out.checks {
        (check.context, check.context_text) = context_at(tree, src, check.line);
    }
    for request in &mut out.shared_memory {
        request.context = context_at(tree, src, request.line).0;
    }
    out.checks.sort_by_key(|c| c.line);
    out.shared_memory.sort_by_key(|r| r.line);
    out
}

/// The host checks of a file alone (see `host_code`).
pub fn checks(text: &str, macros: &[(String, CheckShape)]) -> Vec<Check> {
    host_code(text, Some(macros), false).checks
}

/// A launcher's request for dynamic shared memory:
/// `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`. The
/// call fails when `bytes` is above what one block may have on the device, and the launch
/// that counts on it fails after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedMemoryRequest {
    pub line: u32,
    /// The source text of the call (first line).
    pub text: String,
    pub bytes: CExpr,
    /// Conditions of the enclosing `if`s, as for a [`Check`].
    pub context: Vec<CExpr>,
}

/// The attribute whose value is the dynamic shared memory a kernel may use.
pub const SHARED_MEMORY_ATTRIBUTE: &str = "cudaFuncAttributeMaxDynamicSharedMemorySize";

/// The C++ tree of `text`; `None` only when the grammar cannot be loaded (tree-sitter always
/// returns a tree, with error nodes where it must).
fn parse(text: &str) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser.set_language(language()).ok()?;
    parser.parse(text, None)
}

/// `parse` of only `ranges` of `text` (read as one document, positions those of the file).
fn parse_ranges(text: &str, ranges: &[tree_sitter::Range]) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser.set_language(language()).ok()?;
    if parser.set_included_ranges(ranges).is_err() {
        // Ranges out of order cannot come from `cpp_items`; the whole file is still right.
        return parse(text);
    }
    parser.parse(text, None)
}

/// Visits every node of `tree`, parents before children, at most 4,000,000 of them. An
/// explicit stack: deep nesting in hostile input must not overflow the Rust stack.
fn walk<'t>(tree: &'t tree_sitter::Tree, mut visit: impl FnMut(Node<'t>)) {
    let mut cursor = tree.walk();
    let mut stack = vec![tree.root_node()];
    let mut visited = 0usize;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > 4_000_000 {
            break;
        }
        visit(node);
        for child in node.children(&mut cursor) {
            stack.push(child);
        }
    }
}

/// `NAME = value` of a `constexpr` declaration (`constexpr int NAME = 227 * 1024;`).
fn constexpr_constant(declarator: Node, src: &[u8]) -> Option<(String, CExpr)> {
    let declaration = declarator.parent().filter(|p| p.kind() == "declaration")?;
    let mut cursor = declaration.walk();
    let constexpr = declaration
        .children(&mut cursor)
        .any(|child| node_text(child, src) == "constexpr");
    let name = declarator.child_by_field_name("declarator")?;
    let value = declarator.child_by_field_name("value")?;
    (constexpr && name.kind() == "identifier")
        .then(|| (node_text(name, src).to_string(), lower(value, src, 0)))
}

fn shared_memory_request(node: Node, src: &[u8]) -> Option<SharedMemoryRequest> {
    let function = node.child_by_field_name("function")?;
    if node_text(function, src).rsplit("::").next() != Some("cudaFuncSetAttribute") {
        return None;
    }
    let items = arguments(node)?;
    let [_, attribute, bytes] = items.as_slice() else {
        return None;
    };
    if node_text(*attribute, src).rsplit("::").next() != Some(SHARED_MEMORY_ATTRIBUTE) {
        return None;
    }
    Some(SharedMemoryRequest {
        line: node.start_position().row as u32 + 1,
        text: first_line(node_text(node, src)),
        bytes: lower(*bytes, src, 0),
        context: Vec::new(),
    })
}

/// A call's arguments, comments left out.
fn arguments<'t>(call: Node<'t>) -> Option<Vec<Node<'t>>> {
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    Some(
        args.named_children(&mut cursor)
            .filter(|n| n.kind() != "comment")
            .collect(),
    )
}

fn node_text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or("")
}

fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.len() > 160 {
        let mut end = 160;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &line[..end])
    } else {
        line.to_string()
    }
}

fn macro_check(node: Node, src: &[u8], macros: &[(String, CheckShape)]) -> Option<Check> {
    let function = node.child_by_field_name("function")?;
    let name = node_text(function, src);
    let shape = macros.iter().find(|(m, _)| m == name)?.1;
    let items = arguments(node)?;
    let must_hold = match shape {
        CheckShape::Condition => lower(*items.first()?, src, 0),
        CheckShape::Compare(op) => {
            let (a, b) = (items.first()?, items.get(1)?);
            CExpr::Bin(
                op.to_string(),
                Box::new(lower(*a, src, 0)),
                Box::new(lower(*b, src, 0)),
            )
        }
    };
    Some(Check {
        line: node.start_position().row as u32 + 1,
        how: name.to_string(),
        must_hold,
        text: first_line(node_text(node, src)),
        context: Vec::new(),
        context_text: Vec::new(),
    })
}

/// `if (cond) throw ...;` or `if (cond) { throw ...; }`: `!cond` must hold.
fn if_throw(node: Node, src: &[u8]) -> Option<Check> {
    let consequence = node.child_by_field_name("consequence")?;
    let throws = match consequence.kind() {
        "throw_statement" => true,
        "compound_statement" => {
            let mut cursor = consequence.walk();
            let first = consequence
                .named_children(&mut cursor)
                .find(|n| n.kind() != "comment");
            first.is_some_and(|n| {
                n.kind() == "throw_statement"
                    || (n.kind() == "expression_statement"
                        && node_text(n, src).trim_start().starts_with("throw"))
            })
        }
        _ => false,
    };
    if !throws {
        return None;
    }
    let condition = node.child_by_field_name("condition")?;
    let cond = lower(condition, src, 0);
    Some(Check {
        line: node.start_position().row as u32 + 1,
        how: "if-throw".into(),
        must_hold: CExpr::Not(Box::new(cond)),
        text: first_line(node_text(node, src)),
        context: Vec::new(),
        context_text: Vec::new(),
    })
}

/// The conditions of the `if`s around the statement on `line` (negated for an `else`
/// branch), as lowered and as written (`!(...)` for an `else`).
fn context_at(tree: &tree_sitter::Tree, src: &[u8], line: u32) -> (Vec<CExpr>, Vec<String>) {
    let mut context = Vec::new();
    let mut texts = Vec::new();
    let point = tree_sitter::Point {
        row: line as usize - 1,
        column: 0,
    };
    let Some(mut node) = tree.root_node().descendant_for_point_range(point, point) else {
        return (context, texts);
    };
    // Walk to the statement node on that line, then up through its ancestors.
    let mut steps = 0;
    let mut child = node;
    while let Some(parent) = node.parent() {
        steps += 1;
        // Real checks sit a few dozen nodes deep; hostile nesting must stay linear.
        if steps > 256 {
            break;
        }
        if parent.kind() == "if_statement" {
            let condition = parent.child_by_field_name("condition");
            let in_consequence = parent
                .child_by_field_name("consequence")
                .is_some_and(|c| c.id() == child.id() || c.id() == node.id());
            let in_alternative = parent
                .child_by_field_name("alternative")
                .is_some_and(|c| c.id() == child.id() || c.id() == node.id());
            if let Some(condition) = condition {
                let cond = lower(condition, src, 0);
                let text = first_line(node_text(condition, src));
                if in_consequence && parent.start_position().row as u32 + 1 != line {
                    context.push(cond);
                    texts.push(text);
                } else if in_alternative {
                    context.push(CExpr::Not(Box::new(cond)));
                    texts.push(format!("!{text}"));
                }
            }
        }
        child = node;
        node = parent;
    }
    (context, texts)
}

/// C++ expression → [`CExpr`]; `depth` bounds recursion on hostile nesting.
fn lower(node: Node, src: &[u8], depth: usize) -> CExpr {
    if depth > 64 {
        return CExpr::Opaque(compact(node_text(node, src)));
    }
    match node.kind() {
        "parenthesized_expression" | "condition_clause" => {
            let mut cursor = node.walk();
            let inner: Vec<Node> = node.named_children(&mut cursor).collect();
            match inner.as_slice() {
                [one] => lower(*one, src, depth + 1),
                _ => CExpr::Opaque(compact(node_text(node, src))),
            }
        }
        "number_literal" => super::preproc::parse_int(node_text(node, src))
            .map_or_else(|| CExpr::Opaque(node_text(node, src).into()), CExpr::Int),
        "true" => CExpr::Int(1),
        "false" => CExpr::Int(0),
        "unary_expression" => {
            let op = node
                .child_by_field_name("operator")
                .map(|o| node_text(o, src));
            let arg = node.child_by_field_name("argument");
            match (op, arg) {
                (Some("!"), Some(arg)) => CExpr::Not(Box::new(lower(arg, src, depth + 1))),
                (Some("-"), Some(arg)) => match lower(arg, src, depth + 1) {
                    CExpr::Int(v) => CExpr::Int(v.wrapping_neg()),
                    other => CExpr::Opaque(format!("-{other:?}")),
                },
                _ => CExpr::Opaque(compact(node_text(node, src))),
            }
        }
        "binary_expression" => {
            let op = node
                .child_by_field_name("operator")
                .map(|o| node_text(o, src));
            let left = node.child_by_field_name("left");
            let right = node.child_by_field_name("right");
            match (op, left, right) {
                (Some(op), Some(l), Some(r)) => CExpr::Bin(
                    op.to_string(),
                    Box::new(lower(l, src, depth + 1)),
                    Box::new(lower(r, src, depth + 1)),
                ),
                _ => CExpr::Opaque(compact(node_text(node, src))),
            }
        }
        _ => CExpr::Name(compact(node_text(node, src))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_lines_and_hides_comments() {
        let text = "a // x \"q\n/* #if 1\n */ b \"s // t\" 'c'\n";
        let b = blank(text);
        assert_eq!(b.len(), text.len());
        assert_eq!(b.lines().count(), text.lines().count());
        assert!(!b.contains("#if") && !b.contains("// t") && b.contains('b'));
    }

    #[test]
    fn string_contents_are_the_literals_outside_comments_and_characters() {
        let strings = |line: &str| {
            let blanked = blank(line);
            string_contents(line, &blanked)
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strings(r#"asm volatile("wgmma.fence;\n" ::: "memory"); // "tcgen05.""#),
            ["wgmma.fence;\\n", "memory"]
        );
        assert_eq!(strings(r#"f('"', /* "x" */ "y\"z");"#), [r#"y\"z"#]);
        // A string the line does not close runs to its end.
        assert_eq!(strings(r#"  "setmaxnreg.inc"#), ["setmaxnreg.inc"]);
        assert!(strings("int x = 1;").is_empty());
    }

    #[test]
    fn kernels_with_templates_and_launch_bounds() {
        let code = blank(
            "template <int N, typename T = std::enable_if_t<(N > 1)>>\n__global__ void __launch_bounds__(128) k(T* p) {\n  if (p) { *p = 0; }\n}\n__global__ void decl(int);\nvoid host() { k<<<1, 1>>>(nullptr); }\n",
        );
        let found = kernels(&code);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].name.as_str(), found[0].line, found[0].close_line),
            ("k", 2, 4)
        );
    }

    #[test]
    fn shared_memory_requests_with_their_constants() {
        let text = "namespace {\nconstexpr int kKB = 1024;\n}\nconstexpr int MAX_SMEM = 227 * kKB;\nstatic constexpr int kSmall = 48 << 10;\nint plain = 5;\nvoid launch(void* k, int smem, int major) {\n  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, MAX_SMEM);\n  cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 100);\n  if (major == 9) {\n    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);\n  }\n}\n";
        let HostCode {
            shared_memory: requests,
            constants,
            ..
        } = host_code(text, None, true);
        assert_eq!(
            requests.iter().map(|r| r.line).collect::<Vec<_>>(),
            [8, 11],
            "{requests:?}"
        );
        assert_eq!(requests[0].bytes, CExpr::Name("MAX_SMEM".into()));
        assert!(requests[0].context.is_empty());
        assert_eq!(requests[1].context.len(), 1, "{:?}", requests[1]);
        // The constants the requests are written with, through one another; a constant no
        // request names is not read (the items holding it are not parsed), as the whole
        // file's parse shows it is there.
        let mut names: Vec<&str> = constants.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["MAX_SMEM", "kKB"], "{constants:?}");
        let whole = host_code_whole_file(text, None, true);
        let mut names: Vec<&str> = whole.constants.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["MAX_SMEM", "kKB", "kSmall"],
            "{:?}",
            whole.constants
        );
        assert_eq!(whole.shared_memory, requests);
    }

    #[test]
    fn checks_and_their_contexts() {
        let macros = vec![
            ("TVM_FFI_ICHECK_EQ".to_string(), CheckShape::Compare("==")),
            ("FLASHINFER_CHECK".to_string(), CheckShape::Condition),
        ];
        let text = "__global__ void k() {}\nvoid f(int major) {\n  if (major == 9) {\n    run();\n  } else {\n    TVM_FFI_ICHECK_EQ(major, 10) << \"sm100 only\";\n  }\n  FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, \"Unsupported\");\n  if (sm < 90) throw std::runtime_error(\"old\");\n  k<<<1, 2>>>();\n}\n";
        let found = checks(text, &macros);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].line, 6);
        assert_eq!(found[0].context.len(), 1);
        assert!(matches!(found[0].context[0], CExpr::Not(_)));
        assert_eq!(found[1].how, "FLASHINFER_CHECK");
        assert_eq!(found[2].how, "if-throw");
    }
}
