//! The one walk that builds a module's `SemanticModel`: every statement and every expression
//! that can bind a name is visited once, in source order; each scope's statements become its
//! flow (`flow::Flow`) as they are visited.

use rustc_hash::FxHashMap as HashMap;

use crate::syntax::{F, Node, Tree};

use super::model::{
    Arm, Binding, BindingId, BindingKind, Branch, BranchId, BranchKind, ExitKind, Flow, GuardKind,
    LoopFlow, LoopKind, MODULE_SCOPE, Range, Scope, ScopeId, ScopeKind, SemanticModel, TryFlow,
};

/// Nesting (blocks, expressions) the walk follows; deeper text is left out and the model says
/// so (`SemanticModel::too_deep`). Real modules nest a few dozen levels at most; the cut keeps
/// a hostile file from exhausting the stack (2 MiB, a rayon worker's, in a debug build).
const MAX_DEPTH: usize = 100;

/// Builds the semantic model of the module parsed as `tree` from `src`.
pub fn bind(src: &[u8], tree: &Tree) -> SemanticModel {
    let mut binder = Binder {
        src,
        model: SemanticModel::default(),
        receivers: HashMap::default(),
        depth: 0,
    };
    let module = binder.new_scope(ScopeKind::Module, None, None, (0, usize::MAX), 0);
    debug_assert_eq!(module, MODULE_SCOPE);
    let flow = binder.statements(tree.root_node(), module, None);
    binder.model.scopes[module.index()].flow = flow;
    let mut model = binder.model;
    model.by_start = (0..model.scopes.len())
        .map(|i| (model.scopes[i].range.0, ScopeId(i as u32)))
        .collect();
    model.by_start.sort_unstable();
    model
}

struct Binder<'s> {
    src: &'s [u8],
    model: SemanticModel,
    /// For a method's scope: the name of its receiver (`self`, `cls`) and its class.
    receivers: HashMap<ScopeId, (String, ScopeId)>,
    depth: usize,
}

fn range(node: Node) -> Range {
    (node.start_byte(), node.end_byte())
}

fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|child| child.kind_name() != "comment")
        .collect()
}

impl<'s> Binder<'s> {
    fn text(&self, node: Node) -> String {
        String::from_utf8_lossy(&self.src[node.start_byte()..node.end_byte()]).into_owned()
    }

    fn new_scope(
        &mut self,
        kind: ScopeKind,
        name: Option<String>,
        parent: Option<ScopeId>,
        range: Range,
        defined_at: usize,
    ) -> ScopeId {
        let id = ScopeId(self.model.scopes.len() as u32);
        self.model.scopes.push(Scope {
            kind,
            name,
            parent,
            range,
            defined_at,
            bindings: HashMap::default(),
            globals: Vec::new(),
            nonlocals: Vec::new(),
            attributes: HashMap::default(),
            bases: Vec::new(),
            global_stores: HashMap::default(),
            nonlocal_stores: HashMap::default(),
            flow: Vec::new(),
        });
        id
    }

    fn new_branch(
        &mut self,
        kind: BranchKind,
        parent: Option<BranchId>,
        test: Option<Range>,
        range: Range,
    ) -> BranchId {
        let id = BranchId(self.model.branches.len() as u32);
        self.model.branches.push(Branch {
            kind,
            parent,
            test,
            range,
        });
        id
    }

    /// Records a binding in the arena.
    fn push(&mut self, binding: Binding) -> BindingId {
        let id = BindingId(self.model.bindings.len() as u32);
        self.model.bindings.push(binding);
        id
    }

    /// Records a binding of a name in its scope and returns its flow step. A name the scope
    /// declares `global` or `nonlocal` is also recorded where it lands.
    fn bind(&mut self, binding: Binding) -> Flow {
        let (scope, name, at) = (binding.scope, binding.name.clone(), binding.visible_from);
        let declared = &self.model.scopes[scope.index()];
        let global = declared.globals.contains(&name);
        let nonlocal = declared.nonlocals.contains(&name);
        let id = self.push(binding);
        if global && scope != MODULE_SCOPE {
            self.model.scopes[MODULE_SCOPE.index()]
                .global_stores
                .entry(name.clone())
                .or_default()
                .push(id);
        } else if nonlocal && let Some(owner) = self.enclosing_binder_of(scope, &name) {
            self.model.scopes[owner.index()]
                .nonlocal_stores
                .entry(name.clone())
                .or_default()
                .push(id);
        }
        self.model.scopes[scope.index()]
            .bindings
            .entry(name)
            .or_default()
            .push(id);
        Flow::Bind { binding: id, at }
    }

    /// The nearest enclosing function scope that binds `name` (what `nonlocal` refers to).
    fn enclosing_binder_of(&self, scope: ScopeId, name: &str) -> Option<ScopeId> {
        let mut current = self.model.scopes[scope.index()].parent;
        while let Some(id) = current {
            let s = &self.model.scopes[id.index()];
            if matches!(s.kind, ScopeKind::Function | ScopeKind::Lambda)
                && s.bindings.contains_key(name)
            {
                return Some(id);
            }
            current = s.parent;
        }
        None
    }

    /// The scope an assignment expression binds in: the nearest one that is not a
    /// comprehension (PEP 572).
    fn walrus_scope(&self, scope: ScopeId) -> ScopeId {
        let mut current = scope;
        while self.model.scopes[current.index()].kind == ScopeKind::Comprehension {
            match self.model.scopes[current.index()].parent {
                Some(parent) => current = parent,
                None => break,
            }
        }
        current
    }

    /// The receiver (`self`) and class of the method `scope` is, or is nested in.
    fn receiver(&self, scope: ScopeId) -> Option<&(String, ScopeId)> {
        let mut current = Some(scope);
        while let Some(id) = current {
            if let Some(found) = self.receivers.get(&id) {
                return Some(found);
            }
            let s = &self.model.scopes[id.index()];
            if s.kind == ScopeKind::Class {
                return None;
            }
            current = s.parent;
        }
        None
    }

    /// The statements of a block (or of the module), as flow.
    fn statements(&mut self, block: Node, scope: ScopeId, branch: Option<BranchId>) -> Vec<Flow> {
        let mut out = Vec::new();
        if self.depth >= MAX_DEPTH {
            self.model.too_deep = true;
            return out;
        }
        self.depth += 1;
        for child in named_children(block) {
            self.statement(child, scope, branch, &mut out);
        }
        self.depth -= 1;
        out
    }

    fn statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        match node.kind_name() {
            "expression_statement" => {
                for child in named_children(node) {
                    match child.kind_name() {
                        "assignment" => self.assignment(child, scope, branch, out),
                        "augmented_assignment" => self.augmented(child, scope, branch, out),
                        _ => self.expression(child, scope, branch, out),
                    }
                }
            }
            "if_statement" => self.if_statement(node, scope, branch, out),
            "for_statement" | "while_statement" => self.loop_statement(node, scope, branch, out),
            "try_statement" => self.try_statement(node, scope, branch, out),
            "with_statement" => self.with_statement(node, scope, branch, out),
            "match_statement" => self.match_statement(node, scope, branch, out),
            "function_definition" => self.function(node, node, &[], scope, branch, out),
            "class_definition" => self.class(node, node, scope, branch, out),
            "decorated_definition" => {
                let mut decorators = Vec::new();
                for child in named_children(node) {
                    if child.kind_name() == "decorator" {
                        self.expression(child, scope, branch, out);
                        decorators.push(child);
                    }
                }
                if let Some(definition) = node.field(F::Definition) {
                    match definition.kind_name() {
                        "function_definition" => {
                            self.function(definition, node, &decorators, scope, branch, out)
                        }
                        "class_definition" => self.class(definition, node, scope, branch, out),
                        _ => {}
                    }
                }
            }
            "import_statement" => self.import(node, scope, branch, out),
            "import_from_statement" => self.import_from(node, scope, branch, out),
            "global_statement" | "nonlocal_statement" => {
                let names: Vec<String> = named_children(node)
                    .into_iter()
                    .filter(|n| n.kind_name() == "identifier")
                    .map(|n| self.text(n))
                    .collect();
                let s = &mut self.model.scopes[scope.index()];
                if node.kind_name() == "global_statement" {
                    s.globals.extend(names);
                } else {
                    s.nonlocals.extend(names);
                }
            }
            "return_statement" | "raise_statement" => {
                for child in named_children(node) {
                    self.expression(child, scope, branch, out);
                }
                let kind = if node.kind_name() == "return_statement" {
                    ExitKind::Return
                } else {
                    ExitKind::Raise
                };
                out.push(Flow::Exit {
                    kind,
                    at: node.end_byte(),
                });
            }
            "break_statement" => out.push(Flow::Exit {
                kind: ExitKind::Break,
                at: node.end_byte(),
            }),
            "continue_statement" => out.push(Flow::Exit {
                kind: ExitKind::Continue,
                at: node.end_byte(),
            }),
            "delete_statement" => {
                for target in named_children(node) {
                    let names = match target.kind_name() {
                        "identifier" => vec![target],
                        "expression_list" | "tuple" | "list" => named_children(target)
                            .into_iter()
                            .filter(|n| n.kind_name() == "identifier")
                            .collect(),
                        _ => Vec::new(),
                    };
                    for name in names {
                        let text = self.text(name);
                        out.push(self.bind(Binding {
                            name: text,
                            kind: BindingKind::Deletion,
                            scope,
                            branch,
                            statement: range(node),
                            value: None,
                            visible_from: node.end_byte(),
                        }));
                    }
                }
            }
            "pass_statement" | "comment" | "future_import_statement" => {}
            "block" => {
                let flows = self.statements(node, scope, branch);
                out.extend(flows);
            }
            // Other statements (`assert`, `print`, `exec`, `type` aliases, error nodes):
            // what they hold is read, and statements inside an error node still bind.
            _ => {
                for child in named_children(node) {
                    if is_statement(child.kind_name()) {
                        self.statement(child, scope, branch, out);
                    } else {
                        self.expression(child, scope, branch, out);
                    }
                }
            }
        }
    }

    /// `a = b = v`, `x: T = v`, `x: T`.
    fn assignment(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let mut targets: Vec<Node> = node.field(F::Left).into_iter().collect();
        let mut value = node.field(F::Right);
        while let Some(inner) = value.filter(|v| v.kind_name() == "assignment") {
            targets.extend(inner.field(F::Left));
            value = inner.field(F::Right);
        }
        let Some(value) = value else {
            // Declared only: `x: T`.
            for target in targets
                .into_iter()
                .filter(|t| t.kind_name() == "identifier")
            {
                let name = self.text(target);
                out.push(self.bind(Binding {
                    name,
                    kind: BindingKind::Annotation,
                    scope,
                    branch,
                    statement: range(node),
                    value: None,
                    visible_from: node.end_byte(),
                }));
            }
            return;
        };
        self.expression(value, scope, branch, out);
        for target in targets {
            self.targets(
                target,
                Target {
                    kind: TargetKind::Assignment,
                    scope,
                    branch,
                    statement: range(node),
                    value: Some(range(value)),
                    visible_from: node.end_byte(),
                },
                out,
            );
        }
    }

    fn augmented(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let value = node.field(F::Right);
        if let Some(value) = value {
            self.expression(value, scope, branch, out);
        }
        let Some(target) = node.field(F::Left) else {
            return;
        };
        match target.kind_name() {
            "identifier" => {
                let name = self.text(target);
                out.push(self.bind(Binding {
                    name,
                    kind: BindingKind::Augmented,
                    scope,
                    branch,
                    statement: range(node),
                    value: value.map(range),
                    visible_from: node.end_byte(),
                }));
            }
            _ => self.targets(
                target,
                Target {
                    kind: TargetKind::Assignment,
                    scope,
                    branch,
                    statement: range(node),
                    value: value.map(range),
                    visible_from: node.end_byte(),
                },
                out,
            ),
        }
    }

    /// Binds the names of an assignment, `for` or `with` target, with the index path down
    /// to each; `self.x` targets bind on the method's class; other targets are only read.
    fn targets(&mut self, target: Node, how: Target, out: &mut Vec<Flow>) {
        let mut stack: Vec<(Node, Vec<usize>)> = vec![(target, Vec::new())];
        while let Some((node, path)) = stack.pop() {
            match node.kind_name() {
                "identifier" => {
                    let name = self.text(node);
                    let kind = match how.kind {
                        TargetKind::Assignment if path.is_empty() => BindingKind::Assignment,
                        TargetKind::Assignment => BindingKind::Unpacking { path },
                        TargetKind::For => BindingKind::For { path },
                        TargetKind::With => BindingKind::With { path },
                    };
                    out.push(self.bind(Binding {
                        name,
                        kind,
                        scope: how.scope,
                        branch: how.branch,
                        statement: how.statement,
                        value: how.value,
                        visible_from: how.visible_from,
                    }));
                }
                "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list"
                | "expression_list" => {
                    let children = named_children(node);
                    for (i, child) in children.into_iter().enumerate().rev() {
                        let mut inner = path.clone();
                        inner.push(i);
                        stack.push((child, inner));
                    }
                }
                "parenthesized_expression" | "as_pattern_target" | "list_splat_pattern" => {
                    if let Some(inner) = named_children(node).into_iter().next() {
                        stack.push((inner, path));
                    }
                }
                "attribute" => {
                    let receiver = self.receiver(how.scope).cloned();
                    let object = node.field(F::Object);
                    let attr = node.field(F::Attribute);
                    match (receiver, object, attr) {
                        (Some((receiver, class)), Some(object), Some(attr))
                            if object.kind_name() == "identifier"
                                && self.text(object) == receiver =>
                        {
                            let name = self.text(attr);
                            let id = self.push(Binding {
                                name: name.clone(),
                                kind: BindingKind::Attribute,
                                scope: how.scope,
                                branch: how.branch,
                                statement: how.statement,
                                value: how.value,
                                visible_from: how.visible_from,
                            });
                            self.model.scopes[class.index()]
                                .attributes
                                .entry(name)
                                .or_default()
                                .push(id);
                        }
                        _ => self.expression(node, how.scope, how.branch, out),
                    }
                }
                _ => self.expression(node, how.scope, how.branch, out),
            }
        }
    }

    fn if_statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let mut arms = Vec::new();
        let mut exhaustive = false;
        let mut clauses = vec![node];
        clauses.extend(
            named_children(node)
                .into_iter()
                .filter(|c| matches!(c.kind_name(), "elif_clause" | "else_clause")),
        );
        for (i, clause) in clauses.into_iter().enumerate() {
            let (test, body, kind) = if clause.kind_name() == "else_clause" {
                exhaustive = true;
                (None, clause.field(F::Body), BranchKind::Else)
            } else {
                (
                    clause.field(F::Condition),
                    clause.field(F::Consequence),
                    BranchKind::If { arm: i },
                )
            };
            if let Some(test) = test {
                self.expression(test, scope, branch, out);
            }
            // The `if` arm's clause is the statement up to its block's end.
            let arm_range = match (i, body) {
                (0, Some(body)) => (node.start_byte(), body.end_byte()),
                _ => range(clause),
            };
            let id = self.new_branch(kind, branch, test.map(range), arm_range);
            let flows = body.map_or_else(Vec::new, |b| self.statements(b, scope, Some(id)));
            arms.push(Arm {
                test: test.map(range),
                kind: GuardKind::Test,
                also: None,
                range: arm_range,
                body: flows,
            });
        }
        out.push(Flow::If {
            range: range(node),
            arms,
            exhaustive,
        });
    }

    fn loop_statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let is_for = node.kind_name() == "for_statement";
        let header = if is_for {
            node.field(F::Right)
        } else {
            node.field(F::Condition)
        };
        let Some(header) = header else {
            return;
        };
        let Some(body) = node.field(F::Body) else {
            return;
        };
        self.expression(header, scope, branch, out);
        let id = self.new_branch(BranchKind::Loop, branch, Some(range(header)), range(node));
        let mut flows = Vec::new();
        if is_for && let Some(left) = node.field(F::Left) {
            self.targets(
                left,
                Target {
                    kind: TargetKind::For,
                    scope,
                    branch: Some(id),
                    statement: (node.start_byte(), header.end_byte()),
                    value: Some(range(header)),
                    visible_from: body.start_byte(),
                },
                &mut flows,
            );
        }
        flows.extend(self.statements(body, scope, Some(id)));
        let orelse = named_children(node)
            .into_iter()
            .find(|c| c.kind_name() == "else_clause");
        let (orelse_flows, orelse_range) = match orelse.and_then(|e| e.field(F::Body)) {
            Some(block) => {
                let clause = orelse.map_or(range(block), range);
                let id = self.new_branch(BranchKind::LoopElse, branch, None, clause);
                (self.statements(block, scope, Some(id)), Some(clause))
            }
            None => (Vec::new(), None),
        };
        out.push(Flow::Loop(Box::new(LoopFlow {
            range: range(node),
            kind: if is_for {
                LoopKind::For
            } else {
                LoopKind::While
            },
            header: range(header),
            body_end: body.end_byte(),
            body: flows,
            orelse: orelse_flows,
            orelse_range,
        })));
    }

    fn try_statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let Some(body) = node.field(F::Body) else {
            return;
        };
        let try_branch = self.new_branch(BranchKind::Try, branch, None, range(body));
        let body_flows = self.statements(body, scope, Some(try_branch));
        let mut handlers = Vec::new();
        let mut orelse = (Vec::new(), None);
        let mut finally = (Vec::new(), None);
        for clause in named_children(node) {
            let block = named_children(clause)
                .into_iter()
                .find(|c| c.kind_name() == "block")
                .or_else(|| clause.field(F::Body));
            match clause.kind_name() {
                "except_clause" | "except_group_clause" => {
                    let value = clause.field(F::Value).or_else(|| {
                        named_children(clause)
                            .into_iter()
                            .find(|c| c.kind_name() != "block")
                    });
                    let (types, alias) = match value {
                        Some(v) if v.kind_name() == "as_pattern" => {
                            let children = named_children(v);
                            let alias = v.field(F::Alias).or_else(|| children.last().copied());
                            (children.first().copied(), alias)
                        }
                        other => (other, None),
                    };
                    let id = self.new_branch(
                        BranchKind::Except,
                        branch,
                        types.map(range),
                        range(clause),
                    );
                    let mut flows = Vec::new();
                    if let Some(types) = types {
                        self.expression(types, scope, branch, &mut flows);
                    }
                    if let Some(alias) = alias {
                        let target = named_children(alias)
                            .into_iter()
                            .next()
                            .filter(|_| alias.kind_name() == "as_pattern_target")
                            .unwrap_or(alias);
                        if target.kind_name() == "identifier" {
                            let name = self.text(target);
                            let start = block.map_or(clause.end_byte(), |b| b.start_byte());
                            flows.push(self.bind(Binding {
                                name,
                                kind: BindingKind::Except,
                                scope,
                                branch: Some(id),
                                statement: (clause.start_byte(), start),
                                value: types.map(range),
                                visible_from: start,
                            }));
                        }
                    }
                    if let Some(block) = block {
                        flows.extend(self.statements(block, scope, Some(id)));
                    }
                    handlers.push(Arm {
                        test: types.map(range),
                        kind: GuardKind::Handled,
                        also: None,
                        range: range(clause),
                        body: flows,
                    });
                }
                "else_clause" => {
                    let id = self.new_branch(BranchKind::TryElse, branch, None, range(clause));
                    if let Some(block) = block {
                        orelse = (self.statements(block, scope, Some(id)), Some(range(clause)));
                    }
                }
                "finally_clause" => {
                    let id = self.new_branch(BranchKind::Finally, branch, None, range(clause));
                    if let Some(block) = block {
                        finally = (self.statements(block, scope, Some(id)), Some(range(clause)));
                    }
                }
                _ => {}
            }
        }
        out.push(Flow::Try(Box::new(TryFlow {
            range: range(node),
            body_range: range(body),
            body: body_flows,
            handlers,
            orelse: orelse.0,
            orelse_range: orelse.1,
            finally: finally.0,
            finally_range: finally.1,
        })));
    }

    /// `with a as x, b as (y, z): body`: the targets bind before the body, which runs once.
    fn with_statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let Some(body) = node.field(F::Body) else {
            return;
        };
        let items: Vec<Node> = named_children(node)
            .into_iter()
            .filter(|c| c.kind_name() == "with_clause")
            .flat_map(named_children)
            .collect();
        for item in items {
            let Some(value) = item.field(F::Value) else {
                continue;
            };
            if value.kind_name() == "as_pattern" {
                let children = named_children(value);
                let manager = children.first().copied();
                if let Some(manager) = manager {
                    self.expression(manager, scope, branch, out);
                }
                if let Some(alias) = value.field(F::Alias) {
                    self.targets(
                        alias,
                        Target {
                            kind: TargetKind::With,
                            scope,
                            branch,
                            statement: range(item),
                            value: manager.map(range),
                            visible_from: body.start_byte(),
                        },
                        out,
                    );
                }
            } else {
                self.expression(value, scope, branch, out);
            }
        }
        let flows = self.statements(body, scope, branch);
        out.extend(flows);
    }

    fn match_statement(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        if let Some(subject) = node.field(F::Subject) {
            self.expression(subject, scope, branch, out);
        }
        let Some(body) = node.field(F::Body) else {
            return;
        };
        let mut arms = Vec::new();
        let mut exhaustive = false;
        for case in named_children(body)
            .into_iter()
            .filter(|c| c.kind_name() == "case_clause")
        {
            let patterns: Vec<Node> = named_children(case)
                .into_iter()
                .filter(|c| c.kind_name() == "case_pattern")
                .collect();
            let test = match (patterns.first(), patterns.last()) {
                (Some(first), Some(last)) => Some((first.start_byte(), last.end_byte())),
                _ => None,
            };
            let guard = case.field(F::Guard);
            let also = guard.and_then(|g| named_children(g).into_iter().next());
            if let Some(also) = also {
                self.expression(also, scope, branch, out);
            }
            let irrefutable =
                guard.is_none() && patterns.len() == 1 && self.is_irrefutable(patterns[0]);
            exhaustive |= irrefutable;
            let id = self.new_branch(BranchKind::Case, branch, test, range(case));
            let mut flows = Vec::new();
            let start = case
                .field(F::Consequence)
                .map_or(case.end_byte(), |b| b.start_byte());
            for capture in self.captures(&patterns) {
                let name = self.text(capture);
                flows.push(self.bind(Binding {
                    name,
                    kind: BindingKind::MatchCapture,
                    scope,
                    branch: Some(id),
                    statement: range(case),
                    value: node.field(F::Subject).map(range),
                    visible_from: start,
                }));
            }
            if let Some(consequence) = case.field(F::Consequence) {
                flows.extend(self.statements(consequence, scope, Some(id)));
            }
            arms.push(Arm {
                test: if irrefutable { None } else { test },
                kind: GuardKind::Case,
                also: also.map(range),
                range: range(case),
                body: flows,
            });
        }
        out.push(Flow::If {
            range: range(node),
            arms,
            exhaustive,
        });
    }

    /// `case _:` or `case x:`: a pattern that always matches.
    /// A literal (`case 1:`, `case None:`) or a dotted value (`case Arch.SM90:`) is not.
    fn is_irrefutable(&self, pattern: Node) -> bool {
        if self.text(pattern).trim() == "_" {
            return true;
        }
        let inner = named_children(pattern);
        match inner.as_slice() {
            [name] if name.kind_name() == "dotted_name" => named_children(*name).len() == 1,
            _ => false,
        }
    }

    /// The names a `case` pattern captures: bare names (not a class pattern's class, not a
    /// dotted value pattern, not `_`) and `as` aliases.
    fn captures<'t>(&self, patterns: &[Node<'t>]) -> Vec<Node<'t>> {
        let mut found = Vec::new();
        let mut stack: Vec<Node> = patterns.to_vec();
        while let Some(node) = stack.pop() {
            let children = named_children(node);
            match node.kind_name() {
                "dotted_name" => {
                    if children.len() == 1 && self.text(node) != "_" {
                        found.push(children[0]);
                    }
                }
                "class_pattern" => stack.extend(children.into_iter().skip(1)),
                "keyword_pattern" => stack.extend(children.into_iter().skip(1)),
                "identifier" => {
                    if self.text(node) != "_" {
                        found.push(node);
                    }
                }
                _ => stack.extend(children),
            }
        }
        found.sort_by_key(|n| n.start_byte());
        found
    }

    /// A `def`: decorators, defaults and annotations are read in `scope`; the body is a new
    /// scope whose flow starts with the parameters; the name binds in `scope` after it.
    fn function(
        &mut self,
        node: Node,
        statement: Node,
        decorators: &[Node],
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let (Some(name), Some(body)) = (node.field(F::Name), node.field(F::Body)) else {
            return;
        };
        let name = self.text(name);
        let function = self.new_scope(
            ScopeKind::Function,
            Some(name.clone()),
            Some(scope),
            range(body),
            statement.start_byte(),
        );
        let params = node
            .field(F::Parameters)
            .map_or_else(Vec::new, named_children);
        let static_method = decorators
            .iter()
            .any(|d| self.text(*d).trim_start_matches('@').trim() == "staticmethod");
        let mut flows = Vec::new();
        let names = self.parameters(&params, scope, function, body.start_byte(), out, &mut flows);
        if self.model.scopes[scope.index()].kind == ScopeKind::Class
            && !static_method
            && let Some(receiver) = names.into_iter().next()
        {
            self.receivers.insert(function, (receiver, scope));
        }
        flows.extend(self.statements(body, function, None));
        self.model.scopes[function.index()].flow = flows;
        out.push(self.bind(Binding {
            name,
            kind: BindingKind::FunctionDef,
            scope,
            branch,
            statement: range(statement),
            value: None,
            visible_from: statement.end_byte(),
        }));
    }

    /// Binds a function's or lambda's parameters in `function`, visible from `start`; their
    /// defaults and annotations are read in `scope`. Returns the parameter names in order.
    fn parameters(
        &mut self,
        params: &[Node],
        scope: ScopeId,
        function: ScopeId,
        start: usize,
        out: &mut Vec<Flow>,
        flows: &mut Vec<Flow>,
    ) -> Vec<String> {
        let mut names = Vec::new();
        for (index, param) in params.iter().enumerate() {
            let (name, default, annotation) = match param.kind_name() {
                "identifier" => (Some(*param), None, None),
                // `x: T`, `*args: T`, `**kwargs: T`.
                "typed_parameter" => (
                    named_children(*param)
                        .into_iter()
                        .find_map(|c| match c.kind_name() {
                            "identifier" => Some(c),
                            "list_splat_pattern" | "dictionary_splat_pattern" => named_children(c)
                                .into_iter()
                                .find(|n| n.kind_name() == "identifier"),
                            _ => None,
                        }),
                    None,
                    param.field(F::Type),
                ),
                "default_parameter" | "typed_default_parameter" => (
                    param.field(F::Name),
                    param.field(F::Value),
                    param.field(F::Type),
                ),
                "list_splat_pattern" | "dictionary_splat_pattern" => (
                    named_children(*param)
                        .into_iter()
                        .find(|c| c.kind_name() == "identifier"),
                    None,
                    None,
                ),
                _ => (None, None, None),
            };
            if let Some(default) = default {
                self.expression(default, scope, None, out);
            }
            let Some(name) = name.filter(|n| n.kind_name() == "identifier") else {
                continue;
            };
            let text = self.text(name);
            names.push(text.clone());
            flows.push(self.bind(Binding {
                name: text,
                kind: BindingKind::Parameter {
                    index,
                    default: default.map(range),
                    annotation: annotation.map(range),
                },
                scope: function,
                branch: None,
                statement: range(*param),
                value: default.map(range),
                visible_from: start,
            }));
        }
        names
    }

    fn class(
        &mut self,
        node: Node,
        statement: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let (Some(name), Some(body)) = (node.field(F::Name), node.field(F::Body)) else {
            return;
        };
        let name = self.text(name);
        let mut bases = Vec::new();
        if let Some(superclasses) = node.field(F::Superclasses) {
            for base in named_children(superclasses) {
                self.expression(base, scope, branch, out);
                if base.kind_name() != "keyword_argument" {
                    let text = self.text(base);
                    bases.push(
                        text.rsplit('.')
                            .next()
                            .unwrap_or_default()
                            .trim()
                            .to_string(),
                    );
                }
            }
        }
        let class = self.new_scope(
            ScopeKind::Class,
            Some(name.clone()),
            Some(scope),
            range(body),
            statement.start_byte(),
        );
        self.model.scopes[class.index()].bases = bases;
        let flows = self.statements(body, class, None);
        self.model.scopes[class.index()].flow = flows;
        out.push(self.bind(Binding {
            name,
            kind: BindingKind::ClassDef,
            scope,
            branch,
            statement: range(statement),
            value: None,
            visible_from: statement.end_byte(),
        }));
    }

    fn import(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        for name in named_children(node) {
            let (bound, module) = match name.kind_name() {
                "aliased_import" => match (name.field(F::Alias), name.field(F::Name)) {
                    (Some(alias), Some(module)) => (self.text(alias), self.text(module)),
                    _ => continue,
                },
                // `import a.b` binds `a` (to the package `a`).
                "dotted_name" => {
                    let text = self.text(name);
                    let first = text.split('.').next().unwrap_or_default().to_string();
                    (first.clone(), first)
                }
                _ => continue,
            };
            out.push(self.bind(Binding {
                name: bound,
                kind: BindingKind::Import {
                    module,
                    member: None,
                },
                scope,
                branch,
                statement: range(node),
                value: None,
                visible_from: node.end_byte(),
            }));
        }
    }

    fn import_from(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let Some(module) = node.field(F::ModuleName) else {
            return;
        };
        let module_text = self.text(module);
        for name in named_children(node) {
            if name.id() == module.id() {
                continue;
            }
            let (bound, member) = match name.kind_name() {
                "aliased_import" => match (name.field(F::Alias), name.field(F::Name)) {
                    (Some(alias), Some(member)) => (self.text(alias), self.text(member)),
                    _ => continue,
                },
                "dotted_name" => (self.text(name), self.text(name)),
                _ => continue,
            };
            out.push(self.bind(Binding {
                name: bound,
                kind: BindingKind::Import {
                    module: module_text.clone(),
                    member: Some(member),
                },
                scope,
                branch,
                statement: range(node),
                value: None,
                visible_from: node.end_byte(),
            }));
        }
    }

    /// Walks an expression for what binds inside it: assignment expressions, and the scopes
    /// of lambdas and comprehensions.
    fn expression(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        if self.depth >= MAX_DEPTH {
            self.model.too_deep = true;
            return;
        }
        self.depth += 1;
        match node.kind_name() {
            "named_expression" => {
                if let Some(value) = node.field(F::Value) {
                    self.expression(value, scope, branch, out);
                }
                if let Some(name) = node.field(F::Name) {
                    let text = self.text(name);
                    let target = self.walrus_scope(scope);
                    out.push(self.bind(Binding {
                        name: text,
                        kind: BindingKind::Walrus,
                        scope: target,
                        branch,
                        statement: range(node),
                        value: node.field(F::Value).map(range),
                        visible_from: node.end_byte(),
                    }));
                }
            }
            "lambda" => {
                let body = node.field(F::Body);
                let lambda = self.new_scope(
                    ScopeKind::Lambda,
                    None,
                    Some(scope),
                    body.map_or(range(node), range),
                    node.start_byte(),
                );
                let params = node
                    .field(F::Parameters)
                    .map_or_else(Vec::new, named_children);
                let start = body.map_or(node.end_byte(), |b| b.start_byte());
                let mut flows = Vec::new();
                self.parameters(&params, scope, lambda, start, out, &mut flows);
                if let Some(body) = body {
                    self.expression(body, lambda, None, &mut flows);
                }
                self.model.scopes[lambda.index()].flow = flows;
            }
            "list_comprehension"
            | "set_comprehension"
            | "dictionary_comprehension"
            | "generator_expression" => self.comprehension(node, scope, branch, out),
            // Strings hold no binding (an f-string's `:=` is too rare to walk every string).
            "string"
            | "concatenated_string"
            | "identifier"
            | "integer"
            | "float"
            | "true"
            | "false"
            | "none" => {}
            _ => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    // A leaf (a name, a number, an operator) binds nothing.
                    if child.named_child_count() > 0 {
                        self.expression(child, scope, branch, out);
                    }
                }
            }
        }
        self.depth -= 1;
    }

    /// A comprehension: its first iterable is read in `scope`; its `for` targets bind in a
    /// scope of its own, seen by every part of it.
    fn comprehension(
        &mut self,
        node: Node,
        scope: ScopeId,
        branch: Option<BranchId>,
        out: &mut Vec<Flow>,
    ) {
        let comprehension = self.new_scope(
            ScopeKind::Comprehension,
            None,
            Some(scope),
            range(node),
            node.start_byte(),
        );
        let mut own = Vec::new();
        let mut inner = Vec::new();
        let mut first = true;
        for child in named_children(node) {
            match child.kind_name() {
                "for_in_clause" => {
                    if let Some(iterable) = child.field(F::Right) {
                        if first {
                            self.expression(iterable, scope, branch, out);
                        } else {
                            self.expression(iterable, comprehension, branch, &mut inner);
                        }
                    }
                    first = false;
                    if let Some(left) = child.field(F::Left) {
                        self.targets(
                            left,
                            Target {
                                kind: TargetKind::For,
                                scope: comprehension,
                                branch: None,
                                statement: range(child),
                                value: child.field(F::Right).map(range),
                                visible_from: node.start_byte(),
                            },
                            &mut own,
                        );
                    }
                }
                _ => self.expression(child, comprehension, branch, &mut inner),
            }
        }
        // What the comprehension's parts bind outside it (an assignment expression binds in
        // the enclosing function) stays in the enclosing flow.
        for step in inner {
            match &step {
                Flow::Bind { binding, .. }
                    if self.model.bindings[binding.index()].scope == comprehension =>
                {
                    own.push(step)
                }
                _ => out.push(step),
            }
        }
        self.model.scopes[comprehension.index()].flow = own;
    }
}

fn is_statement(kind: &str) -> bool {
    kind.ends_with("_statement")
        || matches!(
            kind,
            "block" | "function_definition" | "class_definition" | "decorated_definition"
        )
}

#[derive(Clone, Copy)]
enum TargetKind {
    Assignment,
    For,
    With,
}

/// How a target binds: what kind, where, and what value.
#[derive(Clone, Copy)]
struct Target {
    kind: TargetKind,
    scope: ScopeId,
    branch: Option<BranchId>,
    statement: Range,
    value: Option<Range>,
    visible_from: usize,
}
