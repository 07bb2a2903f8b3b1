//! Edits on one file's syntax tree: find the anchor (exactly once), tell whether the edit is
//! already in place, and turn an action into byte replacements that keep every other byte.

use tree_sitter::{Node, Tree};

use super::model::{Action, Anchor, AnchorTarget, Edit};
use super::syntax::{
    StatementPattern, dedent, error_count, expression_tokens, header_tokens, is_statement, line_of,
    owned, scopes, statement_tokens, tokens,
};
use crate::syntax::ts::parse;

/// Bytes `start..end` of the old text become `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// Where an anchor matched, for messages and evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub line: usize,
    pub text: String,
}

/// What one edit would do to the file as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditState {
    Ready {
        replacements: Vec<Replacement>,
        hit: Option<Hit>,
    },
    /// The file already has the edit's result.
    Applied { hit: Option<Hit> },
    /// The anchor matched zero or several times; the reason says which.
    NoMatch(String),
}

/// Works out one edit against the current text and its tree.
pub fn plan_edit(src: &[u8], tree: &Tree, edit: &Edit) -> EditState {
    let root = tree.root_node();
    match (&edit.action, &edit.anchor) {
        (Action::EnsureImport { module, name }, _) => ensure_import(root, src, module, name),
        (_, None) => EditState::NoMatch(format!("{} needs an anchor", edit.action.name())),
        (action, Some(anchor)) => {
            let hits = match find(root, src, anchor) {
                Ok(hits) => hits,
                Err(why) => return EditState::NoMatch(why),
            };
            match hits.as_slice() {
                [node] => anchored(*node, src, action),
                [] => match applied_form(root, src, anchor, action) {
                    Some(hit) => EditState::Applied { hit: Some(hit) },
                    None => EditState::NoMatch(format!(
                        "anchor `{}` not found{}",
                        anchor.target.text(),
                        scope_words(anchor)
                    )),
                },
                many => EditState::NoMatch(format!(
                    "anchor `{}` matches {} times{} (lines {}); it must match exactly once",
                    anchor.target.text(),
                    many.len(),
                    scope_words(anchor),
                    many.iter()
                        .map(|n| (n.start_position().row + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
}

fn scope_words(anchor: &Anchor) -> String {
    anchor
        .function
        .as_ref()
        .map(|f| format!(" in `{f}`"))
        .unwrap_or_default()
}

/// Applies replacements (non-overlapping) to a text.
pub fn apply_replacements(src: &[u8], replacements: &[Replacement]) -> Result<Vec<u8>, String> {
    let mut sorted: Vec<&Replacement> = replacements.iter().collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    for pair in sorted.windows(2) {
        if pair[1].start < pair[0].end {
            return Err(format!(
                "two edits overlap at line {}",
                line_of(src, pair[1].start)
            ));
        }
    }
    let mut out = Vec::with_capacity(src.len() + 256);
    let mut at = 0;
    for r in sorted {
        out.extend_from_slice(&src[at..r.start]);
        out.extend_from_slice(r.text.as_bytes());
        at = r.end;
    }
    out.extend_from_slice(&src[at..]);
    Ok(out)
}

/// Refuses a new text that parses worse than the old one.
pub fn check_reparse(old: &Tree, new_src: &[u8]) -> Result<Tree, String> {
    let tree = parse(new_src).ok_or("the parser gave up on the patched text")?;
    let (before, after) = (error_count(old), error_count(&tree));
    if after > before {
        return Err(format!(
            "the patched text has {after} syntax error node(s) where the original had {before}"
        ));
    }
    Ok(tree)
}

// ----- Anchors ------------------------------------------------------------------------------

/// Every node the anchor matches (outermost first when two share a range).
fn find<'t>(root: Node<'t>, src: &[u8], anchor: &Anchor) -> Result<Vec<Node<'t>>, String> {
    let scope_nodes = match &anchor.function {
        None => vec![root],
        Some(name) => {
            let found = scopes(root, src, name);
            if found.is_empty() {
                return Err(format!("no function or class `{name}` in the file"));
            }
            found
        }
    };
    let matcher = Matcher::new(&anchor.target)?;
    let mut hits: Vec<Node> = Vec::new();
    for scope in scope_nodes {
        let mut stack = vec![scope];
        while let Some(node) = stack.pop() {
            if matcher.matches(node, src)
                && !hits.iter().any(|h| h.byte_range() == node.byte_range())
            {
                hits.push(node);
            }
            let mut cursor = node.walk();
            let children: Vec<Node> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    hits.sort_by_key(|n| n.start_byte());
    hits.dedup_by_key(|n| n.byte_range());
    Ok(hits)
}

enum Matcher {
    Expression {
        kind: &'static str,
        tokens: Vec<String>,
    },
    Statement(StatementPattern),
    /// The right side of an assignment to this name.
    AssignedTo(String),
}

impl Matcher {
    fn new(target: &AnchorTarget) -> Result<Matcher, String> {
        match target {
            AnchorTarget::Gate(text) => expression_tokens(text)
                .map(|(tokens, kind)| Matcher::Expression { kind, tokens })
                .ok_or_else(|| format!("anchor `{text}` is not a Python expression")),
            AnchorTarget::Statement(text) => statement_tokens(text)
                .map(Matcher::Statement)
                .ok_or_else(|| format!("anchor `{text}` is not a Python statement or header")),
            AnchorTarget::Assignment(name) => Ok(Matcher::AssignedTo(name.clone())),
        }
    }

    fn matches(&self, node: Node, src: &[u8]) -> bool {
        match self {
            Matcher::Expression { kind, tokens: want } => {
                node.kind() == *kind && tokens(node, src) == *want
            }
            Matcher::AssignedTo(name) => node.parent().is_some_and(|assign| {
                assign.kind() == "assignment"
                    && assign.child_by_field_name("right") == Some(node)
                    && assign.child_by_field_name("left").is_some_and(|left| {
                        left.kind() == "identifier" && &src[left.byte_range()] == name.as_bytes()
                    })
            }),
            Matcher::Statement(pattern) => {
                is_statement(node)
                    && match pattern {
                        StatementPattern::Whole(want) => tokens(node, src) == *want,
                        StatementPattern::Header(want) => {
                            header_tokens(node, src).is_some_and(|t| t == *want)
                        }
                    }
            }
        }
    }
}

fn hit(node: Node, src: &[u8]) -> Hit {
    // A table is shown by its assignment (`SIZES: dict[...] = {`), not by its opening brace.
    let node = match node.parent() {
        Some(assign) if node.kind() == "dictionary" && assign.kind() == "assignment" => assign,
        _ => node,
    };
    let text = String::from_utf8_lossy(&src[node.byte_range()]);
    let first_line = text.lines().next().unwrap_or("").trim().to_string();
    Hit {
        line: decision_of(node).start_position().row + 1,
        text: first_line,
    }
}

/// The whole condition an anchored operand belongs to: `audit` reports a gate by the line
/// where its decision starts (`if (\n  (a or b)\n  and c\n):` at the `(`), so a patch that
/// edits the inner `(a or b)` names the same line.
fn decision_of(node: Node) -> Node {
    let mut node = node;
    while let Some(parent) = node.parent() {
        if !matches!(
            parent.kind(),
            "parenthesized_expression" | "boolean_operator" | "not_operator"
        ) {
            break;
        }
        node = parent;
    }
    node
}

/// When the anchor is gone, is the edit's result there instead? The result is found by
/// applying the action to the anchor's own text and searching for that.
fn applied_form(root: Node, src: &[u8], anchor: &Anchor, action: &Action) -> Option<Hit> {
    if let Action::InsertAfter(_) | Action::AddKey { .. } = action {
        return None; // its anchor stays; handled where the anchor matches
    }
    let applied_texts: Vec<String> = match (action, &anchor.target) {
        (Action::Replace(text), _) => vec![text.clone()],
        (Action::OrExtend(alt), AnchorTarget::Gate(gate)) => {
            let inner = gate.trim();
            let inner = inner
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .filter(|_| {
                    expression_tokens(gate).is_some_and(|(_, k)| k == "parenthesized_expression")
                })
                .unwrap_or(inner);
            vec![format!("{inner} or {alt}"), format!("({inner} or {alt})")]
        }
        (Action::AddMember(_), AnchorTarget::Gate(gate)) => {
            let tree = parse(gate.as_bytes())?;
            let node = tree.root_node().named_child(0)?.named_child(0)?;
            let EditState::Ready { replacements, .. } = anchored(node, gate.as_bytes(), action)
            else {
                return None;
            };
            let new = apply_replacements(gate.as_bytes(), &replacements).ok()?;
            vec![String::from_utf8(new).ok()?]
        }
        _ => return None,
    };
    for text in applied_texts {
        let target = match &anchor.target {
            AnchorTarget::Gate(_) => AnchorTarget::Gate(text),
            AnchorTarget::Statement(_) => AnchorTarget::Statement(text),
            AnchorTarget::Assignment(_) => return None,
        };
        let probe = Anchor {
            function: anchor.function.clone(),
            target,
        };
        if let Ok(hits) = find(root, src, &probe)
            && hits.len() == 1
        {
            return Some(hit(hits[0], src));
        }
    }
    None
}

// ----- Actions ------------------------------------------------------------------------------

fn anchored(node: Node, src: &[u8], action: &Action) -> EditState {
    let at = Some(hit(node, src));
    let ready = |replacements: Vec<Replacement>| EditState::Ready {
        replacements,
        hit: at.clone(),
    };
    match action {
        Action::OrExtend(alt) if already_extended(node, src, alt) => EditState::Applied { hit: at },
        Action::OrExtend(alt) => ready(or_extend(node, alt)),
        Action::AddMember(member) => match add_member(node, src, member) {
            Ok(Some(r)) => ready(vec![r]),
            Ok(None) => EditState::Applied { hit: at },
            Err(why) => EditState::NoMatch(why),
        },
        Action::Replace(text) => ready(vec![Replacement {
            start: node.start_byte(),
            end: node.end_byte(),
            text: reindent_continuation(text, &indent_of(node, src)),
        }]),
        Action::InsertAfter(text) => insert_after(node, src, text),
        Action::AddKey { key, value } => match add_key(node, src, key, value) {
            Ok(Some(r)) => ready(vec![r]),
            Ok(None) => EditState::Applied { hit: at },
            Err(why) => EditState::NoMatch(why),
        },
        Action::EnsureImport { .. } => EditState::NoMatch("ensure_import takes no anchor".into()),
    }
}

/// Whether the anchored expression is already `... or alt`: inside its parentheses, or as
/// the left operand of an `or` whose right operand is `alt` (the anchor still matches then).
fn already_extended(node: Node, src: &[u8], alt: &str) -> bool {
    let Some((want, _)) = expression_tokens(alt) else {
        return false;
    };
    let right_is_alt = |or: Node| {
        or.kind() == "boolean_operator"
            && or
                .child_by_field_name("operator")
                .is_some_and(|op| op.kind() == "or")
            && or
                .child_by_field_name("right")
                .is_some_and(|r| owned(tokens(r, src)) == want)
    };
    if node.kind() == "parenthesized_expression"
        && let Some(inner) = node.named_child(0)
        && right_is_alt(inner)
    {
        return true;
    }
    node.parent().is_some_and(|parent| {
        right_is_alt(parent)
            && parent.child_by_field_name("left").map(|l| l.id()) == Some(node.id())
    })
}

/// `gate` → `gate or alt`: inside the parentheses of a parenthesised gate, plain after an
/// `or` chain or as a whole condition, and wrapped in parentheses anywhere precedence could
/// change what the new `or` binds to.
pub fn or_extend(node: Node, alt: &str) -> Vec<Replacement> {
    if node.kind() == "parenthesized_expression"
        && let Some(inner) = node.named_child(0)
    {
        return vec![Replacement {
            start: inner.end_byte(),
            end: inner.end_byte(),
            text: format!(" or {alt}"),
        }];
    }
    let is_or_chain = node.kind() == "boolean_operator"
        && node
            .child_by_field_name("operator")
            .is_some_and(|op| op.kind() == "or");
    let whole_condition = node.parent().is_some_and(|p| {
        matches!(p.kind(), "if_statement" | "elif_clause" | "while_statement")
            && p.child_by_field_name("condition").map(|c| c.id()) == Some(node.id())
    });
    let append = Replacement {
        start: node.end_byte(),
        end: node.end_byte(),
        text: format!(" or {alt}"),
    };
    if is_or_chain || whole_condition {
        return vec![append];
    }
    vec![
        Replacement {
            start: node.start_byte(),
            end: node.start_byte(),
            text: "(".into(),
        },
        Replacement {
            text: format!(" or {alt})"),
            ..append
        },
    ]
}

const LITERALS: &[&str] = &["list", "tuple", "set"];

/// Appends a member to the literal at (or, uniquely, inside) the anchor. `Ok(None)` when the
/// member is already there.
fn add_member(node: Node, src: &[u8], member: &str) -> Result<Option<Replacement>, String> {
    let literal = if LITERALS.contains(&node.kind()) {
        node
    } else {
        let mut found = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            if LITERALS.contains(&n.kind()) {
                found.push(n);
                continue;
            }
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
        match found.as_slice() {
            [one] => *one,
            [] => return Err("add_member: the anchor holds no list, tuple or set literal".into()),
            _ => {
                return Err(
                    "add_member: the anchor holds several literals; anchor the one to extend"
                        .into(),
                );
            }
        }
    };
    let want = expression_tokens(member).map(|(t, _)| t);
    let mut cursor = literal.walk();
    let members: Vec<Node> = literal.named_children(&mut cursor).collect();
    if members.iter().any(|m| Some(owned(tokens(*m, src))) == want) {
        return Ok(None);
    }
    let close = literal
        .child(literal.child_count().saturating_sub(1))
        .filter(|c| matches!(c.kind(), "]" | ")" | "}"))
        .ok_or("add_member: the literal has no closing bracket")?;
    let before_close = close.prev_sibling();
    let trailing_comma = before_close.is_some_and(|c| c.kind() == ",");
    Ok(Some(match members.last() {
        None if literal.kind() == "tuple" => Replacement {
            start: close.start_byte(),
            end: close.start_byte(),
            text: format!("{member},"),
        },
        None => Replacement {
            start: close.start_byte(),
            end: close.start_byte(),
            text: member.to_string(),
        },
        Some(_) if trailing_comma => {
            let comma = before_close.expect("checked");
            Replacement {
                start: comma.end_byte(),
                end: comma.end_byte(),
                text: format!(" {member},"),
            }
        }
        Some(last) => Replacement {
            start: last.end_byte(),
            end: last.end_byte(),
            text: format!(", {member}"),
        },
    }))
}

/// Adds `key: value` to the dict literal at the anchor, after its last row and in its layout:
/// on a line of its own at the rows' indentation when the rows are one per line, else inline.
/// `None` when the key is already there (the edit is applied, whatever its row).
fn add_key(node: Node, src: &[u8], key: &str, value: &str) -> Result<Option<Replacement>, String> {
    if node.kind() != "dictionary" {
        return Err(format!(
            "add_key: the anchor is a {}, not a dict literal",
            node.kind().replace('_', " ")
        ));
    }
    let want = expression_tokens(key).map(|(t, _)| t);
    let mut cursor = node.walk();
    let pairs: Vec<Node> = node
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    if pairs.iter().any(|p| p.kind() != "pair") {
        return Err("add_key: the dict has an entry that is not `key: value` (a ** splat)".into());
    }
    if pairs.iter().any(|p| {
        p.child_by_field_name("key")
            .is_some_and(|k| Some(owned(tokens(k, src))) == want)
    }) {
        return Ok(None);
    }
    let Some(last) = pairs.last() else {
        let close = node.end_byte() - 1;
        return Ok(Some(Replacement {
            start: close,
            end: close,
            text: format!("{key}: {value}"),
        }));
    };
    // The comma after the last row, if any (comments may sit between).
    let mut after = last.next_sibling();
    while let Some(n) = after.filter(|n| n.kind() == "comment") {
        after = n.next_sibling();
    }
    let comma = after.filter(|n| n.kind() == ",");
    let one_per_line = pairs.len() > 1
        && pairs
            .windows(2)
            .all(|w| w[1].start_position().row > w[0].end_position().row)
        || pairs.len() == 1 && last.start_position().row > node.start_position().row;
    let row = if one_per_line {
        let line_start = src[..last.start_byte()]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let indent = String::from_utf8_lossy(&src[line_start..last.start_byte()]).to_string();
        format!("\n{indent}{key}: {value},")
    } else {
        format!(" {key}: {value}")
    };
    // After the comma that ends the last row, or after the row with a comma of its own;
    // a comment at the end of the last row's line stays on that line.
    let end_of_row_line = |at: usize| {
        let mut n = last.next_sibling();
        let mut end = at;
        while let Some(c) = n {
            if c.kind() == "comment" && c.start_position().row == last.end_position().row {
                end = c.end_byte();
            } else if c.kind() != "," {
                break;
            }
            n = c.next_sibling();
        }
        end
    };
    Ok(Some(match comma {
        Some(comma) if one_per_line => Replacement {
            start: end_of_row_line(comma.end_byte()),
            end: end_of_row_line(comma.end_byte()),
            text: row,
        },
        Some(comma) => Replacement {
            start: comma.end_byte(),
            end: comma.end_byte(),
            text: format!("{row},"),
        },
        None if one_per_line => Replacement {
            start: last.end_byte(),
            end: last.end_byte(),
            text: format!(",{}", row.trim_end_matches(',')),
        },
        None => Replacement {
            start: last.end_byte(),
            end: last.end_byte(),
            text: format!(",{row}"),
        },
    }))
}

/// Inserts statements after the anchored one, at its indentation; already applied when the
/// next statement is the first inserted one.
fn insert_after(node: Node, src: &[u8], text: &str) -> EditState {
    let at = Some(hit(node, src));
    let indent = indent_of(node, src);
    let line_start = src[..node.start_byte()]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    if src[line_start..node.start_byte()]
        .iter()
        .any(|b| !b" \t".contains(b))
    {
        return EditState::NoMatch(
            "insert_after: the anchored statement does not start its line".into(),
        );
    }
    let inserted = dedent(text);
    if let Some(next) = next_statement(node)
        && first_statement_tokens(&inserted).is_some_and(|t| t == owned(tokens(next, src)))
    {
        return EditState::Applied { hit: at };
    }
    let end = memchr::memchr(b'\n', &src[node.end_byte()..])
        .map_or(src.len(), |i| node.end_byte() + i + 1);
    let mut new_text = String::new();
    if end == src.len() && !src.ends_with(b"\n") {
        new_text.push('\n');
    }
    for line in inserted.lines() {
        if !line.trim().is_empty() {
            new_text.push_str(&indent);
            new_text.push_str(line);
        }
        new_text.push('\n');
    }
    EditState::Ready {
        replacements: vec![Replacement {
            start: end,
            end,
            text: new_text,
        }],
        hit: at,
    }
}

fn next_statement(node: Node) -> Option<Node> {
    let mut next = node.next_named_sibling();
    while let Some(n) = next {
        if n.kind() != "comment" {
            return Some(n);
        }
        next = n.next_named_sibling();
    }
    None
}

fn first_statement_tokens(text: &str) -> Option<Vec<String>> {
    let tree = parse(text.as_bytes())?;
    let first = tree.root_node().named_child(0)?;
    Some(owned(tokens(first, text.as_bytes())))
}

/// The leading whitespace of the line a node starts on.
fn indent_of(node: Node, src: &[u8]) -> String {
    let line_start = src[..node.start_byte()]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    src[line_start..]
        .iter()
        .take_while(|b| b" \t".contains(b))
        .map(|&b| b as char)
        .collect()
}

/// A multi-line replacement keeps its first line where the old text began and indents the
/// rest to the old text's line.
fn reindent_continuation(text: &str, indent: &str) -> String {
    let dedented = dedent(text);
    let mut lines = dedented.lines();
    let mut out = lines.next().unwrap_or("").to_string();
    for line in lines {
        out.push('\n');
        if !line.trim().is_empty() {
            out.push_str(indent);
            out.push_str(line);
        }
    }
    out
}

/// `from module import name`, after the leading block of top-level imports.
fn ensure_import(root: Node, src: &[u8], module: &str, name: &str) -> EditState {
    let mut cursor = root.walk();
    let children: Vec<Node> = root.named_children(&mut cursor).collect();
    if children.iter().any(|c| imports_name(*c, src, module, name)) {
        return EditState::Applied { hit: None };
    }
    let mut insert_after_node = None;
    for (i, child) in children.iter().enumerate() {
        let docstring = i == 0
            && child.kind() == "expression_statement"
            && child.named_child(0).is_some_and(|n| n.kind() == "string");
        match child.kind() {
            "comment" => continue,
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                insert_after_node = Some(*child)
            }
            _ if docstring => insert_after_node = Some(*child),
            _ => break,
        }
    }
    let at = insert_after_node.map_or(0, |n| {
        memchr::memchr(b'\n', &src[n.end_byte()..]).map_or(src.len(), |i| n.end_byte() + i + 1)
    });
    let mut text = String::new();
    if at == src.len() && !src.is_empty() && !src.ends_with(b"\n") {
        text.push('\n');
    }
    text.push_str(&format!("from {module} import {name}\n"));
    EditState::Ready {
        replacements: vec![Replacement {
            start: at,
            end: at,
            text,
        }],
        hit: None,
    }
}

fn imports_name(node: Node, src: &[u8], module: &str, name: &str) -> bool {
    if node.kind() != "import_from_statement" {
        return false;
    }
    let text = |n: Node| std::str::from_utf8(&src[n.byte_range()]).unwrap_or("");
    let Some(from) = node.child_by_field_name("module_name") else {
        return false;
    };
    if text(from) != module {
        return false;
    }
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .any(|n| match n.kind() {
            "aliased_import" => n
                .child_by_field_name("alias")
                .is_some_and(|a| text(a) == name),
            _ => text(n) == name,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::model::{Anchor, AnchorTarget};

    fn run(src: &str, anchor: Option<Anchor>, action: Action) -> (EditState, String) {
        let tree = parse(src.as_bytes()).unwrap();
        let edit = Edit {
            file: "m.py".into(),
            anchor,
            action,
        };
        let state = plan_edit(src.as_bytes(), &tree, &edit);
        let new = match &state {
            EditState::Ready { replacements, .. } => {
                String::from_utf8(apply_replacements(src.as_bytes(), replacements).unwrap())
                    .unwrap()
            }
            _ => src.to_string(),
        };
        (state, new)
    }

    fn gate(text: &str, function: Option<&str>) -> Option<Anchor> {
        Some(Anchor {
            function: function.map(str::to_string),
            target: AnchorTarget::Gate(text.into()),
        })
    }

    #[test]
    fn or_extend_inside_parentheses_and_applied_twice() {
        let src = "def f():\n    if (a or b) and c:\n        pass\n";
        let action = Action::OrExtend("d()".into());
        let (state, new) = run(src, gate("(a or b)", Some("f")), action.clone());
        assert!(matches!(state, EditState::Ready { .. }));
        assert_eq!(
            new,
            "def f():\n    if (a or b or d()) and c:\n        pass\n"
        );
        let (again, _) = run(&new, gate("(a or b)", Some("f")), action);
        assert!(matches!(again, EditState::Applied { .. }), "{again:?}");
    }

    #[test]
    fn a_hit_names_the_line_its_condition_starts_on_as_audit_does() {
        // sglang 0.5.5 `communicator.py:567`: the anchor is the inner `(a or b)` on the next
        // line; audit reports the gate at the opening parenthesis.
        let src = "def f():\n    if (\n        (a or b)\n        and c\n    ):\n        pass\n\n\
                   def h():\n    x = g(\n        (a or b),\n    )\n";
        let line = |function: &str| {
            let (state, _) = run(
                src,
                gate("(a or b)", Some(function)),
                Action::OrExtend("d".into()),
            );
            match state {
                EditState::Ready { hit: Some(hit), .. } => (hit.line, hit.text),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(line("f"), (2, "(a or b)".to_string()));
        // An argument is its own decision: the call around it is not climbed.
        assert_eq!(line("h"), (10, "(a or b)".to_string()));
    }

    #[test]
    fn or_extend_of_a_bare_call_is_applied_once() {
        let action = Action::OrExtend("c()".into());
        for (src, want) in [
            ("if a():\n    pass\n", "if a() or c():\n    pass\n"),
            ("x = p and a()\n", "x = p and (a() or c())\n"),
        ] {
            let (state, new) = run(src, gate("a()", None), action.clone());
            assert!(matches!(state, EditState::Ready { .. }));
            assert_eq!(new, want);
            let (again, same) = run(&new, gate("a()", None), action.clone());
            assert!(matches!(again, EditState::Applied { .. }), "{again:?}");
            assert_eq!(same, new);
        }
    }

    #[test]
    fn or_extend_wraps_where_precedence_needs_it() {
        let (_, new) = run(
            "x = p and q\n",
            gate("q", None),
            Action::OrExtend("r".into()),
        );
        assert_eq!(new, "x = p and (q or r)\n");
        let (_, new) = run(
            "if p and q:\n    pass\n",
            gate("p and q", None),
            Action::OrExtend("r".into()),
        );
        assert_eq!(new, "if p and q or r:\n    pass\n");
    }

    #[test]
    fn anchors_must_match_once() {
        let src = "x = a or b\ny = a or b\n";
        let (state, _) = run(src, gate("a or b", None), Action::OrExtend("c".into()));
        assert!(
            matches!(&state, EditState::NoMatch(why) if why.contains("2 times")),
            "{state:?}"
        );
        let (state, _) = run(src, gate("a or z", None), Action::OrExtend("c".into()));
        assert!(matches!(&state, EditState::NoMatch(why) if why.contains("not found")));
        let (state, _) = run(src, gate("a or b", Some("g")), Action::OrExtend("c".into()));
        assert!(matches!(&state, EditState::NoMatch(why) if why.contains("no function")));
    }

    #[test]
    fn add_member_forms() {
        let act = |m: &str| Action::AddMember(m.into());
        let (_, new) = run("f(v=[9, 10])\n", gate("[9, 10]", None), act("12"));
        assert_eq!(new, "f(v=[9, 10, 12])\n");
        let (_, new) = run("x = (9,)\n", gate("(9,)", None), act("12"));
        assert_eq!(new, "x = (9, 12,)\n");
        let (_, new) = run("ok = m in {9, 10}\n", gate("m in {9, 10}", None), act("12"));
        assert_eq!(new, "ok = m in {9, 10, 12}\n");
        let (state, new) = run("x = [9, 10, 12]\n", gate("[9, 10]", None), act("12"));
        assert!(matches!(state, EditState::Applied { .. }), "{state:?}");
        assert_eq!(new, "x = [9, 10, 12]\n");
    }

    #[test]
    fn add_key_extends_a_table_in_its_layout() {
        let table = |name: &str| {
            Some(Anchor {
                function: None,
                target: AnchorTarget::Assignment(name.into()),
            })
        };
        let act = |k: &str, v: &str| Action::AddKey {
            key: k.into(),
            value: v.into(),
        };
        // One row per line, trailing comma, a comment on the last row's line.
        let src = "# sizes\nSIZES: dict[int, dict[int, float]] = {\n    90: {\n        2: 64,\n    },\n    100: {2: 64},  # MB\n}\nuse = SIZES\n";
        let (_, new) = run(src, table("SIZES"), act("120", "{2: 64, 4: 2}"));
        assert_eq!(
            new,
            "# sizes\nSIZES: dict[int, dict[int, float]] = {\n    90: {\n        2: 64,\n    },\n    100: {2: 64},  # MB\n    120: {2: 64, 4: 2},\n}\nuse = SIZES\n"
        );
        let (state, again) = run(&new, table("SIZES"), act("120", "{2: 1}"));
        assert!(matches!(state, EditState::Applied { .. }), "{state:?}");
        assert_eq!(again, new);
        // Without a trailing comma; inline.
        let (_, new) = run(
            "T = {\n    90: 1,\n    100: 2\n}\n",
            table("T"),
            act("120", "3"),
        );
        assert_eq!(new, "T = {\n    90: 1,\n    100: 2,\n    120: 3\n}\n");
        let (_, new) = run("T = {90: 1, 100: 2}\n", table("T"), act("120", "3"));
        assert_eq!(new, "T = {90: 1, 100: 2, 120: 3}\n");
        let (_, new) = run("T = {}\n", table("T"), act("120", "3"));
        assert_eq!(new, "T = {120: 3}\n");
        // Only the assignment to that name; anything but a dict is refused.
        let (state, _) = run("T = [90, 100]\n", table("T"), act("120", "3"));
        assert!(
            matches!(state, EditState::NoMatch(ref why) if why.contains("not a dict")),
            "{state:?}"
        );
        let (state, _) = run("U = {90: 1}\n", table("T"), act("120", "3"));
        assert!(matches!(state, EditState::NoMatch(_)), "{state:?}");
    }

    #[test]
    fn ensure_import_after_leading_imports() {
        let src = "\"\"\"Doc.\"\"\"\nimport os\nfrom a import (\n    b,\n)\n\nx = 1\nimport late\n";
        let action = Action::EnsureImport {
            module: "a".into(),
            name: "c".into(),
        };
        let (_, new) = run(src, None, action.clone());
        assert_eq!(
            new,
            "\"\"\"Doc.\"\"\"\nimport os\nfrom a import (\n    b,\n)\nfrom a import c\n\nx = 1\nimport late\n"
        );
        let (state, _) = run(&new, None, action);
        assert!(matches!(state, EditState::Applied { .. }));
    }

    #[test]
    fn insert_after_keeps_indentation_and_is_idempotent() {
        let src = "def f(self):\n    if a and b:\n        x = 1\n    return x\n";
        let anchor = Some(Anchor {
            function: Some("f".into()),
            target: AnchorTarget::Statement("if a and b:".into()),
        });
        let action = Action::InsertAfter("if c:\n    x = 2\n".into());
        let (_, new) = run(src, anchor.clone(), action.clone());
        assert_eq!(
            new,
            "def f(self):\n    if a and b:\n        x = 1\n    if c:\n        x = 2\n    return x\n"
        );
        let (state, _) = run(&new, anchor, action);
        assert!(matches!(state, EditState::Applied { .. }), "{state:?}");
    }

    #[test]
    fn reparse_refuses_broken_text() {
        let old = parse(b"x = (a or b)\n").unwrap();
        assert!(check_reparse(&old, b"x = (a or b or )\n").is_err());
        assert!(check_reparse(&old, b"x = (a or b or c)\n").is_ok());
    }
}
