//! ruff's syntax tree laid out in tree-sitter-python's shape (see the module above): one
//! walk of ruff's AST, in source order, that opens a node per tree-sitter node and places
//! every keyword, operator and punctuation token between them as an anonymous child.

use ruff_python_ast::token::{Token, TokenKind};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::tree::{NONE, NodeData, Tree};

/// Nesting (expressions and blocks) past which the tree holds an `ERROR` node instead of the
/// rest: the lowering reads expressions 48 levels deep, CPython refuses 100 levels of blocks,
/// and the walk stays within a 2 MiB stack.
const MAX_DEPTH: u32 = 256;

struct Builder<'s> {
    src: &'s str,
    tokens: &'s [Token],
    /// The next token not yet placed in the tree.
    cursor: usize,
    line_starts: Vec<u32>,
    nodes: Vec<NodeData>,
    stack: Vec<u32>,
    /// Parentheses that belong to an open node (a call's arguments, a tuple, a parameter
    /// list): not an expression's own.
    owned: Vec<(u32, u32)>,
    /// Expressions open now (see `MAX_DEPTH`).
    depth: u32,
    /// Where the first expression nested past `MAX_DEPTH` starts.
    too_deep: Option<u32>,
}

fn is_trivia(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Comment
            | TokenKind::NonLogicalNewline
            | TokenKind::Newline
            | TokenKind::Indent
            | TokenKind::Dedent
            | TokenKind::EndOfFile
    )
}

/// Tokens that are named nodes, laid out by the conversion itself (never anonymous).
fn is_named_token(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Name
            | TokenKind::Int
            | TokenKind::Float
            | TokenKind::Complex
            | TokenKind::String
            | TokenKind::FStringStart
            | TokenKind::FStringMiddle
            | TokenKind::FStringEnd
            | TokenKind::TStringStart
            | TokenKind::TStringMiddle
            | TokenKind::TStringEnd
    )
}

/// The tree of a text.
pub(super) fn tree(src: &str) -> Tree {
    let parsed = ruff_python_parser::parse_unchecked(
        src,
        ruff_python_parser::ParseOptions::from(ruff_python_parser::Mode::Module),
    );
    let errors = parsed
        .errors()
        .iter()
        .map(|e| e.location.start().to_u32())
        .collect();
    let tokens: &[Token] = parsed.tokens();
    let line_starts: Vec<u32> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i as u32 + 1))
        .collect();
    let mut b = Builder {
        src,
        tokens,
        cursor: 0,
        line_starts,
        nodes: Vec::with_capacity(src.len() / 4),
        stack: Vec::new(),
        owned: Vec::new(),
        depth: 0,
        too_deep: None,
    };
    // tree-sitter's module starts at the first thing that is not blank.
    let first = src
        .bytes()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(src.len());
    b.open("module", None, first as u32);
    if let ast::Mod::Module(module) = parsed.syntax() {
        for stmt in &module.body {
            b.stmt(stmt);
        }
    }
    b.close(src.len() as u32);
    let Builder {
        nodes,
        line_starts,
        too_deep,
        ..
    } = b;
    let line_starts = line_starts.into();
    if too_deep.is_some() {
        // Dropping an AST this deep recurses once per level and can overflow the stack
        // (a generated `a + a + ...` of 200,000 terms does on 8 MiB); its memory is let go
        // with the process instead. Only files nested past `MAX_DEPTH` come here.
        std::mem::forget(parsed);
    }
    Tree {
        nodes,
        errors,
        too_deep,
        line_starts,
    }
}

impl<'s> Builder<'s> {
    /// Appends a node under the open one.
    fn push(
        &mut self,
        kind: &'static str,
        field: Option<&'static str>,
        (start, end): (u32, u32),
        named: bool,
    ) -> u32 {
        let id = self.nodes.len() as u32;
        let parent = self.stack.last().copied().unwrap_or(NONE);
        self.nodes.push(NodeData {
            kind,
            field,
            start,
            end,
            named,
            parent,
            first_child: NONE,
            last_child: NONE,
            prev_sibling: NONE,
            next_sibling: NONE,
        });
        if parent != NONE {
            let p = &mut self.nodes[parent as usize];
            let last = p.last_child;
            p.last_child = id;
            if last == NONE {
                p.first_child = id;
            } else {
                self.nodes[last as usize].next_sibling = id;
                self.nodes[id as usize].prev_sibling = last;
            }
        }
        id
    }

    /// Places the tokens before `offset` that no node covers as anonymous children of the
    /// open node (keywords, operators, punctuation).
    fn flush_tokens(&mut self, offset: u32) {
        while let Some(t) = self.tokens.get(self.cursor) {
            let (ts, te) = Self::r(t.range());
            if ts >= offset {
                break;
            }
            self.cursor += 1;
            // A comment is a node of the innermost node open around it, as tree-sitter
            // places its extras.
            if t.kind() == TokenKind::Comment {
                // tree-sitter's comment takes in the `\r` of a CRLF line end.
                let te = if self.src.as_bytes().get(te as usize) == Some(&b'\r') {
                    te + 1
                } else {
                    te
                };
                self.push("comment", None, (ts, te), true);
                continue;
            }
            if is_trivia(t.kind()) || is_named_token(t.kind()) {
                continue;
            }
            let kind = intern(&self.src[ts as usize..te as usize]);
            self.push(kind, None, (ts, te), false);
        }
    }

    /// Passes over the tokens a leaf covers.
    fn skip_tokens(&mut self, end: u32) {
        while self
            .tokens
            .get(self.cursor)
            .is_some_and(|t| t.start().to_u32() < end)
        {
            self.cursor += 1;
        }
    }

    fn open(&mut self, kind: &'static str, field: Option<&'static str>, start: u32) -> u32 {
        self.flush_tokens(start);
        let id = self.push(kind, field, (start, start), true);
        self.stack.push(id);
        id
    }

    fn close(&mut self, end: u32) {
        self.flush_tokens(end);
        let id = self.stack.pop().expect("open node");
        // A block ends past the comments after it (see `block`): so do the statements
        // that hold it.
        let last = self.nodes[id as usize].last_child;
        let last_end = if last == NONE {
            0
        } else {
            self.nodes[last as usize].end
        };
        self.nodes[id as usize].end = end.max(last_end);
    }

    fn leaf(
        &mut self,
        kind: &'static str,
        field: Option<&'static str>,
        range: (u32, u32),
        named: bool,
    ) -> u32 {
        self.flush_tokens(range.0);
        let id = self.push(kind, field, range, named);
        self.skip_tokens(range.1);
        id
    }

    /// An anonymous token leaf (`and`, `->`), its kind its text.
    fn token(&mut self, field: Option<&'static str>, range: (u32, u32)) {
        let kind = intern(&self.src[range.0 as usize..range.1 as usize]);
        self.leaf(kind, field, range, false);
    }

    /// An `ERROR` node for what lies past `MAX_DEPTH`, the first such place kept.
    fn cut(&mut self, field: Option<&'static str>, range: (u32, u32)) {
        self.too_deep.get_or_insert(range.0);
        self.leaf("ERROR", field, range, true);
    }

    /// The column of a byte offset.
    fn column(&self, at: u32) -> u32 {
        let line = self.line_starts.partition_point(|&s| s <= at) - 1;
        at - self.line_starts[line]
    }

    fn r(range: TextRange) -> (u32, u32) {
        (range.start().to_u32(), range.end().to_u32())
    }

    /// The first non-trivia token at or after `offset`.
    fn next_token(&self, offset: u32) -> Option<&'s Token> {
        let i = self.tokens.partition_point(|t| t.start().to_u32() < offset);
        self.tokens[i..].iter().find(|t| !is_trivia(t.kind()))
    }

    /// The last non-trivia token ending at or before `offset`.
    fn prev_token(&self, offset: u32) -> Option<&'s Token> {
        let i = self.tokens.partition_point(|t| t.end().to_u32() <= offset);
        self.tokens[..i].iter().rev().find(|t| !is_trivia(t.kind()))
    }

    /// The first token of `kind` in `from..to`.
    fn find_token(&self, from: u32, to: u32, kind: TokenKind) -> Option<(u32, u32)> {
        let i = self.tokens.partition_point(|t| t.start().to_u32() < from);
        self.tokens[i..]
            .iter()
            .take_while(|t| t.start().to_u32() < to)
            .find(|t| t.kind() == kind)
            .map(|t| Self::r(t.range()))
    }

    /// The last token of `kind` in `from..to`.
    fn rfind_token(&self, from: u32, to: u32, kind: TokenKind) -> Option<(u32, u32)> {
        let i = self.tokens.partition_point(|t| t.start().to_u32() < from);
        let j = self.tokens.partition_point(|t| t.start().to_u32() < to);
        self.tokens[i..j.max(i)]
            .iter()
            .rev()
            .find(|t| t.kind() == kind)
            .map(|t| Self::r(t.range()))
    }

    // ----- statements -----

    fn block(&mut self, field: Option<&'static str>, body: &[Stmt]) {
        let (Some(first), Some(last)) = (body.first(), body.last()) else {
            return;
        };
        // Blocks count toward the nesting too (CPython stops at 100 levels of indentation).
        if self.depth >= MAX_DEPTH {
            self.cut(field, (first.start().to_u32(), last.end().to_u32()));
            return;
        }
        self.depth += 1;
        self.block_inner(field, body, first, last);
        self.depth -= 1;
    }

    fn block_inner(
        &mut self,
        field: Option<&'static str>,
        body: &[Stmt],
        first: &Stmt,
        last: &Stmt,
    ) {
        self.open("block", field, first.start().to_u32());
        for stmt in body {
            self.stmt(stmt);
        }
        let open = self.nodes[*self.stack.last().unwrap() as usize].last_child;
        let last_end = if open == NONE {
            last.end().to_u32()
        } else {
            self.nodes[open as usize].end.max(last.end().to_u32())
        };
        // tree-sitter's block takes in the comments after its last statement that are
        // indented at least as deep as it (a comment on the last line included).
        let indent = self.column(first.start().to_u32());
        let i = self
            .tokens
            .partition_point(|t| t.start().to_u32() < last_end);
        let mut end = last_end;
        for t in &self.tokens[i..] {
            match t.kind() {
                TokenKind::Comment if self.column(t.start().to_u32()) >= indent => {
                    end = t.end().to_u32()
                }
                TokenKind::Newline | TokenKind::NonLogicalNewline => {}
                _ => break,
            }
        }
        self.close(end);
    }

    fn stmt(&mut self, stmt: &Stmt) {
        let (start, end) = Self::r(stmt.range());
        match stmt {
            Stmt::FunctionDef(def) => self.function_def(def),
            Stmt::ClassDef(class) => self.class_def(class),
            Stmt::Return(ret) => {
                self.open("return_statement", None, start);
                if let Some(value) = &ret.value {
                    self.expr_or_list(value, None);
                }
                self.close(end);
            }
            Stmt::Delete(del) => {
                self.open("delete_statement", None, start);
                if del.targets.len() == 1 {
                    self.expr_or_list(&del.targets[0], None);
                } else {
                    let s = del.targets[0].start().to_u32();
                    let e = del.targets.last().unwrap().end().to_u32();
                    self.open("expression_list", None, s);
                    for t in &del.targets {
                        self.expr(t, None);
                    }
                    self.close(e);
                }
                self.close(end);
            }
            Stmt::Assign(assign) => {
                self.open("expression_statement", None, start);
                self.assignment(&assign.targets, &assign.value, end);
                self.close(end);
            }
            Stmt::AugAssign(aug) => {
                self.open("expression_statement", None, start);
                self.open("augmented_assignment", None, start);
                self.expr(&aug.target, Some("left"));
                let op = self
                    .next_token(aug.target.end().to_u32())
                    .map(|t| Self::r(t.range()))
                    .unwrap_or((start, start));
                self.token(Some("operator"), op);
                self.right_side(&aug.value);
                self.close(end);
                self.close(end);
            }
            Stmt::AnnAssign(ann) => {
                self.open("expression_statement", None, start);
                self.open("assignment", None, start);
                self.target(&ann.target, Some("left"));
                self.type_node(&ann.annotation, Some("type"));
                if let Some(value) = &ann.value {
                    self.right_side(value);
                }
                self.close(end);
                self.close(end);
            }
            Stmt::TypeAlias(_) => {
                self.open("type_alias_statement", None, start);
                self.close(end);
            }
            Stmt::For(f) => {
                self.open("for_statement", None, start);
                self.target(&f.target, Some("left"));
                self.expr_or_list(&f.iter, Some("right"));
                self.block(Some("body"), &f.body);
                self.else_clause(&f.orelse, Some("alternative"));
                self.close(end);
            }
            Stmt::While(w) => {
                self.open("while_statement", None, start);
                self.expr(&w.test, Some("condition"));
                self.block(Some("body"), &w.body);
                self.else_clause(&w.orelse, Some("alternative"));
                self.close(end);
            }
            Stmt::If(i) => {
                self.open("if_statement", None, start);
                self.expr(&i.test, Some("condition"));
                self.block(Some("consequence"), &i.body);
                for clause in &i.elif_else_clauses {
                    let (cs, ce) = Self::r(clause.range);
                    match &clause.test {
                        Some(test) => {
                            self.open("elif_clause", Some("alternative"), cs);
                            self.expr(test, Some("condition"));
                            self.block(Some("consequence"), &clause.body);
                        }
                        None => {
                            self.open("else_clause", Some("alternative"), cs);
                            self.block(Some("body"), &clause.body);
                        }
                    }
                    self.close(ce);
                }
                self.close(end);
            }
            Stmt::With(w) => {
                self.open("with_statement", None, start);
                let single = w.items.len() == 1 && w.items[0].optional_vars.is_none();
                let first = w.items.first().map_or(start, |i| i.start().to_u32());
                let last = w.items.last().map_or(start, |i| i.end().to_u32());
                // `with (a as b, c):` : the clause holds the parentheses.
                let after = match self.next_token(last) {
                    Some(t) if t.kind() == TokenKind::Comma => t.end().to_u32(),
                    _ => last,
                };
                // One item with no `as`: the parentheses are its expression's.
                let (cs, ce) = match (self.prev_token(first), self.next_token(after)) {
                    _ if single => self.paren_span(&w.items[0].context_expr),
                    (Some(p), Some(n))
                        if !single
                            && p.kind() == TokenKind::Lpar
                            && n.kind() == TokenKind::Rpar
                            && p.start().to_u32() > start =>
                    {
                        (p.start().to_u32(), n.end().to_u32())
                    }
                    _ => (first, last),
                };
                self.open("with_clause", None, cs);
                let owned = !single && self.own((cs, ce));
                for item in &w.items {
                    let (is, ie) = if single {
                        self.paren_span(&item.context_expr)
                    } else {
                        Self::r(item.range)
                    };
                    self.open("with_item", None, is);
                    match &item.optional_vars {
                        Some(vars) => {
                            self.open("as_pattern", Some("value"), is);
                            self.expr(&item.context_expr, None);
                            self.open("as_pattern_target", Some("alias"), vars.start().to_u32());
                            self.expr(vars, None);
                            self.close(vars.end().to_u32());
                            self.close(ie);
                        }
                        None => self.expr(&item.context_expr, Some("value")),
                    }
                    self.close(ie);
                }
                self.unown(owned);
                self.close(ce);
                self.block(Some("body"), &w.body);
                self.close(end);
            }
            Stmt::Match(m) => {
                self.open("match_statement", None, start);
                match &*m.subject {
                    Expr::Tuple(t) if !t.parenthesized => {
                        for elt in &t.elts {
                            self.expr(elt, Some("subject"));
                        }
                    }
                    subject => self.expr(subject, Some("subject")),
                }
                let colon = self
                    .next_token(m.subject.end().to_u32())
                    .map_or(start, |t| t.end().to_u32());
                self.open("block", Some("body"), colon);
                for case in &m.cases {
                    let (cs, ce) = Self::r(case.range);
                    self.open("case_clause", Some("alternative"), cs);
                    self.pattern_top(&case.pattern);
                    if let Some(guard) = &case.guard {
                        let kw = self
                            .prev_token(guard.start().to_u32())
                            .map_or(guard.start().to_u32(), |t| t.start().to_u32());
                        self.open("if_clause", Some("guard"), kw);
                        self.expr(guard, None);
                        self.close(guard.end().to_u32());
                    }
                    self.block(Some("consequence"), &case.body);
                    self.close(ce);
                }
                self.close(end);
                self.close(end);
            }
            Stmt::Raise(r) => {
                self.open("raise_statement", None, start);
                if let Some(exc) = &r.exc {
                    self.expr_or_list(exc, None);
                }
                if let Some(cause) = &r.cause {
                    self.expr(cause, Some("cause"));
                }
                self.close(end);
            }
            Stmt::Try(t) => {
                self.open("try_statement", None, start);
                self.block(Some("body"), &t.body);
                for handler in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    let (hs, he) = Self::r(h.range);
                    let kind = if t.is_star {
                        "except_group_clause"
                    } else {
                        "except_clause"
                    };
                    self.open(kind, None, hs);
                    if let Some(ty) = &h.type_ {
                        match &h.name {
                            Some(name) => {
                                let (ns, ne) = Self::r(name.range);
                                self.open("as_pattern", Some("value"), ty.start().to_u32());
                                self.expr(ty, None);
                                self.open("as_pattern_target", Some("alias"), ns);
                                self.leaf("identifier", None, (ns, ne), true);
                                self.close(ne);
                                self.close(ne);
                            }
                            None => self.expr(ty, Some("value")),
                        }
                    }
                    self.block(None, &h.body);
                    self.close(he);
                }
                self.else_clause(&t.orelse, None);
                if let (Some(first), Some(last)) = (t.finalbody.first(), t.finalbody.last()) {
                    let kw = self
                        .rfind_token(start, first.start().to_u32(), TokenKind::Finally)
                        .map_or(first.start().to_u32(), |k| k.0);
                    self.open("finally_clause", None, kw);
                    self.block(None, &t.finalbody);
                    self.close(last.end().to_u32());
                }
                self.close(end);
            }
            Stmt::Assert(a) => {
                self.open("assert_statement", None, start);
                self.expr(&a.test, None);
                if let Some(msg) = &a.msg {
                    self.expr(msg, None);
                }
                self.close(end);
            }
            Stmt::Import(i) => {
                self.open("import_statement", None, start);
                for alias in &i.names {
                    self.alias(alias);
                }
                self.close(end);
            }
            Stmt::ImportFrom(i) => {
                let future = i.level == 0
                    && i.module
                        .as_ref()
                        .is_some_and(|m| m.id.as_str() == "__future__");
                if future {
                    self.open("future_import_statement", None, start);
                    let m = i.module.as_ref().unwrap();
                    self.token(None, Self::r(m.range));
                } else {
                    self.open("import_from_statement", None, start);
                    let from_end = start + 4;
                    if i.level > 0 {
                        // The dots, then the module's name if any.
                        let dots_start = self
                            .next_token(from_end)
                            .map_or(from_end, |t| t.start().to_u32());
                        let mut dots_end = dots_start;
                        let mut at = dots_start;
                        while let Some(t) = self.next_token(at) {
                            if matches!(t.kind(), TokenKind::Dot | TokenKind::Ellipsis) {
                                dots_end = t.end().to_u32();
                                at = dots_end;
                            } else {
                                break;
                            }
                        }
                        let rel_end = i.module.as_ref().map_or(dots_end, |m| m.end().to_u32());
                        self.open("relative_import", Some("module_name"), dots_start);
                        self.open("import_prefix", None, dots_start);
                        let mut at = dots_start;
                        while at < dots_end {
                            let t = self.next_token(at).unwrap();
                            // `...` is one token; tree-sitter has three dots.
                            for k in t.start().to_u32()..t.end().to_u32() {
                                self.token(None, (k, k + 1));
                            }
                            at = t.end().to_u32();
                        }
                        self.close(dots_end);
                        if let Some(m) = &i.module {
                            self.dotted_name(None, Self::r(m.range));
                        }
                        self.close(rel_end);
                    } else if let Some(m) = &i.module {
                        self.dotted_name(Some("module_name"), Self::r(m.range));
                    }
                }
                for alias in &i.names {
                    if alias.name.id.as_str() == "*" {
                        let (s, e) = Self::r(alias.range);
                        self.open("wildcard_import", None, s);
                        self.token(None, (s, e));
                        self.close(e);
                    } else {
                        self.alias(alias);
                    }
                }
                self.close(end);
            }
            Stmt::Global(g) => {
                self.open("global_statement", None, start);
                for name in &g.names {
                    self.leaf("identifier", None, Self::r(name.range), true);
                }
                self.close(end);
            }
            Stmt::Nonlocal(g) => {
                self.open("nonlocal_statement", None, start);
                for name in &g.names {
                    self.leaf("identifier", None, Self::r(name.range), true);
                }
                self.close(end);
            }
            Stmt::Expr(e) => {
                self.open("expression_statement", None, start);
                match &*e.value {
                    Expr::Tuple(t) if !t.parenthesized => self.elements(&t.elts, true),
                    value => self.expr(value, None),
                }
                self.close(end);
            }
            Stmt::Pass(_) => {
                self.open("pass_statement", None, start);
                self.close(end);
            }
            Stmt::Break(_) => {
                self.open("break_statement", None, start);
                self.close(end);
            }
            Stmt::Continue(_) => {
                self.open("continue_statement", None, start);
                self.close(end);
            }
            Stmt::IpyEscapeCommand(_) => {
                self.leaf("ERROR", None, (start, end), true);
            }
        }
    }

    fn alias(&mut self, alias: &ast::Alias) {
        let (s, e) = Self::r(alias.range);
        match &alias.asname {
            Some(asname) => {
                self.open("aliased_import", Some("name"), s);
                self.dotted_name(Some("name"), Self::r(alias.name.range));
                self.leaf("identifier", Some("alias"), Self::r(asname.range), true);
                self.close(e);
            }
            None => self.dotted_name(Some("name"), Self::r(alias.name.range)),
        }
    }

    /// `a.b.c`: identifiers split at the dots.
    fn dotted_name(&mut self, field: Option<&'static str>, (s, e): (u32, u32)) {
        self.open("dotted_name", field, s);
        let i = self.tokens.partition_point(|t| t.start().to_u32() < s);
        let names: Vec<(u32, u32)> = self.tokens[i..]
            .iter()
            .take_while(|t| t.start().to_u32() < e)
            .filter(|t| t.kind() == TokenKind::Name || t.kind().is_keyword())
            .map(|t| Self::r(t.range()))
            .collect();
        for n in names {
            self.leaf("identifier", None, n, true);
        }
        self.close(e);
    }

    fn else_clause(&mut self, orelse: &[Stmt], field: Option<&'static str>) {
        let (Some(first), Some(last)) = (orelse.first(), orelse.last()) else {
            return;
        };
        let kw = self
            .rfind_token(0, first.start().to_u32(), TokenKind::Else)
            .map_or(first.start().to_u32(), |k| k.0);
        self.open("else_clause", field, kw);
        self.block(Some("body"), orelse);
        self.close(last.end().to_u32());
    }

    fn function_def(&mut self, def: &ast::StmtFunctionDef) {
        self.definition(
            "function_definition",
            Self::r(def.range),
            &def.decorator_list,
            &def.name,
            |b| {
                b.parameters(&def.parameters, "parameters", Some("parameters"));
                if let Some(returns) = &def.returns {
                    b.type_node(returns, Some("return_type"));
                }
                b.block(Some("body"), &def.body);
            },
        );
    }

    fn class_def(&mut self, class: &ast::StmtClassDef) {
        self.definition(
            "class_definition",
            Self::r(class.range),
            &class.decorator_list,
            &class.name,
            |b| {
                if let Some(arguments) = &class.arguments {
                    b.argument_list(arguments, Some("superclasses"));
                }
                b.block(Some("body"), &class.body);
            },
        );
    }

    /// A `def` or a `class` (`rest` lays out what follows its name), inside a
    /// `decorated_definition` when it has decorators: ruff's range starts at the first `@`,
    /// tree-sitter's definition at its keyword.
    fn definition(
        &mut self,
        kind: &'static str,
        (start, end): (u32, u32),
        decorators: &[ast::Decorator],
        name: &ast::Identifier,
        rest: impl FnOnce(&mut Self),
    ) {
        let keyword = match decorators.last() {
            Some(last) => self
                .next_token(last.end().to_u32())
                .map_or(start, |t| t.start().to_u32()),
            None => start,
        };
        let decorated = !decorators.is_empty();
        if decorated {
            self.open("decorated_definition", None, start);
            for d in decorators {
                self.decorator(d);
            }
        }
        self.open(kind, decorated.then_some("definition"), keyword);
        self.leaf("identifier", Some("name"), Self::r(name.range), true);
        rest(self);
        self.close(end);
        if decorated {
            self.close(end);
        }
    }

    fn decorator(&mut self, d: &ast::Decorator) {
        let (s, e) = Self::r(d.range);
        self.open("decorator", None, s);
        self.expr(&d.expression, None);
        // A comment on the decorator's line is part of it in tree-sitter.
        let i = self.tokens.partition_point(|t| t.start().to_u32() < e);
        let e = match self.tokens.get(i) {
            Some(t) if t.kind() == TokenKind::Comment => t.end().to_u32(),
            _ => e,
        };
        self.close(e);
    }

    fn parameters(&mut self, p: &ast::Parameters, kind: &'static str, field: Option<&'static str>) {
        let (s, e) = Self::r(p.range);
        self.open(kind, field, s);
        let owned = self.own((s, e));
        for param in &p.posonlyargs {
            self.parameter_with_default(param);
        }
        if let Some(last) = p.posonlyargs.last() {
            let next = p
                .args
                .first()
                .map(|a| a.start().to_u32())
                .or(p.vararg.as_ref().map(|v| v.start().to_u32()))
                .unwrap_or(e);
            if let Some(slash) = self.find_token(last.end().to_u32(), next, TokenKind::Slash) {
                self.open("positional_separator", None, slash.0);
                self.close(slash.1);
            }
        }
        for param in &p.args {
            self.parameter_with_default(param);
        }
        match &p.vararg {
            Some(v) => self.splat_parameter(v, "list_splat_pattern"),
            None if !p.kwonlyargs.is_empty() => {
                let from = p.args.last().map_or(s, |a| a.end().to_u32());
                let to = p.kwonlyargs[0].start().to_u32();
                if let Some(star) = self.find_token(from, to, TokenKind::Star) {
                    self.open("keyword_separator", None, star.0);
                    self.close(star.1);
                }
            }
            None => {}
        }
        for param in &p.kwonlyargs {
            self.parameter_with_default(param);
        }
        if let Some(k) = &p.kwarg {
            self.splat_parameter(k, "dictionary_splat_pattern");
        }
        self.unown(owned);
        self.close(e);
    }

    fn splat_parameter(&mut self, p: &ast::Parameter, kind: &'static str) {
        let (s, e) = Self::r(p.range);
        let star = self
            .prev_token(p.name.start().to_u32())
            .map_or(s, |t| t.start().to_u32());
        match &p.annotation {
            Some(ann) => {
                self.open("typed_parameter", None, star);
                self.open(kind, None, star);
                self.leaf("identifier", None, Self::r(p.name.range), true);
                self.close(p.name.end().to_u32());
                self.type_node(ann, Some("type"));
                self.close(e);
            }
            None => {
                self.open(kind, None, star);
                self.leaf("identifier", None, Self::r(p.name.range), true);
                self.close(e);
            }
        }
    }

    fn parameter_with_default(&mut self, p: &ast::ParameterWithDefault) {
        let (s, e) = Self::r(p.range);
        let name = Self::r(p.parameter.name.range);
        match (&p.parameter.annotation, &p.default) {
            (None, None) => {
                self.leaf("identifier", None, name, true);
            }
            (Some(ann), None) => {
                self.open("typed_parameter", None, s);
                self.leaf("identifier", None, name, true);
                self.type_node(ann, Some("type"));
                self.close(e);
            }
            (None, Some(default)) => {
                self.open("default_parameter", None, s);
                self.leaf("identifier", Some("name"), name, true);
                self.expr(default, Some("value"));
                self.close(e);
            }
            (Some(ann), Some(default)) => {
                self.open("typed_default_parameter", None, s);
                self.leaf("identifier", Some("name"), name, true);
                self.type_node(ann, Some("type"));
                self.expr(default, Some("value"));
                self.close(e);
            }
        }
    }

    /// An annotation: tree-sitter's `type`, where `List[int]` is a `generic_type` and a
    /// union with one is a `union_type`.
    fn type_node(&mut self, e: &Expr, field: Option<&'static str>) {
        let (s, end) = self.paren_span(e);
        self.open("type", field, s);
        self.type_inner(e);
        self.close(end);
    }

    /// Whether tree-sitter reads an annotation as a type rather than an expression: it
    /// starts with `Name[`, which it takes for a generic type (a union then follows).
    fn is_type_form(e: &Expr) -> bool {
        match e {
            Expr::Subscript(sub) => matches!(&*sub.value, Expr::Name(_)),
            Expr::BinOp(b) if b.op == ast::Operator::BitOr => Self::is_type_form(&b.left),
            _ => false,
        }
    }

    fn type_inner(&mut self, e: &Expr) {
        let (s, end) = Self::r(e.range());
        let (ps, _) = self.paren_span(e);
        if ps != s || !Self::is_type_form(e) {
            self.expr(e, None);
            return;
        }
        match e {
            Expr::Subscript(sub) => {
                self.open("generic_type", None, s);
                self.expr(&sub.value, None);
                let open = sub.value.end().to_u32();
                let open = self.next_token(open).map_or(open, |t| t.start().to_u32());
                self.open("type_parameter", None, open);
                match &*sub.slice {
                    Expr::Tuple(t) if !t.parenthesized && !t.elts.is_empty() => {
                        for elt in &t.elts {
                            self.type_node(elt, None);
                        }
                    }
                    slice => self.type_node(slice, None),
                }
                self.close(end);
                self.close(end);
            }
            Expr::BinOp(_) => {
                let mut operands = Vec::new();
                Self::bit_or_operands(e, &mut operands);
                self.union(&operands);
            }
            _ => self.expr(e, None),
        }
    }

    /// `a | b | c` as its operands, left to right (ruff nests them to the left).
    fn bit_or_operands<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match e {
            Expr::BinOp(b) if b.op == ast::Operator::BitOr && e.start() == b.left.start() => {
                Self::bit_or_operands(&b.left, out);
                out.push(&b.right);
            }
            _ => out.push(e),
        }
    }

    /// A union whose first operand is a generic type. tree-sitter reads a type after each
    /// `|`: a generic type (`Name[`) is one operand and the union goes on to the left; any
    /// other operand starts an expression that takes in every `|` after it.
    fn union(&mut self, operands: &[&Expr]) {
        // Where each step's right-hand side starts: its first operand.
        let mut steps = Vec::new();
        let mut i = 1;
        while i < operands.len() {
            steps.push(i);
            if Self::is_type_form(operands[i]) {
                i += 1;
            } else {
                break;
            }
        }
        self.union_steps(operands, &steps);
    }

    fn union_steps(&mut self, operands: &[&Expr], steps: &[usize]) {
        let Some((&last, init)) = steps.split_last() else {
            self.type_inner(operands[0]);
            return;
        };
        let s = self.paren_span(operands[0]).0;
        // A generic type is one operand; anything else takes in the rest.
        let rhs: &[&Expr] = if Self::is_type_form(operands[last]) {
            &operands[last..last + 1]
        } else {
            &operands[last..]
        };
        let end = self.paren_span(rhs[rhs.len() - 1]).1;
        self.open("union_type", None, s);
        if init.is_empty() {
            self.type_node(operands[0], None);
        } else {
            let left_end = self.paren_span(operands[last - 1]).1;
            self.open("type", None, s);
            self.union_steps(operands, init);
            self.close(left_end);
        }
        let rs = self.paren_span(rhs[0]).0;
        self.open("type", None, rs);
        if rhs.len() == 1 {
            self.type_inner(rhs[0]);
        } else {
            self.bit_or_chain(rhs, None);
        }
        self.close(end);
        self.close(end);
    }

    /// Operands joined by `|` as nested `binary_operator`s, to the left.
    fn bit_or_chain(&mut self, operands: &[&Expr], field: Option<&'static str>) {
        let (last, init) = operands.split_last().expect("operands");
        if operands.len() as u32 + self.depth > MAX_DEPTH {
            self.cut(field, (operands[0].start().to_u32(), last.end().to_u32()));
            return;
        }
        if init.is_empty() {
            self.expr(last, field);
            return;
        }
        let s = self.paren_span(init[0]).0;
        let (ls, end) = self.paren_span(last);
        self.open("binary_operator", field, s);
        self.bit_or_chain(init, Some("left"));
        let op = self
            .prev_token(ls)
            .map(|t| Self::r(t.range()))
            .unwrap_or((ls, ls));
        self.token(Some("operator"), op);
        self.expr(last, Some("right"));
        self.close(end);
    }

    /// `a = b = value`: nested assignments, the innermost holding the value.
    fn assignment(&mut self, targets: &[Expr], value: &Expr, end: u32) {
        let Some((first, rest)) = targets.split_first() else {
            return;
        };
        let (s, _) = self.paren_span(first);
        self.open(
            "assignment",
            if self.top_kind() == "assignment" {
                Some("right")
            } else {
                None
            },
            s,
        );
        self.target(first, Some("left"));
        if rest.is_empty() {
            self.right_side(value);
        } else {
            self.assignment(rest, value, end);
        }
        self.close(end);
    }

    fn top_kind(&self) -> &'static str {
        self.stack
            .last()
            .map_or("", |&i| self.nodes[i as usize].kind)
    }

    fn right_side(&mut self, value: &Expr) {
        self.expr_or_list(value, Some("right"));
    }

    /// An expression where an unparenthesized tuple is an `expression_list`.
    fn expr_or_list(&mut self, e: &Expr, field: Option<&'static str>) {
        match e {
            Expr::Tuple(t) if !t.parenthesized && !t.elts.is_empty() => {
                let (s, end) = Self::r(t.range);
                self.open("expression_list", field, s);
                self.elements(&t.elts, true);
                self.close(end);
            }
            _ => self.expr(e, field),
        }
    }

    /// An assignment or loop target: tree-sitter's patterns.
    fn target(&mut self, e: &Expr, field: Option<&'static str>) {
        if self.depth >= MAX_DEPTH {
            self.cut(field, Self::r(e.range()));
            return;
        }
        self.depth += 1;
        self.target_inner(e, field);
        self.depth -= 1;
    }

    fn target_inner(&mut self, e: &Expr, field: Option<&'static str>) {
        match e {
            Expr::Tuple(t) => {
                let (s, end) = Self::r(t.range);
                let kind = if t.parenthesized {
                    "tuple_pattern"
                } else {
                    "pattern_list"
                };
                self.open(kind, field, s);
                let owned = self.own((s, end));
                for elt in &t.elts {
                    self.target(elt, None);
                }
                self.unown(owned);
                self.close(end);
            }
            // `for (x) in ...`: tree-sitter reads a one-name tuple pattern.
            Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
                if self.paren_span(e).0 != e.start().to_u32() =>
            {
                let (s, end) = self.paren_span(e);
                self.open("tuple_pattern", field, s);
                let owned = self.own((s, end));
                self.expr(e, None);
                self.unown(owned);
                self.close(end);
            }
            Expr::List(l) => {
                let (s, end) = Self::r(l.range);
                self.open("list_pattern", field, s);
                for elt in &l.elts {
                    self.target(elt, None);
                }
                self.close(end);
            }
            Expr::Starred(st) => {
                let (s, end) = Self::r(st.range);
                self.open("list_splat_pattern", field, s);
                self.target(&st.value, None);
                self.close(end);
            }
            _ => self.expr(e, field),
        }
    }

    // ----- patterns (match statements) -----

    fn pattern_top(&mut self, p: &ast::Pattern) {
        let (s, e) = Self::r(p.range());
        self.open("case_pattern", None, s);
        self.pattern_inner(p);
        self.close(e);
    }

    fn pattern_inner(&mut self, p: &ast::Pattern) {
        let (s, e) = Self::r(p.range());
        match p {
            ast::Pattern::MatchValue(v) if matches!(&*v.value, Expr::Attribute(_)) => {
                self.dotted_name(None, Self::r(v.value.range()));
            }
            ast::Pattern::MatchValue(v) => self.expr(&v.value, None),
            ast::Pattern::MatchSingleton(_) => {
                let kind = match &self.src[s as usize..e as usize] {
                    "True" => "true",
                    "False" => "false",
                    _ => "none",
                };
                self.leaf(kind, None, (s, e), true);
            }
            ast::Pattern::MatchAs(a) => match (&a.pattern, &a.name) {
                (None, None) => self.token(None, (s, e)),
                (None, Some(name)) => {
                    self.open("dotted_name", None, s);
                    self.leaf("identifier", None, Self::r(name.range), true);
                    self.close(e);
                }
                (Some(inner), Some(name)) => {
                    self.open("as_pattern", None, s);
                    self.pattern_top(inner);
                    self.open("as_pattern_target", Some("alias"), name.start().to_u32());
                    self.leaf("identifier", None, Self::r(name.range), true);
                    self.close(name.end().to_u32());
                    self.close(e);
                }
                (Some(inner), None) => self.pattern_inner(inner),
            },
            ast::Pattern::MatchOr(o) => {
                self.open("union_pattern", None, s);
                for p in &o.patterns {
                    self.pattern_inner(p);
                }
                self.close(e);
            }
            ast::Pattern::MatchSequence(seq) => {
                let kind = if self.src.as_bytes()[s as usize] == b'[' {
                    "list_pattern"
                } else {
                    "tuple_pattern"
                };
                self.open(kind, None, s);
                for p in &seq.patterns {
                    self.pattern_top(p);
                }
                self.close(e);
            }
            ast::Pattern::MatchStar(star) => {
                self.open("splat_pattern", None, s);
                if let Some(name) = &star.name {
                    self.leaf("identifier", None, Self::r(name.range), true);
                }
                self.close(e);
            }
            ast::Pattern::MatchMapping(m) => {
                self.open("dict_pattern", None, s);
                for (k, v) in m.keys.iter().zip(&m.patterns) {
                    self.expr(k, Some("key"));
                    let (vs, ve) = Self::r(v.range());
                    self.open("case_pattern", Some("value"), vs);
                    self.pattern_inner(v);
                    self.close(ve);
                }
                if let Some(rest) = &m.rest {
                    let star = self
                        .prev_token(rest.start().to_u32())
                        .map_or(s, |t| t.start().to_u32());
                    self.open("splat_pattern", None, star);
                    self.leaf("identifier", None, Self::r(rest.range), true);
                    self.close(rest.end().to_u32());
                }
                self.close(e);
            }
            ast::Pattern::MatchClass(c) => {
                self.open("class_pattern", None, s);
                self.dotted_name(None, Self::r(c.cls.range()));
                for p in &c.arguments.patterns {
                    self.pattern_top(p);
                }
                for k in &c.arguments.keywords {
                    let (ks, ke) = Self::r(k.range);
                    self.open("case_pattern", None, ks);
                    self.open("keyword_pattern", None, ks);
                    self.leaf("identifier", None, Self::r(k.attr.range), true);
                    self.pattern_inner(&k.pattern);
                    self.close(ke);
                    self.close(ke);
                }
                self.close(e);
            }
        }
    }

    // ----- expressions -----

    /// The range of `e` with the parentheses around it that are its own (not those of a
    /// call, a tuple or a parameter list it sits in).
    fn paren_span(&self, e: &Expr) -> (u32, u32) {
        let (mut s, mut end) = Self::r(e.range());
        if !self.may_be_parenthesized(s, end) {
            return (s, end);
        }
        while let (Some(p), Some(n)) = (self.prev_token(s), self.next_token(end)) {
            if p.kind() != TokenKind::Lpar || n.kind() != TokenKind::Rpar {
                break;
            }
            let pair = (p.start().to_u32(), n.start().to_u32());
            if self.owned.contains(&pair) {
                break;
            }
            s = pair.0;
            end = n.end().to_u32();
        }
        (s, end)
    }

    /// Whether `s..end` may have a `(` token just before it and a `)` just after, read from
    /// the text next to it: a byte other than `(` before it on its line (past blanks) is the
    /// end of another token, as one other than `)` after it is the start of one, and then no
    /// parentheses are its own. Most expressions are told apart so, without looking tokens
    /// up (`paren_span` did two binary searches over the tokens for every expression).
    /// A line break or a comment next to it leaves the answer to the tokens.
    fn may_be_parenthesized(&self, s: u32, end: u32) -> bool {
        let bytes = self.src.as_bytes();
        let not_blank = |b: &&u8| !matches!(**b, b' ' | b'\t' | b'\x0c');
        let before = bytes[..s as usize].iter().rev().find(not_blank);
        let after = bytes[end as usize..].iter().find(not_blank);
        let may_open = !matches!(before, Some(b) if !matches!(b, b'(' | b'\n' | b'\r' | b'\\'));
        let may_close =
            !matches!(after, Some(b) if !matches!(b, b')' | b'\n' | b'\r' | b'\\' | b'#'));
        may_open && may_close
    }

    fn expr(&mut self, e: &Expr, field: Option<&'static str>) {
        if self.depth >= MAX_DEPTH {
            self.cut(field, Self::r(e.range()));
            return;
        }
        self.depth += 1;
        self.expr_inner(e, field);
        self.depth -= 1;
    }

    fn expr_inner(&mut self, e: &Expr, field: Option<&'static str>) {
        let (ps, pe) = self.paren_span(e);
        let (s, end) = Self::r(e.range());
        if ps != s {
            // One layer of parentheses, then the rest inside it (one level deeper).
            self.open("parenthesized_expression", field, ps);
            let owned = self.own((ps, pe));
            self.expr(e, None);
            self.unown(owned);
            self.close(pe);
            return;
        }
        match e {
            Expr::BoolOp(b) => {
                // `a and b and c` is `(a and b) and c` in tree-sitter.
                self.bool_chain(&b.values, field, end);
            }
            Expr::Named(n) => {
                self.open("named_expression", field, s);
                self.expr(&n.target, Some("name"));
                self.expr(&n.value, Some("value"));
                self.close(end);
            }
            Expr::BinOp(b) => {
                self.open("binary_operator", field, s);
                self.expr(&b.left, Some("left"));
                let (_, le) = self.paren_span(&b.left);
                let op = self
                    .next_token(le)
                    .map(|t| Self::r(t.range()))
                    .unwrap_or((le, le));
                self.token(Some("operator"), op);
                self.expr(&b.right, Some("right"));
                self.close(end);
            }
            Expr::UnaryOp(u) => {
                if u.op == ast::UnaryOp::Not {
                    self.open("not_operator", field, s);
                    self.token(None, (s, s + 3));
                    self.expr(&u.operand, Some("argument"));
                } else {
                    self.open("unary_operator", field, s);
                    self.token(Some("operator"), (s, s + 1));
                    self.expr(&u.operand, Some("argument"));
                }
                self.close(end);
            }
            Expr::Lambda(l) => {
                self.open("lambda", field, s);
                if let Some(p) = &l.parameters {
                    self.parameters(p, "lambda_parameters", Some("parameters"));
                }
                self.expr(&l.body, Some("body"));
                self.close(end);
            }
            Expr::If(i) => {
                self.open("conditional_expression", field, s);
                self.expr(&i.body, None);
                self.expr(&i.test, None);
                self.expr(&i.orelse, None);
                self.close(end);
            }
            Expr::Dict(d) => {
                self.open("dictionary", field, s);
                for item in &d.items {
                    match &item.key {
                        Some(key) => {
                            let (ks, _) = self.paren_span(key);
                            let (_, ve) = self.paren_span(&item.value);
                            self.open("pair", None, ks);
                            self.expr(key, Some("key"));
                            self.expr(&item.value, Some("value"));
                            self.close(ve);
                        }
                        None => {
                            let (vs, ve) = self.paren_span(&item.value);
                            let star = self.prev_token(vs).map_or(s, |t| t.start().to_u32());
                            self.open("dictionary_splat", None, star);
                            self.expr(&item.value, None);
                            self.close(ve);
                        }
                    }
                }
                self.close(end);
            }
            Expr::Set(set) => {
                self.open("set", field, s);
                self.elements(&set.elts, false);
                self.close(end);
            }
            Expr::ListComp(c) => self.comprehension(
                "list_comprehension",
                field,
                (s, end),
                &c.elt,
                None,
                &c.generators,
            ),
            Expr::SetComp(c) => self.comprehension(
                "set_comprehension",
                field,
                (s, end),
                &c.elt,
                None,
                &c.generators,
            ),
            Expr::DictComp(c) => match &c.key {
                Some(key) => self.comprehension(
                    "dictionary_comprehension",
                    field,
                    (s, end),
                    key,
                    Some(&c.value),
                    &c.generators,
                ),
                None => self.comprehension(
                    "dictionary_comprehension",
                    field,
                    (s, end),
                    &c.value,
                    None,
                    &c.generators,
                ),
            },
            Expr::Generator(g) => self.comprehension(
                "generator_expression",
                field,
                (s, end),
                &g.elt,
                None,
                &g.generators,
            ),
            Expr::Await(a) => {
                self.open("await", field, s);
                self.expr(&a.value, None);
                self.close(end);
            }
            Expr::Yield(y) => {
                self.open("yield", field, s);
                if let Some(v) = &y.value {
                    self.expr_or_list(v, None);
                }
                self.close(end);
            }
            Expr::YieldFrom(y) => {
                self.open("yield", field, s);
                self.expr(&y.value, None);
                self.close(end);
            }
            Expr::Compare(c) => {
                self.open("comparison_operator", field, s);
                self.expr(&c.left, None);
                let mut prev_end = self.paren_span(&c.left).1;
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let first = self
                        .next_token(prev_end)
                        .map(|t| Self::r(t.range()))
                        .unwrap_or((prev_end, prev_end));
                    match op {
                        ast::CmpOp::NotIn | ast::CmpOp::IsNot => {
                            let second = self
                                .next_token(first.1)
                                .map(|t| Self::r(t.range()))
                                .unwrap_or(first);
                            let kind = if *op == ast::CmpOp::NotIn {
                                "not in"
                            } else {
                                "is not"
                            };
                            let id = self.open(kind, Some("operators"), first.0);
                            self.nodes[id as usize].named = false;
                            self.token(None, first);
                            self.token(None, second);
                            self.close(second.1);
                        }
                        _ => self.token(Some("operators"), first),
                    }
                    self.expr(right, None);
                    prev_end = self.paren_span(right).1;
                }
                self.close(end);
            }
            Expr::Call(call) => {
                self.open("call", field, s);
                self.expr(&call.func, Some("function"));
                let args = &call.arguments;
                let only_generator = args.keywords.is_empty()
                    && args.args.len() == 1
                    && matches!(&args.args[0], Expr::Generator(g) if !g.parenthesized);
                if only_generator {
                    let Expr::Generator(g) = &args.args[0] else {
                        unreachable!()
                    };
                    self.comprehension(
                        "generator_expression",
                        Some("arguments"),
                        Self::r(args.range),
                        &g.elt,
                        None,
                        &g.generators,
                    );
                } else {
                    self.argument_list(args, Some("arguments"));
                }
                self.close(end);
            }
            Expr::FString(f) => {
                let parts: Vec<StringPart> = f
                    .value
                    .iter()
                    .map(|part| match part {
                        ast::FStringPart::Literal(l) => StringPart::Literal(Self::r(l.range)),
                        ast::FStringPart::FString(f) => StringPart::F(f),
                    })
                    .collect();
                self.strings(&parts, field, (s, end));
            }
            Expr::TString(_) => {
                self.leaf("string", field, (s, end), true);
            }
            Expr::StringLiteral(l) => {
                let parts: Vec<StringPart> = l
                    .value
                    .iter()
                    .map(|p| StringPart::Literal(Self::r(p.range)))
                    .collect();
                self.strings(&parts, field, (s, end));
            }
            Expr::BytesLiteral(l) => {
                let parts: Vec<StringPart> = l
                    .value
                    .iter()
                    .map(|p| StringPart::Literal(Self::r(p.range)))
                    .collect();
                self.strings(&parts, field, (s, end));
            }
            Expr::NumberLiteral(n) => {
                let kind = match n.value {
                    ast::Number::Float(_) => "float",
                    ast::Number::Int(_) => "integer",
                    ast::Number::Complex { .. } => {
                        let text = &self.src[s as usize..end as usize];
                        if text.contains(['.', 'e', 'E']) && !text.starts_with("0x") {
                            "float"
                        } else {
                            "integer"
                        }
                    }
                };
                self.leaf(kind, field, (s, end), true);
            }
            Expr::BooleanLiteral(b) => {
                self.leaf(
                    if b.value { "true" } else { "false" },
                    field,
                    (s, end),
                    true,
                );
            }
            Expr::NoneLiteral(_) => {
                self.leaf("none", field, (s, end), true);
            }
            Expr::EllipsisLiteral(_) => {
                self.leaf("ellipsis", field, (s, end), true);
            }
            Expr::Attribute(a) => {
                self.open("attribute", field, s);
                self.expr(&a.value, Some("object"));
                self.leaf("identifier", Some("attribute"), Self::r(a.attr.range), true);
                self.close(end);
            }
            Expr::Subscript(sub) => {
                self.open("subscript", field, s);
                self.expr(&sub.value, Some("value"));
                match &*sub.slice {
                    Expr::Tuple(t) if !t.parenthesized && !t.elts.is_empty() => {
                        for elt in &t.elts {
                            self.slice_or_expr(elt);
                        }
                    }
                    slice => self.slice_or_expr(slice),
                }
                self.close(end);
            }
            Expr::Starred(st) => {
                self.open("list_splat", field, s);
                self.expr(&st.value, None);
                self.close(end);
            }
            Expr::Name(n) => {
                let _ = n;
                self.leaf("identifier", field, (s, end), true);
            }
            Expr::List(l) => {
                self.open("list", field, s);
                self.elements(&l.elts, l.elts.len() == 1);
                self.close(end);
            }
            Expr::Tuple(t) => {
                let kind = if t.parenthesized {
                    "tuple"
                } else {
                    "expression_list"
                };
                self.open(kind, field, s);
                let owned = self.own((s, end));
                self.elements(&t.elts, !t.parenthesized);
                self.unown(owned);
                self.close(end);
            }
            Expr::Slice(_) => self.slice_or_expr(e),
            Expr::IpyEscapeCommand(_) => {
                self.leaf("ERROR", field, (s, end), true);
            }
        }
    }

    /// Marks `(s, e)` as parentheses of the node being built, if they are parentheses.
    fn own(&mut self, (s, e): (u32, u32)) -> bool {
        let bytes = self.src.as_bytes();
        let is_pair = e > s && bytes[s as usize] == b'(' && bytes[e as usize - 1] == b')';
        if is_pair {
            self.owned.push((s, e - 1));
        }
        is_pair
    }

    fn unown(&mut self, owned: bool) {
        if owned {
            self.owned.pop();
        }
    }

    fn slice_or_expr(&mut self, e: &Expr) {
        match e {
            Expr::Slice(sl) => {
                let (s, end) = Self::r(sl.range);
                self.open("slice", Some("subscript"), s);
                for part in [&sl.lower, &sl.upper, &sl.step].into_iter().flatten() {
                    self.expr(part, None);
                }
                self.close(end);
            }
            e => self.expr(e, Some("subscript")),
        }
    }

    /// The items of a list, set or tuple. In a one-item list and in a tuple without
    /// parentheses, tree-sitter binds `*` tighter than a trailing attribute, call or
    /// subscript: `[*a.b]` is `(*a).b` (`star_binds_tight`).
    fn elements(&mut self, elts: &[Expr], star_binds_tight: bool) {
        for elt in elts {
            match elt {
                Expr::Starred(st)
                    if star_binds_tight && self.paren_span(elt).0 == st.start().to_u32() =>
                {
                    let star = st.start().to_u32();
                    self.splat_postfix(&st.value, star, None, st.end().to_u32());
                }
                _ => self.expr(elt, None),
            }
        }
    }

    fn splat_postfix(&mut self, e: &Expr, star: u32, field: Option<&'static str>, end: u32) {
        let own = self.paren_span(e).0 == e.start().to_u32();
        match e {
            Expr::Attribute(a) if own => {
                self.open("attribute", field, star);
                self.splat_postfix(&a.value, star, Some("object"), a.value.end().to_u32());
                self.leaf("identifier", Some("attribute"), Self::r(a.attr.range), true);
                self.close(end);
            }
            Expr::Call(c) if own => {
                self.open("call", field, star);
                self.splat_postfix(&c.func, star, Some("function"), c.func.end().to_u32());
                self.argument_list(&c.arguments, Some("arguments"));
                self.close(end);
            }
            Expr::Subscript(sub) if own => {
                self.open("subscript", field, star);
                self.splat_postfix(&sub.value, star, Some("value"), sub.value.end().to_u32());
                match &*sub.slice {
                    Expr::Tuple(t) if !t.parenthesized && !t.elts.is_empty() => {
                        for elt in &t.elts {
                            self.slice_or_expr(elt);
                        }
                    }
                    slice => self.slice_or_expr(slice),
                }
                self.close(end);
            }
            _ => {
                let (_, pe) = self.paren_span(e);
                self.open("list_splat", field, star);
                self.expr(e, None);
                self.close(pe);
            }
        }
    }

    fn bool_chain(&mut self, values: &[Expr], field: Option<&'static str>, end: u32) {
        let Some((last, rest)) = values.split_last() else {
            return;
        };
        // tree-sitter nests the chain one level per operand.
        if values.len() as u32 + self.depth > MAX_DEPTH {
            self.cut(field, (values[0].start().to_u32(), end));
            return;
        }
        if rest.is_empty() {
            self.expr(last, field);
            return;
        }
        let (s, _) = self.paren_span(&values[0]);
        self.open("boolean_operator", field, s);
        let (ls, _) = self.paren_span(last);
        let left_end = self.paren_span(&rest[rest.len() - 1]).1;
        self.bool_chain(rest, Some("left"), left_end);
        let op = self
            .prev_token(ls)
            .map(|t| Self::r(t.range()))
            .unwrap_or((ls, ls));
        self.token(Some("operator"), op);
        self.expr(last, Some("right"));
        self.close(end);
    }

    fn comprehension(
        &mut self,
        kind: &'static str,
        field: Option<&'static str>,
        (s, end): (u32, u32),
        elt: &Expr,
        value: Option<&Expr>,
        generators: &[ast::Comprehension],
    ) {
        self.open(kind, field, s);
        let owned = self.own((s, end));
        match value {
            Some(value) => {
                let (ks, _) = self.paren_span(elt);
                let (_, ve) = self.paren_span(value);
                self.open("pair", Some("body"), ks);
                self.expr(elt, Some("key"));
                self.expr(value, Some("value"));
                self.close(ve);
            }
            None => self.expr(elt, Some("body")),
        }
        for g in generators {
            let (gs, _) = Self::r(g.range);
            let (_, ie) = self.paren_span(&g.iter);
            self.open("for_in_clause", None, gs);
            self.target(&g.target, Some("left"));
            self.expr_or_list(&g.iter, Some("right"));
            self.close(ie);
            for cond in &g.ifs {
                let (_, ce) = self.paren_span(cond);
                let kw = self
                    .prev_token(self.paren_span(cond).0)
                    .map_or(gs, |t| t.start().to_u32());
                self.open("if_clause", None, kw);
                self.expr(cond, None);
                self.close(ce);
            }
        }
        self.unown(owned);
        self.close(end);
    }

    fn argument_list(&mut self, args: &ast::Arguments, field: Option<&'static str>) {
        let (s, e) = Self::r(args.range);
        self.open("argument_list", field, s);
        let owned = self.own((s, e));
        let mut items: Vec<(u32, Result<&Expr, &ast::Keyword>)> = args
            .args
            .iter()
            .map(|a| (a.start().to_u32(), Ok(a)))
            .chain(args.keywords.iter().map(|k| (k.start().to_u32(), Err(k))))
            .collect();
        items.sort_by_key(|(at, _)| *at);
        for (_, item) in items {
            match item {
                Ok(arg) => self.expr(arg, None),
                Err(k) => {
                    let (ks, ke) = Self::r(k.range);
                    match &k.arg {
                        Some(name) => {
                            self.open("keyword_argument", None, ks);
                            self.leaf("identifier", Some("name"), Self::r(name.range), true);
                            self.expr(&k.value, Some("value"));
                            self.close(ke);
                        }
                        None => {
                            self.open("dictionary_splat", None, ks);
                            self.expr(&k.value, None);
                            self.close(ke);
                        }
                    }
                }
            }
        }
        self.unown(owned);
        self.close(e);
    }

    fn strings(&mut self, parts: &[StringPart], field: Option<&'static str>, (s, end): (u32, u32)) {
        if parts.len() > 1 {
            self.open("concatenated_string", field, s);
            for part in parts {
                self.string(part, None);
            }
            self.close(end);
        } else if let Some(part) = parts.first() {
            self.string(part, field);
        }
    }

    fn string(&mut self, part: &StringPart, field: Option<&'static str>) {
        match part {
            StringPart::Literal((s, e)) => {
                let text = &self.src.as_bytes()[*s as usize..*e as usize];
                let prefix = text.iter().take_while(|b| b.is_ascii_alphabetic()).count();
                let quote = if text[prefix..].starts_with(b"\"\"\"")
                    || text[prefix..].starts_with(b"'''")
                {
                    3
                } else {
                    1
                };
                let open_end = s + (prefix + quote) as u32;
                let close_start = e.saturating_sub(quote as u32).max(open_end);
                self.open("string", field, *s);
                self.leaf("string_start", None, (*s, open_end), true);
                if close_start > open_end {
                    self.leaf("string_content", None, (open_end, close_start), true);
                }
                self.leaf("string_end", None, (close_start, *e), true);
                self.close(*e);
            }
            StringPart::F(f) => {
                let (s, e) = Self::r(f.range);
                let text = &self.src.as_bytes()[s as usize..e as usize];
                let prefix = text.iter().take_while(|b| b.is_ascii_alphabetic()).count();
                let quote = if text[prefix..].starts_with(b"\"\"\"")
                    || text[prefix..].starts_with(b"'''")
                {
                    3
                } else {
                    1
                };
                let open_end = s + (prefix + quote) as u32;
                let close_start = e.saturating_sub(quote as u32).max(open_end);
                self.open("string", field, s);
                self.leaf("string_start", None, (s, open_end), true);
                self.fstring_elements(&f.elements);
                self.leaf("string_end", None, (close_start, e), true);
                self.close(e);
            }
        }
    }

    fn fstring_elements(&mut self, elements: &ast::InterpolatedStringElements) {
        for element in elements.iter() {
            match element {
                ast::InterpolatedStringElement::Literal(l) => {
                    self.leaf("string_content", None, Self::r(l.range), true);
                }
                ast::InterpolatedStringElement::Interpolation(i) => {
                    let (s, e) = Self::r(i.range);
                    self.open("interpolation", None, s);
                    self.expr_or_list(&i.expression, Some("expression"));
                    if i.conversion != ast::ConversionFlag::None
                        && let Some(bang) =
                            self.find_token(i.expression.end().to_u32(), e, TokenKind::Exclamation)
                    {
                        self.leaf(
                            "type_conversion",
                            Some("type_conversion"),
                            (bang.0, bang.1 + 1),
                            true,
                        );
                    }
                    if let Some(spec) = &i.format_spec {
                        let (ss, se) = Self::r(spec.range);
                        let colon = ss.saturating_sub(1);
                        self.open("format_specifier", Some("format_specifier"), colon);
                        self.close(se);
                    }
                    self.close(e);
                }
            }
        }
    }
}

enum StringPart<'a> {
    Literal((u32, u32)),
    F(&'a ast::FString),
}

/// Token texts as `'static` kinds (the anonymous kinds are few).
fn intern(text: &str) -> &'static str {
    macro_rules! known {
        ($($t:literal)*) => {
            match text { $($t => $t,)* _ => "?" }
        };
    }
    known!(
        "(" ")" "[" "]" "{" "}" "," ":" ";" "." "=" "->" "@" "*" "**" "+" "-" "/" "//"
        "%" "~" "&" "|" "^" "<<" ">>" "<" ">" "<=" ">=" "==" "!=" "<>" "+=" "-=" "*=" "/="
        "//=" "%=" "**=" "&=" "|=" "^=" "<<=" ">>=" "@=" ":=" "..." "!"
        "and" "or" "not" "in" "is" "if" "else" "elif" "for" "while" "def" "class" "return"
        "lambda" "import" "from" "as" "with" "try" "except" "finally" "raise" "assert" "del"
        "global" "nonlocal" "pass" "break" "continue" "yield" "await" "async" "match" "case"
        "type" "print" "exec" "None" "True" "False" "_" "__future__" "\\"
    )
}
