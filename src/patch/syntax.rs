//! Syntax-tree helpers for patching: token-normalised text, scopes by qualified name, and the
//! count of ERROR/MISSING nodes that decides whether an edit broke the file.

use tree_sitter::{Node, Tree};

use crate::syntax::ts::{NodeExt, parse};

/// Kinds whose whole text is one token (their children split string contents at escapes).
const ATOMIC_KINDS: &[&str] = &["string", "comment"];

/// The tokens of a node, comments dropped: two pieces of code with the same tokens are the
/// same code, whatever their spacing, line breaks or comments.
pub fn tokens<'a>(node: Node, src: &'a [u8]) -> Vec<&'a str> {
    let mut out = Vec::new();
    collect_tokens(node, src, &mut out);
    out
}

fn collect_tokens<'a>(node: Node, src: &'a [u8], out: &mut Vec<&'a str>) {
    if node.kind() == "comment" {
        return;
    }
    if node.child_count() == 0 || ATOMIC_KINDS.contains(&node.kind()) {
        let text = std::str::from_utf8(&src[node.byte_range()]).unwrap_or("");
        if !text.is_empty() {
            out.push(text);
        }
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_tokens(child, src, out);
    }
}

/// The tokens of an expression given as text, or `None` when it is not one expression.
pub fn expression_tokens(text: &str) -> Option<(Vec<String>, &'static str)> {
    let tree = parse(text.as_bytes())?;
    let node = single_expression(&tree)?;
    let kind = node.kind_name();
    Some((owned(tokens(node, text.as_bytes())), kind))
}

fn single_expression(tree: &Tree) -> Option<Node<'_>> {
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return None;
    }
    let statement = root.named_child(0)?;
    if statement.kind() != "expression_statement" || statement.named_child_count() != 1 {
        return None;
    }
    statement.named_child(0)
}

pub fn parses_as_expression(text: &str) -> bool {
    parse(text.as_bytes())
        .as_ref()
        .and_then(single_expression)
        .is_some()
}

/// Whether text (indented or not) is one or more complete statements.
pub fn parses_as_statements(text: &str) -> bool {
    let text = dedent(text);
    parse(text.as_bytes()).is_some_and(|tree| {
        let root = tree.root_node();
        !root.has_error() && root.named_child_count() > 0
    })
}

/// The tokens of the first statement of a text, or of a compound statement's header when the
/// text is only a header (`if a and b` or `if a and b:`).
pub fn statement_tokens(text: &str) -> Option<StatementPattern> {
    let dedented = dedent(text);
    if let Some(tree) = parse(dedented.as_bytes()) {
        let root = tree.root_node();
        // tree-sitter accepts `if a:` with an empty block: that is a header, not a statement.
        let whole = root
            .named_child(0)
            .filter(|_| !root.has_error() && root.named_child_count() == 1)
            .filter(|node| !has_empty_body(*node));
        if let Some(node) = whole {
            return Some(StatementPattern::Whole(owned(tokens(
                node,
                dedented.as_bytes(),
            ))));
        }
    }
    let header = dedented.trim_end().trim_end_matches(':');
    let probe = format!("{header}:\n    pass\n");
    let tree = parse(probe.as_bytes())?;
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return None;
    }
    let node = root.named_child(0)?;
    Some(StatementPattern::Header(owned(header_tokens(
        node,
        probe.as_bytes(),
    )?)))
}

fn has_empty_body(node: Node) -> bool {
    node.child_by_field_name("body")
        .or_else(|| node.child_by_field_name("consequence"))
        .is_some_and(|body| body.named_child_count() == 0)
}

/// What a statement anchor compares: the whole statement, or only a compound header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatementPattern {
    Whole(Vec<String>),
    Header(Vec<String>),
}

/// The tokens of a compound statement before the `:` that opens its body.
pub fn header_tokens<'a>(node: Node, src: &'a [u8]) -> Option<Vec<&'a str>> {
    let body = node
        .child_by_field_name("body")
        .or_else(|| node.child_by_field_name("consequence"))?;
    let mut out = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.start_byte() >= body.start_byte() {
            break;
        }
        collect_tokens(child, src, &mut out);
    }
    if out.last() == Some(&":") {
        out.pop();
    }
    Some(out)
}

pub fn owned(tokens: Vec<&str>) -> Vec<String> {
    tokens.into_iter().map(str::to_string).collect()
}

/// Whether a node is a statement (simple or compound).
pub fn is_statement(node: Node) -> bool {
    let kind = node.kind();
    kind.ends_with("_statement")
        || matches!(
            kind,
            "function_definition" | "class_definition" | "decorated_definition"
        )
}

/// The ERROR and MISSING nodes of a tree.
pub fn error_count(tree: &Tree) -> usize {
    let mut count = 0;
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            count += 1;
        }
        if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    count
}

/// The definitions (functions or classes) whose qualified name is `name`, or whose own name
/// is `name` when it has no dot.
pub fn scopes<'t>(root: Node<'t>, src: &[u8], name: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    let mut stack = vec![(root, String::new())];
    while let Some((node, prefix)) = stack.pop() {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let definition = match child.kind() {
                "function_definition" | "class_definition" => Some(child),
                _ => None,
            };
            let Some(definition) = definition else {
                stack.push((child, prefix.clone()));
                continue;
            };
            let own = definition
                .child_by_field_name("name")
                .and_then(|n| std::str::from_utf8(&src[n.byte_range()]).ok())
                .unwrap_or("");
            let qualified = if prefix.is_empty() {
                own.to_string()
            } else {
                format!("{prefix}.{own}")
            };
            if qualified == name || (!name.contains('.') && own == name) {
                found.push(definition);
            }
            stack.push((definition, qualified));
        }
    }
    found.sort_by_key(|n| n.start_byte());
    found
}

/// Removes the common leading indentation of non-blank lines.
pub fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.get(indent..).unwrap_or(line.trim_start()));
        out.push('\n');
    }
    out
}

/// 1-based line of a byte offset.
pub fn line_of(src: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &src[..offset.min(src.len())]).count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_ignore_layout_and_comments() {
        let (a, kind) = expression_tokens("(a or  b)").unwrap();
        let (b, _) = expression_tokens("(a or # why\n b)").unwrap();
        assert_eq!(a, b);
        assert_eq!(kind, "parenthesized_expression");
        assert_ne!(a, expression_tokens("(a or c)").unwrap().0);
    }

    #[test]
    fn strings_with_escapes_are_one_token() {
        let (a, _) = expression_tokens(r#"f("a\nb")"#).unwrap();
        assert!(a.contains(&r#""a\nb""#.to_string()));
        assert_ne!(a, expression_tokens(r#"f("a\nc")"#).unwrap().0);
    }

    #[test]
    fn headers_and_whole_statements() {
        assert!(matches!(
            statement_tokens("if a and b:"),
            Some(StatementPattern::Header(t)) if t == ["if", "a", "and", "b"]
        ));
        assert!(matches!(
            statement_tokens("x = 1"),
            Some(StatementPattern::Whole(t)) if t == ["x", "=", "1"]
        ));
    }

    #[test]
    fn scopes_by_qualified_name() {
        let src = b"class A:\n    def f(self):\n        pass\ndef f():\n    pass\n";
        let tree = parse(src).unwrap();
        assert_eq!(scopes(tree.root_node(), src, "A.f").len(), 1);
        assert_eq!(scopes(tree.root_node(), src, "f").len(), 2);
        assert_eq!(scopes(tree.root_node(), src, "B.f").len(), 0);
    }
}
