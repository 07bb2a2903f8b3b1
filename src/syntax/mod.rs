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

/// One node of an outline (`outline`, `ts::outline`): indent by depth, an anonymous kind
/// quoted, the field, the byte range.
pub(crate) fn outline_line(
    depth: usize,
    named: bool,
    kind: &str,
    field: Option<&str>,
    (start, end): (usize, usize),
) -> String {
    format!(
        "{}{}{kind} {} {start}..{end}",
        " ".repeat(depth),
        if named { "" } else { "'" },
        field.unwrap_or("")
    )
}

/// The tree in one line per node (indent by depth, anonymous kinds quoted, field, byte
/// range): what the differential tests compare with tree-sitter-python's tree, written the
/// same way.
pub fn outline(tree: &Tree) -> Vec<String> {
    fn walk(node: Node, depth: usize, out: &mut Vec<String>) {
        if OUTLINE_LEAVES_OUT.contains(&node.kind()) {
            return;
        }
        out.push(outline_line(
            depth,
            node.is_named(),
            node.kind(),
            node.field_name(),
            (node.start_byte(), node.end_byte()),
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

/// Parses only these byte ranges of a file (sorted, not overlapping). Positions, rows and
/// columns are the file's: the text parsed is the ranges one after the other, each on its own
/// line at its own column (a range that goes on the line where the last one ended keeps the
/// blanks between), so a piece of a big file costs its own size, not the file's.
pub fn parse_ranges(src: &[u8], ranges: &[(usize, usize)]) -> Tree {
    parse_ranges_in_lines(src, ranges, &line_starts_of(src))
}

/// `parse_ranges` with the file's line starts already known (`line_starts_of`): for callers
/// that parse many pieces of one file.
pub fn parse_ranges_in_lines(
    src: &[u8],
    ranges: &[(usize, usize)],
    line_starts: &std::sync::Arc<[u32]>,
) -> Tree {
    /// Bytes of the file copied to `text[compact..compact + len]`.
    struct Segment {
        compact: u32,
        file: u32,
        len: u32,
    }
    let mut text: Vec<u8> = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut copy = |text: &mut Vec<u8>, from: usize, to: usize| {
        segments.push(Segment {
            compact: text.len() as u32,
            file: from as u32,
            len: (to - from) as u32,
        });
        text.extend_from_slice(&src[from..to]);
    };
    let mut last_end: Option<usize> = None;
    for &(start, end) in ranges {
        let (start, end) = (start.min(src.len()), end.min(src.len()));
        if start >= end || last_end.is_some_and(|last| start < last) {
            continue;
        }
        let line = line_starts.partition_point(|&s| s as usize <= start) - 1;
        let line_start = line_starts[line] as usize;
        match last_end {
            // On the line where the last range ended: the bytes between are blanks.
            Some(last) if last > line_start => text.resize(text.len() + (start - last), b' '),
            _ => {
                if text.last().is_some_and(|&b| b != b'\n') {
                    text.push(b'\n');
                }
                let indent = &src[line_start..start];
                if indent.iter().all(|&b| b == b' ' || b == b'\t') {
                    copy(&mut text, line_start, start);
                } else {
                    text.resize(text.len() + indent.len(), b' ');
                }
            }
        }
        copy(&mut text, start, end);
        last_end = Some(end);
    }
    let mut tree = convert::tree(&as_text(text));
    // The segment holding a compact offset: the last that begins at or before it (before
    // it, for an end: an end takes the segment it closes). Nodes come parents first, in
    // source order, so the segment of the node before, or the next one, nearly always holds
    // it: those are tried before a bisection.
    let begins = |s: &Segment, at: u32, closing: bool| {
        if closing {
            s.compact < at
        } else {
            s.compact <= at
        }
    };
    let holds = |i: usize, at: u32, closing: bool| {
        segments.get(i).is_some_and(|s| begins(s, at, closing))
            && segments
                .get(i + 1)
                .is_none_or(|next| !begins(next, at, closing))
    };
    let mut hint = 0usize;
    let to_file = |at: u32, closing: bool| {
        let found = if holds(hint, at, closing) {
            Some(hint)
        } else if holds(hint + 1, at, closing) {
            Some(hint + 1)
        } else {
            segments
                .partition_point(|s| begins(s, at, closing))
                .checked_sub(1)
        };
        match found {
            Some(i) => {
                hint = i;
                let s = &segments[i];
                s.file + (at - s.compact).min(s.len)
            }
            None => segments.first().map_or(0, |s| s.file),
        }
    };
    tree.relocate(to_file, line_starts.clone());
    tree.end_root_at(last_end.unwrap_or(0) as u32);
    tree
}

/// The offset of every line's start, `0` first.
pub fn line_starts_of(src: &[u8]) -> std::sync::Arc<[u32]> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', src).map(|i| i as u32 + 1))
        .collect()
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
