//! tree-sitter-python, for the one stage not yet on `crate::syntax`: the patcher parses the
//! files it edits with it, and `NodeExt` reads its node kinds and fields from tables. Also
//! `outline`, tree-sitter's side of the differential tests. Goes (but `outline`) when the
//! patcher moves.

use std::sync::OnceLock;

use tree_sitter::{Language, Node, Tree};

use super::{F, OUTLINE_LEAVES_OUT};

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

/// tree-sitter's tree of a file in `outline`'s words, or `None` where tree-sitter found an
/// error (then there is nothing to agree with).
pub fn outline_of_text(src: &[u8]) -> Option<Vec<String>> {
    let tree = parse(src)?;
    (!tree.root_node().has_error()).then(|| outline(&tree))
}

/// A tree-sitter tree written as `super::outline` writes a `syntax` tree: what the
/// differential tests compare.
pub fn outline(tree: &Tree) -> Vec<String> {
    fn walk(cursor: &mut tree_sitter::TreeCursor, depth: usize, out: &mut Vec<String>) {
        let node = cursor.node();
        if OUTLINE_LEAVES_OUT.contains(&node.kind()) {
            return;
        }
        out.push(super::outline_line(
            depth,
            node.is_named(),
            node.kind(),
            cursor.field_name(),
            (node.start_byte(), node.end_byte()),
        ));
        if node.kind() == "format_specifier" {
            return;
        }
        if cursor.goto_first_child() {
            loop {
                walk(cursor, depth + 1, out);
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
            cursor.goto_parent();
        }
    }
    let mut out = Vec::new();
    walk(&mut tree.walk(), 0, &mut out);
    out
}
