//! Control flow of a scope and the one flow query: which bindings of a name reach a read,
//! under which guards.
//!
//! A scope's flow is its statement tree with only what matters to bindings kept: binding
//! steps, `if`/`match` arms, loops, `try` statements, and exits. A query walks that tree
//! forward once, carrying for the asked name alone the set of bindings that may be live,
//! each with the guards (a disjunction of conjunctions) under which it is the live one:
//!
//! - a binding of the name replaces every earlier one on its path;
//! - where arms join, a binding that comes out of every live arm the same keeps its guards;
//!   otherwise it gains the guard of each arm it comes out of (`x = 1` before `if c: x = 2`
//!   reaches the join as `x = 1` under `not c`, `x = 2` under `c`);
//! - an arm that returns, raises, breaks or continues is not live at the join, so early
//!   returns need no special case; when one arm alone is live its test is a condition of the
//!   read itself, not of a binding, and no guard is added;
//! - a loop body is walked twice (the second time from the join of the entry and the
//!   back edge) and may run zero times; `break` leaves to after the loop, skipping its `else`;
//! - a handler of a `try` may see any binding its body makes, and the state before it.
//!
//! `Reach::binding` is `None` for a path on which the name is not bound in the scope: a
//! local read there fails, a class or module read falls back to the scope outside, and a
//! read of a name the function does not bind looks outside (`reaching`).

use super::model::{
    BindingId, BindingKind, ExitKind, Flow, Guard, GuardKind, LoopFlow, LoopKind, LoopWalk,
    MODULE_SCOPE, Reach, ScopeId, ScopeKind, SemanticModel, TryFlow, WalkState,
};

/// Ways a binding may reach a read that are kept apart; past this the rest are dropped (the
/// binding still reaches, under the guards kept).
const MAX_WAYS: usize = 16;

impl SemanticModel {
    /// The bindings of `name` that reach a read at `offset`, each with the guards under
    /// which it is the one read (see the module doc).
    /// Answers are kept in the model (`SemanticModel::reached`): a read is asked about again
    /// for every caller and every site that reaches it.
    pub fn reaching(&self, name: &str, offset: usize) -> Vec<Reach> {
        let key = (Box::<str>::from(name), offset);
        if let Some(known) = self.reached.lock().expect("no poisoned lock").get(&key) {
            return known.clone();
        }
        let reach = reaching(self, name, self.scope_at(offset), offset);
        self.reached
            .lock()
            .expect("no poisoned lock")
            .insert(key, reach.clone());
        reach
    }
}

impl SemanticModel {
    /// `reaching` with every read walked, for checking `straight_line` against it.
    #[cfg(test)]
    pub(super) fn reaching_by_walk(&self, name: &str, offset: usize) -> Option<Vec<Reach>> {
        let scope = self.scope_at(offset);
        straight_line(self, scope, name, offset)?;
        Some(walk_with(self, name, scope, offset, false))
    }
}

impl SemanticModel {
    /// The walk of the scope holding `offset`, with and without passing over statements by
    /// their shape, for checking one against the other.
    #[cfg(test)]
    pub(super) fn walks_with_and_without_skips(
        &self,
        name: &str,
        offset: usize,
    ) -> (Vec<Reach>, Vec<Reach>) {
        let scope = self.scope_at(offset);
        (
            walk_with(self, name, scope, offset, true),
            walk_with(self, name, scope, offset, false),
        )
    }
}

/// Per binding (`None`: unbound), the ways it is the live one; sorted by binding.
type State = WalkState;

/// The bindings of `name` reaching a read at `offset` in `scope` (see the module doc).
fn reaching(model: &SemanticModel, name: &str, scope: ScopeId, offset: usize) -> Vec<Reach> {
    let s = model.scope(scope);
    let binds_here = s.bindings.contains_key(name);
    let global = s.globals.iter().any(|g| g == name);
    let nonlocal = s.nonlocals.iter().any(|g| g == name);
    if scope == MODULE_SCOPE {
        return walk(model, name, scope, offset);
    }
    if global {
        let local = walk(model, name, scope, offset);
        return fall_back(local, || module_end(model, name));
    }
    if nonlocal || !binds_here {
        let outer = || outside(model, name, scope);
        if binds_here {
            return fall_back(walk(model, name, scope, offset), outer);
        }
        return outer();
    }
    if let Some(reach) = straight_line(model, scope, name, offset) {
        return reach;
    }
    let local = walk(model, name, scope, offset);
    match s.kind {
        // A class body reads what it has not bound from where the class statement runs.
        ScopeKind::Class => fall_back(local, || {
            let parent = s.parent.unwrap_or(MODULE_SCOPE);
            reaching(model, name, parent, s.defined_at)
        }),
        _ => local,
    }
}

/// The answer without a walk for the common read: in a function, the last binding of the
/// name before the read is a statement of the body itself (in no branch, loop or `try`) and
/// the name is bound nowhere after it, so every path to the read passes it and nothing else
/// can replace it, not even through a loop's back edge. A parameter nobody rebinds is one.
fn straight_line(
    model: &SemanticModel,
    scope: ScopeId,
    name: &str,
    offset: usize,
) -> Option<Vec<Reach>> {
    let s = model.scope(scope);
    if !matches!(
        s.kind,
        ScopeKind::Function | ScopeKind::Lambda | ScopeKind::Comprehension
    ) {
        return None;
    }
    let bindings = s.bindings.get(name)?;
    let (&last, _) = bindings.split_last()?;
    let binding = model.binding(last);
    (binding.branch.is_none() && binding.visible_from <= offset).then(|| {
        vec![Reach {
            binding: Some(last),
            ways: vec![Vec::new()],
        }]
    })
}

/// What a scope reads of a name it does not bind (or declares `nonlocal`): class scopes are
/// skipped; a comprehension reads where it stands; an enclosing function may have made any
/// of its bindings by the time a nested function runs; the module, as it is once it has run
/// (with the stores functions make under `global`).
fn outside(model: &SemanticModel, name: &str, scope: ScopeId) -> Vec<Reach> {
    let s = model.scope(scope);
    let at = s.defined_at;
    // A class body and a comprehension run where they stand; a function runs later.
    let immediate = matches!(s.kind, ScopeKind::Class | ScopeKind::Comprehension);
    let mut current = s.parent;
    while let Some(id) = current {
        let outer = model.scope(id);
        match outer.kind {
            ScopeKind::Class => {}
            ScopeKind::Module if immediate => return reaching(model, name, id, at),
            ScopeKind::Module => return module_end(model, name),
            _ if immediate => return reaching(model, name, id, at),
            _ => {
                let mut all: Vec<BindingId> = outer
                    .bindings
                    .get(name)
                    .into_iter()
                    .flatten()
                    .chain(outer.nonlocal_stores.get(name).into_iter().flatten())
                    .copied()
                    .collect();
                if !all.is_empty() && !outer.globals.iter().any(|g| g == name) {
                    all.sort();
                    return all
                        .into_iter()
                        .map(|binding| Reach {
                            binding: Some(binding),
                            ways: vec![Vec::new()],
                        })
                        .collect();
                }
            }
        }
        current = outer.parent;
    }
    module_end(model, name)
}

/// The module's bindings of `name` once its body has run, and the stores functions make to
/// it under `global` (any of which may have run).
fn module_end(model: &SemanticModel, name: &str) -> Vec<Reach> {
    let mut reach = walk(model, name, MODULE_SCOPE, usize::MAX);
    let stores = model.scope(MODULE_SCOPE).global_stores.get(name);
    for &binding in stores.into_iter().flatten() {
        reach.push(Reach {
            binding: Some(binding),
            ways: vec![Vec::new()],
        });
    }
    reach
}

/// `local` with each unbound path replaced by what `outer` reads there.
fn fall_back(local: Vec<Reach>, outer: impl FnOnce() -> Vec<Reach>) -> Vec<Reach> {
    let Some(unbound) = local.iter().position(|r| r.binding.is_none()) else {
        return local;
    };
    let mut reach = local;
    let unbound = reach.remove(unbound);
    for found in outer() {
        let mut ways = Vec::new();
        for a in &unbound.ways {
            for b in &found.ways {
                if let Some(way) = conjoin(a, b) {
                    ways.push(way);
                }
            }
        }
        if ways.is_empty() {
            continue;
        }
        // The same binding found inside and outside (a function's own `global` store, which
        // an earlier call may have made): one reach, either way.
        match reach.iter_mut().find(|r| r.binding == found.binding) {
            Some(known) => {
                known.ways.extend(ways);
                known.ways = simplify(std::mem::take(&mut known.ways));
            }
            None => reach.push(Reach {
                binding: found.binding,
                ways: simplify(ways),
            }),
        }
    }
    reach.sort_by_key(|r| r.binding);
    reach
}

/// Walks `scope`'s flow to `offset` (`usize::MAX`: to its end).
fn walk(model: &SemanticModel, name: &str, scope: ScopeId, offset: usize) -> Vec<Reach> {
    walk_with(model, name, scope, offset, true)
}

/// `walk`; `skip`: statements that bind nothing of the name and hold no read are passed
/// over by their shape alone (`Shape`), not walked.
fn walk_with(
    model: &SemanticModel,
    name: &str,
    scope: ScopeId,
    offset: usize,
    skip: bool,
) -> Vec<Reach> {
    let binds = match model.scope(scope).bindings.get(name) {
        Some(ids) if skip => ids
            .iter()
            .map(|&id| {
                let b = model.binding(id);
                (
                    b.statement.0.min(b.visible_from),
                    b.statement.1.max(b.visible_from + 1),
                )
            })
            .collect(),
        // Without skips every statement counts as binding the name.
        _ if !skip => vec![(0, usize::MAX)],
        _ => Vec::new(),
    };
    let mut walker = Walker {
        model,
        name,
        cursor: offset,
        found: None,
        loops: Vec::new(),
        binds,
        // The walk without skips is a test's reference: it keeps nothing.
        keep_loops: skip,
    };
    let start: State = vec![(None, vec![Vec::new()])];
    let end = walker.run(&model.scope(scope).flow, Some(start));
    let state = walker.found.take().or(end).unwrap_or_default();
    state
        .into_iter()
        .map(|(binding, ways)| Reach { binding, ways })
        .collect()
}

#[derive(Default)]
struct LoopExits {
    breaks: Vec<State>,
    continues: Vec<State>,
}

struct Walker<'m> {
    model: &'m SemanticModel,
    name: &'m str,
    /// The read's offset; `usize::MAX` while a pass must not stop anywhere.
    cursor: usize,
    /// The state at the read, once reached.
    found: Option<State>,
    loops: Vec<LoopExits>,
    /// Where the scope binds the name (each binding's statement and the point it takes
    /// effect): a statement that overlaps none of them cannot change what reaches.
    binds: Vec<(usize, usize)>,
    /// Whether loops walked whole are kept in the model and read back (`LoopWalk`).
    keep_loops: bool,
}

impl Walker<'_> {
    /// Runs `flows` from `state` (`None`: unreachable) and returns the state after them.
    fn run(&mut self, flows: &[Flow], mut state: Option<State>) -> Option<State> {
        for flow in flows {
            if self.found.is_some() {
                return None;
            }
            if self.cursor < flow.start() {
                self.found = Some(state.unwrap_or_default());
                return None;
            }
            state = self.step(flow, state);
        }
        state
    }

    /// Runs `flows` holding the read: the state where it stands.
    fn run_to_cursor(&mut self, flows: &[Flow], state: Option<State>) {
        let end = self.run(flows, state);
        if self.found.is_none() {
            self.found = Some(end.unwrap_or_default());
        }
    }

    /// `run` with no stop at the read (a loop body's first pass).
    fn run_through(&mut self, flows: &[Flow], state: Option<State>) -> Option<State> {
        let cursor = std::mem::replace(&mut self.cursor, usize::MAX);
        let end = self.run(flows, state);
        self.cursor = cursor;
        end
    }

    fn step(&mut self, flow: &Flow, state: Option<State>) -> Option<State> {
        if let Some(range) = flow.compound_range()
            && self.cursor >= range.1
            && !self.binds.iter().any(|b| b.0 < range.1 && b.1 > range.0)
        {
            return self.pass_over(flow, state);
        }
        match flow {
            Flow::Bind { binding, .. } => {
                if self.model.binding(*binding).name == self.name && state.is_some() {
                    Some(vec![(Some(*binding), vec![Vec::new()])])
                } else {
                    state
                }
            }
            Flow::Exit { kind, .. } => {
                if let (Some(state), Some(exits)) = (state, self.loops.last_mut()) {
                    match kind {
                        ExitKind::Break => exits.breaks.push(state),
                        ExitKind::Continue => exits.continues.push(state),
                        ExitKind::Return | ExitKind::Raise => {}
                    }
                }
                None
            }
            Flow::If {
                range,
                arms,
                exhaustive,
            } => {
                let inside = self.cursor < range.1;
                let mut paths: Vec<(Vec<Guard>, Option<State>)> = Vec::new();
                let mut negated: Vec<Guard> = Vec::new();
                for arm in arms {
                    if inside && arm.test.is_some_and(|test| self.cursor < test.1) {
                        self.found = Some(state.unwrap_or_default());
                        return None;
                    }
                    if inside && self.cursor < arm.range.1 {
                        self.run_to_cursor(&arm.body, state);
                        return None;
                    }
                    let mut guards = negated.clone();
                    if let Some(test) = arm.test {
                        guards.push(Guard {
                            kind: arm.kind,
                            range: test,
                            holds: true,
                        });
                    }
                    if let Some(also) = arm.also {
                        guards.push(Guard {
                            kind: GuardKind::Test,
                            range: also,
                            holds: true,
                        });
                    }
                    let out = self.run(&arm.body, state.clone());
                    paths.push((guards, out));
                    // `case p if g` not taken says only that `p and g` failed: nothing a
                    // conjunction of guards can hold, so later arms are not told.
                    if let (Some(test), None) = (arm.test, arm.also) {
                        negated.push(Guard {
                            kind: arm.kind,
                            range: test,
                            holds: false,
                        });
                    }
                }
                if !exhaustive {
                    paths.push((negated, state));
                }
                join(paths)
            }
            Flow::Loop(inner) if self.keep_loops && self.cursor >= inner.range.1 => {
                self.whole_loop(inner, state)
            }
            Flow::Loop(inner) => self.walk_loop(inner, state),
            Flow::Try(inner) => {
                let TryFlow {
                    range,
                    body_range,
                    body,
                    handlers,
                    orelse,
                    orelse_range,
                    finally,
                    finally_range,
                } = &**inner;
                let inside = self.cursor < range.1;
                if inside && self.cursor < body_range.1 {
                    self.run_to_cursor(body, state);
                    return None;
                }
                let completed = self.run(body, state.clone());
                // A handler may start after any statement of the body has run.
                let raised = state.clone().map(|mut entries| {
                    for binding in self.binds_in(body) {
                        if !entries.iter().any(|(b, _)| *b == Some(binding)) {
                            entries.push((Some(binding), vec![Vec::new()]));
                        }
                    }
                    entries.sort_by_key(|(b, _)| *b);
                    entries
                });
                // Clauses in source order: the handlers, then `else`.
                let mut paths = Vec::new();
                for handler in handlers {
                    if inside && self.cursor < handler.range.1 {
                        self.run_to_cursor(&handler.body, raised);
                        return None;
                    }
                    let out = self.run(&handler.body, raised.clone());
                    paths.push((
                        vec![Guard {
                            kind: GuardKind::Handled,
                            range: handler.test.unwrap_or(handler.range),
                            holds: true,
                        }],
                        out,
                    ));
                }
                let else_out = match orelse_range {
                    Some(clause) if inside && self.cursor < clause.1 => {
                        self.run_to_cursor(orelse, completed);
                        return None;
                    }
                    _ => self.run(orelse, completed),
                };
                paths.insert(
                    0,
                    (
                        vec![Guard {
                            kind: GuardKind::Completed,
                            range: *body_range,
                            holds: true,
                        }],
                        else_out,
                    ),
                );
                let joined = join(paths);
                match finally_range {
                    Some(clause) if inside && self.cursor < clause.1 => {
                        // `finally` also runs when an exception leaves the statement.
                        let entry = union(joined, raised);
                        self.run_to_cursor(finally, entry);
                        None
                    }
                    _ => self.run(finally, joined),
                }
            }
        }
    }

    /// A loop: its body walked twice (the second time from the join of the entry and the
    /// back edge), then its `else` clause.
    fn walk_loop(&mut self, inner: &LoopFlow, state: Option<State>) -> Option<State> {
        let LoopFlow {
            range,
            kind,
            header,
            body_end,
            body,
            orelse,
            orelse_range,
        } = inner;
        let inside = self.cursor < range.1;
        if inside && self.cursor < header.1 {
            // A `for` reads its iterable once, before any pass; a `while` test is
            // read before each, as the body's entry is.
            if *kind == LoopKind::For {
                self.found = Some(state.unwrap_or_default());
                return None;
            }
        }
        let guard = |kind: GuardKind, holds: bool| Guard {
            kind,
            range: *header,
            holds,
        };
        self.loops.push(LoopExits::default());
        let first = self.run_through(body, state.clone());
        let exits = self.loops.pop().unwrap_or_default();
        let back = union(first, exits.continues);
        let entry = join(vec![
            (vec![guard(GuardKind::Repeated, false)], state.clone()),
            (vec![guard(GuardKind::Repeated, true)], back),
        ]);
        if inside && self.cursor < header.1 {
            self.found = Some(entry.unwrap_or_default());
            return None;
        }
        self.loops.push(LoopExits::default());
        if inside && self.cursor < *body_end {
            self.run_to_cursor(body, entry);
            self.loops.pop();
            return None;
        }
        let second = self.run(body, entry);
        let exits = self.loops.pop().unwrap_or_default();
        let passed = union(second, exits.continues);
        let normal = join(vec![
            (vec![guard(GuardKind::Iterated, false)], state),
            (vec![guard(GuardKind::Iterated, true)], passed),
        ]);
        let after_else = match orelse_range {
            Some(clause) if inside && self.cursor < clause.1 => {
                self.run_to_cursor(orelse, normal);
                return None;
            }
            _ => self.run(orelse, normal),
        };
        union(after_else, exits.breaks)
    }

    /// A loop the read is not in, walked whole: the same for every read after it from the
    /// same entry state (what is inside it is walked as for no read at all), so it is walked
    /// once per entry state and name, and what it did is kept in the model for the reads
    /// after: the state after it, and the exits its `else` clause handed the loop around it.
    fn whole_loop(&mut self, inner: &LoopFlow, state: Option<State>) -> Option<State> {
        let key = (Box::<str>::from(self.name), inner.range.0, state);
        let kept = self
            .model
            .loop_walks
            .lock()
            .expect("no poisoned lock")
            .get(&key)
            .cloned();
        let walked = match kept {
            Some(walked) => walked,
            None => {
                let before = self
                    .loops
                    .last()
                    .map_or((0, 0), |exits| (exits.breaks.len(), exits.continues.len()));
                let after = self.walk_loop(inner, key.2.clone());
                let (outer_breaks, outer_continues) = match self.loops.last() {
                    Some(exits) => (
                        exits.breaks[before.0..].to_vec(),
                        exits.continues[before.1..].to_vec(),
                    ),
                    None => (Vec::new(), Vec::new()),
                };
                let walked = LoopWalk {
                    after,
                    outer_breaks,
                    outer_continues,
                };
                self.model
                    .loop_walks
                    .lock()
                    .expect("no poisoned lock")
                    .insert(key, walked.clone());
                return walked.after;
            }
        };
        if let Some(exits) = self.loops.last_mut() {
            exits.breaks.extend(walked.outer_breaks);
            exits.continues.extend(walked.outer_continues);
        }
        walked.after
    }

    /// A statement that binds nothing of the name and holds no read, by its shape alone:
    /// every path through it carries the state in unchanged, so the joins it would make are
    /// of equal states and keep them as they are (the walk's answer, at a fraction of the
    /// cost in long functions, where each read walked every `if` before it).
    fn pass_over(&mut self, flow: &Flow, state: Option<State>) -> Option<State> {
        let state = state?;
        let shape = Shape::of(flow);
        if let Some(exits) = self.loops.last_mut() {
            if shape.breaks {
                exits.breaks.push(state.clone());
            }
            if shape.continues {
                exits.continues.push(state.clone());
            }
        }
        shape.completes.then_some(state)
    }

    /// Every binding of the name made in `flows`, at any depth.
    fn binds_in(&self, flows: &[Flow]) -> Vec<BindingId> {
        let mut found = Vec::new();
        let mut stack: Vec<&Flow> = flows.iter().collect();
        while let Some(flow) = stack.pop() {
            match flow {
                Flow::Bind { binding, .. } => {
                    let b = self.model.binding(*binding);
                    if b.name == self.name && b.kind != BindingKind::Deletion {
                        found.push(*binding);
                    }
                }
                Flow::Exit { .. } => {}
                Flow::If { arms, .. } => {
                    stack.extend(arms.iter().flat_map(|a| a.body.iter()));
                }
                Flow::Loop(inner) => {
                    stack.extend(inner.body.iter().chain(inner.orelse.iter()));
                }
                Flow::Try(inner) => {
                    stack.extend(
                        inner
                            .body
                            .iter()
                            .chain(inner.handlers.iter().flat_map(|h| h.body.iter()))
                            .chain(inner.orelse.iter())
                            .chain(inner.finally.iter()),
                    );
                }
            }
        }
        found
    }
}

/// What a statement does to control whatever the name, entered on a live path: whether it
/// can end normally, and whether a `break` or `continue` in it leaves for the loop around
/// it. Mirrors `Walker::step`'s reachability, which depends on no name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    completes: bool,
    breaks: bool,
    continues: bool,
}

impl Shape {
    const FALLS_THROUGH: Shape = Shape {
        completes: true,
        breaks: false,
        continues: false,
    };

    /// The shape of a block: what follows a statement that cannot end is not reached.
    fn of_block(flows: &[Flow]) -> Shape {
        let mut shape = Shape::FALLS_THROUGH;
        for flow in flows {
            if !shape.completes {
                break;
            }
            let next = Shape::of(flow);
            shape = Shape {
                completes: next.completes,
                breaks: shape.breaks || next.breaks,
                continues: shape.continues || next.continues,
            };
        }
        shape
    }

    fn of(flow: &Flow) -> Shape {
        match flow {
            Flow::Bind { .. } => Shape::FALLS_THROUGH,
            Flow::Exit { kind, .. } => Shape {
                completes: false,
                breaks: *kind == ExitKind::Break,
                continues: *kind == ExitKind::Continue,
            },
            Flow::If {
                arms, exhaustive, ..
            } => arms.iter().fold(
                Shape {
                    completes: !exhaustive,
                    breaks: false,
                    continues: false,
                },
                |shape, arm| shape.either(Shape::of_block(&arm.body)),
            ),
            // The loop's own `break`s end it (normally); its `else` is reached whenever the
            // loop is, and exits the loop around.
            Flow::Loop(inner) => {
                let body = Shape::of_block(&inner.body);
                let orelse = Shape::of_block(&inner.orelse);
                Shape {
                    completes: orelse.completes || body.breaks,
                    ..orelse
                }
            }
            Flow::Try(inner) => {
                let body = Shape::of_block(&inner.body);
                let mut shape = Shape {
                    completes: false,
                    ..body
                };
                // Its `else` runs after the body ends normally; a handler, after any part.
                if body.completes {
                    shape = shape.either(Shape::of_block(&inner.orelse));
                }
                for handler in &inner.handlers {
                    shape = shape.either(Shape::of_block(&handler.body));
                }
                if !shape.completes {
                    return shape;
                }
                let finally = Shape::of_block(&inner.finally);
                Shape {
                    completes: finally.completes,
                    breaks: shape.breaks || finally.breaks,
                    continues: shape.continues || finally.continues,
                }
            }
        }
    }

    /// One path or the other.
    fn either(self, other: Shape) -> Shape {
        Shape {
            completes: self.completes || other.completes,
            breaks: self.breaks || other.breaks,
            continues: self.continues || other.continues,
        }
    }
}

/// Joins the states of paths that meet, each with the guards that select its path (see the
/// module doc). Unreachable paths (`None`) do not count.
fn join(paths: Vec<(Vec<Guard>, Option<State>)>) -> Option<State> {
    let mut live: Vec<(Vec<Guard>, State)> = paths
        .into_iter()
        .filter_map(|(guards, state)| state.map(|s| (guards, s)))
        .collect();
    match live.len() {
        0 => return None,
        1 => return live.pop().map(|(_, state)| state),
        _ => {}
    }
    let mut keys: Vec<Option<BindingId>> = live
        .iter()
        .flat_map(|(_, state)| state.iter().map(|(b, _)| *b))
        .collect();
    keys.sort();
    keys.dedup();
    let mut joined = State::new();
    for key in keys {
        let entries: Vec<(&Vec<Guard>, &Vec<Vec<Guard>>)> = live
            .iter()
            .filter_map(|(guards, state)| {
                state
                    .iter()
                    .find(|(b, _)| *b == key)
                    .map(|(_, ways)| (guards, ways))
            })
            .collect();
        let same = entries.len() == live.len() && entries.iter().all(|(_, w)| *w == entries[0].1);
        let ways = if same {
            entries[0].1.clone()
        } else {
            let mut ways = Vec::new();
            for (guards, arrived) in entries {
                for way in arrived {
                    if let Some(way) = conjoin(guards, way) {
                        ways.push(way);
                    }
                }
            }
            simplify(ways)
        };
        if !ways.is_empty() {
            joined.push((key, ways));
        }
    }
    Some(joined)
}

/// The join of paths that meet with nothing to tell them apart (a loop's back edges, its
/// `break`s): a binding that differs between them reaches under the ways it came with.
fn union(first: Option<State>, more: impl IntoIterator<Item = State>) -> Option<State> {
    let paths = std::iter::once(first)
        .chain(more.into_iter().map(Some))
        .map(|state| (Vec::new(), state))
        .collect();
    join(paths)
}

/// `a and b`, or `None` when they contradict each other.
fn conjoin(a: &[Guard], b: &[Guard]) -> Option<Vec<Guard>> {
    let mut way: Vec<Guard> = a.to_vec();
    for guard in b {
        if way.contains(&guard.negated()) {
            return None;
        }
        if !way.contains(guard) {
            way.push(*guard);
        }
    }
    Some(way)
}

/// Merges ways that differ only in one guard holding or not (`c and d`, `c and not d` is
/// `c`), drops repeats and ways another way implies (`c and d` beside `c`), and keeps at most
/// `MAX_WAYS`.
///
/// Joins call this hundreds of thousands of times on a big site, most pairs of ways having
/// nothing to do with each other: each pair is first compared by a word that two ways must
/// share to merge (`merge_key`) or for one to imply the other (`guard_mask`), and only then
/// guard by guard. The answer is exactly that of the guard-by-guard comparison alone.
fn simplify(mut ways: Vec<Vec<Guard>>) -> Vec<Vec<Guard>> {
    // `always` absorbs every other way; one way has nothing to merge with.
    if ways.iter().any(Vec::is_empty) {
        return vec![Vec::new()];
    }
    if ways.len() <= 1 {
        return ways;
    }
    let mut changed = true;
    while changed {
        changed = false;
        ways.dedup();
        let keys: Vec<Option<(usize, u64)>> = ways.iter().map(|way| merge_key(way)).collect();
        'pairs: for i in 0..ways.len() {
            for j in i + 1..ways.len() {
                if let (Some(a), Some(b)) = (keys[i], keys[j])
                    && a != b
                {
                    continue;
                }
                if let Some(merged) = merge(&ways[i], &ways[j]) {
                    ways[i] = merged;
                    ways.remove(j);
                    changed = true;
                    break 'pairs;
                }
            }
        }
    }
    let masks: Vec<u64> = ways.iter().map(|way| guard_mask(way)).collect();
    let mut unique: Vec<Vec<Guard>> = Vec::new();
    for (i, way) in ways.iter().enumerate() {
        let implied = ways.iter().enumerate().any(|(j, other)| {
            j != i
                && masks[j] & !masks[i] == 0
                && (other.len() < way.len() || j < i)
                && other.iter().all(|g| way.contains(g))
        });
        if !implied && !unique.contains(way) {
            unique.push(way.clone());
        }
    }
    // `always` absorbs every other way.
    if unique.iter().any(Vec::is_empty) {
        return vec![Vec::new()];
    }
    unique.truncate(MAX_WAYS);
    unique
}

/// A guard's test and kind without whether it holds, as a word.
fn guard_word(guard: &Guard) -> u64 {
    // A multiply-xor mix: equal guards give equal words, which is all the callers rely on;
    // unequal ones rarely collide, and a collision only costs the guard-by-guard comparison.
    let (start, end) = guard.range;
    let mixed = (start as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (end as u64)
            .rotate_left(29)
            .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ guard.kind as u64;
    mixed ^ (mixed >> 31)
}

/// What two ways that `merge` share: their length and the sum of their guards' words,
/// polarity left out (one guard holds in one and not in the other). `None` for a way that
/// names one test twice, which this argument does not cover: such a way is compared guard
/// by guard.
fn merge_key(way: &[Guard]) -> Option<(usize, u64)> {
    let mut sum = 0u64;
    for (i, guard) in way.iter().enumerate() {
        if way[..i]
            .iter()
            .any(|g| g.kind == guard.kind && g.range == guard.range)
        {
            return None;
        }
        sum = sum.wrapping_add(guard_word(guard));
    }
    Some((way.len(), sum))
}

/// One bit per guard (polarity included) of a way: a way whose guards all stand in another
/// has its bits in the other's.
fn guard_mask(way: &[Guard]) -> u64 {
    way.iter()
        .map(|g| 1u64 << ((guard_word(g) ^ u64::from(g.holds)) % 64))
        .fold(0, |mask, bit| mask | bit)
}

/// `a` and `b` merged when they are the same but for one guard, negated in one of them.
fn merge(a: &[Guard], b: &[Guard]) -> Option<Vec<Guard>> {
    if a.len() != b.len() {
        return None;
    }
    let mut differ = None;
    for guard in a {
        if b.contains(guard) {
            continue;
        }
        if differ.is_some() || !b.contains(&guard.negated()) {
            return None;
        }
        differ = Some(*guard);
    }
    let differ = differ?;
    Some(
        a.iter()
            .copied()
            .filter(|g| *g != differ)
            .collect::<Vec<Guard>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `simplify` as it was before the quick comparisons: guard by guard only.
    fn simplify_by_guards(mut ways: Vec<Vec<Guard>>) -> Vec<Vec<Guard>> {
        if ways.iter().any(Vec::is_empty) {
            return vec![Vec::new()];
        }
        if ways.len() <= 1 {
            return ways;
        }
        let mut changed = true;
        while changed {
            changed = false;
            ways.dedup();
            'pairs: for i in 0..ways.len() {
                for j in i + 1..ways.len() {
                    if let Some(merged) = merge(&ways[i], &ways[j]) {
                        ways[i] = merged;
                        ways.remove(j);
                        changed = true;
                        break 'pairs;
                    }
                }
            }
        }
        let mut unique: Vec<Vec<Guard>> = Vec::new();
        for (i, way) in ways.iter().enumerate() {
            let implied = ways.iter().enumerate().any(|(j, other)| {
                j != i
                    && other.iter().all(|g| way.contains(g))
                    && (other.len() < way.len() || j < i)
            });
            if !implied && !unique.contains(way) {
                unique.push(way.clone());
            }
        }
        if unique.iter().any(Vec::is_empty) {
            return vec![Vec::new()];
        }
        unique.truncate(MAX_WAYS);
        unique
    }

    /// Guards over four tests of two kinds, so that ways share, negate and repeat them; a
    /// way may name a test twice (which the joins never build, but `simplify` must not care).
    fn guard() -> impl Strategy<Value = Guard> {
        (0usize..4, any::<bool>(), any::<bool>()).prop_map(|(test, case, holds)| Guard {
            kind: if case {
                GuardKind::Case
            } else {
                GuardKind::Test
            },
            range: (test * 10, test * 10 + 5),
            holds,
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn quick_comparisons_change_no_answer(
            ways in proptest::collection::vec(proptest::collection::vec(guard(), 0..5), 0..24)
        ) {
            prop_assert_eq!(simplify(ways.clone()), simplify_by_guards(ways));
        }
    }

    #[test]
    fn ways_differing_in_one_guard_merge_and_implied_ways_go() {
        let c = Guard {
            kind: GuardKind::Test,
            range: (0, 1),
            holds: true,
        };
        let d = Guard {
            kind: GuardKind::Test,
            range: (2, 3),
            holds: true,
        };
        assert_eq!(
            simplify(vec![vec![c, d], vec![c, d.negated()]]),
            vec![vec![c]]
        );
        assert_eq!(simplify(vec![vec![c, d], vec![c]]), vec![vec![c]]);
        assert_eq!(
            simplify(vec![vec![d], vec![d.negated()]]),
            vec![Vec::<Guard>::new()]
        );
        assert_eq!(simplify(vec![vec![c], vec![d]]), vec![vec![c], vec![d]]);
    }
}
