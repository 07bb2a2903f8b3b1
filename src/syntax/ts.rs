//! tree-sitter-python, for the stages not yet on `crate::syntax`: the verdicts and the
//! patcher parse with it (whole files, and pieces of files with file-absolute positions),
//! and `NodeExt` reads its node kinds and fields from tables. Goes when they move.

use std::sync::OnceLock;

use tree_sitter::{Language, Node, Tree};

use super::F;

fn language() -> &'static Language {
    static LANGUAGE: OnceLock<Language> = OnceLock::new();
    LANGUAGE.get_or_init(|| tree_sitter_python::LANGUAGE.into())
}

/// Kind names by kind id (`Node::kind_id` is the public symbol, whose name is the node's).
fn kinds() -> &'static [&'static str] {
    static KINDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let language = language();
        (0..language.node_kind_count())
            .map(|id| language.node_kind_for_id(id as u16).unwrap_or(""))
            .collect()
    })
}

fn field_ids() -> &'static [u16] {
    static IDS: OnceLock<Vec<u16>> = OnceLock::new();
    IDS.get_or_init(|| {
        let language = language();
        F::ALL
            .iter()
            .map(|f| {
                language
                    .field_id_for_name(f.name())
                    .map_or(0, |id| id.get())
            })
            .collect()
    })
}

pub trait NodeExt<'tree> {
    /// `Node::kind`, from a table.
    fn kind_name(&self) -> &'static str;
    /// `Node::child_by_field_name`, by a field id looked up once.
    fn field(&self, field: F) -> Option<Node<'tree>>;
}

impl<'tree> NodeExt<'tree> for Node<'tree> {
    #[inline]
    fn kind_name(&self) -> &'static str {
        match kinds().get(self.kind_id() as usize) {
            Some(name) => name,
            // `ERROR` has an id outside the table; the grammar still names it.
            None => language()
                .node_kind_for_id(self.kind_id())
                .unwrap_or("ERROR"),
        }
    }

    #[inline]
    fn field(&self, field: F) -> Option<Node<'tree>> {
        match field_ids()[field as usize] {
            0 => None,
            id => self.child_by_field_id(id),
        }
    }
}

thread_local! {
    static PARSER: std::cell::RefCell<tree_sitter::Parser> = std::cell::RefCell::new(new_parser());
}

/// A tree-sitter parser for Python.
pub fn new_parser() -> tree_sitter::Parser {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("tree-sitter-python matches the tree-sitter ABI");
    parser
}

/// Parses with this thread's parser.
pub fn parse(src: &[u8]) -> Option<Tree> {
    PARSER.with(|parser| parser.borrow_mut().parse(src, None))
}

/// Parses only the given byte ranges (whole top-level statements); positions stay
/// file-absolute.
pub fn parse_ranges(src: &[u8], ranges: &[(usize, usize)]) -> Option<Tree> {
    let mut row = 0;
    let mut scanned = 0;
    let point_at = |offset: usize| {
        row += memchr::memchr_iter(b'\n', &src[scanned..offset]).count();
        scanned = offset;
        let line_start = memchr::memrchr(b'\n', &src[..offset]).map_or(0, |i| i + 1);
        tree_sitter::Point::new(row, offset - line_start)
    };
    parse_ranges_at(src, ranges, point_at)
}

/// `parse_ranges` with the offset of every line's start already known (`0` first): rows by
/// bisection, where `parse_ranges` counts lines from the file's start. For callers that parse
/// many pieces of one file (the verdicts, a piece per gate): counting from the start each
/// time would cost the file's length per piece.
pub fn parse_ranges_in_lines(
    src: &[u8],
    ranges: &[(usize, usize)],
    line_starts: &[usize],
) -> Option<Tree> {
    let point_at = |offset: usize| {
        let row = line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let line_start = line_starts.get(row).copied().unwrap_or(0);
        tree_sitter::Point::new(row, offset - line_start)
    };
    parse_ranges_at(src, ranges, point_at)
}

fn parse_ranges_at(
    src: &[u8],
    ranges: &[(usize, usize)],
    mut point_at: impl FnMut(usize) -> tree_sitter::Point,
) -> Option<Tree> {
    // Adjacent ranges are one range to the parser (the same bytes in the same order), and
    // tree-sitter finds the range of a position by a linear scan at every token: fewer
    // ranges, faster lexing.
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for &(start, end) in ranges {
        match merged.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => merged.push((start, end)),
        }
    }
    let mut included = Vec::with_capacity(merged.len());
    for (start, end) in merged {
        let start_point = point_at(start);
        let end_point = point_at(end);
        included.push(tree_sitter::Range {
            start_byte: start,
            end_byte: end,
            start_point,
            end_point,
        });
    }
    PARSER.with(|parser| {
        let mut parser = parser.borrow_mut();
        parser.set_included_ranges(&included).ok()?;
        let tree = parser.parse(src, None);
        let _ = parser.set_included_ranges(&[]);
        tree
    })
}
