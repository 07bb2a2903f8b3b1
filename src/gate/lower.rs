//! Lowering a tree-sitter-python tree into the module IR: imports, module-level assignments,
//! functions, local assignments, and the candidate decision sites that may be gates.

use rustc_hash::FxHashSet as HashSet;
use std::cell::Cell;

use crate::syntax::{F, Node, Tree};

use super::chunks::{code_hit_outside_strings, expression_code_hit, statement_code_hit};
use super::ir::*;
use super::limits::{MAX_HELPER_BODY_BYTES, MAX_PLAIN_ASSIGN_BYTES, TOKENLESS_HELPER_BYTES};
use super::semantic;
use super::tokens::Tokens;
use crate::words::words_in;

/// Up to this many arch-dependent names, `may_use_archy_name` scans for each of them.
const MAX_ARCHY_FINDERS: usize = 16;
/// Deeper expressions become `Other`: no gate is this deep, and it bounds recursion.
const MAX_EXPR_DEPTH: usize = 48;
/// Tree levels below an arch-dependent expression searched for sites (see
/// `scan_archy_expression`): CPython refuses 200 nested brackets and stops compiling
/// long before 1,000 nested expressions.
const MAX_SCAN_DEPTH: usize = 1_000;
/// Branch tests longer than this guard nothing (a platform test is short).
const MAX_GUARD_BYTES: usize = 300;

/// `value[i][j]...` for an unpacking path.
fn unpacked(value: &Expr, path: &[usize]) -> Expr {
    path.iter().fold(value.clone(), |inner, &i| {
        Expr::Subscript(Box::new(inner), Box::new(Expr::Int(i as i64)))
    })
}

pub struct Lowerer<'a> {
    src: &'a [u8],
    /// The parsed ranges when only some statements were parsed.
    ranges: Option<&'a [(usize, usize)]>,
    tokens: &'a Tokens,
    /// Parameter names a rule says hold the device's value (`arch`, `cc`, ...): a comparison
    /// on one is a candidate in a function of any size, not only in a small helper.
    parameter_names: &'a [String],
    ir: ModuleIr,
    /// Stack of enclosing function indices.
    functions: Vec<usize>,
    classes: Vec<String>,
    /// Names bound (so far, anywhere in this file) to something that mentions an arch token:
    /// a site that uses one is a candidate even without a token of its own.
    archy_names: HashSet<String>,
    /// Attributes stored on a class with an arch-dependent value (`self._fast = ...`, a class
    /// body's `FAST = ...`), and methods that return one (`token_methods`): `self._fast` and
    /// `cls.supports_fp8()` read one.
    archy_attrs: HashSet<String>,
    /// Device names of submodules the file imports, as it reads them (`common._arch_for`
    /// after `from .. import runtime as common`).
    archy_paths: HashSet<String>,
    /// Finders for the module names those paths start with (`common.`): a node whose text
    /// holds none of them reads no such path.
    archy_module_finders: Vec<memchr::memmem::Finder<'static>>,
    /// Finders for `archy_names` while there are few of them (see `may_use_archy_name`).
    archy_finders: Vec<memchr::memmem::Finder<'static>>,
    /// The same for `archy_attrs` (see `uses_archy_attr`).
    archy_attr_finders: Vec<memchr::memmem::Finder<'static>>,
    /// The last `archy_or_derived` answer: node id, end byte, names known then, answer.
    last_archy: Cell<Option<(usize, usize, usize, bool)>>,
    /// The enclosing branch tests that name a rule fact, with the arm's polarity (reset at
    /// each function: a site's guards are those of its own body).
    guards: Vec<(Expr, bool)>,
    /// Inside an `except` clause: its bindings are the failure path and do not replace the
    /// `try` body's.
    in_except: usize,
    /// Names a function declares `global` (by function index): its stores to them are the
    /// module's (`ir.global_stores`).
    function_globals: HashMap<usize, HashSet<String>>,
    /// Top-level functions that read such a global: device names for importers although
    /// they decide nothing themselves.
    device_global_readers: HashSet<String>,
    /// The `if` tests around the current statement inside a function, with the arm's
    /// polarity: a name bound under a device test is device-derived.
    branch_stack: Vec<(Node<'a>, bool)>,
    /// Where an expression was nested past `MAX_EXPR_DEPTH` (reported, not silently dropped).
    too_deep: std::cell::RefCell<Vec<(u32, u32)>>,
    /// Where each function's body starts, by index in `ir.functions`: the function scope of
    /// the semantic model with the same body is that function.
    function_bodies: Vec<Option<usize>>,
}

/// The expression inside parentheses, past any comment written after the `(`
/// (`flag = (  # why\n  a and b\n)`).
fn parenthesized_inner(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .find(|child| child.kind_name() != "comment")
}

/// Lowers one parsed file.
pub fn lower_module(
    src: &[u8],
    tree: &Tree,
    module: &str,
    is_package: bool,
    tokens: &Tokens,
) -> ModuleIr {
    lower_parsed(src, tree, module, is_package, tokens, None, &[], &[])
}

/// Lowers a tree parsed from only some statements (`chunks::relevant_ranges`): functions
/// that were split are marked incomplete, so inference asks for the whole module instead.
/// `imported_device_names` are names this file imports that another module binds from the
/// device (`gate::exports`): a use of one is a candidate site, as a token's is.
#[allow(clippy::too_many_arguments)]
pub fn lower_parsed<'a>(
    src: &'a [u8],
    tree: &'a Tree,
    module: &str,
    is_package: bool,
    tokens: &Tokens,
    ranges: Option<&[(usize, usize)]>,
    parameter_names: &'a [String],
    imported_device_names: &[String],
) -> ModuleIr {
    let parts = Parts {
        ranges,
        parameter_names,
        imported_device_names,
        bind: true,
    };
    lower_tree(src, tree, module, is_package, tokens, parts)
}

/// The definitions of a module whose function bodies were left out (`chunks::Skeleton`):
/// its functions with their signatures, classes and imports, lowered as `lower_module` lowers
/// them, without the semantic model that only the resolver reads (`gate::feed` reads these
/// to find a callee's parameters, for hundreds of modules per site).
pub fn lower_definitions(
    src: &[u8],
    tree: &Tree,
    module: &str,
    is_package: bool,
    tokens: &Tokens,
) -> ModuleIr {
    let parts = Parts {
        ranges: None,
        parameter_names: &[],
        imported_device_names: &[],
        bind: false,
    };
    lower_tree(src, tree, module, is_package, tokens, parts)
}

/// What of a module `lower_tree` lowers, beside its tree.
struct Parts<'a, 'n> {
    /// The ranges parsed (`None`: the whole file).
    ranges: Option<&'n [(usize, usize)]>,
    parameter_names: &'a [String],
    imported_device_names: &'n [String],
    /// Whether the module's semantic model is bound (`attach_model`).
    bind: bool,
}

fn lower_tree<'a>(
    src: &'a [u8],
    tree: &'a Tree,
    module: &str,
    is_package: bool,
    tokens: &Tokens,
    parts: Parts<'a, '_>,
) -> ModuleIr {
    let Parts {
        ranges,
        parameter_names,
        imported_device_names,
        bind,
    } = parts;
    let mut lowerer = Lowerer {
        ranges,
        src,
        tokens,
        parameter_names,
        ir: ModuleIr {
            module: module.to_string(),
            is_package,
            partial: ranges.is_some(),
            ..ModuleIr::default()
        },
        functions: Vec::new(),
        classes: Vec::new(),
        archy_names: HashSet::default(),
        archy_attrs: HashSet::default(),
        archy_paths: HashSet::default(),
        archy_module_finders: Vec::new(),
        archy_finders: Vec::new(),
        archy_attr_finders: Vec::new(),
        last_archy: Cell::new(None),
        guards: Vec::new(),
        in_except: 0,
        function_globals: HashMap::default(),
        device_global_readers: HashSet::default(),
        branch_stack: Vec::new(),
        too_deep: Default::default(),
        function_bodies: Vec::new(),
    };
    for name in imported_device_names {
        lowerer.add_archy_name(name.clone());
    }
    let root = tree.root_node();
    collect_errors(tree, &mut lowerer.ir.parse_errors);
    // Nesting too deep for the tree itself (`syntax`): said as a too-deep expression is.
    if let Some(at) = tree.too_deep() {
        let p = tree.position(at);
        lowerer
            .too_deep
            .borrow_mut()
            .push((p.row as u32 + 1, p.column as u32 + 1));
    }
    lowerer.token_helpers(root);
    lowerer.block(root);
    if bind {
        lowerer.attach_model(tree);
    }
    lowerer.ir.too_deep = lowerer.too_deep.take();
    let device_global_readers = std::mem::take(&mut lowerer.device_global_readers);
    let mut ir = lowerer.ir;
    // A helper is a device name for its importers when it decides something on the device;
    // one that only builds a JIT spec for fixed arches (`gen_trtllm_comm_module()`) is no
    // decision where it is called (its arch list is a gate of its own, here).
    let not_deciding = |site: &Site| {
        matches!(
            site.kind,
            SiteKind::JitArchList | SiteKind::Decorator | SiteKind::MinCapability
        )
    };
    let jit_calls: HashSet<usize> = ir
        .sites
        .iter()
        .filter(|site| not_deciding(site))
        .map(|site| site.byte)
        .collect();
    let deciding: HashSet<usize> = ir
        .sites
        .iter()
        .filter(|site| !not_deciding(site) && !jit_calls.contains(&site.byte))
        .filter_map(|site| site.function)
        .collect();
    let ModuleIr {
        device_exports,
        function_index,
        functions,
        ..
    } = &mut ir;
    device_exports.retain(|name| {
        function_index
            .get(name)
            .is_none_or(|index| deciding.contains(index))
            || device_global_readers.contains(name)
    });
    // A top-level function that decides on a device-derived flag is a device name too, token
    // or not (`def fusion_applies(n): return (_is_sm90 or _is_sm100) and ...`): the export
    // set follows the decision sites, so an edit that spells a token into such a function
    // (a synthesized `or is_sm120_supported()`) leaves it, and its importers, unchanged.
    for &index in &deciding {
        let function = &functions[index];
        if function.parent.is_none() && function.class.is_none() {
            device_exports.push(function.qualname.clone());
        }
    }
    device_exports.sort_unstable();
    device_exports.dedup();
    ir
}

/// Where the parser found errors, as (line, column) from one: the first of each line, at
/// most 20.
fn collect_errors(tree: &Tree, out: &mut Vec<(u32, u32)>) {
    for &at in tree.errors() {
        let p = tree.position(at);
        let place = (p.row as u32 + 1, p.column as u32 + 1);
        if out.last().is_some_and(|last| last.0 == place.0) {
            continue;
        }
        if out.len() >= 20 {
            break;
        }
        out.push(place);
    }
}

impl<'a> Lowerer<'a> {
    fn text(&self, node: Node<'a>) -> &'a str {
        std::str::from_utf8(&self.src[node.byte_range()]).unwrap_or("")
    }

    fn owned_text(&self, node: Node<'a>) -> String {
        let bytes = &self.src[node.byte_range()];
        // `from_utf8` checks short ASCII names in a few instructions; the lossy decoder walks
        // them in chunks (a third of a million names per run on a big site).
        match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// Whether an expression's code (not its comments) holds a token.
    fn archy(&self, node: Node<'a>) -> bool {
        expression_code_hit(self.tokens, &self.src[node.byte_range()])
    }

    /// Arch tokens in the text, or a use of a name already known to be arch-dependent.
    ///
    /// Callers often ask twice in a row about one node (an assignment's value is tested, then
    /// recorded as a site, then scanned), so the last answer is kept: a `true` stays true
    /// (names are only ever added), a `false` holds while no name was added.
    fn archy_or_derived(&self, node: Node<'a>) -> bool {
        let key = (node.id(), node.end_byte());
        if let Some((id, end, names, hit)) = self.last_archy.get()
            && (id, end) == key
            && (hit
                || names
                    == self.archy_names.len() + self.archy_attrs.len() + self.archy_paths.len())
        {
            return hit;
        }
        let hit = self.archy(node)
            || (self.has_archy_names()
                && self.may_use_archy_name(node)
                && self.uses_archy_name(node))
            || (!self.archy_attrs.is_empty() && self.uses_archy_attr(node));
        self.last_archy.set(Some((
            key.0,
            key.1,
            self.archy_names.len() + self.archy_attrs.len() + self.archy_paths.len(),
            hit,
        )));
        hit
    }

    fn add_archy_name(&mut self, name: String) {
        // `common._arch_for`: a device name of a submodule the file imports, read through the
        // module's local name (`gate::exports`); no binding of this module.
        if name.contains('.') {
            if let Some((module, _)) = name.rsplit_once('.') {
                let prefix = format!("{module}.");
                if !self
                    .archy_paths
                    .iter()
                    .any(|path| path.starts_with(&prefix))
                {
                    self.archy_module_finders
                        .push(memchr::memmem::Finder::new(prefix.as_bytes()).into_owned());
                }
            }
            self.archy_paths.insert(name);
            return;
        }
        // A module-level binding (a flag, a top-level helper, an import of one) is what other
        // modules can import: `gate::exports` looks for files that do.
        if self.at_module_level() {
            self.ir.device_exports.push(name.clone());
        }
        if self.archy_names.len() < MAX_ARCHY_FINDERS && !self.archy_names.contains(&name) {
            self.archy_finders
                .push(memchr::memmem::Finder::new(name.as_bytes()).into_owned());
        }
        self.archy_names.insert(name);
    }

    /// A quick necessary condition for `uses_archy_name`: an identifier's text is part of
    /// the text of every node above it, so a node whose text contains no arch-dependent name
    /// uses none. Walking the subtree (a cursor per node) costs far more than a few memmem
    /// scans, or with many names, looking each identifier-like word of the text up.
    fn may_use_archy_name(&self, node: Node<'a>) -> bool {
        let text = &self.src[node.byte_range()];
        if self
            .archy_module_finders
            .iter()
            .any(|f| f.find(text).is_some())
        {
            return true;
        }
        if self.archy_names.len() > MAX_ARCHY_FINDERS {
            return words_in(text)
                .any(|word| std::str::from_utf8(word).is_ok_and(|w| self.archy_names.contains(w)));
        }
        self.archy_finders.iter().any(|f| f.find(text).is_some())
    }

    /// Whether the expression names an arch-dependent name: an identifier in it, not inside a
    /// nested attribute (`x.is_sm90` names `x`, as the attribute's object says).
    fn uses_archy_name(&self, node: Node<'a>) -> bool {
        if node.kind_name() == "identifier" {
            return self.archy_names.contains(self.text(node));
        }
        if self.is_archy_path(node) {
            return true;
        }
        if !self.archy_attrs.is_empty() && self.uses_archy_attr(node) {
            return true;
        }
        self.descendants_use_archy_name(node)
            || (node.kind_name() == "attribute"
                && node
                    .field(F::Object)
                    .is_some_and(|o| self.uses_archy_name(o)))
    }

    /// Records an arch-dependent class attribute or method name (see `archy_attrs`).
    fn add_archy_attr(&mut self, name: String) {
        if self.archy_attrs.len() < MAX_ARCHY_FINDERS && !self.archy_attrs.contains(&name) {
            self.archy_attr_finders
                .push(memchr::memmem::Finder::new(name.as_bytes()).into_owned());
        }
        self.archy_attrs.insert(name);
    }

    /// Whether the expression reads `self.x` / `cls.x` (any receiver) for an arch-dependent
    /// class attribute `x`.
    fn uses_archy_attr(&self, node: Node<'a>) -> bool {
        let text = &self.src[node.byte_range()];
        // As for names: a few memmem scans rule most nodes out before the word walk.
        if self.archy_attrs.len() <= MAX_ARCHY_FINDERS
            && !self
                .archy_attr_finders
                .iter()
                .any(|f| f.find(text).is_some())
        {
            return false;
        }
        if !words_in(text)
            .any(|w| std::str::from_utf8(w).is_ok_and(|w| self.archy_attrs.contains(w)))
        {
            return false;
        }
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            if current.kind_name() == "attribute"
                && current.field(F::Object).is_some_and(|o| {
                    o.kind_name() == "identifier" && matches!(self.text(o), "self" | "cls")
                })
                && current
                    .field(F::Attribute)
                    .is_some_and(|a| self.archy_attrs.contains(self.text(a)))
            {
                return true;
            }
            let mut cursor = current.walk();
            stack.extend(current.named_children(&mut cursor));
        }
        false
    }

    /// An identifier among the named descendants, not entering `attribute` nodes: one cursor
    /// walks the subtree (a cursor per node costs an allocation each).
    fn descendants_use_archy_name(&self, node: Node<'a>) -> bool {
        let mut cursor = node.walk();
        if !cursor.goto_first_child() {
            return false;
        }
        loop {
            let child = cursor.node();
            // An attribute's name (`x.is_sm90`'s `is_sm90`) is no use of a name; its object is.
            if child.is_named() && cursor.field_name() != Some("attribute") {
                match child.kind_name() {
                    "identifier" if self.archy_names.contains(self.text(child)) => return true,
                    "identifier" => {}
                    "attribute" if self.is_archy_path(child) => return true,
                    _ if cursor.goto_first_child() => continue,
                    _ => {}
                }
            }
            // The next node: a sibling here or of the nearest ancestor below `node`.
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return false;
                }
            }
        }
    }

    /// Whether any name (or submodule path) is known to be arch-dependent yet.
    fn has_archy_names(&self) -> bool {
        !self.archy_names.is_empty() || !self.archy_paths.is_empty()
    }

    /// Whether the node is `module.name` for a device name of an imported submodule.
    fn is_archy_path(&self, node: Node<'a>) -> bool {
        !self.archy_paths.is_empty()
            && node.kind_name() == "attribute"
            && self.archy_paths.contains(self.text(node))
    }

    fn at_module_level(&self) -> bool {
        self.functions.is_empty() && self.classes.is_empty()
    }

    /// Visits the statements of a block (module, function body, if body ...).
    fn block(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.statement(child);
        }
    }

    fn statement(&mut self, node: Node<'a>) {
        match node.kind_name() {
            "import_statement" => self.import(node),
            "import_from_statement" => self.import_from(node),
            "future_import_statement" => {}
            "global_statement" => self.global_statement(node),
            "expression_statement" => self.expression_statement(node),
            "if_statement" => self.if_statement(node),
            "while_statement" => self.conditional(node),
            "for_statement" => self.for_statement(node),
            "with_statement" => self.with_statement(node),
            "try_statement" => self.try_statement(node),
            "match_statement" => self.match_statement(node),
            "assert_statement" => {
                if let Some(cond) = node.named_child(0) {
                    self.site(SiteKind::Assert, cond);
                    self.scan_expression(cond);
                }
            }
            "return_statement" => self.return_statement(node),
            "function_definition" => self.function(node, Vec::new()),
            "decorated_definition" => self.decorated(node),
            "class_definition" => self.class(node, false),
            "ERROR" => self.block(node),
            _ => self.visit_bodies(node),
        }
    }

    /// Descends into nested blocks of compound statements (try, with, for, match ...).
    fn visit_bodies(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind_name() {
                "block" => self.block(child),
                "except_clause" | "except_group_clause" => {
                    self.in_except += 1;
                    self.bind_as_targets(child);
                    self.visit_bodies(child);
                    self.in_except -= 1;
                }
                "else_clause" | "finally_clause" | "case_clause" => self.visit_bodies(child),
                "elif_clause" => self.conditional(child),
                kind if kind.ends_with("_statement") || kind == "decorated_definition" => {
                    self.statement(child)
                }
                _ => self.scan_expression(child),
            }
        }
    }

    /// `while` (and an `elif` reached outside an `if` chain): the condition is a candidate
    /// site; then the bodies.
    fn conditional(&mut self, node: Node<'a>) {
        if let Some(cond) = node.field(F::Condition) {
            self.site(SiteKind::Test, cond);
            self.scan_expression(cond);
        }
        self.visit_bodies(node);
    }

    /// The guard a branch test gives the sites of an arm: only tests that name a rule fact
    /// (`is_hip()`, `torch.version.hip`) can be constant on NVIDIA, so only those are kept.
    fn guard_of(&self, cond: Node<'a>) -> Option<Expr> {
        (cond.byte_range().len() <= MAX_GUARD_BYTES && self.archy(cond)).then(|| self.expr(cond, 0))
    }

    /// `if` / `elif` / `else`: each test is a site; each arm's sites carry the tests that lead
    /// there; at module level, a name bound differently in the arms is joined, guarded by
    /// the test (`MODE = "fast" if <test> else "slow"`).
    fn if_statement(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        let alternatives: Vec<Node<'a>> = node
            .children_by_field_name("alternative", &mut cursor)
            .collect();
        self.if_chain(node, &alternatives);
    }

    fn if_chain(&mut self, clause: Node<'a>, rest: &[Node<'a>]) {
        let cond = clause.field(F::Condition);
        if let Some(cond) = cond {
            self.site(SiteKind::Test, cond);
            self.scan_expression(cond);
        }
        let guard = cond.and_then(|c| self.guard_of(c));
        let module_join = self.at_module_level();
        let before = module_join.then(|| self.ir.assigns.clone());
        if let Some(g) = &guard {
            self.guards.push((g.clone(), true));
        }
        let in_function = !self.functions.is_empty();
        if let (true, Some(cond)) = (in_function, cond) {
            self.branch_stack.push((cond, true));
        }
        if let Some(body) = clause.field(F::Consequence) {
            self.block(body);
        }
        if let (true, Some(_)) = (in_function, cond) {
            self.branch_stack.pop();
        }
        if guard.is_some() {
            self.guards.pop();
        }
        let after_then = before
            .as_ref()
            .map(|b| std::mem::replace(&mut self.ir.assigns, b.clone()));
        if let Some(g) = &guard {
            self.guards.push((g.clone(), false));
        }
        if let (true, Some(cond)) = (in_function, cond) {
            self.branch_stack.push((cond, false));
        }
        if let Some((first, more)) = rest.split_first() {
            match first.kind_name() {
                "elif_clause" => self.if_chain(*first, more),
                _ => {
                    if let Some(body) = first.field(F::Body) {
                        self.block(body);
                    }
                }
            }
        }
        if let (true, Some(_)) = (in_function, cond) {
            self.branch_stack.pop();
        }
        if guard.is_some() {
            self.guards.pop();
        }
        if let (Some(before), Some(after_then), Some(cond)) = (before, after_then, cond) {
            self.join_module_arms(&before, after_then, cond);
        }
    }

    /// After a module-level `if`: a name the arms bind to different values gets both, as a
    /// conditional expression over the test (a name unbound on one side keeps its value).
    fn join_module_arms(
        &mut self,
        before: &HashMap<String, Expr>,
        after_then: HashMap<String, Expr>,
        cond: Node<'a>,
    ) {
        let mut test: Option<Expr> = None;
        for (name, then_value) in after_then {
            let else_value = self.ir.assigns.get(&name);
            if else_value == Some(&then_value) {
                continue;
            }
            let orelse = match else_value.or_else(|| before.get(&name)) {
                Some(value) => value.clone(),
                None => Expr::Other(format!("<{name} unbound>")),
            };
            if self.archy_or_derived(cond) {
                self.add_archy_name(name.clone());
            }
            let test = test.get_or_insert_with(|| self.expr(cond, 0)).clone();
            self.ir.assigns.insert(
                name,
                Expr::IfExp {
                    test: Box::new(test),
                    body: Box::new(then_value),
                    orelse: Box::new(orelse),
                },
            );
        }
    }

    /// Binds the module (`semantic::bind`, one walk of the same tree) and ties the model to
    /// the IR: each function scope to its function, each binding to the local assignment
    /// lowered for it, each `if` test to its lowered expression.
    fn attach_model(&mut self, tree: &'a Tree) {
        let model = semantic::bind(self.src, tree);
        let by_body: std::collections::HashMap<usize, usize> = self
            .function_bodies
            .iter()
            .enumerate()
            .filter_map(|(index, body)| body.map(|start| (start, index)))
            .collect();
        let mut scope_functions = HashMap::default();
        let mut function_scopes = std::collections::HashMap::new();
        for (i, scope) in model.scopes.iter().enumerate() {
            if scope.kind == semantic::ScopeKind::Function
                && let Some(&function) = by_body.get(&scope.range.0)
            {
                let id = semantic::ScopeId::from_index(i);
                scope_functions.insert(id, function);
                function_scopes.insert(function, id);
            }
        }
        // A lowered assignment is the binding of its name, in its function's scope, whose
        // statement holds it (the innermost one: `for x in a: x = 2`).
        let mut binding_locals = HashMap::default();
        for (&function, assigns) in &self.ir.locals {
            let Some(&scope) = function_scopes.get(&function) else {
                continue;
            };
            let bindings = &model.scope(scope).bindings;
            for (index, assign) in assigns.iter().enumerate() {
                let names: Vec<&str> = match &assign.target {
                    Target::Name(name) => vec![name.as_str()],
                    Target::Tuple(names) => names.iter().flatten().map(String::as_str).collect(),
                };
                for name in names {
                    let found = bindings
                        .get(name)
                        .into_iter()
                        .flatten()
                        .filter(|&&id| {
                            let binding = model.binding(id);
                            binding.statement.0 <= assign.byte
                                && assign.byte < binding.statement.1
                                && !matches!(binding.kind, semantic::BindingKind::Parameter { .. })
                        })
                        .min_by_key(|&&id| {
                            let (start, end) = model.binding(id).statement;
                            end - start
                        });
                    if let Some(&id) = found {
                        binding_locals.insert(id, (function, index));
                    }
                }
            }
        }
        let root = tree.root_node();
        let mut tests = HashMap::default();
        for branch in &model.branches {
            if let (semantic::BranchKind::If { .. }, Some((start, end))) =
                (branch.kind, branch.test)
                && let Some(node) = root.descendant_for_byte_range(start, end)
            {
                tests.insert((start, end), self.expr(node, 0));
            }
        }
        self.ir.semantic = std::sync::Arc::new(model);
        self.ir.scope_functions = scope_functions;
        self.ir.binding_locals = binding_locals;
        self.ir.tests = tests;
    }

    /// `for x in ...:` binds `x` (to something gatefix does not follow) for the body.
    fn for_statement(&mut self, node: Node<'a>) {
        if let Some(right) = node.field(F::Right) {
            self.scan_expression(right);
        }
        if let Some(left) = node.field(F::Left) {
            self.bind_opaque(left);
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind_name() {
                "block" => self.block(child),
                "else_clause" => self.visit_bodies(child),
                _ => {}
            }
        }
    }

    /// `with a as b:` binds `b` to what `a.__enter__()` returns: not followed.
    fn with_statement(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind_name() {
                "with_clause" => {
                    self.scan_expression(child);
                    self.bind_as_targets(child);
                }
                "block" => self.block(child),
                _ => {}
            }
        }
    }

    /// The `as` targets below a `with` or `except` clause.
    fn bind_as_targets(&mut self, clause: Node<'a>) {
        let mut cursor = clause.walk();
        let mut stack: Vec<Node<'a>> = clause.named_children(&mut cursor).collect();
        while let Some(node) = stack.pop() {
            match node.kind_name() {
                "block" => {}
                "as_pattern" => {
                    if let Some(alias) = node.field(F::Alias) {
                        self.bind_opaque(alias);
                    }
                }
                _ => {
                    let mut cursor = node.walk();
                    stack.extend(node.named_children(&mut cursor));
                }
            }
        }
    }

    /// Records that the names of a target are rebound to a value gatefix does not follow,
    /// where that hides an earlier arch-dependent binding.
    fn bind_opaque(&mut self, target: Node<'a>) {
        let mut names = Vec::new();
        self.target_names(target, &mut Vec::new(), &mut names);
        for (name, _) in names {
            if !self.archy_names.contains(&name) {
                continue;
            }
            let value = Expr::Other(format!("<{name} rebound>"));
            if self.at_module_level() {
                self.ir.assigns.insert(name, value);
            } else if let Some(&function) = self.functions.last() {
                self.ir
                    .locals
                    .entry(function)
                    .or_default()
                    .push(LocalAssign {
                        byte: target.start_byte(),
                        target: Target::Name(name),
                        value,
                    });
            }
        }
    }

    fn try_statement(&mut self, node: Node<'a>) {
        self.visit_bodies(node);
    }

    /// `match subject:` with `case <literal>:` clauses: each literal case compares the
    /// subject, so it is a test site (`case 9:` is `subject == 9`).
    fn match_statement(&mut self, node: Node<'a>) {
        let subject = node.field(F::Subject);
        if let Some(subject) = subject {
            self.scan_expression(subject);
        }
        let subject_archy = subject.is_some_and(|s| self.archy_or_derived(s));
        let mut stack = vec![node];
        while let Some(current) = stack.pop() {
            let mut cursor = current.walk();
            let children: Vec<Node<'a>> = current.named_children(&mut cursor).collect();
            for child in children {
                match child.kind_name() {
                    "case_clause" => {
                        if let (true, Some(subject)) = (subject_archy, subject) {
                            self.case_site(subject, child);
                        }
                        self.visit_bodies(child);
                    }
                    "block" => stack.push(child),
                    _ => {}
                }
            }
        }
    }

    fn case_site(&mut self, subject: Node<'a>, clause: Node<'a>) {
        let Some(pattern) = clause
            .named_child(0)
            .filter(|p| p.kind_name() == "case_pattern")
        else {
            return;
        };
        let values: Vec<Expr> = {
            let mut cursor = pattern.walk();
            pattern
                .named_children(&mut cursor)
                .map(|p| self.expr(p, 0))
                .collect()
        };
        let [value] = values.as_slice() else {
            return;
        };
        if !matches!(value, Expr::Int(_) | Expr::Str(_) | Expr::Tuple(_)) {
            return;
        }
        let expr = Expr::Compare(
            Box::new(self.expr(subject, 0)),
            vec![(CmpOp::Eq, value.clone())],
        );
        self.push_site(SiteKind::Test, pattern, expr, false);
    }

    fn return_statement(&mut self, node: Node<'a>) {
        let Some(value) = node.named_child(0) else {
            return;
        };
        if let Some(&function) = self.functions.last() {
            let is_min_cap = self.ir.functions[function]
                .qualname
                .ends_with("get_min_capability");
            // `return 89`, or the same answer delegated to another class
            // (`return Fp8Config.get_min_capability()`).
            let delegates = value.kind_name() == "call"
                && value
                    .field(F::Function)
                    .is_some_and(|f| self.text(f).ends_with(".get_min_capability"));
            let kind = if is_min_cap && (value.kind_name() == "integer" || delegates) {
                SiteKind::MinCapability
            } else {
                SiteKind::Return
            };
            if value.kind_name() != "conditional_expression" {
                self.site(kind, value);
            }
        }
        self.scan_expression(value);
    }

    fn expression_statement(&mut self, node: Node<'a>) {
        let Some(expr) = node.named_child(0) else {
            return;
        };
        if expr.kind_name() != "assignment" {
            self.scan_expression(expr);
            return;
        }
        // `a = b = value` nests assignments on the right.
        let mut targets = Vec::new();
        let mut current = expr;
        let value = loop {
            if let Some(left) = current.field(F::Left) {
                targets.push(left);
            }
            match current.field(F::Right) {
                Some(right) if right.kind_name() == "assignment" => current = right,
                Some(right) => break Some(right),
                None => break None,
            }
        };
        let Some(value) = value else {
            self.declaration(expr);
            return;
        };
        // `x: ClassVar[...] = v` and `x: Final = v` declare a constant of the class, not a
        // field a constructor fills in. Only a class body's annotations matter.
        let in_class_body = self.functions.is_empty() && !self.classes.is_empty();
        let annotated = in_class_body
            && expr.field(F::Type).is_some_and(|annotation| {
                let text = self
                    .text(annotation)
                    .trim_matches(|c| c == '"' || c == '\'');
                let head = text.split('[').next().unwrap_or(text).trim();
                let head = head.rsplit('.').next().unwrap_or(head);
                !matches!(head, "ClassVar" | "Final")
            });
        if self.assignment(&targets, value, annotated)
            || value.byte_range().len() <= MAX_PLAIN_ASSIGN_BYTES
        {
            self.scan_expression(value);
        }
    }

    /// `name: Type` with no value at module level: the name holds an instance of the type
    /// (a string annotation naming it the same way counts too).
    fn declaration(&mut self, assignment: Node<'a>) {
        if !self.at_module_level() {
            return;
        }
        let (Some(target), Some(annotation)) = (
            assignment.field(F::Left),
            assignment.field(F::Type).and_then(|t| t.named_child(0)),
        ) else {
            return;
        };
        if target.kind_name() != "identifier" {
            return;
        }
        let annotation = match self.expr(annotation, 0) {
            Expr::Str(text) => match dotted_name(&text) {
                Some(expr) => expr,
                None => return,
            },
            expr @ (Expr::Name(_) | Expr::Attr(..)) => expr,
            _ => return,
        };
        let name = self.text(target).to_string();
        self.ir.declared.insert(name, annotation);
    }

    /// Whether an assigned value may depend on the architecture. In a big value (a generated
    /// table) a token inside a string literal is a name, not a check, and does not count
    /// (`chunks::relevant_ranges` drops such statements unparsed).
    fn value_archy(&self, value: Node<'a>) -> bool {
        if value.byte_range().len() <= MAX_PLAIN_ASSIGN_BYTES {
            return self.archy_or_derived(value);
        }
        code_hit_outside_strings(self.tokens, &self.src[value.byte_range()])
            || (self.has_archy_names()
                && self.may_use_archy_name(value)
                && self.uses_archy_name(value))
    }

    /// Records an assignment; returns whether its value may depend on the architecture.
    /// `annotated`: a class body's statement declares a field's type (`name: T = value`,
    /// not a `ClassVar` or `Final`).
    fn assignment(&mut self, targets: &[Node<'a>], value: Node<'a>, annotated: bool) -> bool {
        let mut bindings: Vec<(String, Vec<usize>)> = Vec::new();
        let mut stores: Vec<Node<'a>> = Vec::new();
        for target in targets {
            match target.kind_name() {
                "attribute" | "subscript" => stores.push(*target),
                _ => self.target_names(*target, &mut Vec::new(), &mut bindings),
            }
        }
        let in_class_body = self.functions.is_empty() && !self.classes.is_empty();
        if bindings.is_empty() && stores.is_empty() {
            return false;
        }
        let archy = self.value_archy(value);
        // A name bound under an arch-dependent test depends on the device through the branch
        // (`result = "fast"` inside `if cap[0] >= 10:`).
        let controlled = !archy
            && !bindings.is_empty()
            && self
                .branch_stack
                .iter()
                .any(|(cond, _)| self.archy_or_derived(*cond));
        if controlled {
            for (name, _) in &bindings {
                self.add_archy_name(name.clone());
            }
        }
        // Big literals (generated tables) cost more to lower than they are worth; resolution
        // only needs values that could matter.
        let lowered = if archy || value.byte_range().len() <= MAX_PLAIN_ASSIGN_BYTES {
            self.expr(value, 0)
        } else {
            Expr::Other(String::from("<large value>"))
        };
        if archy {
            for (name, _) in &bindings {
                self.add_archy_name(name.clone());
            }
        }
        let flag_like = !is_literal(value) && value.kind_name() != "conditional_expression";
        let site_kind = if !bindings.is_empty() {
            if self.at_module_level() || in_class_body {
                Some(SiteKind::ModuleFlag)
            } else if !self.functions.is_empty() {
                Some(SiteKind::LocalFlag)
            } else {
                None
            }
        } else {
            Some(SiteKind::AttrStore)
        };
        // `self.x = ...` / `cls.x = ...` in a method, or a name in a class body: an attribute
        // of the class.
        let class = match (self.functions.last(), in_class_body) {
            (_, true) => Some(self.qualname_of_class()),
            (Some(&f), false) => self.ir.functions[f].class.clone(),
            _ => None,
        };
        if let Some(class) = class {
            let receiver_stores: Vec<String> = stores
                .iter()
                .filter_map(|t| self.receiver_attribute(*t))
                .collect();
            let names: Vec<String> = if in_class_body {
                bindings.iter().map(|(n, _)| n.clone()).collect()
            } else {
                receiver_stores
            };
            for name in names {
                if archy {
                    self.add_archy_attr(name.clone());
                }
                self.ir
                    .class_attrs
                    .entry(class.clone())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .push(AttrAssign {
                        value: lowered.clone(),
                        function: self.functions.last().copied(),
                        byte: value.start_byte(),
                        field_default: in_class_body && annotated,
                    });
            }
        }
        if self.at_module_level() {
            for (name, path) in &bindings {
                // `try: import x` / `except ImportError: x = None`: the `except` arm is the
                // failure path, and the `try` body's binding is the one that holds (as for
                // locals below). Else `if x is None: return False` hid every gate behind it.
                if self.in_except > 0
                    && (self.ir.imports.contains_key(name) || self.ir.assigns.contains_key(name))
                {
                    continue;
                }
                self.ir
                    .assigns
                    .insert(name.clone(), unpacked(&lowered, path));
            }
        } else if let Some(&function) = self.functions.last() {
            let byte = value.start_byte();
            let rebinding_in_except = self.in_except > 0;
            if let Some(globals) = self.function_globals.get(&function) {
                for (name, path) in &bindings {
                    if globals.contains(name) && !rebinding_in_except {
                        self.ir
                            .global_stores
                            .entry(name.clone())
                            .or_default()
                            .push(GlobalStore {
                                function,
                                byte,
                                value: unpacked(&lowered, path),
                                archy,
                            });
                    }
                }
            }
            let locals = self.ir.locals.entry(function).or_default();
            for (name, path) in bindings {
                // An `except` arm's binding is the failure path: the `try` body's one stays.
                if rebinding_in_except
                    && locals
                        .iter()
                        .any(|a| matches!(&a.target, Target::Name(n) if *n == name))
                {
                    continue;
                }
                locals.push(LocalAssign {
                    byte,
                    target: Target::Name(name),
                    value: unpacked(&lowered, &path),
                });
            }
        }
        if flag_like
            && archy
            && let Some(kind) = site_kind
        {
            self.site(kind, value);
        }
        archy
    }

    /// `x` of a `self.x` / `cls.x` target inside a method.
    fn receiver_attribute(&self, target: Node<'a>) -> Option<String> {
        if target.kind_name() != "attribute" {
            return None;
        }
        let object = target.field(F::Object)?;
        let receiver = self
            .functions
            .last()
            .and_then(|&f| self.ir.functions[f].params.first().map(|p| p.name.clone()))?;
        (object.kind_name() == "identifier" && self.text(object) == receiver)
            .then(|| target.field(F::Attribute).map(|a| self.owned_text(a)))
            .flatten()
    }

    fn qualname_of_class(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(&outer) = self.functions.last() {
            parts.push(&self.ir.functions[outer].qualname);
        }
        parts.extend(self.classes.iter().map(String::as_str));
        parts.join(".")
    }

    /// The names a target binds, each with its unpacking path (`name, (major, minor) = ...`
    /// binds `major` at `[1][0]`); a starred or attribute element binds nothing followed.
    fn target_names(
        &self,
        node: Node<'a>,
        path: &mut Vec<usize>,
        out: &mut Vec<(String, Vec<usize>)>,
    ) {
        match node.kind_name() {
            "identifier" => out.push((self.owned_text(node), path.clone())),
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list"
            | "expression_list" => {
                let mut cursor = node.walk();
                let items: Vec<Node<'a>> = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind_name() != "comment")
                    .collect();
                for (i, item) in items.into_iter().enumerate() {
                    path.push(i);
                    self.target_names(item, path, out);
                    path.pop();
                }
            }
            "parenthesized_expression" | "as_pattern_target" => {
                if let Some(inner) = parenthesized_inner(node) {
                    self.target_names(inner, path, out);
                }
            }
            _ => {}
        }
    }

    fn target(&self, node: Node<'a>) -> Option<Target> {
        match node.kind_name() {
            "identifier" => Some(Target::Name(self.owned_text(node))),
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                let mut cursor = node.walk();
                let names = node
                    .named_children(&mut cursor)
                    .map(|n| (n.kind_name() == "identifier").then(|| self.owned_text(n)))
                    .collect();
                Some(Target::Tuple(names))
            }
            _ => None,
        }
    }

    fn import(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            match name.kind_name() {
                "dotted_name" => {
                    let dotted = self.owned_text(name);
                    let first = dotted.split('.').next().unwrap_or(&dotted).to_string();
                    self.ir.imports.insert(first.clone(), Import::Module(first));
                }
                "aliased_import" => {
                    let (Some(target), Some(alias)) = (name.field(F::Name), name.field(F::Alias))
                    else {
                        continue;
                    };
                    self.ir.imports.insert(
                        self.owned_text(alias),
                        Import::Module(self.owned_text(target)),
                    );
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, node: Node<'a>) {
        let Some(module_node) = node.field(F::ModuleName) else {
            return;
        };
        let module = self.absolute_module(module_node);
        let mut cursor = node.walk();
        let mut star = false;
        for child in node.named_children(&mut cursor) {
            if child.kind_name() == "wildcard_import" {
                star = true;
            }
        }
        if star {
            self.ir.star_imports.push(module);
            return;
        }
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (member, local) = match name.kind_name() {
                "dotted_name" => (self.owned_text(name), self.owned_text(name)),
                "aliased_import" => match (name.field(F::Name), name.field(F::Alias)) {
                    (Some(n), Some(a)) => (self.owned_text(n), self.owned_text(a)),
                    _ => continue,
                },
                _ => continue,
            };
            if local != member && self.tokens.hit(member.as_bytes()) {
                self.add_archy_name(local.clone());
            }
            self.ir
                .imports
                .insert(local, Import::Member(module.clone(), member));
        }
    }

    /// Turns `.x`, `..x` and `a.b` into an absolute dotted module name.
    fn absolute_module(&self, node: Node<'a>) -> String {
        if node.kind_name() != "relative_import" {
            return self.owned_text(node);
        }
        let text = self.text(node);
        let dots = text.bytes().take_while(|&b| b == b'.').count();
        let rest = text[dots..].trim();
        let mut parts: Vec<&str> = self.ir.module.split('.').collect();
        // A module's own package is its parent; a package's is itself.
        let drop = if self.ir.is_package { dots - 1 } else { dots };
        for _ in 0..drop.min(parts.len()) {
            parts.pop();
        }
        if !rest.is_empty() {
            parts.push(rest);
        }
        parts.join(".")
    }

    fn decorated(&mut self, node: Node<'a>) {
        let mut decorators = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind_name() == "decorator"
                && let Some(expr) = child.named_child(0)
            {
                decorators.push(expr);
            }
        }
        match node.field(F::Definition) {
            Some(def) if def.kind_name() == "function_definition" => {
                self.function(def, decorators);
            }
            Some(def) if def.kind_name() == "class_definition" => {
                let record = decorators.iter().any(|d| {
                    let text = self.text(*d);
                    let callee = text.split('(').next().unwrap_or(text).trim();
                    callee == "dataclass" || callee.ends_with(".dataclass")
                });
                self.class(def, record)
            }
            _ => {}
        }
    }

    /// Whether the text of `node` names a module global that a function stored a device
    /// value in (`ir.global_stores`), as a whole word.
    fn reads_device_global(&self, node: Node<'a>) -> bool {
        let device_globals: HashSet<&[u8]> = self
            .ir
            .global_stores
            .iter()
            .filter(|(_, stores)| stores.iter().any(|s| s.archy))
            .map(|(name, _)| name.as_bytes())
            .collect();
        !device_globals.is_empty()
            && words_in(&self.src[node.byte_range()]).any(|word| device_globals.contains(word))
    }

    /// Whether the function returns a value made from a name the module binds from the
    /// device at module level so far (a top-level device helper or flag, or an import of
    /// one): in a `return`'s expression, or through a local assigned from one before it
    /// (`ok = is_deep_gemm_supported() and ...; return ok`). Read from the text of its own
    /// statements, nested definitions left out. A function that only consults the device on
    /// the way (`compile_kernel()` picking an arch) returns no such value.
    fn returns_module_device_value(&self, function: Node<'a>) -> bool {
        if self.ir.device_exports.is_empty() {
            return false;
        }
        let exports = &self.ir.device_exports;
        returns_value_made_from(
            self.src,
            function,
            || exports.iter().map(|name| name.as_bytes()).collect(),
            |_| false,
        )
    }

    /// Whether the method returns a value made from an arch token in its code (`return
    /// cls.has_device_capability(89)`, or through a local assigned before the `return`), as
    /// `returns_module_device_value` reads it. A method that only decides on the way
    /// (`forward` with an `if is_sm90:` inside) returns no such value.
    fn returns_token_value(&self, function: Node<'a>) -> bool {
        let tokens = self.tokens;
        returns_value_made_from(self.src, function, HashSet::default, |text| {
            statement_code_hit(tokens, text)
        })
    }

    /// `global a, b` inside a function: its stores to those names are the module's.
    fn global_statement(&mut self, node: Node<'a>) {
        let Some(&function) = self.functions.last() else {
            return;
        };
        let mut cursor = node.walk();
        let names: Vec<String> = node
            .named_children(&mut cursor)
            .filter(|c| c.kind_name() == "identifier")
            .map(|c| self.owned_text(c))
            .collect();
        self.function_globals
            .entry(function)
            .or_default()
            .extend(names);
    }

    /// The annotated fields of a class body, in order (`major: int` ...).
    fn record_fields(&self, body: Node<'a>) -> Vec<String> {
        let mut cursor = body.walk();
        body.named_children(&mut cursor)
            .filter(|s| s.kind_name() == "expression_statement")
            .filter_map(|s| s.named_child(0))
            .filter(|a| a.kind_name() == "assignment" && a.field(F::Type).is_some())
            .filter_map(|a| a.field(F::Left))
            .filter(|t| t.kind_name() == "identifier")
            .map(|t| self.owned_text(t))
            .collect()
    }

    fn class(&mut self, node: Node<'a>, record: bool) {
        let name = node
            .field(F::Name)
            .map(|n| self.owned_text(n))
            .unwrap_or_default();
        let bases = node.field(F::Superclasses);
        let named_tuple = bases.is_some_and(|b| self.text(b).contains("NamedTuple"));
        if named_tuple && self.classes.is_empty() {
            self.ir.named_tuples.push(name.clone());
        }
        let base_exprs = bases
            .map(|b| {
                let mut cursor = b.walk();
                b.named_children(&mut cursor)
                    .filter(|c| c.kind_name() != "keyword_argument" && c.kind_name() != "comment")
                    .map(|c| self.expr(c, 0))
                    .collect()
            })
            .unwrap_or_default();
        let qualname = self.qualname(&name);
        if (record || named_tuple)
            && let Some(body) = node.field(F::Body)
        {
            let fields = self.record_fields(body);
            self.ir.record_fields.insert(qualname.clone(), fields);
        }
        self.ir.classes.insert(qualname, base_exprs);
        self.classes.push(name);
        if let Some(body) = node.field(F::Body) {
            self.token_methods(body);
            self.block(body);
        }
        self.classes.pop();
    }

    /// The top-level functions small enough to be helpers with an arch token in their code,
    /// known before any statement is lowered: Python looks a global up when the call runs, so
    /// a function may call one defined further down (aphrodite's
    /// `DeepseekV32IndexerBackend.supports_device_cpu_query_lens_mismatch` returning
    /// `_supports_varlen_paged_mqa_logits()`, defined 400 lines below). `function` adds each
    /// again where it stands; the chunking finds their uses anywhere in the file.
    fn token_helpers(&mut self, root: Node<'a>) {
        for function in function_definitions(root) {
            if function.byte_range().len() <= MAX_HELPER_BODY_BYTES
                && function.field(F::Body).is_some()
                && statement_code_hit(self.tokens, &self.src[function.byte_range()])
                && let Some(name) = function.field(F::Name)
            {
                let name = self.owned_text(name);
                self.add_archy_name(name);
            }
        }
    }

    /// The methods of a class body small enough to be helpers that return a value made from an
    /// arch token (`def supports_fp8(cls): return cls.has_device_capability(89)`), wherever
    /// they stand in the class: `self.NAME(...)` and `cls.NAME(...)` read the device through
    /// them, as through a stored attribute (`archy_attrs`; the chunking keeps what reads them,
    /// `chunks::token_methods`, which takes every method with a token: a superset).
    /// Resolution follows the call to the method.
    fn token_methods(&mut self, body: Node<'a>) {
        for function in function_definitions(body) {
            if function.byte_range().len() <= MAX_HELPER_BODY_BYTES
                && self.returns_token_value(function)
                && let Some(name) = function.field(F::Name)
            {
                let name = self.owned_text(name);
                self.add_archy_attr(name);
            }
        }
    }

    fn function(&mut self, node: Node<'a>, decorators: Vec<Node<'a>>) {
        let name = node
            .field(F::Name)
            .map(|n| self.owned_text(n))
            .unwrap_or_default();
        let qualname = self.qualname(&name);
        let body_node = node.field(F::Body);
        // A docstring or comment that names a helper does not make a function arch-dependent
        // (as `chunks::relevant_ranges` judges its statements).
        let archy = statement_code_hit(self.tokens, &self.src[node.byte_range()]);
        // A function that reads a global an earlier function stored a device value in
        // (`return _CUDA_ARCH` after `_init_arch()` set it) depends on the device, token or
        // not: its calls are device values where it is called, here and in importers.
        let reads_device_global = !archy && self.reads_device_global(node);
        // So does a helper that returns what a device helper or flag of the module (its own
        // or imported) gives (`def should_use(w): return is_deep_gemm_supported() and ...`):
        // without a token of its own, its calls elsewhere were read as free conditions. Only
        // one small enough to infer: a larger one would make its calls unknown, where it is
        // most often a builder that picks a kernel on the way (`get_module()`), no decision.
        let archy_by_return = !archy
            && !reads_device_global
            && node.byte_range().len() <= MAX_HELPER_BODY_BYTES
            && self.returns_module_device_value(node);
        let archy = archy || reads_device_global || archy_by_return;
        if reads_device_global && self.functions.is_empty() && self.classes.is_empty() {
            self.ir.device_exports.push(qualname.clone());
            self.device_global_readers.insert(qualname.clone());
        }
        let params = node
            .field(F::Parameters)
            .map(|p| self.params(p))
            .unwrap_or_default();
        // A parameter a rule declares the device's (`arch`) makes what is built from it
        // arch-dependent (`self.arch = arch`), as the chunking keeps it (`token_parameters`).
        for param in &params {
            if self.parameter_names.contains(&param.name) {
                self.add_archy_name(param.name.clone());
            }
        }
        // Arch-dependent helpers are inferred; a small one without a token is inferred only
        // when a caller hands it a device value (`def fast(cap): return cap[0] >= 9`).
        let takes_values = params.iter().any(|p| p.name != "self" && p.name != "cls");
        let size = node.byte_range().len();
        let body = body_node
            .filter(|_| {
                (archy && size <= MAX_HELPER_BODY_BYTES)
                    || (takes_values && size <= TOKENLESS_HELPER_BYTES)
            })
            .map(|b| self.stmts(b));
        let class = (!self.classes.is_empty()).then(|| self.qualname_of_class());
        let index = self.ir.functions.len();
        if archy && body.is_some() && self.classes.is_empty() {
            self.add_archy_name(name.clone());
        }
        let lowered_decorators = decorators.iter().map(|d| self.expr(*d, 0)).collect();
        let complete = self
            .ranges
            .is_none_or(|ranges| within_one_range(ranges, node.start_byte(), node.end_byte()));
        let (full_bytes, full_archy) = if complete {
            (node.byte_range().len(), Some(archy))
        } else {
            let start = node.start_byte();
            let (bound, end) = super::chunks::definition_size_lower_bound(
                self.src,
                start,
                node.start_position().column,
            );
            let bound = bound.max(node.byte_range().len());
            let code_hit =
                |range: std::ops::Range<usize>| statement_code_hit(self.tokens, &self.src[range]);
            let full_archy = if archy || code_hit(start..start + bound) {
                Some(true)
            } else if !code_hit(start..end) {
                Some(false)
            } else {
                None
            };
            (bound, full_archy)
        };
        self.function_bodies
            .push(body_node.map(|body| body.start_byte()));
        self.ir.functions.push(FunctionIr {
            qualname: qualname.clone(),
            parent: self.functions.last().copied(),
            class,
            line: node.start_position().row as u32 + 1,
            params,
            decorators: lowered_decorators,
            body,
            archy,
            archy_by_return,
            fixed_arch_flags: fixed_arch_flags(&self.src[node.byte_range()]),
            bytes: node.byte_range().len(),
            complete,
            full_bytes,
            full_archy,
            abstract_body: body_node.is_some_and(|b| self.is_abstract_body(b, &decorators)),
        });
        // The first definition of a name wins only when later ones are conditional copies;
        // Python's last-wins is the right default.
        self.ir.function_index.insert(qualname, index);
        for decorator in decorators {
            if self.is_capability_decorator(decorator) {
                self.functions.push(index);
                self.site(SiteKind::Decorator, decorator);
                self.functions.pop();
            } else {
                // `@pytest.mark.skipif(<device test>, ...)`: its arguments are sites.
                self.scan_expression(decorator);
            }
        }
        // Default values are evaluated where the `def` runs.
        if let Some(parameters) = node.field(F::Parameters) {
            let mut cursor = parameters.walk();
            let defaults: Vec<Node<'a>> = parameters
                .named_children(&mut cursor)
                .filter_map(|p| p.field(F::Value))
                .collect();
            for default in defaults {
                self.site(SiteKind::Argument, default);
                self.scan_expression(default);
            }
        }
        self.functions.push(index);
        let saved_classes = std::mem::take(&mut self.classes);
        let saved_guards = std::mem::take(&mut self.guards);
        let saved_except = std::mem::take(&mut self.in_except);
        let saved_branches = std::mem::take(&mut self.branch_stack);
        if let Some(body) = body_node {
            self.block(body);
        }
        self.in_except = saved_except;
        self.branch_stack = saved_branches;
        self.guards = saved_guards;
        self.classes = saved_classes;
        self.functions.pop();
    }

    /// Whether a function body is an interface's: apart from a docstring and comments, one
    /// `raise NotImplementedError`, or only `pass` / `...` under `@abstractmethod`.
    fn is_abstract_body(&self, body: Node<'a>, decorators: &[Node<'a>]) -> bool {
        let abstract_decorator = decorators
            .iter()
            .any(|d| self.text(*d).ends_with("abstractmethod"));
        let mut cursor = body.walk();
        let mut statements = body.named_children(&mut cursor).filter(|n| {
            let docstring = n.kind_name() == "expression_statement"
                && n.named_child(0).is_some_and(|c| c.kind_name() == "string");
            n.kind_name() != "comment" && !docstring
        });
        let Some(only) = statements.next() else {
            return abstract_decorator;
        };
        if statements.next().is_some() {
            return false;
        }
        match only.kind_name() {
            "raise_statement" => only
                .named_child(0)
                .is_some_and(|e| self.text(e).starts_with("NotImplementedError")),
            "pass_statement" => abstract_decorator,
            "expression_statement" => {
                abstract_decorator
                    && only
                        .named_child(0)
                        .is_some_and(|c| c.kind_name() == "ellipsis")
            }
            _ => false,
        }
    }

    fn is_capability_decorator(&self, node: Node<'a>) -> bool {
        node.kind_name() == "call"
            && node
                .field(F::Function)
                .is_some_and(|f| self.text(f).ends_with("supported_compute_capability"))
    }

    fn qualname(&self, name: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(&outer) = self.functions.last() {
            parts.push(&self.ir.functions[outer].qualname);
        }
        parts.extend(self.classes.iter().map(String::as_str));
        parts.push(name);
        parts.join(".")
    }

    fn params(&self, node: Node<'a>) -> Vec<Param> {
        let mut out = Vec::new();
        let mut cursor = node.walk();
        for p in node.named_children(&mut cursor) {
            let (name, default, annotation) = match p.kind_name() {
                "identifier" => (Some(self.owned_text(p)), None, None),
                "default_parameter" => (
                    p.field(F::Name).map(|n| self.owned_text(n)),
                    p.field(F::Value).map(|v| self.expr(v, 0)),
                    None,
                ),
                "typed_parameter" => (
                    p.named_child(0)
                        .filter(|n| n.kind_name() == "identifier")
                        .map(|n| self.owned_text(n)),
                    None,
                    p.field(F::Type).map(|t| self.owned_text(t)),
                ),
                "typed_default_parameter" => (
                    p.field(F::Name).map(|n| self.owned_text(n)),
                    p.field(F::Value).map(|v| self.expr(v, 0)),
                    p.field(F::Type).map(|t| self.owned_text(t)),
                ),
                _ => (None, None, None),
            };
            if let Some(name) = name {
                out.push(Param {
                    name,
                    default,
                    annotation,
                });
            }
        }
        out
    }

    /// Lowers a function body for inference (no sites recorded here).
    fn stmts(&self, block: Node<'a>) -> Vec<Stmt> {
        let mut out = Vec::new();
        let mut cursor = block.walk();
        for node in block.named_children(&mut cursor) {
            self.stmt_into(node, &mut out);
        }
        out
    }

    fn stmt_into(&self, node: Node<'a>, out: &mut Vec<Stmt>) {
        match node.kind_name() {
            "return_statement" => {
                out.push(Stmt::Return(node.named_child(0).map(|v| self.expr(v, 0))))
            }
            "if_statement" => out.push(self.if_stmt(node)),
            "expression_statement" => {
                if let Some(assign) = node
                    .named_child(0)
                    .filter(|n| n.kind_name() == "assignment")
                    && let (Some(left), Some(right)) =
                        (assign.field(F::Left), assign.field(F::Right))
                    && let Some(target) = self.target(left)
                {
                    out.push(Stmt::Assign {
                        targets: vec![target],
                        value: self.expr(right, 0),
                    });
                }
            }
            "comment" | "pass_statement" | "pass" => {}
            // `with` and `try` bodies run in the common case; modelling them inline keeps
            // helpers like `try: return f() except: return False` inferable.
            "with_statement" | "try_statement" => {
                if let Some(body) = node.field(F::Body) {
                    out.extend(self.stmts(body));
                }
            }
            _ => out.push(Stmt::Opaque {
                // The text test first: walking a big loop's subtree costs far more.
                returns: memchr::memmem::find(&self.src[node.byte_range()], b"return").is_some()
                    && contains_kind(node, "return_statement"),
            }),
        }
    }

    fn if_stmt(&self, node: Node<'a>) -> Stmt {
        // Fold `elif` chains into nested ifs in the else branch.
        let mut cursor = node.walk();
        let alternatives: Vec<Node<'a>> = node
            .children_by_field_name("alternative", &mut cursor)
            .collect();
        self.if_clause(node, &alternatives)
    }

    /// An `if` or `elif` clause with what follows it as the else branch.
    fn if_clause(&self, clause: Node<'a>, rest: &[Node<'a>]) -> Stmt {
        let test = clause
            .field(F::Condition)
            .map(|c| self.expr(c, 0))
            .unwrap_or(Expr::Other(String::new()));
        let body = clause
            .field(F::Consequence)
            .map(|b| self.stmts(b))
            .unwrap_or_default();
        Stmt::If {
            test,
            body,
            orelse: self.else_chain(rest),
        }
    }

    fn else_chain(&self, alternatives: &[Node<'a>]) -> Vec<Stmt> {
        let Some((first, rest)) = alternatives.split_first() else {
            return Vec::new();
        };
        match first.kind_name() {
            "elif_clause" => vec![self.if_clause(*first, rest)],
            "else_clause" => first
                .field(F::Body)
                .map(|b| self.stmts(b))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Records a candidate site when it could depend on the architecture; resolution decides.
    fn site(&mut self, kind: SiteKind, node: Node<'a>) {
        // A min-capability declaration is a gate by where it is, not by its text (`return 80`).
        let mut parametric = false;
        if kind != SiteKind::MinCapability && !self.archy_or_derived(node) {
            // A comparison on a parameter of a small function is a candidate: the parameter may
            // be the device's value (through the callers, a rule or its annotation).
            if !(matches!(
                kind,
                SiteKind::Test | SiteKind::Return | SiteKind::Assert | SiteKind::LocalFlag
            ) && self.compares_param(node, 0))
            {
                return;
            }
            parametric = true;
        }
        let expr = self.expr(node, 0);
        self.push_site(kind, node, expr, parametric);
    }

    /// Whether the current function is small enough to be summarised and the condition
    /// compares one of its parameters (`arch in (90, 100)`, `cap[0] >= 9`, `c.major == 10`).
    fn compares_param(&self, node: Node<'a>, depth: usize) -> bool {
        let Some(&function) = self.functions.last() else {
            return false;
        };
        let function = &self.ir.functions[function];
        if depth > 8 {
            return false;
        }
        let small = function.bytes <= MAX_HELPER_BODY_BYTES;
        let is_param = |name: &str| {
            function.params.iter().any(|p| {
                p.name == name
                    && p.name != "self"
                    && p.name != "cls"
                    && (small || self.parameter_names.contains(&p.name))
            })
        };
        match node.kind_name() {
            "comparison_operator" => {
                let mut cursor = node.walk();
                node.named_children(&mut cursor).any(|operand| {
                    let mut base = operand;
                    loop {
                        match base.kind_name() {
                            "attribute" => base = base.field(F::Object).unwrap_or(base),
                            "subscript" => base = base.field(F::Value).unwrap_or(base),
                            // `arch // 10`, `major * 10 + minor`
                            "binary_operator" => match base.field(F::Left) {
                                Some(left) => base = left,
                                None => return false,
                            },
                            "call" => match base.field(F::Function) {
                                // `cap.to_int()`
                                Some(f) if f.kind_name() == "attribute" => base = f,
                                _ => return false,
                            },
                            "identifier" => return is_param(self.text(base)),
                            _ => return false,
                        }
                    }
                })
            }
            "boolean_operator" | "not_operator" | "parenthesized_expression" => {
                let mut cursor = node.walk();
                node.named_children(&mut cursor)
                    .any(|c| self.compares_param(c, depth + 1))
            }
            _ => false,
        }
    }

    fn push_site(&mut self, kind: SiteKind, node: Node<'a>, expr: Expr, parametric: bool) {
        let function = self.functions.last().copied();
        let start = node.start_position();
        let end = node.end_position();
        let site = Site {
            kind,
            start: (
                start.row as u32 + 1,
                self.char_column(node.start_byte(), start.column) + 1,
            ),
            end: (
                end.row as u32 + 1,
                self.char_column(node.end_byte(), end.column) + 1,
            ),
            byte: node.start_byte(),
            function,
            text: self.owned_text(node),
            expr,
            guards: self.guards.clone(),
            parametric,
            own_token: self.archy(node),
        };
        self.ir.sites.push(site);
    }

    /// Converts a byte column to a character column, so columns match what editors show.
    fn char_column(&self, byte: usize, byte_column: usize) -> u32 {
        let line_start = byte.saturating_sub(byte_column);
        String::from_utf8_lossy(&self.src[line_start..byte])
            .chars()
            .count() as u32
    }

    /// Finds the sites inside an expression: value selections (`A if gate else B`), JIT arch
    /// lists, call arguments, container elements, lambda bodies, comprehension filters; and
    /// the bindings a walrus makes.
    fn scan_expression(&mut self, node: Node<'a>) {
        if self.archy_or_derived(node) {
            self.scan_archy_expression(node);
        }
    }

    /// Below an arch-dependent expression every part is visited without re-testing for tokens
    /// (that test walks the subtree, and repeating it per level would be quadratic); a site
    /// tests only its own small expression. A big value (a generated table) is only searched,
    /// a SIMD byte search per level, for what can hold a selection or a JIT arch list.
    ///
    /// A walk with a stack of its own, in the order of a recursive pre-order walk: an
    /// expression nested as deep as a file can make it (100,000 levels in 2.5 MB) costs heap,
    /// not the thread's stack.
    /// Below `MAX_SCAN_DEPTH` levels nothing is looked for (a warning says where): no code
    /// CPython compiles nests that deep, and every later step that walks up from a site
    /// (tree-sitter's `parent` starts from the root) would cost the depth squared.
    fn scan_archy_expression(&mut self, node: Node<'a>) {
        let mut pending = vec![(node, 0usize)];
        while let Some((node, depth)) = pending.pop() {
            if depth > MAX_SCAN_DEPTH {
                let mut deep = self.too_deep.borrow_mut();
                if deep.len() < 20 {
                    let p = node.start_position();
                    deep.push((p.row as u32 + 1, p.column as u32 + 1));
                }
                continue;
            }
            let first_child = pending.len();
            if self.scan_archy_node(node) {
                let mut cursor = node.walk();
                pending.extend(node.named_children(&mut cursor).map(|c| (c, depth + 1)));
                pending[first_child..].reverse();
            }
        }
    }

    /// One node of `scan_archy_expression`: its sites; whether to visit its children.
    fn scan_archy_node(&mut self, node: Node<'a>) -> bool {
        let big = node.byte_range().len() > MAX_PLAIN_ASSIGN_BYTES;
        if big && !may_hold_selection_or_arch_list(&self.src[node.byte_range()]) {
            // A hand-written table of requirements (`{"an SM103 GPU":
            // current_platform.is_device_capability(103), ...}`) outgrows the limit too, and
            // its small elements are the decisions.
            if matches!(
                node.kind_name(),
                "list" | "tuple" | "set" | "expression_list" | "dictionary"
            ) {
                self.element_sites(node);
            }
            return false;
        }
        if !big {
            self.table_lookup(node);
        }
        match node.kind_name() {
            "conditional_expression" => {
                if let Some(test) = node.named_child(1) {
                    self.site(SiteKind::ValueSelect, test);
                }
                // A device test as one of the values (`bf16 = _is_sm100() if forced is None
                // else forced`) is a decision of its own, as an argument is.
                for arm in [node.named_child(0), node.named_child(2)]
                    .into_iter()
                    .flatten()
                {
                    if !big || arm.byte_range().len() <= MAX_PLAIN_ASSIGN_BYTES {
                        self.argument_site(arm);
                    }
                }
            }
            "call" if self.is_jit_arch_call(node) => self.site(SiteKind::JitArchList, node),
            "call" if !big => self.call_sites(node),
            "list" | "tuple" | "set" | "expression_list" | "dictionary" => self.element_sites(node),
            "lambda" if !big => {
                if let Some(body) = node.field(F::Body) {
                    self.site(SiteKind::Argument, body);
                }
            }
            "lambda" => return false,
            "if_clause" => {
                if let Some(test) = node.named_child(0) {
                    self.site(SiteKind::Test, test);
                }
            }
            "named_expression" => self.walrus(node),
            _ => {}
        }
        true
    }

    /// A lookup keyed by the device in a table (`SIZES[cap.to_int()]`,
    /// `SIZES.get(device_capability, {})`): a site whose decision is whether the table has the
    /// device's key (docs/gates.md F10). Resolution keeps it only when the table is a dict
    /// literal keyed by numbers (or number pairs) and the key is the device's value.
    fn table_lookup(&mut self, node: Node<'a>) {
        let (table, key) = match node.kind_name() {
            "subscript" => {
                let mut cursor = node.walk();
                let subs: Vec<Node<'a>> = node
                    .children_by_field_name("subscript", &mut cursor)
                    .collect();
                match (node.field(F::Value), subs.as_slice()) {
                    (Some(table), [key]) => (table, *key),
                    _ => return,
                }
            }
            "call" => {
                let Some(function) = node.field(F::Function) else {
                    return;
                };
                if function.kind_name() != "attribute"
                    || function.field(F::Attribute).map(|a| self.text(a)) != Some("get")
                {
                    return;
                }
                let Some(first) = node.field(F::Arguments).and_then(|args| {
                    let mut cursor = args.walk();
                    args.named_children(&mut cursor)
                        .find(|a| a.kind_name() != "comment")
                }) else {
                    return;
                };
                match function.field(F::Object) {
                    Some(table) if first.kind_name() != "keyword_argument" => (table, first),
                    _ => return,
                }
            }
            _ => return,
        };
        // A plain (dotted) name that is not itself the device: `cap[0]` indexes the device.
        if !matches!(table.kind_name(), "identifier" | "attribute")
            || !self
                .text(table)
                .bytes()
                .all(|b| b == b'.' || b == b'_' || b.is_ascii_alphanumeric())
            || self.archy_or_derived(table)
            || key.kind_name() == "slice"
        {
            return;
        }
        let parametric = !self.archy_or_derived(key);
        if parametric && !self.is_param_read(key) {
            return;
        }
        let expr = Expr::Subscript(Box::new(self.expr(table, 0)), Box::new(self.expr(key, 0)));
        self.push_site(SiteKind::TableLookup, node, expr, parametric);
    }

    /// Whether `node` is a parameter of the current function (or an attribute or call of
    /// one: `cap.to_int()`) that may be the device's value, as `compares_param` counts them.
    fn is_param_read(&self, node: Node<'a>) -> bool {
        let Some(&function) = self.functions.last() else {
            return false;
        };
        let function = &self.ir.functions[function];
        let small = function.bytes <= MAX_HELPER_BODY_BYTES;
        let mut base = node;
        loop {
            match base.kind_name() {
                "attribute" => base = base.field(F::Object).unwrap_or(base),
                "call" => match base.field(F::Function) {
                    Some(f) if f.kind_name() == "attribute" => base = f,
                    _ => return false,
                },
                "identifier" => break,
                _ => return false,
            }
        }
        let name = self.text(base);
        function.params.iter().any(|p| {
            p.name == name
                && p.name != "self"
                && p.name != "cls"
                && (small || self.parameter_names.contains(&p.name))
        })
    }

    /// The elements of a container (a dictionary's values) are sites, each where it is
    /// small: an element past the limit is a generated table's, not a decision.
    fn element_sites(&mut self, node: Node<'a>) {
        let mut cursor = node.walk();
        let elements: Vec<Node<'a>> = if node.kind_name() == "dictionary" {
            node.named_children(&mut cursor)
                .filter_map(|pair| pair.field(F::Value))
                .collect()
        } else {
            node.named_children(&mut cursor).collect()
        };
        for element in elements {
            if element.byte_range().len() <= MAX_PLAIN_ASSIGN_BYTES {
                self.argument_site(element);
            }
        }
    }

    /// A call argument or container element is a site when it is itself a decision
    /// (a comparison, a boolean operator, a call such as `is_sm90_supported()`).
    fn argument_site(&mut self, node: Node<'a>) {
        let mut node = match node.kind_name() {
            "keyword_argument" => match node.field(F::Value) {
                Some(value) => value,
                None => return,
            },
            _ => node,
        };
        // `"needs DeepGEMM": (supports_a(config) and supports_b(config))`: the parentheses
        // only lay the element out over lines.
        while node.kind_name() == "parenthesized_expression"
            && let Some(inner) = node.named_child(0)
        {
            node = inner;
        }
        if matches!(
            node.kind_name(),
            "comparison_operator" | "boolean_operator" | "not_operator" | "call"
        ) {
            self.site(SiteKind::Argument, node);
        }
    }

    /// The arguments of a call are sites; a call passing a device-dependent argument is
    /// recorded for its callee's parameters.
    fn call_sites(&mut self, node: Node<'a>) {
        let Some(arguments) = node.field(F::Arguments) else {
            return;
        };
        // `any(p(f) for f in (80, 90))` lowers unrolled: the call is the decision, and its
        // element test alone (over the loop variable) is not a site of its own.
        if arguments.kind_name() == "generator_expression"
            && node
                .field(F::Function)
                .is_some_and(|f| matches!(self.text(f), "any" | "all"))
            && self.literal_loop(arguments, 0).is_some()
        {
            return;
        }
        let mut cursor = arguments.walk();
        let args: Vec<Node<'a>> = arguments.named_children(&mut cursor).collect();
        for arg in &args {
            self.argument_site(*arg);
        }
        let callee = node.field(F::Function).and_then(|f| match f.kind_name() {
            "identifier" => Some(self.owned_text(f)),
            "attribute" => f.field(F::Attribute).map(|a| self.owned_text(a)),
            _ => None,
        });
        let Some(callee) = callee else {
            return;
        };
        // Which arguments carry the device's value, numbered as `call` numbers them.
        let mut device_args = Vec::new();
        let mut device_kwargs = Vec::new();
        let mut position = 0;
        for arg in &args {
            match arg.kind_name() {
                "comment" => continue,
                "keyword_argument" => {
                    if let (Some(name), Some(value)) = (arg.field(F::Name), arg.field(F::Value))
                        && self.archy_or_derived(value)
                    {
                        device_kwargs.push(self.owned_text(name));
                    }
                }
                "dictionary_splat" => position += 1,
                _ => {
                    if self.archy_or_derived(*arg) {
                        device_args.push(position);
                    }
                    position += 1;
                }
            }
        }
        if !args
            .iter()
            .any(|a| a.kind_name() != "comment" && self.archy_or_derived(*a))
        {
            return;
        }
        let written = node
            .field(F::Function)
            .map(|f| {
                self.text(f)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect()
            })
            .unwrap_or_default();
        let Expr::Call { args, kwargs, .. } = self.call(node, 0) else {
            return;
        };
        let site = CallSite {
            function: self.functions.last().copied(),
            byte: node.start_byte(),
            callee: written,
            args,
            kwargs,
            device_args,
            device_kwargs,
        };
        self.ir.calls.entry(callee).or_default().push(site);
    }

    /// `(name := value)` binds `name` where it stands.
    fn walrus(&mut self, node: Node<'a>) {
        let (Some(name), Some(value)) = (node.field(F::Name), node.field(F::Value)) else {
            return;
        };
        let name = self.owned_text(name);
        let lowered = self.expr(value, 0);
        if self.archy_or_derived(value) {
            self.add_archy_name(name.clone());
        }
        if self.at_module_level() {
            self.ir.assigns.insert(name, lowered);
        } else if let Some(&function) = self.functions.last() {
            self.ir
                .locals
                .entry(function)
                .or_default()
                .push(LocalAssign {
                    byte: node.start_byte(),
                    target: Target::Name(name),
                    value: lowered,
                });
        }
    }

    fn is_jit_arch_call(&self, node: Node<'a>) -> bool {
        let Some(function) = node.field(F::Function) else {
            return false;
        };
        if self.text(function).ends_with("get_nvcc_flags_list") {
            return true;
        }
        node.field(F::Arguments).is_some_and(|args| {
            let mut cursor = args.walk();
            args.named_children(&mut cursor).any(|a| {
                a.kind_name() == "keyword_argument"
                    && a.field(F::Name)
                        .is_some_and(|n| self.text(n) == "supported_major_versions")
            })
        })
    }

    /// Lowers an expression node.
    pub fn expr(&self, mut node: Node<'a>, depth: usize) -> Expr {
        // Parentheses add no meaning: they are peeled without recursion or depth, so any
        // nesting CPython accepts (200 levels) lowers like the bare expression.
        while node.kind_name() == "parenthesized_expression" {
            match parenthesized_inner(node) {
                Some(inner) => node = inner,
                None => break,
            }
        }
        if depth > MAX_EXPR_DEPTH {
            let mut deep = self.too_deep.borrow_mut();
            if deep.len() < 20 {
                let p = node.start_position();
                deep.push((p.row as u32 + 1, p.column as u32 + 1));
            }
            return Expr::Other(self.owned_text(node));
        }
        let d = depth + 1;
        let child = |field: F| node.field(field);
        let lower = |n: Option<Node<'a>>| -> Expr {
            n.map(|n| self.expr(n, d))
                .unwrap_or_else(|| Expr::Other(String::new()))
        };
        match node.kind_name() {
            "identifier" => Expr::Name(self.owned_text(node)),
            "attribute" => Expr::Attr(
                Box::new(lower(child(F::Object))),
                child(F::Attribute)
                    .map(|a| self.owned_text(a))
                    .unwrap_or_default(),
            ),
            "call" => self.call(node, d),
            "subscript" => {
                let mut cursor = node.walk();
                let subs: Vec<Node<'a>> = node
                    .children_by_field_name("subscript", &mut cursor)
                    .collect();
                let index = if subs.len() == 1 {
                    self.expr(subs[0], d)
                } else {
                    Expr::Tuple(subs.iter().map(|s| self.expr(*s, d)).collect())
                };
                Expr::Subscript(Box::new(lower(child(F::Value))), Box::new(index))
            }
            "slice" => Expr::Slice,
            "integer" => parse_int(self.text(node))
                .map(Expr::Int)
                .unwrap_or_else(|| Expr::Other(self.owned_text(node))),
            "string" => self.string(node),
            "true" => Expr::Bool(true),
            "false" => Expr::Bool(false),
            "none" => Expr::NoneLit,
            "tuple" | "expression_list" => Expr::Tuple(self.children(node, d)),
            "list" => Expr::List(self.children(node, d)),
            "set" => Expr::Set(self.children(node, d)),
            "dictionary" => {
                let mut cursor = node.walk();
                let pairs = node
                    .named_children(&mut cursor)
                    .filter(|p| p.kind_name() == "pair")
                    .map(|p| {
                        (
                            p.field(F::Key)
                                .map(|k| self.expr(k, d))
                                .unwrap_or(Expr::NoneLit),
                            p.field(F::Value)
                                .map(|v| self.expr(v, d))
                                .unwrap_or(Expr::NoneLit),
                        )
                    })
                    .collect();
                Expr::Dict(pairs)
            }
            "named_expression" => lower(child(F::Value)),
            "parenthesized_expression" => match parenthesized_inner(node) {
                Some(inner) => self.expr(inner, d),
                None => Expr::Other(self.owned_text(node)),
            },
            "boolean_operator" => self.bool_op(node, d),
            "not_operator" => Expr::Not(Box::new(lower(child(F::Argument)))),
            "comparison_operator" => self.comparison(node, d),
            "binary_operator" => {
                let op = match child(F::Operator).map(|o| self.text(o)) {
                    Some("+") => BinOp::Add,
                    Some("-") => BinOp::Sub,
                    Some("*") => BinOp::Mul,
                    Some("//") => BinOp::FloorDiv,
                    Some("%") => BinOp::Mod,
                    _ => BinOp::Other,
                };
                Expr::BinOp(
                    op,
                    Box::new(lower(child(F::Left))),
                    Box::new(lower(child(F::Right))),
                )
            }
            "unary_operator" => {
                match (child(F::Operator).map(|o| self.text(o)), child(F::Argument)) {
                    (Some("-"), Some(arg)) if arg.kind_name() == "integer" => {
                        parse_int(self.text(arg))
                            .map(|v| Expr::Int(-v))
                            .unwrap_or_else(|| Expr::Other(self.owned_text(node)))
                    }
                    _ => Expr::Other(self.owned_text(node)),
                }
            }
            // `[int(v) for v in cap]` is `list(map(int, cap))`.
            "list_comprehension" => match self.converting_loop(node, d) {
                Some(converted) => Expr::Call {
                    func: Box::new(Expr::Name("list".into())),
                    args: vec![converted],
                    kwargs: Vec::new(),
                },
                None => Expr::Other(self.owned_text(node)),
            },
            "conditional_expression" => {
                let parts: Vec<Expr> = self.children(node, d);
                match <[Expr; 3]>::try_from(parts) {
                    Ok([body, test, orelse]) => Expr::IfExp {
                        test: Box::new(test),
                        body: Box::new(body),
                        orelse: Box::new(orelse),
                    },
                    Err(_) => Expr::Other(self.owned_text(node)),
                }
            }
            _ => Expr::Other(self.owned_text(node)),
        }
    }

    fn children(&self, node: Node<'a>, depth: usize) -> Vec<Expr> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .filter(|c| c.kind_name() != "comment")
            .map(|c| self.expr(c, depth))
            .collect()
    }

    fn call(&self, node: Node<'a>, depth: usize) -> Expr {
        let func = node
            .field(F::Function)
            .map(|f| self.expr(f, depth))
            .unwrap_or(Expr::Other(String::new()));
        if let Expr::Name(name) = &func
            && (name == "any" || name == "all")
            && let Some(generator) = node
                .field(F::Arguments)
                .filter(|a| a.kind_name() == "generator_expression")
            && let Some(unrolled) = self.unroll_generator(generator, name == "any", depth)
        {
            return unrolled;
        }
        if let Expr::Name(name) = &func
            && (name == "tuple" || name == "list")
            && let Some(converted) = node
                .field(F::Arguments)
                .filter(|a| a.kind_name() == "generator_expression")
                .and_then(|generator| self.converting_loop(generator, depth))
        {
            return Expr::Call {
                func: Box::new(func),
                args: vec![converted],
                kwargs: Vec::new(),
            };
        }
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        if let Some(arguments) = node.field(F::Arguments) {
            let mut cursor = arguments.walk();
            for arg in arguments.named_children(&mut cursor) {
                match arg.kind_name() {
                    "keyword_argument" => {
                        if let (Some(name), Some(value)) = (arg.field(F::Name), arg.field(F::Value))
                        {
                            kwargs.push((self.owned_text(name), self.expr(value, depth)));
                        }
                    }
                    "comment" => {}
                    "list_splat" => args.push(match arg.named_child(0) {
                        Some(value) => Expr::Starred(Box::new(self.expr(value, depth))),
                        None => Expr::Other(self.owned_text(arg)),
                    }),
                    _ => args.push(self.expr(arg, depth)),
                }
            }
        }
        Expr::Call {
            func: Box::new(func),
            args,
            kwargs,
        }
    }

    /// `any(p(f) for f in (80, 90, 120))` is `p(80) or p(90) or p(120)` (`all`: `and`): one
    /// loop over a literal tuple or list of constants, without a filter, unrolled so that each
    /// element's test resolves (vllm's `_nvfp4_kv_on_fa2`). `None` for any other generator.
    fn unroll_generator(&self, generator: Node<'a>, any: bool, depth: usize) -> Option<Expr> {
        let (body, name, items) = self.literal_loop(generator, depth)?;
        let element = self.expr(body, depth);
        let parts = items
            .iter()
            .map(|item| element.substitute(name, item))
            .collect();
        Some(if any {
            Expr::Or(parts)
        } else {
            Expr::And(parts)
        })
    }

    /// The element, loop variable and constants of a generator that `unroll_generator` can
    /// unroll; the element itself is not lowered here.
    fn literal_loop(
        &self,
        generator: Node<'a>,
        depth: usize,
    ) -> Option<(Node<'a>, &'a str, Vec<Expr>)> {
        const MAX_UNROLLED: usize = 16;
        let (body, target, iterable) = self.single_loop(generator)?;
        let items = match self.expr(iterable, depth) {
            Expr::Tuple(items) | Expr::List(items) => items,
            _ => return None,
        };
        fn constant(e: &Expr) -> bool {
            match e {
                Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) => true,
                Expr::Tuple(items) => items.iter().all(constant),
                _ => false,
            }
        }
        if items.len() > MAX_UNROLLED || !items.iter().all(constant) {
            return None;
        }
        Some((body, target, items))
    }

    /// The element, loop variable and iterable of a generator or comprehension with one
    /// `for` over a plain name and no filter (`int(v) for v in cap`).
    fn single_loop(&self, generator: Node<'a>) -> Option<(Node<'a>, &'a str, Node<'a>)> {
        let body = generator.field(F::Body)?;
        let mut cursor = generator.walk();
        let clauses: Vec<Node<'a>> = generator
            .named_children(&mut cursor)
            .filter(|c| c.id() != body.id() && c.kind_name() != "comment")
            .collect();
        let [clause] = clauses.as_slice() else {
            return None;
        };
        if clause.kind_name() != "for_in_clause" {
            return None;
        }
        let target = clause
            .field(F::Left)
            .filter(|t| t.kind_name() == "identifier")?;
        Some((body, self.text(target), clause.field(F::Right)?))
    }

    /// A loop that only converts each element, as the iterable it reads: `v for v in cap` is
    /// `cap`, `int(v) for v in cap` is `map(int, cap)`, so that `tuple(int(v) for v in
    /// torch.cuda.get_device_capability(d))` is the capability (flashinfer writes its targets
    /// so). `None` for any other loop.
    fn converting_loop(&self, generator: Node<'a>, depth: usize) -> Option<Expr> {
        let (body, target, iterable) = self.single_loop(generator)?;
        let iterable = self.expr(iterable, depth);
        if body.kind_name() == "identifier" && self.text(body) == target {
            return Some(iterable);
        }
        if body.kind_name() != "call" {
            return None;
        }
        let function = body.field(F::Function)?;
        let arguments = body.field(F::Arguments)?;
        let mut cursor = arguments.walk();
        let args: Vec<Node<'a>> = arguments
            .named_children(&mut cursor)
            .filter(|a| a.kind_name() != "comment")
            .collect();
        match args.as_slice() {
            [arg]
                if function.kind_name() == "identifier"
                    && self.text(function) == "int"
                    && arg.kind_name() == "identifier"
                    && self.text(*arg) == target =>
            {
                Some(Expr::Call {
                    func: Box::new(Expr::Name("map".into())),
                    args: vec![Expr::Name("int".into()), iterable],
                    kwargs: Vec::new(),
                })
            }
            _ => None,
        }
    }

    fn bool_op(&self, node: Node<'a>, depth: usize) -> Expr {
        let is_and_op = |n: Node<'a>| n.field(F::Operator).map(|o| self.text(o) == "and");
        let is_and = is_and_op(node).unwrap_or(false);
        // `a or b or c ...` nests to the left, one level per operand: the chain is walked down
        // its left spine without recursion, so a 60-term chain (flashinfer has them) lowers
        // like a short one instead of passing MAX_EXPR_DEPTH.
        let mut rights = Vec::new();
        let mut left = Some(node);
        while let Some(n) = left {
            if n.kind_name() == "boolean_operator" && is_and_op(n) == Some(is_and) {
                rights.extend(n.field(F::Right));
                left = n.field(F::Left);
            } else {
                break;
            }
        }
        let mut operands = Vec::new();
        for side in left.into_iter().chain(rights.into_iter().rev()) {
            match self.expr(side, depth) {
                Expr::And(inner) if is_and => operands.extend(inner),
                Expr::Or(inner) if !is_and => operands.extend(inner),
                other => operands.push(other),
            }
        }
        if is_and {
            Expr::And(operands)
        } else {
            Expr::Or(operands)
        }
    }

    fn comparison(&self, node: Node<'a>, depth: usize) -> Expr {
        let mut cursor = node.walk();
        let mut operands = Vec::new();
        let mut ops: Vec<CmpOp> = Vec::new();
        let mut pending_not = false;
        let mut pending_is = false;
        for child in node.children(&mut cursor) {
            if child.is_named() {
                if child.kind_name() == "comment" {
                    continue;
                }
                if pending_is {
                    ops.push(CmpOp::Is);
                    pending_is = false;
                }
                operands.push(self.expr(child, depth));
                continue;
            }
            match self.text(child) {
                "==" => ops.push(CmpOp::Eq),
                "!=" | "<>" => ops.push(CmpOp::Ne),
                "<" => ops.push(CmpOp::Lt),
                "<=" => ops.push(CmpOp::Le),
                ">" => ops.push(CmpOp::Gt),
                ">=" => ops.push(CmpOp::Ge),
                "in" if pending_not => {
                    ops.push(CmpOp::NotIn);
                    pending_not = false;
                }
                "in" => ops.push(CmpOp::In),
                "not" if pending_is => {
                    ops.push(CmpOp::IsNot);
                    pending_is = false;
                }
                "not" => pending_not = true,
                "is" => pending_is = true,
                "not in" => ops.push(CmpOp::NotIn),
                "is not" => ops.push(CmpOp::IsNot),
                _ => {}
            }
        }
        if operands.len() < 2 || ops.len() != operands.len() - 1 {
            return Expr::Other(self.owned_text(node));
        }
        let mut rest = operands.split_off(1);
        let first = operands.pop().expect("one operand left");
        let pairs = ops.into_iter().zip(rest.drain(..)).collect();
        Expr::Compare(Box::new(first), pairs)
    }

    fn string(&self, node: Node<'a>) -> Expr {
        let mut cursor = node.walk();
        let mut content = String::new();
        let mut parts: Vec<FPart> = Vec::new();
        for child in node.named_children(&mut cursor) {
            match child.kind_name() {
                "string_content" => content.push_str(self.text(child)),
                "interpolation" => {
                    // A plain `{expr}`: a conversion (`!r`) or format spec (`:02d`) changes
                    // the text in ways not modelled.
                    let plain = child.named_child_count() == 1;
                    let Some(value) = child.field(F::Expression).filter(|_| plain) else {
                        return Expr::Other(self.owned_text(node));
                    };
                    if !content.is_empty() {
                        parts.push(FPart::Lit(std::mem::take(&mut content)));
                    }
                    parts.push(FPart::Value(self.expr(value, 0)));
                }
                _ => {}
            }
        }
        if parts.is_empty() {
            return Expr::Str(content);
        }
        if !content.is_empty() {
            parts.push(FPart::Lit(content));
        }
        Expr::FString {
            text: self.owned_text(node),
            parts,
        }
    }
}

/// Names like `sm100a_nvcc_flags` in a function's source, in order of first appearance;
/// none when one of its JIT specs (`gen_jit_spec(...)`) names no such flag: the function then
/// builds generically on some path (flashinfer's `gen_customize_batch_prefill_module` builds
/// fa2 with plain flags and only fa3 with `sm90a_nvcc_flags`), so which arch it builds for
/// depends on its arguments, and it is not a fixed-arch build.
fn fixed_arch_flags(source: &[u8]) -> Vec<String> {
    let specs: Vec<usize> = memchr::memmem::find_iter(source, b"gen_jit_spec(").collect();
    if specs.len() > 1
        && specs
            .iter()
            .any(|&at| named_arch_flags(call_text(source, at)).is_empty())
    {
        return Vec::new();
    }
    named_arch_flags(source)
}

/// The text of the call starting at `at`, up to its closing parenthesis (or the end).
fn call_text(source: &[u8], at: usize) -> &[u8] {
    let mut depth = 0usize;
    for (i, &c) in source[at..].iter().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &source[at..at + i + 1];
                }
            }
            _ => {}
        }
    }
    &source[at..]
}

fn named_arch_flags(source: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for end in memchr::memmem::find_iter(source, b"_nvcc_flags") {
        let start = source[..end]
            .iter()
            .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .map_or(0, |i| i + 1);
        let stem = &source[start..end];
        let is_arch = stem.len() > 2
            && stem.starts_with(b"sm")
            && stem[2..]
                .iter()
                .all(|c| c.is_ascii_digit() || *c == b'a' || *c == b'f')
            && stem[2].is_ascii_digit();
        let name = String::from_utf8_lossy(&source[start..end + "_nvcc_flags".len()]).into_owned();
        if is_arch && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

fn is_literal(node: Node) -> bool {
    matches!(
        node.kind_name(),
        "integer"
            | "float"
            | "string"
            | "true"
            | "false"
            | "none"
            | "list"
            | "dictionary"
            | "set"
            | "tuple"
            | "concatenated_string"
            | "lambda"
            | "list_comprehension"
            | "dictionary_comprehension"
    )
}

/// Whether an expression's text could hold a value selection (`A if gate else B`) or a JIT
/// arch list (`supported_major_versions=[...]`, `get_nvcc_flags_list(...)`): the words
/// `scan_archy_expression` looks for, or a superset of them.
fn may_hold_selection_or_arch_list(text: &[u8]) -> bool {
    use memchr::memmem::find;
    find(text, b"if").is_some()
        || find(text, b"supported_major_versions").is_some()
        || find(text, b"get_nvcc_flags_list").is_some()
}

/// The function definitions directly in a block (decorated or not), in order.
fn function_definitions<'a>(block: Node<'a>) -> Vec<Node<'a>> {
    let mut cursor = block.walk();
    block
        .named_children(&mut cursor)
        .filter_map(|child| match child.kind_name() {
            "function_definition" => Some(child),
            "decorated_definition" => child
                .field(F::Definition)
                .filter(|d| d.kind_name() == "function_definition"),
            _ => None,
        })
        .collect()
}

/// Whether a `return` of the function (nested definitions left out) returns a value whose
/// text names one of `names` or that `hit` accepts, directly or through a local assigned from
/// such a value before it (`ok = is_fast() and n > 0; return ok`). Read from the text of its
/// statements, in order. `names` is made only for a body that returns something: this runs
/// for every function the lowering reads.
fn returns_value_made_from<'a>(
    src: &'a [u8],
    function: Node<'a>,
    names: impl FnOnce() -> HashSet<&'a [u8]>,
    hit: impl Fn(&[u8]) -> bool,
) -> bool {
    let Some(body) = function.field(F::Body) else {
        return false;
    };
    let text = &src[body.byte_range()];
    if memchr::memmem::find(text, b"return").is_none() {
        return false;
    }
    let mut names = names();
    if !(hit(text) || words_in(text).any(|word| names.contains(word))) {
        return false;
    }
    let made_from = |node: Node<'a>, names: &HashSet<&[u8]>| {
        let text = &src[node.byte_range()];
        hit(text) || words_in(text).any(|word| names.contains(word))
    };
    // Statements in order, nested definitions skipped.
    let mut stack: Vec<Node<'a>> = vec![body];
    let mut order: Vec<Node<'a>> = Vec::new();
    while let Some(node) = stack.pop() {
        match node.kind_name() {
            "function_definition" | "class_definition" | "lambda" => continue,
            "return_statement" | "assignment" => order.push(node),
            _ => {}
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'a>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    order.sort_by_key(|node| node.start_byte());
    for node in order {
        if node.kind_name() == "return_statement" {
            if node
                .named_child(0)
                .is_some_and(|value| made_from(value, &names))
            {
                return true;
            }
        } else if let (Some(left), Some(right)) = (node.field(F::Left), node.field(F::Right))
            && left.kind_name() == "identifier"
            && made_from(right, &names)
        {
            names.insert(&src[left.byte_range()]);
        }
    }
    false
}

fn contains_kind(node: Node, kind: &str) -> bool {
    if node.kind_name() == kind {
        return true;
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .any(|c| c.kind_name() != "function_definition" && contains_kind(c, kind))
}

fn parse_int(text: &str) -> Option<i64> {
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else {
        lower.parse().ok()
    }
}

/// Whether one of `ranges` holds all of `start..end`. They are sorted and do not overlap
/// (the ranges `syntax::parse_ranges` parsed): the only candidate is the last one starting at or
/// before `start`, found by bisection (a file of 100,000 functions has as many ranges).
fn within_one_range(ranges: &[(usize, usize)], start: usize, end: usize) -> bool {
    let after = ranges.partition_point(|&(s, _)| s <= start);
    after > 0 && end <= ranges[after - 1].1
}

/// Lowers one Python expression given as text (rule `admits` fields).
pub fn lower_expression(text: &str) -> Result<Expr, String> {
    let tree = crate::syntax::parse(text.as_bytes());
    let root = tree.root_node();
    if root.has_error() {
        return Err("syntax error".into());
    }
    let statement = root
        .named_child(0)
        .filter(|n| n.kind_name() == "expression_statement" && root.named_child_count() == 1)
        .ok_or("expected exactly one expression")?;
    let node = statement.named_child(0).ok_or("empty expression")?;
    let tokens = Tokens::new(Vec::<String>::new());
    let lowerer = Lowerer {
        src: text.as_bytes(),
        ranges: None,
        tokens: &tokens,
        parameter_names: &[],
        ir: ModuleIr::default(),
        functions: Vec::new(),
        classes: Vec::new(),
        archy_names: HashSet::default(),
        archy_attrs: HashSet::default(),
        archy_paths: HashSet::default(),
        archy_module_finders: Vec::new(),
        archy_finders: Vec::new(),
        archy_attr_finders: Vec::new(),
        last_archy: Cell::new(None),
        guards: Vec::new(),
        in_except: 0,
        function_globals: HashMap::default(),
        device_global_readers: HashSet::default(),
        branch_stack: Vec::new(),
        too_deep: Default::default(),
        function_bodies: Vec::new(),
    };
    Ok(lowerer.expr(node, 0))
}

/// `a.b.C` as a name or attribute chain; `None` for anything else.
fn dotted_name(text: &str) -> Option<Expr> {
    let mut parts = text.trim().split('.');
    let first = parts.next()?;
    let is_identifier = |part: &str| {
        part.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    is_identifier(first).then_some(())?;
    let mut expr = Expr::Name(first.to_string());
    for part in parts {
        is_identifier(part).then_some(())?;
        expr = Expr::Attr(Box::new(expr), part.to_string());
    }
    Some(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_must_hold_the_whole_span() {
        let ranges = [(0, 10), (10, 20), (30, 40)];
        assert!(within_one_range(&ranges, 0, 10));
        assert!(within_one_range(&ranges, 12, 20));
        assert!(within_one_range(&ranges, 30, 35));
        assert!(!within_one_range(&ranges, 5, 15), "two ranges, not one");
        assert!(!within_one_range(&ranges, 22, 25), "between ranges");
        assert!(!within_one_range(&ranges, 35, 45), "past the last");
        assert!(!within_one_range(&[], 0, 1));
    }

    /// A generator that builds one backend with fixed-arch flags and another generically is
    /// not a fixed-arch build; one whose every spec names the flags is.
    #[test]
    fn fixed_arch_flags_need_every_jit_spec_to_name_them() {
        let mixed = b"def gen(backend):\n    if backend == 'fa2':\n        return gen_jit_spec(uri, srcs, extra_cuda_cflags=flags)\n    return gen_jit_spec(uri, srcs, extra_cuda_cflags=sm90a_nvcc_flags)\n";
        assert!(fixed_arch_flags(mixed).is_empty());
        let fixed = b"def gen():\n    if x:\n        return gen_jit_spec(uri, a, extra_cuda_cflags=sm90a_nvcc_flags)\n    return gen_jit_spec(uri, b, extra_cuda_cflags=sm90a_nvcc_flags + more)\n";
        assert_eq!(
            fixed_arch_flags(fixed),
            vec!["sm90a_nvcc_flags".to_string()]
        );
        let single = b"def gen():\n    flags = sm100a_nvcc_flags\n    return gen_jit_spec(uri, a, extra_cuda_cflags=flags)\n";
        assert_eq!(
            fixed_arch_flags(single),
            vec!["sm100a_nvcc_flags".to_string()]
        );
    }

    /// `a or b or c ...` nests one level per operand; a 200-term chain (flashinfer has 50+)
    /// lowers to one `Or` of every operand, not to an opaque expression past MAX_EXPR_DEPTH.
    #[test]
    fn long_boolean_chains_lower_flat_whatever_their_length() {
        for (op, n) in [("or", 200), ("and", 120), ("or", 2)] {
            let text = (0..n)
                .map(|i| format!("x == {i}"))
                .collect::<Vec<_>>()
                .join(&format!(" {op} "));
            let operands = match lower_expression(&text).expect("parses") {
                Expr::Or(operands) if op == "or" => operands,
                Expr::And(operands) if op == "and" => operands,
                other => panic!("{op} x{n}: {other:?}"),
            };
            assert_eq!(operands.len(), n, "{op} x{n}");
            assert!(operands.iter().all(|e| !matches!(e, Expr::Other(_))));
        }
        // A mixed chain keeps its precedence: `a or b and c` is `Or[a, And[b, c]]`.
        match lower_expression("a or b and c or d").expect("parses") {
            Expr::Or(operands) => {
                assert_eq!(operands.len(), 3);
                assert!(matches!(&operands[1], Expr::And(inner) if inner.len() == 2));
            }
            other => panic!("{other:?}"),
        }
    }
}
