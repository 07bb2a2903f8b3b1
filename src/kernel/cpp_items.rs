//! The top-level items of a C++ file (a function, a class, a namespace-level declaration),
//! found from braces and semicolons alone, so that the host-code reader parses only the items
//! that can hold what it looks for instead of the whole file.
//!
//! Why: a JIT source can be megabytes of templates (flashinfer 0.7.2's
//! `alphamoe_nvfp4_sm100.cu`, 3.5 MB, takes tree-sitter 0.67 s) with one shared-memory
//! request in it. tree-sitter parses the kept items as one document (`set_included_ranges`),
//! positions staying those of the file; top-level items do not change how one another parse,
//! so each item's tree is the one a whole parse builds. `tests/real_kernels.rs` checks that
//! on every C++ file of a real flashinfer wheel.
//!
//! Namespaces and `extern "C"` blocks are see-through: their items are items. Preprocessor
//! lines (with their continuations) open and close nothing, so a `#define` with braces does
//! not open a block; a `#define` between items is an item itself (tree-sitter reads a macro
//! body as code). Braces that do not balance (an `#if` choosing between two function heads)
//! give `None`: the caller parses the whole file.

/// One top-level item: its byte range (the closing `;` or `}` included).
pub type Item = std::ops::Range<usize>;

/// The items of a file, from its text with comments and strings blanked (`cpp::blank`);
/// `None` when its braces do not balance. Whitespace and directives other than `#define`
/// between items belong to none.
pub fn items(blanked: &str) -> Option<Vec<Item>> {
    let bytes = blanked.as_bytes();
    let mut items = Vec::new();
    // Depth inside the current item; see-through blocks opened and not yet closed.
    let mut depth = 0usize;
    let mut see_through = 0usize;
    let mut start: Option<usize> = None;
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        if line_start && b == b'#' {
            // A directive: to the end of the line, continuations included. A `#define`
            // between items is an item of its own (tree-sitter reads a macro's body as
            // code, and a check written in one is a check); others join no item.
            let end = directive_end(bytes, i);
            if start.is_none() && depth == 0 && is_define(&blanked[i..end]) {
                items.push(i..end);
            }
            i = end;
            continue;
        }
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            _ => line_start = false,
        }
        let item_start = *start.get_or_insert(i);
        match b {
            b'{' => {
                if depth == 0 && opens_see_through(&blanked[item_start..i]) {
                    see_through += 1;
                    start = None;
                } else {
                    depth += 1;
                }
            }
            b'}' => {
                if depth == 0 {
                    // The close of a see-through block (or a stray brace).
                    see_through = see_through.checked_sub(1)?;
                    start = None;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        // `struct S { ... };` and `} x;` end at their semicolon, a
                        // function body at its brace.
                        let end = match next_code_byte(bytes, i + 1) {
                            Some((j, b';')) => j + 1,
                            _ => i + 1,
                        };
                        items.push(item_start..end);
                        start = None;
                        i = end;
                        continue;
                    }
                }
            }
            b';' if depth == 0 => {
                items.push(item_start..i + 1);
                start = None;
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 || see_through != 0 {
        return None;
    }
    if let Some(start) = start {
        items.push(start..bytes.len());
    }
    Some(items)
}

/// Where a preprocessor directive starting at `at` ends (after its last line's newline).
fn directive_end(bytes: &[u8], at: usize) -> usize {
    let mut i = at;
    loop {
        let Some(newline) = memchr::memchr(b'\n', &bytes[i..]) else {
            return bytes.len();
        };
        let end = i + newline;
        let continued = bytes[i..end].trim_ascii_end().ends_with(b"\\");
        i = end + 1;
        if !continued {
            return i;
        }
    }
}

/// Whether a directive is a `#define`.
fn is_define(directive: &str) -> bool {
    directive[1..].trim_start().starts_with("define")
}

/// The first byte at or after `at` that is no whitespace, with its offset.
fn next_code_byte(bytes: &[u8], at: usize) -> Option<(usize, u8)> {
    bytes[at.min(bytes.len())..]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|p| (at + p, bytes[at + p]))
}

/// Whether the head of a block (the text from its item's start to the `{`) opens a
/// namespace or an `extern "C"` block, whose items are top-level items.
fn opens_see_through(head: &str) -> bool {
    let words: Vec<&str> = head.split_ascii_whitespace().collect();
    match words.as_slice() {
        ["extern", rest @ ..] => rest.iter().all(|w| w.chars().all(|c| c == '"' || c == ' ')),
        ["inline", "namespace", rest @ ..] | ["namespace", rest @ ..] => {
            rest.len() <= 1
                && rest.iter().all(|w| {
                    w.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
                })
        }
        _ => false,
    }
}

/// Whether `b` can be part of a C++ identifier.
pub fn is_ident(b: u8) -> bool {
    b == b'_' || b.is_ascii_alphanumeric()
}

/// Where `word` occurs in `text` as a whole identifier.
fn occurrences<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, word.as_bytes()).filter(move |&at| {
        !at.checked_sub(1).is_some_and(|p| is_ident(bytes[p]))
            && !bytes.get(at + word.len()).is_some_and(|&b| is_ident(b))
    })
}

/// Whether `word` occurs in `text` as a whole identifier.
pub fn has_word(text: &str, word: &str) -> bool {
    occurrences(text, word).next().is_some()
}

/// Where `name` is defined in `text`: each whole-word occurrence followed by `=` (not `==`)
/// or `{`, as a declarator with its initializer is written.
pub fn definitions<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    occurrences(text, name).filter(move |&at| {
        match text[at + name.len()..].trim_start().as_bytes() {
            [b'=', b'=', ..] => false,
            [b'=', ..] | [b'{', ..] => true,
            _ => false,
        }
    })
}

/// The identifiers of `text`, in order, repeats kept.
pub fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii() && is_ident(c as u8)))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'a>(text: &'a str, items: &[Item]) -> Vec<&'a str> {
        items.iter().map(|r| &text[r.clone()]).collect()
    }

    #[test]
    fn functions_classes_and_declarations_in_namespaces() {
        let text = &crate::kernel::cpp::blank(
            "#include <x.h>\n#define M(a) { a; }\nnamespace a::b {\nconstexpr int K = 4;\ntemplate <int N>\n__global__ void k(int* p) {\n  if (p) { *p = N; }\n}\nstruct S {\n  int f() { return 1; }\n};\n}  // namespace\nextern \"C\" {\nvoid g();\n}\nvoid h() {}\n",
        );
        let found = items(text).unwrap();
        assert_eq!(
            texts(text, &found),
            [
                "#define M(a) { a; }\n",
                "constexpr int K = 4;",
                "template <int N>\n__global__ void k(int* p) {\n  if (p) { *p = N; }\n}",
                "struct S {\n  int f() { return 1; }\n};",
                "void g();",
                "void h() {}",
            ]
        );
    }

    #[test]
    fn unbalanced_braces_give_none() {
        assert_eq!(
            items("#if A\nvoid f() {\n#else\nvoid g() {\n#endif\n}\n"),
            None
        );
        assert_eq!(items("}\nvoid f() {}\n"), None);
        assert_eq!(items("void f() {\n"), None);
    }

    #[test]
    fn a_namespace_holding_a_function_is_not_an_item() {
        let text = "namespace {\nvoid f() { int x = 1; }\n}\n";
        assert_eq!(
            texts(text, &items(text).unwrap()),
            ["void f() { int x = 1; }"]
        );
        // `namespace x = y;` is an alias, a declaration.
        let text = "namespace fs = std::filesystem;\n";
        assert_eq!(
            texts(text, &items(text).unwrap()),
            ["namespace fs = std::filesystem;"]
        );
    }

    #[test]
    fn definitions_are_initialised_declarators() {
        let text =
            "constexpr int kSmem = 4 * kKB; if (kSmem == 2) f(kSmem); int kSmem{3}; kSmem2 = 1;";
        let found: Vec<usize> = definitions(text, "kSmem").collect();
        assert_eq!(found, [14, 61]);
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(has_word("a + kSmem * 2", "kSmem"));
        assert!(!has_word("a + kSmem2 * 2", "kSmem"));
        assert!(!has_word("_kSmem", "kSmem"));
        assert_eq!(
            identifiers("f(k, 227 * kKB, x1)").collect::<Vec<_>>(),
            ["f", "k", "kKB", "x1"]
        );
    }
}
