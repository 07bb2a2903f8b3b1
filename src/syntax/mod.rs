//! Python source as a syntax tree: parsed by ruff's parser (`ruff_python_parser`) and laid
//! out as tree-sitter-python lays out its trees, with the same node kinds, fields, byte
//! ranges and anonymous tokens (`convert`). What the scan, the lowering and the verdicts read
//! was written against tree-sitter's shape; this tree keeps that shape while parsing about
//! four times faster (`bench/parsers.sh`).
//!
//! Where the two parsers differ, the tree follows Python: tree-sitter-python misreads a few
//! rare forms (`x >> 1 ^ y & z` grouped as `((x >> 1) ^ y) & z`, `type(x).y = 1` taken for a
//! type alias, a backslash in a string read as a line continuation). The differential tests
//! (`tests.rs`, and `tests/syntax_tree.rs` on real wheels) say how often.
//!
//! Parts of a file can be parsed alone (`parse_ranges`): the bytes outside the ranges are
//! blanked (newlines kept), so offsets and lines stay those of the file.

mod convert;
#[cfg(test)]
mod tests;
mod tree;
pub mod ts;

pub use tree::{F, Node, Point, Tree, TreeCursor};

/// Node kinds `outline` leaves out: escapes inside string content (this tree does not split
/// string content), and (in `outline`) the inside of a format specifier.
pub const OUTLINE_LEAVES_OUT: &[&str] = &[
    "escape_sequence",
    "escape_interpolation",
    "line_continuation",
];

/// The tree in one line per node (indent by depth, anonymous kinds quoted, field, byte
/// range): what the differential tests compare with tree-sitter-python's tree, written the
/// same way.
pub fn outline(tree: &Tree) -> Vec<String> {
    fn walk(node: Node, depth: usize, out: &mut Vec<String>) {
        if OUTLINE_LEAVES_OUT.contains(&node.kind()) {
            return;
        }
        out.push(format!(
            "{}{}{} {} {}..{}",
            " ".repeat(depth),
            if node.is_named() { "" } else { "'" },
            node.kind(),
            node.field_name().unwrap_or(""),
            node.start_byte(),
            node.end_byte()
        ));
        if node.kind() == "format_specifier" {
            return;
        }
        for child in node.children(&mut node.walk()) {
            walk(child, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(tree.root_node(), 0, &mut out);
    out
}

/// Parses a whole file. Bytes that are not UTF-8 are read as `?` (offsets unchanged).
pub fn parse(src: &[u8]) -> Tree {
    match std::str::from_utf8(src) {
        Ok(text) => convert::tree(text),
        Err(_) => convert::tree(&as_text(src.to_vec())),
    }
}

/// Parses only these byte ranges of a file: every other byte is blanked (a newline kept), so
/// the tree's offsets, rows and columns are the file's.
pub fn parse_ranges(src: &[u8], ranges: &[(usize, usize)]) -> Tree {
    let mut kept = vec![b' '; src.len()];
    for (i, &b) in src.iter().enumerate() {
        if b == b'\n' || b == b'\r' {
            kept[i] = b;
        }
    }
    let mut last = 0;
    for &(start, end) in ranges {
        let (start, end) = (start.min(src.len()), end.min(src.len()));
        kept[start..end].copy_from_slice(&src[start..end]);
        last = last.max(end);
    }
    let mut tree = convert::tree(&as_text(kept));
    tree.end_root_at(last as u32);
    tree
}

/// Text with every byte that is not part of valid UTF-8 replaced by `?`.
fn as_text(mut bytes: Vec<u8>) -> String {
    let mut at = 0;
    loop {
        match std::str::from_utf8(&bytes[at..]) {
            Ok(_) => break,
            Err(err) => {
                let bad = at + err.valid_up_to();
                let len = err.error_len().unwrap_or(bytes.len() - bad);
                for b in &mut bytes[bad..bad + len] {
                    *b = b'?';
                }
                at = bad + len;
            }
        }
    }
    String::from_utf8(bytes).expect("every invalid byte replaced")
}
