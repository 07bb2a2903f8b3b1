//! Cheap node kinds and fields. `Node::kind` reads the kind's C string (strlen and UTF-8
//! check) at every call and `Node::child_by_field_name` looks the field name up by string
//! comparison; the lowerer asks both for nearly every node, so both are read from tables
//! built once from the grammar instead. Same answers, a fraction of the work.

use std::sync::OnceLock;

use tree_sitter::{Language, Node};

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

macro_rules! fields {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// The grammar fields the lowerer reads.
        #[derive(Clone, Copy, Debug)]
        pub enum F { $($variant),* }

        const FIELD_NAMES: &[&str] = &[$($name),*];

        #[cfg(test)]
        const ALL_FIELDS: &[F] = &[$(F::$variant),*];
    };
}

fields! {
    Alias = "alias",
    Alternative = "alternative",
    Argument = "argument",
    Arguments = "arguments",
    Attribute = "attribute",
    Body = "body",
    Condition = "condition",
    Consequence = "consequence",
    Definition = "definition",
    Expression = "expression",
    Function = "function",
    Guard = "guard",
    Key = "key",
    Left = "left",
    ModuleName = "module_name",
    Name = "name",
    Object = "object",
    Operator = "operator",
    Parameters = "parameters",
    Right = "right",
    Subject = "subject",
    Subscript = "subscript",
    Superclasses = "superclasses",
    Type = "type",
    Value = "value",
}

fn field_ids() -> &'static [u16] {
    static IDS: OnceLock<Vec<u16>> = OnceLock::new();
    IDS.get_or_init(|| {
        let language = language();
        FIELD_NAMES
            .iter()
            .map(|name| language.field_id_for_name(name).map_or(0, |id| id.get()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_kinds_and_fields_match_tree_sitter() {
        let src = b"import a.b as c\nfrom .x import (y as z, w)\n@d(e=1)\nclass K(B, metaclass=M):\n    def f(self, p: int = 3, *a, **k) -> None:\n        '''doc'''\n        if p > 2 and not q: return x.y[1:2]\n        elif p in (1, 2): pass\n        else:\n            r = lambda t: t if t else -1\n        for i in range(3): print(f\"{i!r}\")\n        try:\n            pass\n        except E as e:\n            raise\n        finally:\n            del r\n        with o as v: yield {1: 2, **w}\n        return [i async for i in g()]\nx = (1,\n # c\n 2)\nif (:\n";
        let tree = super::super::lower::parse(src).expect("parses");
        let mut stack = vec![tree.root_node()];
        let mut seen = 0;
        while let Some(node) = stack.pop() {
            seen += 1;
            assert_eq!(node.kind_name(), node.kind());
            for (&field, name) in ALL_FIELDS.iter().zip(FIELD_NAMES) {
                assert_eq!(node.field(field), node.child_by_field_name(name), "{name}");
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
        assert!(seen > 100);
    }
}
