//! Name resolution and a small abstract interpreter: evaluates gate expressions the way
//! Python would inside the site (imports, module flags, helper bodies, partials, caches,
//! probe tables, rules) into predicates over the device. Nothing is imported or executed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::{FxHashMap, FxHashSet};

use super::index::{IndexReads, ModuleIndex, ReadLog};
use super::ir::*;
use super::predicate::{Atom, DevVar, Form, Pred, Rhs};
use super::semantic::{
    Binding, BindingId, BindingKind, Guard, GuardKind, Reach, ScopeKind, SemanticModel,
};
use super::tokens::Tokens;
use crate::rules::{Fact, Rules};

/// Resolution stops this many levels deep inside one frame (expression nesting, name hops,
/// calls); the atom is then unknown.
const MAX_DEPTH: u32 = 16;

/// A function body or a module-level name is evaluated in a frame of its own, with the depth
/// count started afresh, up to this many frames deep: what it is worth does not depend on how
/// deep its caller stood (`x.py: helper()` reaching `get_device_sm()` through a flag and a
/// probe in two other modules is as known as the probe's own site), and the frame count still
/// bounds the recursion. Past it, a frame counts against the caller's depth as any level does.
const MAX_FRAMES: u32 = 8;

/// The local that holds a method's own class, as Python's `__class__` cell does for
/// zero-argument `super()`; no Python name can collide with it.
const CLASS_CELL: &str = "__class__ cell";

/// A helper call as memoised: the function and the values passed, positional and keyword.
type CallKey = Prehashed<(FuncRef, Vec<Val>, Vec<(String, Val)>)>;

/// A key hashed once. A local read looks its key (every reaching binding, with the guards
/// of each way it reaches) up in up to five tables in a row, a call its arguments in three;
/// hashing them whole each time was a tenth of the resolver's own time.
#[derive(Debug, Clone)]
struct Prehashed<K> {
    hash: u64,
    key: K,
}

impl<K: std::hash::Hash> Prehashed<K> {
    fn new(key: K) -> Self {
        use std::hash::BuildHasher;
        Prehashed {
            hash: rustc_hash::FxBuildHasher.hash_one(&key),
            key,
        }
    }
}

impl<K> std::hash::Hash for Prehashed<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<K: PartialEq> PartialEq for Prehashed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key == other.key
    }
}

impl<K: Eq> Eq for Prehashed<K> {}

/// An abstract Python value. Equality is structural (a guarded choice compares its arms in
/// order), so equal values merge without being formatted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Val {
    Pred(Pred),
    Bool(bool),
    Dev(DevVar),
    /// A capability object with `.major`, `.minor`, `.to_int()`; compares like the tuple.
    DevObj,
    /// A capability whose spelling the comparison tells (an assumed parameter, rules
    /// `means = "any"`): an integer from 20 up is `sm`, a smaller one `major`, a pair the tuple.
    DevAny,
    /// A guarded choice: the value is `val` where its guard holds (the guards are disjoint).
    Choice(Vec<(Pred, Val)>),
    /// `major * 10` on the way to `major * 10 + minor`.
    MajorTimesTen,
    /// A string built from device numbers (`f"sm{major}{minor}"`, `f"{cap[0]}.{cap[1]}"`):
    /// literal pieces and device quantities, in order.
    DevStr(Vec<StrPiece>),
    Int(i64),
    Str(String),
    Seq(Vec<Val>),
    /// A dict literal keyed by numbers or number pairs (`{90: {...}, 100: {...}}`): only its
    /// keys are kept, for membership and device-keyed lookups.
    Table(Vec<Val>),
    /// `torch.version.cuda`: as a string, or turned into numbers (`tuple(map(int, ...))`).
    Cuda {
        numeric: bool,
    },
    NoneV,
    Func(FuncRef),
    Partial(FuncRef, Vec<Val>, Vec<(String, Val)>),
    Builtin(Builtin),
    Module(String),
    /// A name in a module that is not in the site (torch in a small site, say): rules may
    /// still know its members.
    External(String),
    Object(String),
    Method(String, String),
    /// A class of the site, and an instance of one; methods are looked up through the bases.
    Class(FuncRef),
    Instance(FuncRef),
    BoundMethod(FuncRef, Box<Val>),
    /// A record (`@dataclass`, named tuple) built with some field from the device
    /// (`ArchInfo(major, minor, suffix)` where `major` may be overridden on one path): its
    /// fields as built, in declaration order; methods through the class.
    Record(FuncRef, Vec<(String, Val)>),
    /// `super()` in a method of the class: its methods are looked up from the class's
    /// bases, bound to the receiver.
    Super(FuncRef, Box<Val>),
    NamedTuple,
    Free(String),
    Unknown(String),
}

/// A piece of a device-built string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StrPiece {
    Lit(String),
    Dev(DevVar),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FuncRef {
    pub module: String,
    pub qualname: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Builtin {
    Cache,
    Partial,
    Tuple,
    List,
    /// `set` and `frozenset`: membership is all gates ask of them.
    Set,
    Map,
    Int,
    IsInstance,
    Version,
    ToInt,
    CudaSplit,
    Fact(Fact, Option<String>),
}

/// Where names are looked up.
#[derive(Clone, Copy)]
pub enum Locals<'s> {
    None,
    /// Inside a function of the module, at a byte offset: what the module's semantic model
    /// says reaches that offset (`SemanticModel::reaching`).
    Site {
        function: usize,
        byte: usize,
    },
    Bound(&'s HashMap<String, Val>),
}

#[derive(Clone, Copy)]
pub struct Scope<'s> {
    pub module: &'s SharedModule,
    pub locals: Locals<'s>,
}

impl<'s> Scope<'s> {
    /// Where a statement of the module stands: inside `function` at `byte`, or at module
    /// level.
    pub fn at(module: &'s SharedModule, function: Option<usize>, byte: usize) -> Scope<'s> {
        Scope {
            module,
            locals: match function {
                Some(function) => Locals::Site { function, byte },
                None => Locals::None,
            },
        }
    }
}

pub struct Resolver<'a> {
    /// Every question to the index goes through here, so a logging resolver's `ReadLog`
    /// holds all it read of other modules.
    index: IndexReads<'a>,
    pub rules: &'a Rules,
    tokens: Tokens,
    /// The form tokens alone: an attribute named like a gate (`x.is_sm100`) on an object
    /// gatefix cannot follow is unknown; one named like a rule fact (`tensor.is_cuda`) is not.
    form_tokens: &'static Tokens,
    shared: MemoShared,
    globals: Memo<(String, String), Option<Val>>,
    locals: Memo<LocalKey, Val>,
    /// A local read's value by the bindings that reach it (`SemanticModel::reaching`): reads
    /// at many places of a function see the same few sets.
    reached: Memo<ReachKey, Val>,
    /// The `if` tests that guard bindings, as predicates: module, function, offset.
    tests: Memo<(usize, usize, usize), Pred>,
    /// Function values by callee and arguments, with what was assumed computing them.
    calls: Memo<CallKey, Val>,
    /// What a parameter's callers pass (module, function, position): `None` when none passes
    /// a device value. Read at every use of the parameter, so computed once.
    passed: Memo<LocalKey, Option<Val>>,
}

/// A local assignment: module, function, index of the assignment.
type LocalKey = (usize, usize, usize);
/// A local read: module, function, the name (as its first binding in the scope that binds
/// it), and the bindings that reach it.
type ReachKey = Prehashed<(usize, usize, BindingId, Vec<Reach>)>;

/// Steps one site may take; a safety net against pathological code, far above real gates.
/// 20,000 since 2026-12-05: the audit JSON of sglang 0.5.23 with flashinfer 0.7.2, of vllm
/// 0.33.0 with flashinfer 0.7.2.post1, of its renamed fork and of sglang 0.5.13.post1 is
/// byte-identical to 50,000's, and the plain audit ~8% faster (the sites that reach the budget end unknown
/// either way, at ~1-2 µs a step). At 10,000 vllm loses one site that was unknown anyway; at
/// 5,000 predicates change. 50,000 since 2026-12-02 (from 400,000), for the same reason.
const STEP_BUDGET: u64 = 20_000;
/// Steps for deciding whether one call argument carries the device's value (`gate::feed`).
const FEED_STEP_BUDGET: u64 = 2_000;

thread_local! {
    static IN_PROGRESS: std::cell::RefCell<FxHashSet<(String, String)>> =
        std::cell::RefCell::new(FxHashSet::default());
    static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Frames open on this thread (`MAX_FRAMES`).
    static FRAMES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// How many answers so far depended on where the resolver stood rather than on the code
    /// (a depth limit, the step budget, a cycle cut, a join limit). A value computed while
    /// this moved is not memoised: the caches are shared between threads, and a cut value
    /// cached by one site would leak into another site that could have resolved it, making
    /// the audit depend on thread scheduling.
    static CUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// What was assumed while resolving the current site, as phrases: a parameter a
    /// `[[parameter]]` rule says is the device's value, an override left unset.
    static ASSUMED: std::cell::RefCell<std::collections::BTreeSet<String>> =
        const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
    /// Local reads being evaluated (`Resolver::bound_at`), by module, function, name and
    /// the bindings that reach them, each with the `LEVEL` it was opened at.
    static LOCALS_IN_PROGRESS: std::cell::RefCell<FxHashMap<ReachKey, u32>> =
        std::cell::RefCell::new(FxHashMap::default());
    /// How many memoised computations are open on this thread (`Mark`).
    static LEVEL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// The lowest `LEVEL` at which a local read that depends on itself was opened, among
    /// those cut since the innermost open memoised computation began (`u32::MAX`: none).
    static CYCLE_FLOOR: std::cell::Cell<u32> = const { std::cell::Cell::new(u32::MAX) };
    /// A hash of what is open on this thread (`IN_PROGRESS`, `LOCALS_IN_PROGRESS` with
    /// levels, `PARAMS_IN_PROGRESS`): part of a computation's `Stance`.
    static OPEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Parameters whose callers are being read (a recursive function reads itself).
    static PARAMS_IN_PROGRESS: std::cell::RefCell<FxHashSet<(usize, usize, usize)>> =
        std::cell::RefCell::new(FxHashSet::default());
}

/// Starts a fresh step budget for one site.
pub fn reset_budget() {
    STEPS.with(|steps| steps.set(0));
    ASSUMED.with(|assumed| assumed.borrow_mut().clear());
}

/// What was assumed while resolving the current site, joined with `; `.
pub fn take_assumptions() -> Option<String> {
    ASSUMED.with(|assumed| {
        let assumed = std::mem::take(&mut *assumed.borrow_mut());
        (!assumed.is_empty()).then(|| assumed.into_iter().collect::<Vec<_>>().join("; "))
    })
}

fn assume(name: &str) {
    ASSUMED.with(|assumed| {
        assumed.borrow_mut().insert(name.to_string());
    });
}

/// `compute`'s value and everything it assumed, for a memo entry. All of it, also what the
/// site had assumed before: a later site that hits the entry has assumed none of it (keeping
/// only the new phrases lost `_arch is None` for every site after the first that read it).
fn with_assumptions<T>(compute: impl FnOnce() -> T) -> (T, Vec<String>) {
    let before = ASSUMED.with(|assumed| std::mem::take(&mut *assumed.borrow_mut()));
    let val = compute();
    let made = ASSUMED.with(|assumed| {
        let mut assumed = assumed.borrow_mut();
        let made: Vec<String> = assumed.iter().cloned().collect();
        assumed.extend(before);
        made
    });
    (val, made)
}

/// A memo table: values by key, each with what was assumed computing it (`memoised`), and
/// beside them the values that depend on where the resolver stood, by that stance
/// (`Replay`). Memo tables are hashed with FxHash: their keys are small tuples, offsets and
/// pointers (and the reaching bindings of a local read, hashed at every read), looked up
/// millions of times per audit, never chosen by an attacker; SipHash was 3% of the audit's
/// CPU.
struct Memo<K, T> {
    kept: Mutex<FxHashMap<K, (T, Vec<String>)>>,
    replays: Mutex<FxHashMap<K, Replays<T>>>,
}

impl<K, T> Default for Memo<K, T> {
    fn default() -> Self {
        Memo {
            kept: Mutex::new(FxHashMap::default()),
            replays: Mutex::new(FxHashMap::default()),
        }
    }
}

/// A key's values cut short, by where each was computed: the first computed from a stance
/// is the one replayed there. A map, as a key can be reached from hundreds of stances.
type Replays<T> = FxHashMap<Stance, Replay<T>>;

/// Everything a computation's value can depend on besides its key and the code: how deep it
/// starts (`MAX_DEPTH`), how many frames and memoised computations are open around it, what
/// is open on this thread (the cycle checks' sets), and what the memo tables held (their
/// resolver's count of kept values: a value kept since could be a hit that a computation
/// afresh would read instead of working out, and resolve further).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Stance {
    depth: u32,
    frames: u32,
    level: u32,
    open: u64,
    kept: u64,
}

impl Stance {
    fn now(depth: u32, shared: &MemoShared) -> Stance {
        Stance {
            depth,
            frames: FRAMES.with(|f| f.get()),
            level: LEVEL.with(|l| l.get()),
            open: OPEN.with(|o| o.get()),
            kept: shared.kept.load(Ordering::Relaxed),
        }
    }
}

/// What one resolver's memo tables share.
#[derive(Debug)]
struct MemoShared {
    /// How many values they kept (`Stance`).
    kept: AtomicU64,
    /// How many computations ran afresh (not kept, not replayed): for tests.
    computed: AtomicU64,
    /// Whether values cut short are replayed (`Replay`); off only to check that replaying
    /// changes nothing.
    replay: bool,
}

/// A value that depended on where the resolver stood (something was cut short while computing
/// it), kept with everything its computation did to that state: from the same `Stance`, with
/// the budget left to take its steps, computing it again takes the same steps, cuts the same
/// way, assumes the same and returns the same value, so the value and those effects are
/// replayed instead. Functions with long chains of locals read near the depth limit were
/// otherwise worked out again at every read (tens of thousands of steps per site).
struct Replay<T> {
    val: T,
    assumed: Vec<String>,
    steps: u64,
    cut: bool,
    floor: u32,
}

impl<K: Eq + std::hash::Hash, T: Clone> Memo<K, T> {
    fn hit(&self, key: &K) -> Option<T> {
        let kept = self.kept.lock().expect("no poisoned lock");
        let (val, assumed) = kept.get(key)?;
        for phrase in assumed {
            assume(phrase);
        }
        Some(val.clone())
    }

    fn keep(&self, key: K, val: T, assumed: Vec<String>, shared: &MemoShared) {
        self.kept
            .lock()
            .expect("no poisoned lock")
            .insert(key, (val, assumed));
        shared.kept.fetch_add(1, Ordering::Relaxed);
    }

    fn replay(&self, key: &K, stance: &Stance, shared: &MemoShared) -> Option<T> {
        if !shared.replay {
            return None;
        }
        let replays = self.replays.lock().expect("no poisoned lock");
        let replay = replays.get(key)?.get(stance)?;
        let steps = STEPS.with(|s| s.get());
        if steps + replay.steps > STEP_BUDGET {
            return None;
        }
        STEPS.with(|s| s.set(steps + replay.steps));
        if replay.cut {
            cut();
        }
        CYCLE_FLOOR.with(|f| f.set(f.get().min(replay.floor)));
        for phrase in &replay.assumed {
            assume(phrase);
        }
        Some(replay.val.clone())
    }

    /// Records a value computed from `stance` that could not be kept, if nothing was kept
    /// while computing it and the budget was not reached (either would make a computation
    /// afresh differ).
    #[allow(clippy::too_many_arguments)]
    fn remember(
        &self,
        key: K,
        stance: Stance,
        val: &T,
        assumed: Vec<String>,
        steps_before: u64,
        left: Left,
        shared: &MemoShared,
    ) {
        let steps = STEPS.with(|s| s.get());
        if !shared.replay
            || shared.kept.load(Ordering::Relaxed) != stance.kept
            || steps > STEP_BUDGET
        {
            return;
        }
        let replay = Replay {
            val: val.clone(),
            assumed,
            steps: steps - steps_before,
            cut: left.cut,
            floor: left.floor,
        };
        self.replays
            .lock()
            .expect("no poisoned lock")
            .entry(key)
            .or_default()
            .entry(stance)
            .or_insert(replay);
    }
}

/// Runs `evaluate` in a new frame (depth 0) while frames are left, else one level below
/// `depth`. The count is restored on the way out, unwinding included.
fn in_frame<T>(depth: u32, evaluate: impl FnOnce(u32) -> T) -> T {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            FRAMES.with(|f| f.set(self.0));
        }
    }
    let frames = FRAMES.with(|f| f.get());
    if frames >= MAX_FRAMES {
        return evaluate(depth + 1);
    }
    let _restore = Restore(frames);
    FRAMES.with(|f| f.set(frames + 1));
    evaluate(0)
}

/// `compute`'s value, once per key of `table`: a hit replays what was assumed computing it,
/// and a value computed while something was cut short (depth, budget, a cycle opened outside
/// the computation: `Mark::leave`) is not kept, because it depends on where the resolver
/// stood. The table is not locked while computing
/// (the computation reads it again).
fn memoised<K: Eq + std::hash::Hash, T: Clone>(
    table: &Memo<K, T>,
    shared: &MemoShared,
    key: K,
    depth: u32,
    compute: impl FnOnce() -> T,
) -> T {
    if let Some(val) = table.hit(&key) {
        return val;
    }
    let stance = Stance::now(depth, shared);
    if let Some(val) = table.replay(&key, &stance, shared) {
        return val;
    }
    shared.computed.fetch_add(1, Ordering::Relaxed);
    let steps_before = STEPS.with(|s| s.get());
    let mark = Mark::enter();
    let (val, assumed) = with_assumptions(compute);
    let left = mark.leave();
    if left.keep {
        table.keep(key, val.clone(), assumed, shared);
    } else {
        table.remember(key, stance, &val, assumed, steps_before, left, shared);
    }
    val
}

/// Why a guarded choice with too many arms is unknown.
const TOO_MANY_VALUES: &str = "too many values depend on the device here";

/// What `choice` calls a free value chosen among too many arms on conditions that do not
/// depend on the device (a caller that knows the variable names it instead).
const INDEPENDENT_CHOICE: &str = "a value the configuration chooses";

/// Whether a condition holds only device-independent atoms.
fn free_only(pred: &Pred) -> bool {
    !pred.any_atom(&|atom| !matches!(atom, Atom::Free(_)))
}

/// A plain value, or a choice of plain values on device-independent conditions.
fn device_independent(val: &Val) -> bool {
    match val {
        Val::Str(_) | Val::Int(_) | Val::Bool(_) | Val::NoneV | Val::Free(_) => true,
        Val::Choice(arms) => arms
            .iter()
            .all(|(guard, val)| free_only(guard) && device_independent(val)),
        _ => false,
    }
}

/// More arms than this in a guarded choice: the value is unknown.
const MAX_CHOICE_ARMS: usize = 8;

/// A guarded choice, flattened (an arm that is itself a choice splits into its arms), with
/// impossible arms dropped; one arm that always holds is its value.
pub fn choice(arms: Vec<(Pred, Val)>) -> Val {
    let mut out: Vec<(Pred, Val)> = Vec::new();
    for (guard, val) in arms {
        if guard == Pred::Const(false) {
            continue;
        }
        match val {
            Val::Choice(inner) => {
                for (g, v) in inner {
                    out.push((Pred::and(vec![guard.clone(), g]), v));
                }
            }
            other => out.push((guard, other)),
        }
    }
    out.retain(|(g, _)| *g != Pred::Const(false));
    if out.len() > MAX_CHOICE_ARMS {
        // Arms that give the same value are one arm under the `or` of their guards (a
        // variable reassigned to the same backend name on several paths).
        let mut merged: Vec<(Vec<Pred>, Val)> = Vec::new();
        for (guard, val) in out {
            match merged.iter_mut().find(|(_, v)| *v == val) {
                Some((guards, _)) => guards.push(guard),
                None => merged.push((vec![guard], val)),
            }
        }
        out = merged
            .into_iter()
            .map(|(guards, val)| (Pred::or(guards), val))
            .collect();
    }
    if out.len() > MAX_CHOICE_ARMS
        || out.iter().map(|(g, _)| g.size()).sum::<usize>() > MAX_PRED_NODES
    {
        // Too many arms to keep apart, but neither a value nor the test that picks it
        // depends on the device: which one holds is the configuration's choice, a free value,
        // not an unknown one (sglang's `moe_runner_backend`, reassigned under a dozen flag
        // and quantization tests before `== "auto" and is_sm120`).
        let (free, device): (Vec<_>, Vec<_>) = out
            .into_iter()
            .partition(|(guard, val)| free_only(guard) && device_independent(val));
        if device.is_empty() {
            return Val::Free(INDEPENDENT_CHOICE.into());
        }
        // The arms the device picks stay apart; the configuration's arms are one free value,
        // wherever none of the device's holds (the arms are disjoint).
        if free.is_empty() || device.len() >= MAX_CHOICE_ARMS {
            return Val::Unknown(TOO_MANY_VALUES.into());
        }
        let elsewhere = Pred::or(device.iter().map(|(guard, _)| guard.clone()).collect()).negate();
        out = device;
        out.push((elsewhere, Val::Free(INDEPENDENT_CHOICE.into())));
        if out.iter().map(|(g, _)| g.size()).sum::<usize>() > MAX_PRED_NODES {
            return Val::Unknown(TOO_MANY_VALUES.into());
        }
    }
    if out.len() == 1 && out[0].0 == Pred::Const(true) {
        return out.pop().expect("one arm").1;
    }
    if out.is_empty() {
        return Val::Unknown("no value reaches here".into());
    }
    // Arms with the same value merge (their guards joined).
    let mut merged: Vec<(Pred, Val)> = Vec::new();
    for (guard, val) in out {
        match merged.iter_mut().find(|(_, v)| *v == val) {
            Some(arm) => arm.0 = Pred::or(vec![arm.0.clone(), guard]),
            None => merged.push((guard, val)),
        }
    }
    if merged.len() == 1 {
        return merged.pop().expect("one arm").1;
    }
    Val::Choice(merged)
}

/// Where a memoised computation began; when it ends, whether its value is the code's own or
/// depends on where the resolver stood.
struct Mark {
    cuts: u64,
    floor: u32,
    level: u32,
}

impl Mark {
    fn enter() -> Mark {
        let level = LEVEL.with(|l| l.replace(l.get() + 1));
        Mark {
            cuts: cuts(),
            floor: CYCLE_FLOOR.with(|f| f.replace(u32::MAX)),
            level,
        }
    }

    /// Whether the value just computed may be kept: nothing was cut short (depth, budget, a
    /// parameter's or a global's cycle), and every local read cut for depending on itself was
    /// opened by this computation (its own read, or one inside it), so computing the value
    /// afresh from anywhere cuts it the same way. A read opened further out (a caller's loop
    /// variable) makes the value depend on that caller, as before.
    fn leave(self) -> Left {
        LEVEL.with(|l| l.set(self.level));
        let floor = CYCLE_FLOOR.with(|f| f.replace(f.get().min(self.floor)));
        let cut = cuts() != self.cuts;
        Left {
            keep: !cut && floor >= self.level,
            cut,
            floor,
        }
    }
}

/// How a memoised computation ended (`Mark::leave`).
#[derive(Debug, Clone, Copy)]
struct Left {
    /// Its value is the code's own.
    keep: bool,
    /// Something was cut short inside it.
    cut: bool,
    /// The lowest level of a self-dependent local read cut inside it that was opened outside.
    floor: u32,
}

/// Flips `entry` in `OPEN`, when it is opened and again when it is closed: the hash is then
/// the same for the same open entries, whatever order they were opened in.
fn toggle_open(entry: impl std::hash::Hash) {
    use std::hash::BuildHasher;
    // FxHash mixes little; XORed hashes of similar keys need a full avalanche (splitmix64).
    let mut z = rustc_hash::FxBuildHasher
        .hash_one(entry)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    OPEN.with(|o| o.set(o.get() ^ z));
}

fn cuts() -> u64 {
    CUTS.with(|cuts| cuts.get())
}

/// Records that the answer being built depends on the resolver's position (see `CUTS`).
fn cut() {
    CUTS.with(|cuts| cuts.set(cuts.get() + 1));
}

fn take_step() -> bool {
    STEPS.with(|steps| {
        steps.set(steps.get() + 1);
        let ok = steps.get() <= STEP_BUDGET;
        if !ok {
            cut();
        }
        ok
    })
}

impl<'a> Resolver<'a> {
    pub fn new(index: &'a ModuleIndex, rules: &'a Rules, tokens: Tokens) -> Self {
        Self::reading(IndexReads::plain(index), rules, tokens)
    }

    /// A resolver that logs what it reads of the index (`take_read_log`).
    pub fn logging(index: &'a ModuleIndex, rules: &'a Rules, tokens: Tokens) -> Self {
        Self::reading(IndexReads::logged(index), rules, tokens)
    }

    /// The same resolver, working out again every value cut short instead of replaying it
    /// (`Replay`): for the test that replaying changes no answer.
    pub fn without_replays(mut self) -> Self {
        self.shared.replay = false;
        self
    }

    /// How many values were computed afresh so far (not read from a memo table, not replayed).
    pub fn computations(&self) -> u64 {
        self.shared.computed.load(Ordering::Relaxed)
    }

    /// What a `logging` resolver read so far (empty for one made with `new`).
    pub fn take_read_log(&self) -> ReadLog {
        self.index.take_log()
    }

    fn reading(index: IndexReads<'a>, rules: &'a Rules, tokens: Tokens) -> Self {
        Resolver {
            index,
            rules,
            tokens,
            form_tokens: super::tokens::form_tokens(),
            shared: MemoShared {
                kept: AtomicU64::new(0),
                computed: AtomicU64::new(0),
                replay: true,
            },
            globals: Memo::default(),
            locals: Memo::default(),
            reached: Memo::default(),
            tests: Memo::default(),
            calls: Memo::default(),
            passed: Memo::default(),
        }
    }

    /// Whether an argument a call passes carries the device's value, read where the call
    /// is: what makes the callee's parameter the device's (`gate::feed`).
    /// `spread`: the argument is an item of a splat, which counts only as a device number.
    pub fn passes_device_value(
        &self,
        module: &SharedModule,
        site: &CallSite,
        arg: &Expr,
        spread: bool,
    ) -> bool {
        reset_budget();
        // A device value passed on is found in a few steps; an argument that takes more is
        // not worth a candidate (this runs for thousands of calls).
        STEPS.with(|steps| steps.set(STEP_BUDGET - FEED_STEP_BUDGET));
        let scope = Scope::at(module, site.function, site.byte);
        let val = capability_pair(self.eval(arg, scope, 0));
        let _ = take_assumptions();
        if spread {
            is_device(&val)
        } else {
            feeds_device(&val)
        }
    }

    /// The predicate of an expression used as a condition.
    pub fn condition(&self, expr: &Expr, scope: Scope, depth: u32) -> Pred {
        let val = self.eval(expr, scope, depth);
        to_pred(val)
    }

    pub fn eval(&self, expr: &Expr, scope: Scope, depth: u32) -> Val {
        if depth > MAX_DEPTH {
            cut();
            return Val::Unknown(format!(
                "resolving `{expr}` goes deeper than {MAX_DEPTH} steps"
            ));
        }
        if !take_step() {
            return Val::Unknown(format!("resolving `{expr}` exceeds the step budget"));
        }
        match expr {
            Expr::Int(n) => Val::Int(*n),
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Bool(b) => Val::Bool(*b),
            Expr::NoneLit => Val::NoneV,
            Expr::Tuple(items) | Expr::List(items) | Expr::Set(items) => Val::Seq(
                items
                    .iter()
                    .map(|i| self.eval(i, scope, depth + 1))
                    .collect(),
            ),
            Expr::Name(_) | Expr::Attr(..) | Expr::Call { .. } | Expr::Subscript(..) => {
                // The text is made once: the pruning test reads it, and a pruned value is it.
                // A name is its own text, and most pruned values are names.
                let text = match expr {
                    Expr::Name(name) => std::borrow::Cow::Borrowed(name.as_str()),
                    _ => std::borrow::Cow::Owned(expr.text()),
                };
                if self.worth_resolving_as(expr, &text, scope) {
                    self.eval_unpruned(expr, scope, depth)
                } else {
                    Val::Free(text.into_owned())
                }
            }
            _ => self.eval_unpruned(expr, scope, depth),
        }
    }

    /// Evaluates without the pruning test, for the parts of a chain already judged worth it.
    fn eval_unpruned(&self, expr: &Expr, scope: Scope, depth: u32) -> Val {
        match expr {
            Expr::Name(name) => self.name(name, scope, depth),
            Expr::Attr(obj, attr) => self.attr(expr, obj, attr, scope, depth),
            Expr::Call { func, args, .. }
                if args.is_empty()
                    && matches!(func.as_ref(), Expr::Name(name) if name == "super")
                    && !self.is_local("super", scope) =>
            {
                self.zero_arg_super(scope)
            }
            Expr::Call { func, args, kwargs } => {
                let callee = self.eval_callee(func, scope, depth);
                // A callee that takes no arguments into its value (an external function, a
                // free value) makes the call free without them: resolving the arguments costs
                // flow queries over the caller's locals (a DSL kernel's `cute.arch.fma(...)`
                // inside loops, thousands of them) and changes nothing. An unknown callee
                // still has its arguments read, for the parameters they assume to be the
                // device's (`checker.supports(cc)`: the gate is about `cc`).
                if !consumes_arguments(&callee) && !matches!(callee, Val::Unknown(_)) {
                    return self.call(callee, Vec::new(), Vec::new(), expr, depth);
                }
                let mut values: Vec<Val> = Vec::with_capacity(args.len());
                for arg in args {
                    match arg {
                        Expr::Starred(inner) => {
                            values.extend(splat(self.eval(inner, scope, depth + 1), arg))
                        }
                        _ => values.push(self.eval(arg, scope, depth + 1)),
                    }
                }
                let args = values;
                let kwargs = kwargs
                    .iter()
                    .map(|(k, v)| (k.clone(), self.eval(v, scope, depth + 1)))
                    .collect();
                // A method of an object the module holds (`current_platform.has_...(90)`),
                // not of the method's own receiver: the platform-method form, as a rule for
                // the object would have it.
                let on_object = matches!(&callee, Val::BoundMethod(_, receiver)
                        if matches!(receiver.as_ref(), Val::Instance(_)))
                    && matches!(func.as_ref(), Expr::Attr(obj, _)
                        if matches!(obj.as_ref(), Expr::Name(n) if n != "self" && n != "cls"));
                let val = self.call(callee, args, kwargs, expr, depth);
                if on_object {
                    relabel(val, Form::PlatformMethod)
                } else {
                    val
                }
            }
            Expr::Subscript(value, index) => {
                let value = self.eval_callee(value, scope, depth);
                // Only a device value, a sequence or a choice is read by its index; anything
                // else indexes to itself or to free text (`w_cache[r0 + 1]` in a DSL kernel's
                // loop), whatever the index is: not resolved.
                if !indexed_by_value(&value) {
                    return subscript(value, Val::Free(String::new()), expr);
                }
                let index = self.eval(index, scope, depth + 1);
                subscript(value, index, expr)
            }
            Expr::Slice => Val::Free(":".into()),
            Expr::And(parts) => Val::Pred(Pred::and(
                parts
                    .iter()
                    .map(|p| self.condition(p, scope, depth + 1))
                    .collect(),
            )),
            Expr::Or(parts) => Val::Pred(Pred::or(
                parts
                    .iter()
                    .map(|p| self.condition(p, scope, depth + 1))
                    .collect(),
            )),
            Expr::Not(inner) => Val::Pred(self.condition(inner, scope, depth + 1).negate()),
            Expr::Compare(first, rest) => self.compare_chain(first, rest, scope, depth),
            Expr::BinOp(op, l, r) => {
                let l = self.eval(l, scope, depth + 1);
                let r = self.eval(r, scope, depth + 1);
                binop(*op, l, r, expr)
            }
            Expr::IfExp { test, body, orelse } => {
                if let Some(val) = self.override_or_detect(test, body, orelse, scope, depth) {
                    return val;
                }
                let test = self.condition(test, scope, depth + 1);
                let body = self.eval(body, scope, depth + 1);
                let orelse = self.eval(orelse, scope, depth + 1);
                select(test, body, orelse, expr)
            }
            Expr::FString { parts, .. } => self.fstring(parts, expr, scope, depth),
            Expr::Dict(pairs) => table(pairs).unwrap_or_else(|| Val::Free(expr.text())),
            // A splat read on its own (not as a call's arguments) is no one value.
            Expr::Other(_) | Expr::Starred(_) => Val::Free(expr.text()),
            Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) | Expr::NoneLit => {
                self.eval(expr, scope, depth)
            }
            Expr::Tuple(_) | Expr::List(_) | Expr::Set(_) => self.eval(expr, scope, depth),
        }
    }

    /// An f-string: a device string when it interpolates device numbers and nothing else
    /// unknown, the plain string when every piece is known, free otherwise.
    fn fstring(&self, parts: &[FPart], expr: &Expr, scope: Scope, depth: u32) -> Val {
        let mut pieces: Vec<StrPiece> = Vec::new();
        let mut device = false;
        for part in parts {
            match part {
                FPart::Lit(text) => pieces.push(StrPiece::Lit(text.clone())),
                FPart::Value(value) => match self.eval(value, scope, depth + 1) {
                    Val::Dev(var @ (DevVar::Major | DevVar::Minor | DevVar::Sm)) => {
                        device = true;
                        pieces.push(StrPiece::Dev(var));
                    }
                    Val::Int(n) => pieces.push(StrPiece::Lit(n.to_string())),
                    Val::Str(text) => pieces.push(StrPiece::Lit(text)),
                    Val::Unknown(reason) => return Val::Unknown(reason),
                    _ => return Val::Free(expr.text()),
                },
            }
        }
        if device {
            return Val::DevStr(pieces);
        }
        Val::Str(
            pieces
                .into_iter()
                .map(|p| match p {
                    StrPiece::Lit(text) => text,
                    StrPiece::Dev(_) => unreachable!("no device piece"),
                })
                .collect(),
        )
    }

    /// `detect() if arch is None else arch` (or `arch if arch is not None else detect()`):
    /// an optional override of a device value. Without the override the value is the
    /// device's, and that is what the gates reading it are evaluated at; the record says so
    /// (`assumes: arch is None`). `None` when the expression is not this idiom or the detected
    /// arm does not depend on the device.
    fn override_or_detect(
        &self,
        test: &Expr,
        body: &Expr,
        orelse: &Expr,
        scope: Scope,
        depth: u32,
    ) -> Option<Val> {
        let Expr::Compare(first, rest) = test else {
            return None;
        };
        let (Expr::Name(name), [(op, Expr::NoneLit)]) = (first.as_ref(), rest.as_slice()) else {
            return None;
        };
        let (detected, given) = match op {
            CmpOp::Is => (body, orelse),
            CmpOp::IsNot => (orelse, body),
            _ => return None,
        };
        if !matches!(given, Expr::Name(n) if n == name) {
            return None;
        }
        let val = self.eval(detected, scope, depth + 1);
        if !carries_device(&val) {
            return None;
        }
        assume(&format!("{name} is None, so the device's value is used"));
        Some(val)
    }

    /// Evaluates the object of an attribute or call without the pruning test: the whole
    /// chain (`torch.version.cuda`) was already judged worth resolving.
    fn eval_callee(&self, expr: &Expr, scope: Scope, depth: u32) -> Val {
        self.eval_unpruned(expr, scope, depth + 1)
    }

    /// Cheap pruning: an expression that names no arch token, no rule, and no name of its own
    /// module or function cannot depend on the architecture through anything gatefix knows.
    fn worth_resolving(&self, expr: &Expr, scope: Scope) -> bool {
        self.worth_resolving_as(expr, &expr.text(), scope)
    }

    /// `worth_resolving` with the expression's text (`Display`) already made.
    fn worth_resolving_as(&self, expr: &Expr, text: &str, scope: Scope) -> bool {
        if self.tokens.hit(text.as_bytes()) {
            return true;
        }
        // `int(minor)`, `tuple(map(int, ...))`: a builtin conversion is worth what its
        // arguments are (the call's base name, `int`, is no binding of the module).
        if let Expr::Call { func, args, .. } = expr
            && let Expr::Name(name) = func.as_ref()
            && python_builtin(name).is_some()
            && !self.is_local(name, scope)
            && !scope.module.assigns.contains_key(name.as_str())
            && !scope.module.function_index.contains_key(name.as_str())
        {
            // A literal argument is its own value (`frozenset({90, 100})`).
            return args
                .iter()
                .any(|a| is_literal(a) || self.worth_resolving(a, scope));
        }
        // `major, minor = cap[0], cap[1]` binds `major` to `(cap[0], cap[1])[0]`: worth what
        // the tuple's elements are.
        if let Expr::Subscript(value, _) = expr
            && let Expr::Tuple(items) | Expr::List(items) = value.as_ref()
        {
            return items
                .iter()
                .any(|i| is_literal(i) || self.worth_resolving(i, scope));
        }
        let base = base_name(expr);
        base.is_some_and(|name| {
            self.is_local(name, scope)
                || scope.module.assigns.contains_key(name)
                || scope.module.function_index.contains_key(name)
                || scope.module.imports.contains_key(name)
                || scope.module.global_stores.contains_key(name)
                // A record (`@dataclass`, named tuple) may be built from device values; other
                // classes make instances whose calls resolve through their methods.
                || scope.module.record_fields.contains_key(name)
                // A class the partial parse left out (a plain `@dataclass`) that a store
                // builds from device values.
                || (scope.module.partial
                    && !scope.module.global_stores.is_empty()
                    && self.index.has_top_level_class(&scope.module.module, name))
        })
    }

    fn name(&self, name: &str, scope: Scope, depth: u32) -> Val {
        if let Some(val) = self.local(name, scope, depth) {
            return val;
        }
        let module = &scope.module.module;
        if let Some(val) = self.global(module, name, depth + 1) {
            let is_flag =
                scope.module.assigns.contains_key(name) || scope.module.imports.contains_key(name);
            return match val {
                Val::Pred(pred) if is_flag => Val::Pred(pred.with_form(Form::FlagUse)),
                other => other,
            };
        }
        if let Some(builtin) = python_builtin(name) {
            return Val::Builtin(builtin);
        }
        if let Some(rule) = self.rules.any_module_value(name) {
            return rule_value(rule);
        }
        self.missing(name, &format!("`{name}` is not defined in module {module}"))
    }

    /// A name gatefix cannot find is unknown when it looks like a gate (`is_sm100`), free
    /// otherwise; names that merely contain a rule's name (`get_cuda_version`) are not gates.
    fn missing(&self, name: &str, reason: &str) -> Val {
        if self.form_tokens.hit(name.as_bytes()) {
            Val::Unknown(reason.to_string())
        } else {
            Val::Free(name.to_string())
        }
    }

    /// Whether `name` is a parameter of the function a site stands in (or of one around it),
    /// as the gate site reads it: its value is what callers or rules say, never detected.
    fn is_site_parameter(&self, name: &str, scope: Scope) -> bool {
        let Locals::Site { function, .. } = scope.locals else {
            return false;
        };
        let mut current = Some(function);
        while let Some(f) = current {
            let function = &scope.module.functions[f];
            if function.params.iter().any(|p| p.name == name) {
                return true;
            }
            current = function.parent;
        }
        false
    }

    /// Whether `name` read where `scope` stands is a function's local (a parameter or any
    /// binding of the function or of one around it), not the module's.
    fn is_local(&self, name: &str, scope: Scope) -> bool {
        match scope.locals {
            Locals::None => false,
            Locals::Bound(map) => map.contains_key(name),
            Locals::Site { byte, .. } => function_binds(&scope.module.semantic, name, byte, false),
        }
    }

    fn local(&self, name: &str, scope: Scope, depth: u32) -> Option<Val> {
        match scope.locals {
            Locals::None => None,
            Locals::Bound(map) => map.get(name).cloned(),
            Locals::Site { function, byte, .. } => {
                self.bound_at(name, scope.module, function, byte, depth)
            }
        }
    }

    /// `name` read at `byte` inside `function`: the bindings of it that reach the read
    /// (`SemanticModel::reaching`), each under the guards of the paths it comes by, as one
    /// guarded choice. `None` when no binding of a function reaches it: the name is the
    /// module's (`global`).
    fn bound_at(
        &self,
        name: &str,
        module: &SharedModule,
        function: usize,
        byte: usize,
        depth: u32,
    ) -> Option<Val> {
        // A name no function around the read binds is the module's: asking the flow would
        // walk the whole module for nothing. One a function stores under `global` is read as
        // the flow says (the store just made, else the module's value).
        let model = &module.semantic;
        let named = function_binding(model, name, byte, true)?;
        let mut reaches = model.reaching(name, byte);
        let in_function = |reach: &Reach| {
            reach
                .binding
                .is_some_and(|id| function_scoped(model, model.binding(id)))
        };
        if !reaches.iter().any(in_function) {
            return None;
        }
        // A closure may run after any binding of the function around it: the last one
        // stands for them (what the function leaves behind).
        if reaches.len() > 1 && reaches.iter().all(Reach::always) {
            reaches.sort_by_key(|reach| reach.binding);
            reaches.drain(..reaches.len() - 1);
        }
        // The latest binding first, then the ones it may have replaced: a choice reads as
        // the code does (`x = 1` ... `if c: x = 2` is "2 if c, else 1").
        reaches.reverse();
        let key = Prehashed::new((
            std::sync::Arc::as_ptr(module) as usize,
            function,
            named,
            reaches.clone(),
        ));
        // A value that depends on itself (`x = f(x)` read through a loop's back edge that
        // the guards did not rule out) is cut, not followed round. The cut is the same
        // wherever the read was first opened from, so it does not keep the values computed
        // inside that read from the memo tables (`Mark::leave`), only those around it.
        let level = LEVEL.with(|l| l.get());
        let opened = LOCALS_IN_PROGRESS.with(|set| {
            let mut set = set.borrow_mut();
            let opened = set.get(&key).copied();
            if opened.is_none() {
                set.insert(key.clone(), level);
            }
            opened
        });
        if opened.is_none() {
            toggle_open(("local", &key, level));
        }
        if let Some(opened) = opened {
            CYCLE_FLOOR.with(|floor| floor.set(floor.get().min(opened)));
            return Some(Val::Unknown(format!("`{name}` depends on itself")));
        }
        let val = memoised(&self.reached, &self.shared, key.clone(), depth, || {
            if let [reach] = reaches.as_slice() {
                return self.reach_value(name, module, function, reach, depth);
            }
            let mut arms = Vec::new();
            for reach in &reaches {
                let guard = Pred::or(
                    reach
                        .ways
                        .iter()
                        .map(|way| {
                            Pred::and(
                                way.iter()
                                    .map(|g| self.guard(module, function, g, depth))
                                    .collect(),
                            )
                        })
                        .collect(),
                );
                // A binding only a path gatefix rules out reaches by (a later pass of a
                // loop, an exception) is not evaluated at all.
                if guard != Pred::Const(false) {
                    arms.push((
                        guard,
                        self.reach_value(name, module, function, reach, depth),
                    ));
                }
            }
            match choice(arms) {
                // The configuration's choice among many values: named by the variable.
                Val::Free(text) if text == INDEPENDENT_CHOICE => Val::Free(name.to_string()),
                val => val,
            }
        });
        LOCALS_IN_PROGRESS.with(|set| set.borrow_mut().remove(&key));
        toggle_open(("local", &key, level));
        Some(val)
    }

    /// The value one reaching binding gives `name`.
    fn reach_value(
        &self,
        name: &str,
        module: &SharedModule,
        function: usize,
        reach: &Reach,
        depth: u32,
    ) -> Val {
        let model = &module.semantic;
        // No binding on this path: reading the local there fails; nothing gatefix follows.
        let Some(id) = reach.binding else {
            return Val::Free(name.to_string());
        };
        let binding = model.binding(id);
        if !function_scoped(model, binding) {
            return self
                .global(&module.module, name, depth + 1)
                .unwrap_or_else(|| Val::Free(name.to_string()));
        }
        if let Some(&(owner, index)) = module.binding_locals.get(&id) {
            let assign = &module.locals[&owner][index];
            let value = self.local_value(module, owner, index, assign, depth);
            return match target_binds(&assign.target, name).flatten() {
                None => value,
                Some(i) => subscript(value, Val::Int(i as i64), &assign.value),
            };
        }
        match &binding.kind {
            BindingKind::Parameter { .. } => {
                let owner = module.scope_functions.get(&binding.scope).copied();
                let position = owner.and_then(|owner| {
                    module.functions[owner]
                        .params
                        .iter()
                        .position(|p| p.name == name)
                        .map(|position| (owner, position))
                });
                match position {
                    Some((owner, position)) => self.param(module, owner, position, depth),
                    // A lambda's parameter: whatever the lambda is called with.
                    None => Val::Free(name.to_string()),
                }
            }
            // `x += v` is read as the `x` before it (gatefix does not follow the sum).
            BindingKind::Augmented => self
                .bound_at(name, module, function, binding.statement.0, depth + 1)
                .unwrap_or_else(|| Val::Free(name.to_string())),
            // A loop, `with`, `except` or `case` target, a deletion, or an assignment too
            // large to lower: a value gatefix does not follow.
            _ => Val::Free(format!("<{name} rebound>")),
        }
    }

    /// One guard of a path as a predicate: an `if` test as the condition it evaluates to
    /// there; a loop is taken to run and a `try` body to complete (the path a gate is
    /// written for), so a binding in a loop body or a `try` body is the one read after it.
    fn guard(&self, module: &SharedModule, function: usize, guard: &Guard, depth: u32) -> Pred {
        let pred = match guard.kind {
            GuardKind::Test | GuardKind::Case => match module.tests.get(&guard.range) {
                // The same test guards every name bound under it: evaluated once.
                Some(test) => {
                    let key = (
                        std::sync::Arc::as_ptr(module) as usize,
                        function,
                        guard.range.0,
                    );
                    memoised(&self.tests, &self.shared, key, depth, || {
                        let scope = Scope::at(module, Some(function), guard.range.0);
                        self.condition(test, scope, depth + 1)
                    })
                }
                None => Pred::free(format!("<test at byte {}>", guard.range.0)),
            },
            GuardKind::Iterated | GuardKind::Completed => Pred::Const(true),
            GuardKind::Repeated | GuardKind::Handled => Pred::Const(false),
        };
        if guard.holds { pred } else { pred.negate() }
    }

    /// A parameter of a function of the module, read inside it: the receiver; else what the
    /// module's callers pass (when they pass a device value); else a rule's assumption; else
    /// unknown when its name says it is a device value, free otherwise.
    fn param(&self, module: &SharedModule, function: usize, position: usize, depth: u32) -> Val {
        let ir = &module.functions[function];
        if let Some(receiver) = receiver_value(module, ir, position) {
            return receiver;
        }
        let param = &ir.params[position];
        let bare = ir.qualname.rsplit('.').next().unwrap_or(&ir.qualname);
        let has_receiver = ir
            .params
            .first()
            .is_some_and(|p| p.name == "self" || p.name == "cls")
            && ir.class.is_some();
        let arg_index = position - usize::from(has_receiver);
        let key = (std::sync::Arc::as_ptr(module) as usize, function, position);
        let from_callers = memoised(&self.passed, &self.shared, key, depth, || {
            let fresh = PARAMS_IN_PROGRESS.with(|set| set.borrow_mut().insert(key));
            if !fresh {
                cut();
                return None;
            }
            toggle_open(("param", key));
            // A class is called by its name, and its `__init__` receives the arguments.
            let called_as = match (bare, ir.class.as_deref()) {
                ("__init__", Some(class)) => class.rsplit('.').next().unwrap_or(class),
                _ => bare,
            };
            let top_level = ir.parent.is_none()
                && (ir.class.is_none()
                    || (bare == "__init__" && ir.class.as_deref() == Some(called_as)));
            let passed = self
                .callers_pass(module, called_as, arg_index, &param.name, depth)
                .or_else(|| {
                    // A module-level function (or class) is called from other modules too.
                    top_level
                        .then(|| {
                            self.importers_pass(module, called_as, arg_index, &param.name, depth)
                        })
                        .flatten()
                });
            PARAMS_IN_PROGRESS.with(|set| set.borrow_mut().remove(&key));
            toggle_open(("param", key));
            passed
        });
        if let Some(val) = from_callers {
            return val;
        }
        let is_str = param
            .annotation
            .as_deref()
            .is_some_and(|a| a.trim_matches(|c| c == '"' || c == '\'') == "str");
        if !is_str
            && let Some(meaning) =
                self.rules
                    .parameter(bare, arg_index, &param.name, param.annotation.as_deref())
        {
            assume(&format!("{} is the device's", param.name));
            return meaning_value(meaning);
        }
        if self.form_tokens.hit(param.name.as_bytes()) {
            return Val::Unknown(format!(
                "parameter `{}` of `{}`: no caller in the module passes a device value and no rule says what it is",
                param.name, ir.qualname
            ));
        }
        Val::Free(param.name.clone())
    }

    /// The device values the module's calls of `callee` pass as argument `index` (or by
    /// keyword): `None` when none passes one.
    fn callers_pass(
        &self,
        module: &SharedModule,
        callee: &str,
        index: usize,
        name: &str,
        depth: u32,
    ) -> Option<Val> {
        let calls = module.calls.get(callee)?;
        if depth > MAX_DEPTH {
            cut();
            return None;
        }
        let mut found: Vec<Val> = Vec::new();
        for call in calls.iter().take(MAX_CHOICE_ARMS) {
            let Some(arg) = call
                .kwargs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| std::borrow::Cow::Borrowed(v))
                .or_else(|| Expr::positional(&call.args, index))
            else {
                continue;
            };
            // An item of a splat (`f(*cap)`) counts only where it is a device number: what
            // else a spread sequence holds is not known item by item.
            let spread = matches!(arg, std::borrow::Cow::Owned(_));
            let scope = Scope::at(module, call.function, call.byte);
            let val = capability_pair(self.eval(&arg, scope, depth + 1));
            let device = is_device(&val)
                || !spread
                    && (matches!(&val, Val::Pred(p) if p.is_arch_dependent())
                        || matches!(&val, Val::Choice(_)));
            if device {
                push_distinct(&mut found, val);
            }
        }
        the_one_passed(found, callee, name)
    }

    /// The device values that other modules of the scan pass as argument `index` (or by
    /// keyword) to `module`'s top-level function `callee`, through `from module import
    /// callee` (sglang's `architecture_for_capability(major)`, called from the LoRA runners).
    fn importers_pass(
        &self,
        module: &SharedModule,
        callee: &str,
        index: usize,
        name: &str,
        depth: u32,
    ) -> Option<Val> {
        let mut found: Vec<Val> = Vec::new();
        for caller in self.index.callers_of(callee).iter().take(MAX_CHOICE_ARMS) {
            let imports_it = matches!(
                caller.imports.get(callee),
                Some(Import::Member(from, member)) if *from == module.module && member == callee
            );
            if !imports_it || std::sync::Arc::ptr_eq(caller, module) {
                continue;
            }
            if let Some(val) = self.callers_pass(caller, callee, index, name, depth + 1) {
                push_distinct(&mut found, val);
            }
        }
        the_one_passed(found, callee, name)
    }

    /// A local assignment's value, computed once: chains like `x = f(x, x)` would otherwise
    /// re-evaluate exponentially.
    fn local_value(
        &self,
        module: &SharedModule,
        function: usize,
        index: usize,
        assign: &LocalAssign,
        depth: u32,
    ) -> Val {
        let key = (std::sync::Arc::as_ptr(module) as usize, function, index);
        memoised(&self.locals, &self.shared, key, depth, || {
            let inner = Scope::at(module, Some(function), assign.byte);
            self.eval(&assign.value, inner, depth + 1)
        })
    }

    /// The value of `module.name`, following re-exports and star imports; `None` if absent.
    pub fn global(&self, module: &str, name: &str, depth: u32) -> Option<Val> {
        let key = (module.to_string(), name.to_string());
        memoised(&self.globals, &self.shared, key, depth, || {
            // A name whose value depends on itself (through imports or assignments) would
            // recurse until the depth limit; say so instead.
            let open = (module.to_string(), name.to_string());
            if !IN_PROGRESS.with(|set| set.borrow_mut().insert(open.clone())) {
                cut();
                return Some(Val::Unknown(format!("`{module}.{name}` depends on itself")));
            }
            toggle_open(("global", &open));
            let val = in_frame(depth, |depth| self.global_uncached(module, name, depth));
            IN_PROGRESS.with(|set| set.borrow_mut().remove(&open));
            toggle_open(("global", &open));
            val
        })
    }

    fn global_uncached(&self, module: &str, name: &str, depth: u32) -> Option<Val> {
        // A declared value or a known external ends the chain at once, however deep it is:
        // a helper's device read (`get_device_sm`) reached through a caller in another
        // module is as known as from its own module.
        let qualified = format!("{module}.{name}");
        if let Some(rule) = self.rules.value(&qualified) {
            return Some(rule_value(rule));
        }
        if let Some(builtin) = known_external(&qualified) {
            return Some(Val::Builtin(builtin));
        }
        if depth > MAX_DEPTH {
            cut();
            return Some(Val::Unknown(format!(
                "`{module}.{name}` is too deep to resolve"
            )));
        }
        let Some(ir) = self.index.get(module) else {
            if self.index.is_module(&qualified) {
                return Some(Val::Module(qualified));
            }
            // An arch-looking name outside the site is unknown (the caller says why); other
            // names stay external so rules can still match deeper attributes.
            return (!self.tokens.hit(name.as_bytes())).then_some(Val::External(qualified));
        };
        if ir.function_index.contains_key(name) {
            return Some(Val::Func(FuncRef {
                module: module.to_string(),
                qualname: name.to_string(),
            }));
        }
        if ir.named_tuples.iter().any(|n| n == name) {
            return Some(Val::NamedTuple);
        }
        if ir.classes.contains_key(name) {
            return Some(Val::Class(FuncRef {
                module: module.to_string(),
                qualname: name.to_string(),
            }));
        }
        let scope = Scope {
            module: &ir,
            locals: Locals::None,
        };
        if let Some(expr) = ir.assigns.get(name) {
            return Some(self.eval(expr, scope, depth + 1));
        }
        if let Some(import) = ir.imports.get(name) {
            return self.import(import, depth + 1);
        }
        for star in &ir.star_imports {
            if let Some(val) = self.global(star, name, depth + 1) {
                return Some(val);
            }
        }
        // The scan's partial lowering keeps a constant only for readers in its own file; one
        // that another module imports (an arch-keyed table) is read from the whole module.
        if ir.partial
            && python_builtin(name).is_none()
            && self.index.has_top_level_assignment(module, name)
            && let Some(whole) = self.index.get_whole(module)
            && let Some(expr) = whole.assigns.get(name)
        {
            let scope = Scope {
                module: &whole,
                locals: Locals::None,
            };
            return Some(self.eval(expr, scope, depth + 1));
        }
        if self.index.is_module(&qualified) {
            return Some(Val::Module(qualified));
        }
        // A class the scan's partial parse left out (no token in it): read whole.
        if ir.partial
            && self.index.has_top_level_class(module, name)
            && let Some(whole) = self.index.get_whole(module)
            && whole.classes.contains_key(name)
        {
            return Some(Val::Class(FuncRef {
                module: module.to_string(),
                qualname: name.to_string(),
            }));
        }
        // Stored by a function (`global _ARCH` ... `_ARCH = ArchInfo(major, minor)`) and
        // nowhere at module level: a lazy init, whose device value is what readers get.
        if let Some(stores) = ir.global_stores.get(name) {
            for store in stores {
                let scope = Scope::at(&ir, Some(store.function), store.byte);
                let val = self.eval(&store.value, scope, depth + 1);
                if carries_device(&val) {
                    assume(&format!(
                        "`{name}` is what `{}` stores",
                        ir.functions[store.function].qualname
                    ));
                    return Some(val);
                }
            }
        }
        // Made by the module's `__getattr__` (PEP 562) for this name, when its body says
        // what it returns (`return CudaPlatform()`).
        if ir.function_index.contains_key("__getattr__") {
            let getter = FuncRef {
                module: module.to_string(),
                qualname: "__getattr__".to_string(),
            };
            let made = self.call_function(
                &getter,
                vec![Val::Str(name.to_string())],
                Vec::new(),
                &Expr::Name(name.to_string()),
                depth + 1,
            );
            if matches!(made, Val::Instance(_) | Val::Class(_) | Val::Func(_)) {
                return Some(made);
            }
        }
        // Declared only (`current_platform: Platform`, under TYPE_CHECKING when a module
        // `__getattr__` makes it from a name chosen at run time): an instance of the declared
        // class, whose methods are read from the site.
        let declared = ir.declared.get(name)?;
        match self.eval(declared, scope, depth + 1) {
            Val::Class(class) => Some(Val::Instance(class)),
            _ => None,
        }
    }

    fn import(&self, import: &Import, depth: u32) -> Option<Val> {
        match import {
            Import::Module(module) => Some(Val::Module(module.clone())),
            Import::Member(module, member) => {
                let qualified = format!("{module}.{member}");
                if self.index.is_module(&qualified) {
                    return Some(Val::Module(qualified));
                }
                self.global(module, member, depth).or_else(|| {
                    // A platform fact a rule names (`is_cuda`) needs no definition: the scan may
                    // not even have parsed a helper without an arch token.
                    if let Some(rule) = self.rules.any_module_value(member) {
                        return Some(rule_value(rule));
                    }
                    let why = if self.index.is_module(module) {
                        format!("`{member}` is imported from {module}, which does not define it statically")
                    } else {
                        format!("`{member}` is imported from {module}, which is not in the site")
                    };
                    Some(self.missing(member, &why))
                })
            }
        }
    }

    fn attr(&self, whole: &Expr, obj: &Expr, attr: &str, scope: Scope, depth: u32) -> Val {
        let base = self.eval_callee(obj, scope, depth);
        match base {
            Val::Module(module) => self.global(&module, attr, depth + 1).unwrap_or_else(|| {
                match self.rules.any_module_value(attr) {
                    Some(rule) => rule_value(rule),
                    None => {
                        self.missing(attr, &format!("`{attr}` is not defined in module {module}"))
                    }
                }
            }),
            Val::External(name) => self.global(&name, attr, depth + 1).unwrap_or_else(|| {
                self.missing(attr, &format!("`{name}.{attr}` is not in the site"))
            }),
            // A capability read from a helper may be a named tuple (`DeviceCapability`).
            Val::DevObj | Val::DevAny | Val::Dev(DevVar::Cap) => match attr {
                "major" => Val::Dev(DevVar::Major),
                "minor" => Val::Dev(DevVar::Minor),
                "to_int" => Val::Builtin(Builtin::ToInt),
                _ => Val::Free(whole.to_string()),
            },
            Val::Cuda { .. } if attr == "split" => Val::Builtin(Builtin::CudaSplit),
            Val::Object(kind) => self.object_attr(&kind, attr, whole, depth),
            Val::Record(class, fields) => match fields.iter().find(|(name, _)| name == attr) {
                Some((_, value)) => value.clone(),
                None => match self.find_method(&class, attr, depth + 1) {
                    Some(method) => Val::BoundMethod(method, Box::new(Val::Instance(class))),
                    None => Val::Free(whole.to_string()),
                },
            },
            Val::Super(class, receiver) => match self.find_base_method(&class, attr, depth + 1) {
                Some(method) => Val::BoundMethod(method, receiver),
                None => self.missing(
                    attr,
                    &format!(
                        "no base of `{}` has a method `{attr}` gatefix can find",
                        class.qualname
                    ),
                ),
            },
            Val::Instance(class) | Val::Class(class) => {
                match self.find_method(&class, attr, depth + 1) {
                    Some(method) => Val::BoundMethod(method, Box::new(Val::Instance(class))),
                    None if let Some(val) = self.class_attr(&class, attr, depth + 1) => val,
                    None if self.rules.any_module_value(attr).is_some() => {
                        rule_value(self.rules.any_module_value(attr).expect("checked"))
                    }
                    None => self.missing(
                        attr,
                        &format!(
                            "`{}` has no method `{attr}` gatefix can find",
                            class.qualname
                        ),
                    ),
                }
            }
            Val::Unknown(reason) => Val::Unknown(reason),
            // `obj.has_device_capability` on an object gatefix cannot follow: the attribute
            // itself says the value depends on the device.
            _ if self.form_tokens.hit(attr.as_bytes()) => Val::Unknown(format!(
                "`{whole}`: gatefix cannot tell what `{obj}` is; a rule can declare it"
            )),
            _ => Val::Free(whole.to_string()),
        }
    }

    fn object_attr(&self, kind: &str, attr: &str, whole: &Expr, depth: u32) -> Val {
        if self
            .rules
            .methods
            .contains_key(&(kind.to_string(), attr.to_string()))
        {
            return Val::Method(kind.to_string(), attr.to_string());
        }
        if let Some(rule) = self.rules.any_module_value(attr) {
            // A probe object's `__getattr__` calls the function the attribute names: its
            // attribute is the call's result (`get_platform().is_hip` is `is_hip()`, false on
            // NVIDIA), not the function, which is true in a test and turned
            // `major == 12 and not get_platform().is_hip` into false.
            if self.rules.probe_tables.contains_key(kind)
                && rule.is.is_none()
                && let Some(call) = rule.call
            {
                return fact_to_val(call, rule.object.clone());
            }
            return rule_value(rule);
        }
        if let Some(table) = self.rules.probe_tables.get(kind) {
            for dict in &table.tables {
                let Some(function) = self.probe_entry(dict, attr) else {
                    continue;
                };
                // The probe's target may hold no arch token (`is_flashinfer_available`), so a
                // partial parse of its module can miss it: look in the whole module then.
                let callee = self
                    .global(&table.functions, &function, depth + 1)
                    .or_else(|| {
                        // A top-level `def` seen in the text is indexed by the whole parse;
                        // only when the text does not tell is the whole module parsed.
                        let found = (self.index.get(&table.functions).is_some()
                            && self.index.has_top_level_def(&table.functions, &function))
                            || self
                                .index
                                .get_whole(&table.functions)?
                                .function_index
                                .contains_key(&function);
                        found.then(|| {
                            Val::Func(FuncRef {
                                module: table.functions.clone(),
                                qualname: function.clone(),
                            })
                        })
                    });
                let Some(callee) = callee else {
                    return Val::Unknown(format!(
                        "probe `{attr}` names `{function}`, not found in {}",
                        table.functions
                    ));
                };
                let value = self.call(callee, Vec::new(), Vec::new(), whole, depth + 1);
                return match value {
                    Val::Pred(pred) => Val::Pred(pred.with_form(Form::PlatformAttr)),
                    other => other,
                };
            }
            return self.missing(
                attr,
                &format!("`{attr}` is not in the probe tables of {kind}"),
            );
        }
        self.missing(attr, &format!("no rule says what `{kind}.{attr}` means"))
    }

    /// An attribute stored on a class (`self.x = ...` in any method, `cls.x = ...`, or the class
    /// body), looked up through its bases. Of several stores, the first whose value depends
    /// on the device is the one the attribute holds once set up; else the value they all
    /// store, or a free one where they differ (the last store is not the one every read sees:
    /// `self.quantization` is `None`, `"fp8"` or `"gguf"` by the path the setup took).
    fn class_attr(&self, class: &FuncRef, name: &str, depth: u32) -> Option<Val> {
        if depth > MAX_DEPTH {
            cut();
            return None;
        }
        let mut ir = self.index.get(&class.module)?;
        if !ir.classes.contains_key(&class.qualname) && ir.partial {
            ir = self.index.get_whole(&class.module)?;
        }
        if let Some(stores) = ir
            .class_attrs
            .get(&class.qualname)
            .and_then(|a| a.get(name))
        {
            let mut values: Vec<Val> = Vec::new();
            for store in stores.iter().take(MAX_CHOICE_ARMS) {
                let scope = Scope {
                    module: &ir,
                    locals: match store.function {
                        Some(function) => Locals::Site {
                            function,
                            byte: store.byte,
                        },
                        None => Locals::None,
                    },
                };
                let val = self.eval(&store.value, scope, depth + 1);
                let device = is_device(&val)
                    || matches!(&val, Val::Pred(p) if p.is_arch_dependent())
                    || matches!(&val, Val::Choice(_) | Val::Unknown(_));
                if device {
                    return Some(val);
                }
                // A field's default is only what an instance holds when the constructor was
                // given nothing else (`model_config: ModelConfig = None` in a dataclass): taken
                // as the value, `self.model_config is not None and cap == (7, 5)` folded to
                // false and the gate was lost.
                let val = if store.field_default {
                    Val::Free(format!("{}.{name}", class.qualname))
                } else {
                    val
                };
                if !values.contains(&val) {
                    values.push(val);
                }
            }
            return match values.len() {
                0 | 1 => values.pop(),
                _ => Some(Val::Free(format!("{}.{name}", class.qualname))),
            };
        }
        self.first_in_bases(class, depth, |base| self.class_attr(base, name, depth + 1))
    }

    /// The first answer `lookup` gives for a base of `class`, in order: the bases evaluated
    /// in the class's module (read whole when the scan's partial parse left the class out).
    fn first_in_bases<T>(
        &self,
        class: &FuncRef,
        depth: u32,
        lookup: impl Fn(&FuncRef) -> Option<T>,
    ) -> Option<T> {
        let mut ir = self.index.get(&class.module)?;
        if !ir.classes.contains_key(&class.qualname) && ir.partial {
            ir = self.index.get_whole(&class.module)?;
        }
        let bases = ir.classes.get(&class.qualname)?;
        let scope = Scope {
            module: &ir,
            locals: Locals::None,
        };
        bases
            .iter()
            .find_map(|base| match self.eval_unpruned(base, scope, depth + 1) {
                Val::Class(base) => lookup(&base),
                _ => None,
            })
    }

    /// A method of a class of the site, looked up through its bases (depth first, as a
    /// simple MRO).
    /// The scan's partial parse of a module keeps every arch-dependent method and the headers
    /// of the classes holding them; the whole module is read only when the class itself is
    /// missing (a base class with no arch token of its own).
    fn find_method(&self, class: &FuncRef, name: &str, depth: u32) -> Option<FuncRef> {
        if depth > MAX_DEPTH {
            cut();
            return None;
        }
        let mut ir = self.index.get(&class.module)?;
        if !ir.classes.contains_key(&class.qualname) && ir.partial {
            ir = self.index.get_whole(&class.module)?;
        }
        let qualname = format!("{}.{name}", class.qualname);
        if ir.function_index.contains_key(&qualname) {
            return Some(FuncRef {
                module: class.module.clone(),
                qualname,
            });
        }
        self.find_base_method(class, name, depth)
    }

    /// `super()` where the code stands: the class of the method around it (Python's
    /// `__class__` cell) and its receiver, `self` or `cls`.
    fn zero_arg_super(&self, scope: Scope) -> Val {
        let (class, receiver) = match scope.locals {
            Locals::Bound(env) => match env.get(CLASS_CELL) {
                Some(Val::Class(class)) => {
                    let receiver = env.get("self").or_else(|| env.get("cls")).cloned();
                    (class.clone(), receiver)
                }
                _ => return Val::Unknown("`super()` outside a method".into()),
            },
            Locals::Site { function, .. } => match &scope.module.functions[function].class {
                Some(class) => (
                    FuncRef {
                        module: scope.module.module.clone(),
                        qualname: class.clone(),
                    },
                    None,
                ),
                None => return Val::Unknown("`super()` outside a method".into()),
            },
            Locals::None => return Val::Unknown("`super()` outside a method".into()),
        };
        let receiver = receiver.unwrap_or_else(|| Val::Instance(class.clone()));
        Val::Super(class, Box::new(receiver))
    }

    /// A method of one of `class`'s bases (not of `class` itself), as `super().name` finds it.
    fn find_base_method(&self, class: &FuncRef, name: &str, depth: u32) -> Option<FuncRef> {
        self.first_in_bases(class, depth, |base| self.find_method(base, name, depth + 1))
    }

    /// Whether a function of the site is an interface method (its body only raises
    /// `NotImplementedError`).
    fn is_abstract(&self, func: &FuncRef) -> bool {
        self.function_fact(func, |f| f.abstract_body)
    }

    /// `fact` of a function of the site, from the scan's lowering of its module or, when
    /// that left the function out, the whole module's; `false` when neither has it.
    fn function_fact(&self, func: &FuncRef, fact: impl Fn(&FunctionIr) -> bool) -> bool {
        let of = |ir: SharedModule| ir.function(&func.qualname).map(&fact);
        self.index
            .get(&func.module)
            .and_then(of)
            .or_else(|| self.index.get_whole(&func.module).and_then(of))
            .unwrap_or(false)
    }

    /// The classes of `class`'s own module that derive from it, directly or not, in
    /// qualname order (deterministic). Subclasses elsewhere are not searched: that would mean
    /// reading every module of the site.
    fn subclasses_in_module(&self, class: &FuncRef, depth: u32) -> Vec<FuncRef> {
        if depth > MAX_DEPTH {
            cut();
            return Vec::new();
        }
        let Some(ir) = self.index.get_whole(&class.module) else {
            return Vec::new();
        };
        let scope = Scope {
            module: &ir,
            locals: Locals::None,
        };
        let mut names: Vec<&String> = ir.classes.keys().collect();
        names.sort();
        let mut found: Vec<FuncRef> = Vec::new();
        // Breadth by rounds: a class is added once one of its bases is the class or a
        // subclass found so far.
        for _ in 0..4 {
            let before = found.len();
            for name in &names {
                let candidate = FuncRef {
                    module: class.module.clone(),
                    qualname: (*name).clone(),
                };
                if candidate == *class || found.contains(&candidate) {
                    continue;
                }
                let derives = ir.classes[*name].iter().any(|base| {
                    matches!(self.eval_unpruned(base, scope, depth + 1),
                        Val::Class(b) if b == *class || found.contains(&b))
                });
                if derives {
                    found.push(candidate);
                }
            }
            if found.len() == before {
                break;
            }
        }
        found.sort_by(|a, b| a.qualname.cmp(&b.qualname));
        found
    }

    /// Whether a function's whole body is `return <constant>` (or a bare `return`): an
    /// interface's placeholder (`def is_arch_support_pdl(cls): return False`).
    fn returns_a_constant(&self, func: &FuncRef) -> bool {
        self.function_fact(func, |f| {
            matches!(
                f.body.as_deref(),
                Some(
                    [Stmt::Return(None)]
                        | [Stmt::Return(Some(
                            Expr::Bool(_) | Expr::NoneLit | Expr::Int(_) | Expr::Str(_)
                        ))]
                )
            )
        })
    }

    /// The overrides of `method` in `subclasses` (in order), called as the receiver's class
    /// would: the first value that depends on the device, else the first value at all.
    #[allow(clippy::too_many_arguments)]
    fn override_value(
        &self,
        subclasses: Vec<FuncRef>,
        method: &FuncRef,
        args: &[Val],
        kwargs: &[(String, Val)],
        expr: &Expr,
        depth: u32,
    ) -> (Option<Val>, Option<Val>) {
        let name = method.qualname.rsplit('.').next().unwrap_or("");
        let mut fallback = None;
        for sub in subclasses {
            let Some(over) = self.find_method(&sub, name, depth + 1) else {
                continue;
            };
            if over == *method || self.is_abstract(&over) {
                continue;
            }
            let bound = Val::BoundMethod(over, Box::new(Val::Instance(sub)));
            let val = self.call(bound, args.to_vec(), kwargs.to_vec(), expr, depth + 1);
            if carries_device(&val) {
                return (Some(val), fallback);
            }
            fallback.get_or_insert(val);
        }
        (None, fallback)
    }

    /// The classes of the scan that derive from `class`, directly or not, whatever module
    /// they are in, in module then qualname order (deterministic).
    fn subclasses_on_site(&self, class: &FuncRef, depth: u32) -> Vec<FuncRef> {
        if depth > MAX_DEPTH {
            cut();
            return Vec::new();
        }
        let mut found: Vec<FuncRef> = Vec::new();
        let mut frontier = vec![class.clone()];
        // Four levels of inheritance: platform hierarchies are two or three deep.
        for _ in 0..4 {
            let mut next = Vec::new();
            for base in &frontier {
                let simple = base.qualname.rsplit('.').next().unwrap_or(&base.qualname);
                for (module, qualname) in self.index.derived_from(simple) {
                    let candidate = FuncRef {
                        module: module.module.clone(),
                        qualname: qualname.clone(),
                    };
                    if candidate == *class || found.contains(&candidate) {
                        continue;
                    }
                    let scope = Scope {
                        module,
                        locals: Locals::None,
                    };
                    let derives = module.classes[qualname].iter().any(|expr| {
                        matches!(self.eval_unpruned(expr, scope, depth + 1),
                            Val::Class(b) if b == *base)
                    });
                    if derives {
                        found.push(candidate.clone());
                        next.push(candidate);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        found.sort_by(|a, b| (&a.module, &a.qualname).cmp(&(&b.module, &b.qualname)));
        found
    }

    /// A class called: an instance, or the device's capability when the class is a record
    /// (a dataclass, a named tuple) whose `major` and `minor` fields get the device's.
    fn construct(&self, class: FuncRef, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> Val {
        let fields = self
            .index
            .get(&class.module)
            .filter(|ir| ir.classes.contains_key(&class.qualname))
            .or_else(|| self.index.get_whole(&class.module))
            .and_then(|ir| ir.record_fields.get(&class.qualname).cloned());
        if let Some(fields) = fields {
            let field = |name: &str| {
                let position = fields.iter().position(|f| f == name)?;
                args.get(position)
                    .or_else(|| kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v))
            };
            if let (Some(Val::Dev(DevVar::Major)), Some(Val::Dev(DevVar::Minor))) =
                (field("major"), field("minor"))
            {
                return Val::DevObj;
            }
            let built: Vec<(String, Val)> = fields
                .iter()
                .filter_map(|name| field(name).map(|v| (name.clone(), v.clone())))
                .collect();
            if built.iter().any(|(_, v)| carries_device(v)) {
                return Val::Record(class, built);
            }
        }
        Val::Instance(class)
    }

    /// Whether a method's first parameter is the receiver (`self` / `cls`).
    fn takes_receiver(&self, method: &FuncRef) -> bool {
        self.function_fact(method, |f| {
            f.params
                .first()
                .is_some_and(|p| p.name == "self" || p.name == "cls")
        })
    }

    /// Looks `attr` up in a module-level dict literal of string keys and values.
    fn probe_entry(&self, dict: &str, attr: &str) -> Option<String> {
        let (module, name) = dict.rsplit_once('.')?;
        let ir = self.index.get(module)?;
        let Expr::Dict(pairs) = ir.assigns.get(name)? else {
            return None;
        };
        pairs.iter().find_map(|(k, v)| match (k, v) {
            (Expr::Str(key), Expr::Str(value)) if key == attr => Some(value.clone()),
            _ => None,
        })
    }

    fn call(
        &self,
        callee: Val,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
        expr: &Expr,
        depth: u32,
    ) -> Val {
        match callee {
            Val::Func(func) => self.call_function(&func, args, kwargs, expr, depth + 1),
            Val::Partial(func, mut bound, mut bound_kw) => {
                bound.extend(args);
                bound_kw.extend(kwargs);
                self.call_function(&func, bound, bound_kw, expr, depth + 1)
            }
            Val::Builtin(Builtin::Partial) => match args.split_first() {
                Some((Val::Func(func), rest)) => Val::Partial(func.clone(), rest.to_vec(), kwargs),
                _ => Val::Free(expr.text()),
            },
            Val::Builtin(builtin) => call_builtin(builtin, args, expr),
            Val::Method(kind, name) => self.call_method(&kind, &name, args, expr, depth),
            Val::NamedTuple => named_tuple(args, kwargs),
            Val::Class(class) => self.construct(class, args, kwargs),
            Val::BoundMethod(method, receiver)
                if matches!(*receiver, Val::Instance(_)) && self.is_abstract(&method) =>
            {
                // An instance of an interface answers through a subclass: the first override
                // (of the same module's subclasses) whose value depends on the device.
                let Val::Instance(class) = *receiver else {
                    unreachable!("matched above")
                };
                let subclasses = self.subclasses_in_module(&class, depth + 1);
                let (device, fallback) =
                    self.override_value(subclasses, &method, &args, &kwargs, expr, depth);
                device.or(fallback).unwrap_or_else(|| {
                    Val::Unknown(format!(
                        "`{}` is abstract and no subclass in {} overrides it",
                        method.qualname, method.module
                    ))
                })
            }
            Val::BoundMethod(method, receiver) => {
                let class = match receiver.as_ref() {
                    Val::Instance(class) => Some(class.clone()),
                    _ => None,
                };
                let mut passed = args.clone();
                if self.takes_receiver(&method) {
                    passed.insert(0, *receiver);
                }
                let val = self.call_function(&method, passed, kwargs.clone(), expr, depth + 1);
                if carries_device(&val) {
                    return val;
                }
                // An instance known by its class only (`self`, `cls`, a declared
                // `current_platform: Platform`) may be any subclass: where the class's own
                // method says nothing of the device (`return False`) and a subclass of the
                // site overrides it with a device read, that override is the GPU's answer.
                // Only a placeholder body (`return False`, `return None`) is read as "ask the
                // subclass": a method with real code answers for itself, and searching every
                // subclass of every class for every call costs minutes on big sites.
                if !self.returns_a_constant(&method) {
                    return val;
                }
                class
                    .and_then(|class| {
                        let subclasses = self.subclasses_on_site(&class, depth + 1);
                        self.override_value(subclasses, &method, &args, &kwargs, expr, depth)
                            .0
                    })
                    .unwrap_or(val)
            }
            Val::Unknown(reason) => Val::Unknown(reason),
            _ => Val::Free(expr.text()),
        }
    }

    fn call_method(&self, kind: &str, name: &str, args: Vec<Val>, expr: &Expr, depth: u32) -> Val {
        let Some(method) = self
            .rules
            .methods
            .get(&(kind.to_string(), name.to_string()))
        else {
            return Val::Unknown(format!("no rule for `{kind}.{name}`"));
        };
        if let Some(fact) = method.call {
            return fact_value(None, Some(fact), None).called();
        }
        let tuple_arg = matches!(args.first(), Some(Val::Seq(_)));
        let admits = if tuple_arg {
            method.admits_tuple.as_ref().or(method.admits.as_ref())
        } else {
            method.admits.as_ref()
        };
        let Some(admits) = admits else {
            return Val::Unknown(format!(
                "the rule for `{kind}.{name}` has no admits for `{expr}`"
            ));
        };
        let val = self.eval_rule(admits, args, Vec::new(), &[], depth);
        match val {
            Val::Pred(pred) => Val::Pred(pred.with_form(Form::PlatformMethod)),
            other => other,
        }
    }

    /// Evaluates a rule expression with the device names and the call's arguments bound.
    fn eval_rule(
        &self,
        admits: &Expr,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
        params: &[Param],
        depth: u32,
    ) -> Val {
        let mut bound: HashMap<String, Val> = HashMap::from([
            ("major".to_string(), Val::Dev(DevVar::Major)),
            ("minor".to_string(), Val::Dev(DevVar::Minor)),
            ("sm".to_string(), Val::Dev(DevVar::Sm)),
            ("capability".to_string(), Val::Dev(DevVar::Cap)),
            ("cuda".to_string(), Val::Cuda { numeric: true }),
            ("version".to_string(), Val::Builtin(Builtin::Version)),
        ]);
        // The rule's own words are not shadowed by a parameter of the same name: in
        // `version_at_least(version, base_version)` the rule's `version(arg0)` is the
        // conversion, and the argument is `arg0`.
        for (i, arg) in args.iter().enumerate() {
            bound.insert(format!("arg{i}"), arg.clone());
            if let Some(param) = params.get(i) {
                bound
                    .entry(param.name.clone())
                    .or_insert_with(|| arg.clone());
            }
        }
        for (name, value) in kwargs {
            bound.entry(name).or_insert(value);
        }
        let empty = std::sync::Arc::new(ModuleIr::default());
        let scope = Scope {
            module: &empty,
            locals: Locals::Bound(&bound),
        };
        self.eval(admits, scope, depth + 1)
    }

    fn call_function(
        &self,
        func: &FuncRef,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
        expr: &Expr,
        depth: u32,
    ) -> Val {
        let bare = func.qualname.rsplit('.').next().unwrap_or(&func.qualname);
        if let Some(rule) = self.rules.any_module_value(bare) {
            return rule_value(rule).called();
        }
        let Some(mut ir) = self.index.get(&func.module) else {
            return Val::Unknown(format!("module {} could not be read", func.module));
        };
        // For a split function known too large to infer, whether the whole one is archy.
        let mut whole_archy = None;
        match ir.function(&func.qualname) {
            // The scan keeps every function with an arch token: one its partial parse left out
            // has none, so calling it is a free condition (no need to read the whole module).
            None if ir.partial => return Val::Free(expr.text()),
            // A split function whose whole definition is too large to infer: the whole module
            // would only say that (or that it is free, with no arch token).
            Some(f)
                if !f.complete
                    && f.bytes <= super::limits::MAX_HELPER_BODY_BYTES
                    && f.full_bytes > super::limits::MAX_HELPER_BODY_BYTES
                    && f.full_archy.is_some() =>
            {
                whole_archy = f.full_archy;
            }
            // A split function without a token anywhere in its code is a free condition
            // (the scan splits such functions from a small size on).
            Some(f) if !f.complete && f.full_archy == Some(false) => {
                whole_archy = Some(false);
            }
            // A split function is read whole only when it is small enough to be a helper.
            Some(f) if !f.complete && f.bytes <= super::limits::MAX_HELPER_BODY_BYTES => {
                if let Some(whole) = self.index.get_whole(&func.module) {
                    ir = whole;
                }
            }
            _ => {}
        }
        let Some(function) = ir.function(&func.qualname) else {
            return Val::Unknown(format!("`{}` vanished from {}", func.qualname, func.module));
        };
        let qualified = format!("{}.{}", func.module, func.qualname);
        if let Some(admits) = self.rules.helpers.get(&qualified) {
            let val = self.eval_rule(admits, args, kwargs, &function.params, depth);
            return relabel(val, Form::HelperCall);
        }
        if let Some(rule) = self.rules.value(&qualified) {
            return rule_value(rule).called();
        }
        // A helper without a token is read only when it is handed a device value: one that
        // is, a choice the device makes (`v = 3 if cap[0] == 9 else 2`, then `supported(v)`),
        // or a value too many device-made choices left unknown (its call is unknown too).
        let device_args = args.iter().chain(kwargs.iter().map(|(_, v)| v)).any(|v| {
            is_device(v)
                || matches!(v, Val::Choice(_) | Val::Pred(_) if to_pred(v.clone()).is_arch_dependent())
                || matches!(v, Val::Choice(arms) if arms.iter().any(|(guard, _)| guard.is_arch_dependent()))
                || matches!(v, Val::Unknown(reason) if reason == TOO_MANY_VALUES)
        });
        if !(whole_archy.unwrap_or(function.archy) || device_args && function.body.is_some()) {
            return Val::Free(expr.text());
        }
        let Some(body) = function
            .body
            .as_ref()
            .filter(|_| whole_archy.is_none() || device_args)
        else {
            return Val::Unknown(format!(
                "`{}` ({}:{}) is too large to infer; declare it in rules",
                func.qualname, func.module, function.line
            ));
        };
        let memo_key = Prehashed::new((func.clone(), args.clone(), kwargs.clone()));
        let val = memoised(&self.calls, &self.shared, memo_key, depth, || {
            in_frame(depth, |depth| {
                let mut env = HashMap::new();
                for (i, param) in function.params.iter().enumerate() {
                    let value = args
                        .get(i)
                        .cloned()
                        .or_else(|| {
                            kwargs
                                .iter()
                                .find(|(k, _)| *k == param.name)
                                .map(|(_, v)| v.clone())
                        })
                        .or_else(|| {
                            param.default.as_ref().map(|d| {
                                let scope = Scope {
                                    module: &ir,
                                    locals: Locals::None,
                                };
                                self.eval(d, scope, depth + 1)
                            })
                        })
                        .or_else(|| receiver_value(&ir, function, i))
                        .unwrap_or_else(|| param_value(param));
                    env.insert(param.name.clone(), value);
                }
                if let Some(class) = &function.class {
                    env.insert(
                        CLASS_CELL.to_string(),
                        Val::Class(FuncRef {
                            module: func.module.clone(),
                            qualname: class.clone(),
                        }),
                    );
                }
                let mut returns = Vec::new();
                let falls_through = self.exec(
                    body,
                    &mut env,
                    Pred::Const(true),
                    &ir,
                    &mut returns,
                    func,
                    depth + 1,
                );
                if falls_through != Pred::Const(false) {
                    returns.push((falls_through, Val::NoneV));
                }
                relabel(combine_returns(returns, func), Form::HelperCall)
            })
        });
        // A helper without a token that returns what a device name gives is a device value
        // only where its inference says how: anything else (unknown, cut short, no device
        // in it after all) reads as the free condition it was taken for before.
        if function.archy_by_return && !device_args && !knows_device(&val) {
            return Val::Free(expr.text());
        }
        val
    }

    /// Runs statements abstractly, collecting `(path condition, returned value)`; returns the
    /// condition under which control falls through.
    #[allow(clippy::too_many_arguments)]
    fn exec(
        &self,
        body: &[Stmt],
        env: &mut HashMap<String, Val>,
        mut path: Pred,
        module: &SharedModule,
        returns: &mut Vec<(Pred, Val)>,
        func: &FuncRef,
        depth: u32,
    ) -> Pred {
        for stmt in body {
            if path == Pred::Const(false) {
                break;
            }
            match stmt {
                Stmt::Return(value) => {
                    let val = match value {
                        Some(expr) => self.eval(expr, bound_scope(module, env), depth + 1),
                        None => Val::NoneV,
                    };
                    returns.push((path.clone(), val));
                    path = Pred::Const(false);
                }
                Stmt::Assign { targets, value } => {
                    let val = self.eval(value, bound_scope(module, env), depth + 1);
                    for target in targets {
                        bind(env, target, &val, value);
                    }
                }
                Stmt::If { test, body, orelse } => {
                    let returns_before = returns.len();
                    let test = self.condition(test, bound_scope(module, env), depth + 1);
                    let mut then_env = env.clone();
                    let then_path = Pred::and(vec![path.clone(), test.clone()]);
                    let else_path = Pred::and(vec![path.clone(), test.clone().negate()]);
                    let after_then = self.exec(
                        body,
                        &mut then_env,
                        then_path,
                        module,
                        returns,
                        func,
                        depth + 1,
                    );
                    let after_else =
                        self.exec(orelse, env, else_path, module, returns, func, depth + 1);
                    if after_else == Pred::Const(false) {
                        *env = then_env;
                    } else if after_then != Pred::Const(false) {
                        // Both arms go on: a name they leave different holds either value.
                        for (name, then_value) in then_env {
                            let else_value = env.get(&name).cloned();
                            let same = else_value.as_ref() == Some(&then_value);
                            if same {
                                continue;
                            }
                            let else_value = else_value.unwrap_or_else(|| Val::Free(name.clone()));
                            env.insert(
                                name,
                                choice(vec![
                                    (test.clone(), then_value),
                                    (test.clone().negate(), else_value),
                                ]),
                            );
                        }
                    }
                    // When neither branch returned, control goes on under the same condition
                    // (p∧t ∨ p∧¬t = p); rebuilding it would double the predicate per `if`.
                    let returned = returns.len() != returns_before;
                    path = if returned {
                        bounded(Pred::or(vec![after_then, after_else]), func)
                    } else {
                        path
                    };
                }
                Stmt::Opaque { returns: true } => {
                    returns.push((
                        path.clone(),
                        Val::Unknown(format!(
                            "`{}` returns from a loop or statement gatefix does not model",
                            func.qualname
                        )),
                    ));
                }
                Stmt::Opaque { returns: false } => {}
            }
        }
        path
    }

    fn compare_chain(&self, first: &Expr, rest: &[(CmpOp, Expr)], scope: Scope, depth: u32) -> Val {
        let mut left = self.eval(first, scope, depth + 1);
        let mut left_expr = first;
        let mut parts = Vec::new();
        for (op, right_expr) in rest {
            let right = self.eval(right_expr, scope, depth + 1);
            let text = format!("{left_expr} {} {right_expr}", op.symbol());
            let tests_argument = matches!(op, CmpOp::Is | CmpOp::IsNot)
                && match (left_expr, right_expr) {
                    (Expr::Name(name), Expr::NoneLit) | (Expr::NoneLit, Expr::Name(name)) => {
                        self.is_site_parameter(name, scope)
                    }
                    _ => false,
                };
            parts.push(
                if tests_argument && (is_device(&left) || is_device(&right)) {
                    // `arch is None` on a parameter taken for the device's: whether the caller
                    // passed one (`None` asks the function to detect it), not a device fact.
                    Val::Free(text)
                } else {
                    compare(left, *op, right.clone(), &text)
                },
            );
            left = right;
            left_expr = right_expr;
        }
        if parts.len() == 1 {
            return parts.pop().expect("one comparison");
        }
        Val::Pred(Pred::and(parts.into_iter().map(to_pred).collect()))
    }
}

/// Predicates above this many nodes become unknown: a function whose control flow is this
/// tangled is not a helper gatefix can summarise.
const MAX_PRED_NODES: usize = 256;

/// Adds a value its callers pass unless an equal one is there already.
fn push_distinct(found: &mut Vec<Val>, val: Val) {
    if !found.contains(&val) {
        found.push(val);
    }
}

/// What a parameter is from the device values its callers pass: none, the one value, or
/// unknown when they disagree.
fn the_one_passed(mut found: Vec<Val>, callee: &str, name: &str) -> Option<Val> {
    match found.len() {
        0 => None,
        1 => found.pop(),
        _ => Some(Val::Unknown(format!(
            "the callers of `{callee}` pass `{name}` different device values"
        ))),
    }
}

fn bounded(pred: Pred, func: &FuncRef) -> Pred {
    if pred.size() > MAX_PRED_NODES {
        Pred::unknown(
            format!(
                "`{}` has control flow too complex to summarise",
                func.qualname
            ),
            Form::HelperCall,
        )
    } else {
        pred
    }
}

/// A predicate, or unknown past `MAX_PRED_NODES`.
fn bounded_val(pred: Pred) -> Val {
    if pred.size() > MAX_PRED_NODES {
        Val::Unknown("the condition is too complex to summarise".into())
    } else {
        Val::Pred(pred)
    }
}

fn bound_scope<'s>(module: &'s SharedModule, env: &'s HashMap<String, Val>) -> Scope<'s> {
    Scope {
        module,
        locals: Locals::Bound(env),
    }
}

fn bind(env: &mut HashMap<String, Val>, target: &Target, val: &Val, expr: &Expr) {
    match target {
        Target::Name(name) => {
            env.insert(name.clone(), val.clone());
        }
        Target::Tuple(names) => {
            for (i, name) in names.iter().enumerate() {
                if let Some(name) = name {
                    env.insert(
                        name.clone(),
                        subscript(val.clone(), Val::Int(i as i64), expr),
                    );
                }
            }
        }
    }
}

/// `Some(None)` when the target is the name itself, `Some(Some(i))` when it is the i-th of a
/// tuple target, `None` when it does not bind the name.
fn target_binds(target: &Target, name: &str) -> Option<Option<usize>> {
    match target {
        Target::Name(n) => (n == name).then_some(None),
        Target::Tuple(names) => names
            .iter()
            .position(|n| n.as_deref() == Some(name))
            .map(Some),
    }
}

/// `self` / `cls` of a method: an instance of the enclosing class.
fn receiver_value(module: &ModuleIr, function: &FunctionIr, position: usize) -> Option<Val> {
    let param = function.params.get(position)?;
    if position != 0 || !(param.name == "self" || param.name == "cls") {
        return None;
    }
    let (class, _) = function.qualname.rsplit_once('.')?;
    module.classes.contains_key(class).then(|| {
        Val::Instance(FuncRef {
            module: module.module.clone(),
            qualname: class.to_string(),
        })
    })
}

/// What an unbound parameter is: a device capability when annotated so (vllm backends'
/// `supports_compute_capability(cls, capability: DeviceCapability)`), else free.
fn param_value(param: &Param) -> Val {
    match &param.annotation {
        Some(annotation) if annotation.contains("DeviceCapability") => Val::DevObj,
        _ => Val::Free(param.name.clone()),
    }
}

fn base_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) => Some(name),
        Expr::Attr(obj, _) | Expr::Subscript(obj, _) => base_name(obj),
        Expr::Call { func, .. } => base_name(func),
        _ => None,
    }
}

fn relabel(val: Val, form: Form) -> Val {
    match val {
        Val::Pred(pred) => Val::Pred(pred.with_form(form)),
        other => other,
    }
}

impl Val {
    /// The value a fact-returning callable gives when called.
    fn called(self) -> Val {
        match self {
            Val::Builtin(Builtin::Fact(fact, object)) => fact_to_val(fact, object),
            other => other,
        }
    }
}

fn rule_value(rule: &crate::rules::ValueRule) -> Val {
    let object = match rule.is.or(rule.call) {
        Some(Fact::Instance) => rule.class.clone(),
        _ => rule.object.clone(),
    };
    fact_value(rule.is, rule.call, object)
}

fn fact_value(is: Option<Fact>, call: Option<Fact>, object: Option<String>) -> Val {
    match (is, call) {
        (Some(fact), _) => fact_to_val(fact, object),
        (None, Some(fact)) => Val::Builtin(Builtin::Fact(fact, object)),
        (None, None) => Val::Unknown("a rule declares neither `is` nor `call`".into()),
    }
}

fn fact_to_val(fact: Fact, object: Option<String>) -> Val {
    match fact {
        Fact::Capability => Val::Dev(DevVar::Cap),
        Fact::CapabilityObject => Val::DevObj,
        Fact::Major => Val::Dev(DevVar::Major),
        Fact::Minor => Val::Dev(DevVar::Minor),
        Fact::Sm => Val::Dev(DevVar::Sm),
        Fact::Cuda => Val::Cuda { numeric: false },
        Fact::True => Val::Bool(true),
        Fact::False => Val::Bool(false),
        Fact::None => Val::NoneV,
        Fact::Platform => Val::Object(object.unwrap_or_default()),
        // `object` carries the rule's `class` for instances (see `rule_value`).
        Fact::Instance => match object.as_deref().and_then(|c| c.rsplit_once('.')) {
            Some((module, class)) => Val::Instance(FuncRef {
                module: module.to_string(),
                qualname: class.to_string(),
            }),
            None => Val::Unknown("an instance rule without a class".into()),
        },
    }
}

/// A constant written out: numbers, strings, `None`, and tuples, lists and sets of them.
fn is_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) | Expr::NoneLit => true,
        Expr::Tuple(items) | Expr::List(items) | Expr::Set(items) => items.iter().all(is_literal),
        _ => false,
    }
}

fn python_builtin(name: &str) -> Option<Builtin> {
    Some(match name {
        "tuple" => Builtin::Tuple,
        "list" => Builtin::List,
        "set" | "frozenset" => Builtin::Set,
        "map" => Builtin::Map,
        "int" => Builtin::Int,
        "isinstance" => Builtin::IsInstance,
        _ => return None,
    })
}

/// Whether `Resolver::call` reads a call's arguments for this callee; for any other callee the
/// call's value is the callee's own (`Unknown`) or the call's text (`Free`).
fn consumes_arguments(callee: &Val) -> bool {
    matches!(
        callee,
        Val::Func(_)
            | Val::Partial(..)
            | Val::Builtin(_)
            | Val::Method(..)
            | Val::NamedTuple
            | Val::Class(_)
            | Val::BoundMethod(..)
    )
}

fn known_external(qualified: &str) -> Option<Builtin> {
    Some(match qualified {
        "functools.lru_cache" | "functools.cache" => Builtin::Cache,
        "functools.partial" => Builtin::Partial,
        _ => return None,
    })
}

fn call_builtin(builtin: Builtin, args: Vec<Val>, expr: &Expr) -> Val {
    // A conversion of a guarded choice converts each arm (`version("12.9" if minor >= 1 else
    // "12.8")`).
    if matches!(
        builtin,
        Builtin::Tuple | Builtin::List | Builtin::Set | Builtin::Version | Builtin::Int
    ) && let [Val::Choice(arms)] = args.as_slice()
    {
        return choice(
            arms.iter()
                .map(|(guard, arm)| {
                    (
                        guard.clone(),
                        call_builtin(builtin.clone(), vec![arm.clone()], expr),
                    )
                })
                .collect(),
        );
    }
    let mut args = args.into_iter();
    let first = args.next();
    match builtin {
        // `lru_cache(maxsize=1)` is a decorator factory; `lru_cache(f)` is f, cached.
        Builtin::Cache => match first {
            Some(f @ (Val::Func(_) | Val::Partial(..))) => f,
            _ => Val::Builtin(Builtin::Cache),
        },
        // Handled by the caller, which has the keyword arguments.
        Builtin::Partial => Val::Free(expr.text()),
        Builtin::Tuple | Builtin::List | Builtin::Set | Builtin::Version => match first {
            Some(Val::Cuda { .. }) => Val::Cuda { numeric: true },
            Some(v @ (Val::Seq(_) | Val::Str(_) | Val::Dev(_))) => v,
            _ => Val::Free(expr.text()),
        },
        Builtin::Map => match (first, args.next()) {
            (_, Some(Val::Cuda { .. })) => Val::Cuda { numeric: true },
            // `map(int, torch.cuda.get_device_capability())`: the capability's numbers are
            // ints already. (`int` is free text where the pruning left the builtin's name
            // unresolved: nothing of the module binds it.)
            (Some(Val::Builtin(Builtin::Int)), Some(v @ Val::Dev(DevVar::Cap))) => v,
            (Some(Val::Free(name)), Some(v @ Val::Dev(DevVar::Cap))) if name == "int" => v,
            _ => Val::Free(expr.text()),
        },
        Builtin::Int => match first {
            Some(v @ (Val::Int(_) | Val::Dev(_))) => v,
            _ => Val::Free(expr.text()),
        },
        Builtin::IsInstance => match args.next().and_then(|types| is_instance(first?, &types)) {
            Some(answer) => Val::Bool(answer),
            None => Val::Free(expr.text()),
        },
        Builtin::ToInt => Val::Dev(DevVar::Sm),
        Builtin::CudaSplit => Val::Cuda { numeric: false },
        Builtin::Fact(fact, object) => fact_to_val(fact, object),
    }
}

/// `isinstance(value, types)` where both are known: a capability is a tuple (torch's, or a
/// named tuple), its numbers are ints; `None` when either side is not known that well.
fn is_instance(value: Val, types: &Val) -> Option<bool> {
    let kind = match value {
        Val::Int(_) | Val::Bool(_) | Val::Dev(DevVar::Major | DevVar::Minor | DevVar::Sm) => {
            TypeKind::Int
        }
        // A sequence literal is taken for a tuple: capabilities are written `(9, 0)`, and a
        // list would compare unequal to any capability whichever branch took it.
        Val::Dev(DevVar::Cap) | Val::DevObj | Val::Seq(_) => TypeKind::Tuple,
        Val::Str(_) | Val::DevStr(_) | Val::NoneV => TypeKind::Other,
        _ => return None,
    };
    kind.is_instance_of(types)
}

/// What `isinstance` can tell a value apart by.
#[derive(Clone, Copy, PartialEq)]
enum TypeKind {
    Int,
    Tuple,
    Other,
}

impl TypeKind {
    fn is_instance_of(self, types: &Val) -> Option<bool> {
        match types {
            Val::Builtin(Builtin::Int) => Some(self == TypeKind::Int),
            Val::Builtin(Builtin::Tuple) => Some(self == TypeKind::Tuple),
            Val::Builtin(Builtin::List | Builtin::Set) => Some(false),
            // A builtin type name is not worth resolving on its own (`eval` prunes it to
            // free text): read it by name.
            Val::Free(name) => match name.as_str() {
                "int" => Some(self == TypeKind::Int),
                "tuple" => Some(self == TypeKind::Tuple),
                "list" | "dict" | "float" | "set" | "frozenset" => Some(false),
                _ => None,
            },
            // `isinstance(x, (int, tuple))`: any of them.
            Val::Seq(options) => options.iter().try_fold(false, |any, option| {
                Some(any || self.is_instance_of(option)?)
            }),
            _ => None,
        }
    }
}

/// A named tuple built by a call. One built from the device's major and minor
/// (`DeviceCapability(major=major, minor=minor)`, or positionally in that order) is the
/// capability object: `.major`, `[0]`, `.to_int()` and tuple comparisons all read it.
fn named_tuple(args: Vec<Val>, kwargs: Vec<(String, Val)>) -> Val {
    let kw = |name: &str| kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let major = args.first().or_else(|| kw("major"));
    let minor = args.get(1).or_else(|| kw("minor"));
    if let (Some(Val::Dev(DevVar::Major)), Some(Val::Dev(DevVar::Minor))) = (major, minor) {
        return Val::DevObj;
    }
    let mut items = args;
    items.extend(kwargs.into_iter().map(|(_, v)| v));
    Val::Seq(items)
}

/// Whether `subscript`'s answer for this value depends on the index.
fn indexed_by_value(value: &Val) -> bool {
    matches!(
        value,
        Val::Dev(_) | Val::DevObj | Val::DevAny | Val::Choice(_) | Val::Seq(_)
    )
}

fn subscript(value: Val, index: Val, expr: &Expr) -> Val {
    match (value, index) {
        (Val::Dev(DevVar::Cap) | Val::DevObj | Val::DevAny, Val::Int(0)) => Val::Dev(DevVar::Major),
        (Val::Dev(DevVar::Cap) | Val::DevObj | Val::DevAny, Val::Int(1)) => Val::Dev(DevVar::Minor),
        (Val::Choice(arms), index) => choice(
            arms.into_iter()
                .map(|(g, v)| (g, subscript(v, index.clone(), expr)))
                .collect(),
        ),
        (Val::Seq(items), Val::Int(i)) => {
            let len = items.len() as i64;
            let i = if i < 0 { i + len } else { i };
            usize::try_from(i)
                .ok()
                .and_then(|i| items.into_iter().nth(i))
                .unwrap_or_else(|| Val::Free(expr.text()))
        }
        // `torch.version.cuda.split(".")[:2]` keeps being the CUDA version.
        (cuda @ Val::Cuda { .. }, _) => cuda,
        (Val::Unknown(reason), _) => Val::Unknown(reason),
        (Val::Dev(_), _) => Val::Unknown(format!("cannot index the device value in `{expr}`")),
        _ => Val::Free(expr.text()),
    }
}

fn binop(op: BinOp, l: Val, r: Val, expr: &Expr) -> Val {
    // A choice computes arm by arm (`arch // 10` where `arch` is one of two values).
    if let Val::Choice(arms) = l {
        return choice(
            arms.into_iter()
                .map(|(g, v)| (g, binop(op, v, r.clone(), expr)))
                .collect(),
        );
    }
    if let Val::Choice(arms) = r {
        return choice(
            arms.into_iter()
                .map(|(g, v)| (g, binop(op, l.clone(), v, expr)))
                .collect(),
        );
    }
    match (op, l, r) {
        // A device value of unknown spelling divided by ten is read as `sm` (`arch // 10`).
        (BinOp::FloorDiv, Val::Dev(DevVar::Sm) | Val::DevAny, Val::Int(10)) => {
            Val::Dev(DevVar::Major)
        }
        (BinOp::Mod, Val::DevAny, Val::Int(10)) => Val::Dev(DevVar::Minor),
        (BinOp::Mod, Val::Dev(DevVar::Sm), Val::Int(10)) => Val::Dev(DevVar::Minor),
        (BinOp::Mul, Val::Dev(DevVar::Major), Val::Int(10))
        | (BinOp::Mul, Val::Int(10), Val::Dev(DevVar::Major)) => Val::MajorTimesTen,
        // `major * 10` read back: `arch // 10` where `arch = cap[0] * 10` (vllm cute's
        // `_flash_attn_fwd`).
        (BinOp::FloorDiv, Val::MajorTimesTen, Val::Int(10)) => Val::Dev(DevVar::Major),
        (BinOp::Add, Val::MajorTimesTen, Val::Dev(DevVar::Minor))
        | (BinOp::Add, Val::Dev(DevVar::Minor), Val::MajorTimesTen) => Val::Dev(DevVar::Sm),
        (BinOp::FloorDiv, Val::Int(a), Val::Int(b)) if b != 0 => Val::Int(a.div_euclid(b)),
        (BinOp::Mod, Val::Int(a), Val::Int(b)) if b != 0 => Val::Int(a.rem_euclid(b)),
        (BinOp::Mul, Val::Int(a), Val::Int(b)) => {
            a.checked_mul(b).map_or(Val::Free(expr.text()), Val::Int)
        }
        (BinOp::Add, Val::Int(a), Val::Int(b)) => {
            a.checked_add(b).map_or(Val::Free(expr.text()), Val::Int)
        }
        (BinOp::Sub, Val::Int(a), Val::Int(b)) => {
            a.checked_sub(b).map_or(Val::Free(expr.text()), Val::Int)
        }
        (_, Val::Unknown(reason), _) | (_, _, Val::Unknown(reason)) => Val::Unknown(reason),
        (_, l, r) if is_device(&l) || is_device(&r) => Val::Unknown(format!(
            "arithmetic on the device value in `{expr}` is not modelled"
        )),
        _ => Val::Free(expr.text()),
    }
}

fn select(test: Pred, body: Val, orelse: Val, expr: &Expr) -> Val {
    let boolish = |v: &Val| matches!(v, Val::Pred(_) | Val::Bool(_));
    if boolish(&body) && boolish(&orelse) {
        let body = to_pred(body);
        let orelse = to_pred(orelse);
        return Val::Pred(Pred::or(vec![
            Pred::and(vec![test.clone(), body]),
            Pred::and(vec![test.negate(), orelse]),
        ]));
    }
    match test {
        Pred::Const(true) => body,
        Pred::Const(false) => orelse,
        test if test.is_arch_dependent() => {
            choice(vec![(test.clone(), body), (test.negate(), orelse)])
        }
        // `detect() if override is None else override`: a free test still picks between a
        // device value and another one, so the value is a choice guarded by that test (the
        // gate it reaches is reported, over the free condition), not a free value.
        test if carries_device(&body) || carries_device(&orelse) => {
            choice(vec![(test.clone(), body), (test.negate(), orelse)])
        }
        _ => Val::Free(expr.text()),
    }
}

/// Whether a value depends on the device: a device quantity, an arch-dependent predicate, or
/// a choice (whose arms are guarded by one).
fn carries_device(val: &Val) -> bool {
    is_device(val)
        || matches!(val, Val::Record(_, fields) if fields.iter().any(|(_, v)| carries_device(v)))
        || matches!(val, Val::Pred(p) if p.is_arch_dependent())
        || matches!(val, Val::Choice(arms) if arms.iter().any(|(g, v)| g.is_arch_dependent() || carries_device(v)))
}

/// Whether a value makes the parameter it is passed to the device's: a device quantity, an
/// arch-dependent predicate, or a choice between plain values (`90 if hopper else 80`) under
/// an arch-dependent guard. A choice between tensors or objects (`out = a if sm90 else b`)
/// does not: tests on such a parameter (`out is None`) are not arch decisions.
fn feeds_device(val: &Val) -> bool {
    let plain = |v: &Val| {
        matches!(
            v,
            Val::Int(_) | Val::Bool(_) | Val::Str(_) | Val::NoneV | Val::Pred(_)
        ) || is_device(v)
    };
    match val {
        Val::Choice(arms) => {
            arms.iter().all(|(_, v)| plain(v))
                && arms
                    .iter()
                    .any(|(g, v)| g.is_arch_dependent() || feeds_device(v))
        }
        Val::Pred(p) => p.is_arch_dependent(),
        other => is_device(other),
    }
}

/// The arguments `*value` passes: a capability's major and minor
/// (`get_sm_count_constraint(*get_compute_capability(dev))`); anything else is one free
/// argument: a `*args` parameter passed on is not modelled item by item, and guessing its
/// length would bind the parameters after it to the wrong values.
fn splat(value: Val, expr: &Expr) -> Vec<Val> {
    if as_dev(&value) == Some(DevVar::Cap) {
        vec![Val::Dev(DevVar::Major), Val::Dev(DevVar::Minor)]
    } else {
        vec![Val::Free(expr.text())]
    }
}

/// A capability written out as its two numbers (`return int(cc[0]), int(cc[1])`, flashinfer's
/// `_device_capability`) is the capability, when passed on as an argument: the callee's
/// parameter is the device's, as if the tuple torch returns had been passed.
fn capability_pair(val: Val) -> Val {
    match &val {
        Val::Seq(_) if as_dev(&val) == Some(DevVar::Cap) => Val::Dev(DevVar::Cap),
        _ => val,
    }
}

/// Whether the value says how it depends on the device: a device value, an arch-dependent
/// predicate, or a choice with an arch-dependent guard or arm.
fn knows_device(val: &Val) -> bool {
    match val {
        Val::Choice(arms) => arms
            .iter()
            .any(|(guard, v)| guard.is_arch_dependent() || knows_device(v)),
        Val::Pred(p) => p.is_arch_dependent(),
        other => is_device(other),
    }
}

fn is_device(val: &Val) -> bool {
    matches!(
        val,
        Val::Dev(_) | Val::DevObj | Val::DevAny | Val::MajorTimesTen | Val::DevStr(_)
    )
}

/// The device numbers a device string spells `literal` with (`"sm90"` against
/// `sm{major}{minor}` is major 9, minor 0): `Some(None)` when it cannot be that string at all,
/// `None` when it could in more than one way.
fn match_dev_str(pieces: &[StrPiece], literal: &str) -> Option<Option<Vec<(DevVar, i64)>>> {
    fn go(
        pieces: &[StrPiece],
        rest: &str,
        bound: &mut Vec<(DevVar, i64)>,
        out: &mut Vec<Vec<(DevVar, i64)>>,
    ) {
        let Some((first, others)) = pieces.split_first() else {
            if rest.is_empty() {
                out.push(bound.clone());
            }
            return;
        };
        match first {
            StrPiece::Lit(text) => {
                if let Some(after) = rest.strip_prefix(text.as_str()) {
                    go(others, after, bound, out);
                }
            }
            StrPiece::Dev(var) => {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let (low, high) = match var {
                    DevVar::Minor => (1, 1),
                    DevVar::Major => (1, 2),
                    _ => (2, 3),
                };
                for len in low..=high.min(digits) {
                    let Ok(n) = rest[..len].parse::<i64>() else {
                        continue;
                    };
                    if bound.iter().any(|(v, m)| v == var && *m != n) {
                        continue;
                    }
                    bound.push((*var, n));
                    go(others, &rest[len..], bound, out);
                    bound.pop();
                }
            }
        }
    }
    let mut out = Vec::new();
    go(pieces, literal, &mut Vec::new(), &mut out);
    out.dedup();
    match out.len() {
        0 => Some(None),
        1 => Some(out.pop()),
        _ => None,
    }
}

/// `device_string == "sm90"` (or `in ("sm80", "sm86")`): the device numbers it needs.
fn compare_dev_str(pieces: &[StrPiece], op: CmpOp, other: &Val, text: &str) -> Val {
    let literals: Vec<&str> = match (op, other) {
        (CmpOp::Eq | CmpOp::Ne, Val::Str(s)) => vec![s.as_str()],
        (CmpOp::In | CmpOp::NotIn, Val::Seq(items)) => {
            let strings: Option<Vec<&str>> = items
                .iter()
                .map(|i| match i {
                    Val::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect();
            match strings {
                Some(s) => s,
                None => {
                    return Val::Unknown(format!(
                        "`{text}` compares a device string with values gatefix cannot resolve"
                    ));
                }
            }
        }
        _ => {
            return Val::Unknown(format!(
                "`{text}` compares a device string in a way gatefix does not model"
            ));
        }
    };
    let mut arms = Vec::new();
    for literal in literals {
        match match_dev_str(pieces, literal) {
            None => {
                return Val::Unknown(format!(
                    "`{text}`: `{literal}` reads as more than one device"
                ));
            }
            Some(None) => {}
            Some(Some(bound)) => {
                let atoms: Vec<Pred> = bound
                    .into_iter()
                    .map(|(var, n)| to_pred(dev_atom(var, CmpOp::Eq, Rhs::Int(n))))
                    .collect();
                arms.push(Pred::and(atoms));
            }
        }
    }
    let holds = Pred::or(arms);
    Val::Pred(match op {
        CmpOp::Ne | CmpOp::NotIn => holds.negate(),
        _ => holds,
    })
}

/// The device quantity a value stands for, if any.
fn as_dev(val: &Val) -> Option<DevVar> {
    match val {
        Val::Dev(var) => Some(*var),
        Val::DevObj => Some(DevVar::Cap),
        Val::Seq(items) => match items.as_slice() {
            [Val::Dev(DevVar::Major), Val::Dev(DevVar::Minor)] => Some(DevVar::Cap),
            _ => None,
        },
        _ => None,
    }
}

fn as_int(val: &Val) -> Option<i64> {
    match val {
        Val::Int(n) => Some(*n),
        Val::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

fn as_pair(val: &Val) -> Option<(i64, i64)> {
    match val {
        Val::Seq(items) if items.len() == 2 => Some((as_int(&items[0])?, as_int(&items[1])?)),
        _ => None,
    }
}

/// The right-hand side of a device comparison, if it is a literal of the right shape.
fn rhs_for(var: DevVar, op: CmpOp, val: &Val) -> Option<Rhs> {
    let membership = matches!(op, CmpOp::In | CmpOp::NotIn);
    match (var, membership, val) {
        (DevVar::Cap, false, v) => as_pair(v).map(|(a, b)| Rhs::Pair(a, b)),
        (DevVar::Cap, true, Val::Seq(items)) => items
            .iter()
            .map(as_pair)
            .collect::<Option<Vec<_>>>()
            .map(Rhs::Pairs),
        (_, false, v) => as_int(v).map(Rhs::Int),
        (_, true, Val::Seq(items)) => items
            .iter()
            .map(as_int)
            .collect::<Option<Vec<_>>>()
            .map(Rhs::Ints),
        _ => None,
    }
}

fn dev_form(var: DevVar, op: CmpOp) -> Form {
    match (var, op) {
        (_, CmpOp::In | CmpOp::NotIn) => Form::CapabilityMembership,
        (DevVar::Sm, _) => Form::SmCompare,
        _ => Form::CapabilityCompare,
    }
}

fn dev_atom(var: DevVar, op: CmpOp, rhs: Rhs) -> Val {
    // A one-element set reads better as an equality.
    let (op, rhs) = match (op, rhs) {
        (CmpOp::In, Rhs::Ints(set)) if set.len() == 1 => (CmpOp::Eq, Rhs::Int(set[0])),
        (CmpOp::NotIn, Rhs::Ints(set)) if set.len() == 1 => (CmpOp::Ne, Rhs::Int(set[0])),
        (CmpOp::In, Rhs::Pairs(set)) if set.len() == 1 => {
            (CmpOp::Eq, Rhs::Pair(set[0].0, set[0].1))
        }
        (CmpOp::NotIn, Rhs::Pairs(set)) if set.len() == 1 => {
            (CmpOp::Ne, Rhs::Pair(set[0].0, set[0].1))
        }
        (CmpOp::Is, rhs) => (CmpOp::Eq, rhs),
        (CmpOp::IsNot, rhs) => (CmpOp::Ne, rhs),
        other => other,
    };
    Val::Pred(Pred::atom(Atom::Dev { var, op, rhs }, dev_form(var, op)))
}

/// The keys of a dict literal keyed by integers or integer pairs; `None` for any other dict.
fn table(pairs: &[(Expr, Expr)]) -> Option<Val> {
    let key = |k: &Expr| match k {
        Expr::Int(n) => Some(Val::Int(*n)),
        Expr::Tuple(items) => match items.as_slice() {
            [Expr::Int(a), Expr::Int(b)] => Some(Val::Seq(vec![Val::Int(*a), Val::Int(*b)])),
            _ => None,
        },
        _ => None,
    };
    if pairs.is_empty() {
        return None;
    }
    pairs
        .iter()
        .map(|(k, _)| key(k))
        .collect::<Option<Vec<_>>>()
        .map(Val::Table)
}

/// Whether `table` (a device-keyed lookup's table) has the device's `key`: the membership
/// `key in table.keys()`; `None` when the table is not a dict literal of number keys.
pub fn table_lookup(table: Val, key: Val, text: &str) -> Option<Pred> {
    let Val::Table(keys) = table else {
        return None;
    };
    Some(to_pred(compare(key, CmpOp::In, Val::Seq(keys), text)))
}

/// `(c, x)` where `c` is a choice: the choice of `(arm, x)` for each arm (recursively, so
/// every choice inside is split); any other value as it is.
fn split_choice_in_seq(val: Val) -> Val {
    let Val::Seq(items) = &val else {
        return val;
    };
    let Some(at) = items.iter().position(|v| matches!(v, Val::Choice(_))) else {
        return val;
    };
    let Val::Choice(arms) = &items[at] else {
        unreachable!("found above")
    };
    // Fields set together on the same paths (`major, minor = 10, 0` under one test) are
    // choices over the same guards: one arm per path, not every combination.
    let guards: Vec<&Pred> = arms.iter().map(|(g, _)| g).collect();
    let same_paths = items.iter().all(|v| match v {
        Val::Choice(other) => {
            other.len() == guards.len() && other.iter().zip(&guards).all(|((g, _), h)| g == *h)
        }
        _ => true,
    });
    // Every combination of several choices: only while it stays within a choice's arms
    // (past that the tuple is left whole, as it was before choices were split).
    let combinations = items.iter().try_fold(1usize, |n, v| match v {
        Val::Choice(arms) => n.checked_mul(arms.len()),
        _ => Some(n),
    });
    if !same_paths && combinations.is_none_or(|n| n > MAX_CHOICE_ARMS) {
        return val;
    }
    if same_paths {
        return choice(
            (0..arms.len())
                .map(|i| {
                    let tuple = items
                        .iter()
                        .map(|v| match v {
                            Val::Choice(other) => other[i].1.clone(),
                            plain => plain.clone(),
                        })
                        .collect();
                    (arms[i].0.clone(), Val::Seq(tuple))
                })
                .collect(),
        );
    }
    choice(
        arms.iter()
            .map(|(guard, arm)| {
                let mut tuple = items.clone();
                tuple[at] = arm.clone();
                (guard.clone(), split_choice_in_seq(Val::Seq(tuple)))
            })
            .collect(),
    )
}

fn compare(left: Val, op: CmpOp, right: Val, text: &str) -> Val {
    // Membership in a dict tests its keys.
    let right = match right {
        Val::Table(keys) if matches!(op, CmpOp::In | CmpOp::NotIn) => Val::Seq(keys),
        other => other,
    };
    // A tuple with a guarded choice inside (`(arch.major, arch.minor)` where `major` is
    // overridden on one path) is a choice of tuples.
    let left = split_choice_in_seq(left);
    let right = split_choice_in_seq(right);
    // A choice compares arm by arm.
    if let Val::Choice(arms) = left {
        return bounded_val(Pred::or(
            arms.into_iter()
                .map(|(g, v)| Pred::and(vec![g, to_pred(compare(v, op, right.clone(), text))]))
                .collect(),
        ));
    }
    if let Val::Choice(arms) = right {
        return bounded_val(Pred::or(
            arms.into_iter()
                .map(|(g, v)| Pred::and(vec![g, to_pred(compare(left.clone(), op, v, text))]))
                .collect(),
        ));
    }
    if let Val::DevStr(pieces) = &left
        && !matches!(right, Val::NoneV)
    {
        return compare_dev_str(pieces, op, &right, text);
    }
    if let Val::DevStr(pieces) = &right
        && matches!(op, CmpOp::Eq | CmpOp::Ne)
        && !matches!(left, Val::NoneV)
    {
        return compare_dev_str(pieces, op, &left, text);
    }
    // `cap is None`: whether a device is there at all. Every target gatefix audits is a
    // GPU (as `is_cuda()` is true), so its capability is never None: not a gate, a constant.
    // (A capability written out as its two numbers is one too.)
    let device = |v: &Val| is_device(v) || as_dev(v).is_some();
    if matches!(op, CmpOp::Is | CmpOp::IsNot | CmpOp::Eq | CmpOp::Ne)
        && (device(&left) && matches!(right, Val::NoneV)
            || device(&right) && matches!(left, Val::NoneV))
    {
        return Val::Bool(matches!(op, CmpOp::IsNot | CmpOp::Ne));
    }
    let settled_left = settle_any(left.clone(), op, &right);
    let right = settle_any(right, op, &left);
    let left = settled_left;
    if let Some(var) = as_dev(&left) {
        return match rhs_for(var, op, &right) {
            Some(rhs) => dev_atom(var, op, rhs),
            None => Val::Unknown(format!(
                "`{text}` compares the device with a value gatefix cannot resolve"
            )),
        };
    }
    if let Some(var) = as_dev(&right) {
        return match (
            op.flipped(),
            rhs_for(var, op.flipped().unwrap_or(op), &left),
        ) {
            (Some(flipped), Some(rhs)) => dev_atom(var, flipped, rhs),
            _ => Val::Unknown(format!(
                "`{text}` compares the device with a value gatefix cannot resolve"
            )),
        };
    }
    if let Some(val) = compare_cuda(&left, op, &right) {
        return val;
    }
    if let Some(val) = compare_cuda(&right, op.flipped().unwrap_or(op), &left) {
        return val;
    }
    match (&left, &right) {
        (Val::Unknown(reason), _) | (_, Val::Unknown(reason)) => Val::Unknown(reason.clone()),
        // Tuples of numbers compare as Python's tuples do (`(10, 0) == (9, 0)`).
        (Val::Seq(a), Val::Seq(b))
            if !matches!(op, CmpOp::In | CmpOp::NotIn)
                && a.iter().chain(b).all(|v| matches!(v, Val::Int(_))) =>
        {
            let ints = |items: &[Val]| -> Vec<i64> {
                items
                    .iter()
                    .map(|v| match v {
                        Val::Int(n) => *n,
                        _ => unreachable!("checked above"),
                    })
                    .collect()
            };
            Val::Bool(op.holds(&ints(a), &ints(b)))
        }
        (Val::Int(a), Val::Int(b)) if !matches!(op, CmpOp::In | CmpOp::NotIn) => {
            Val::Bool(op.holds(a, b))
        }
        (Val::Str(a), Val::Str(b)) if !matches!(op, CmpOp::In | CmpOp::NotIn) => {
            Val::Bool(op.holds(a, b))
        }
        (Val::NoneV, Val::NoneV) => Val::Bool(matches!(op, CmpOp::Is | CmpOp::Eq)),
        (Val::NoneV, other) | (other, Val::NoneV) if is_concrete(other) => {
            Val::Bool(matches!(op, CmpOp::IsNot | CmpOp::Ne))
        }
        // `None in (90, 100)`: no number is None (a lookup keyed by a capability that may be
        // absent, `cap.to_int() if cap is not None else None`).
        (Val::NoneV, Val::Seq(items))
            if matches!(op, CmpOp::In | CmpOp::NotIn)
                && items
                    .iter()
                    .all(|i| as_int(i).is_some() || as_pair(i).is_some()) =>
        {
            Val::Bool(op == CmpOp::NotIn)
        }
        (l, Val::Seq(items)) if matches!(op, CmpOp::In | CmpOp::NotIn) && as_int(l).is_some() => {
            let contained = items.iter().any(|i| as_int(i) == as_int(l));
            Val::Bool(contained == (op == CmpOp::In))
        }
        _ => Val::Free(text.to_string()),
    }
}

/// A capability of unknown spelling (`DevAny`) takes the spelling of what it is compared
/// with: the tuple for a pair, `sm` for integers from 20 up, `major` below.
fn settle_any(val: Val, op: CmpOp, other: &Val) -> Val {
    if !matches!(val, Val::DevAny) {
        return val;
    }
    let ints: Vec<i64> = match other {
        Val::Seq(items) if matches!(op, CmpOp::In | CmpOp::NotIn) => {
            if items.iter().all(|i| as_pair(i).is_some()) && !items.is_empty() {
                return Val::Dev(DevVar::Cap);
            }
            items.iter().filter_map(as_int).collect()
        }
        v if as_pair(v).is_some() => return Val::Dev(DevVar::Cap),
        v => as_int(v).into_iter().collect(),
    };
    if ints.is_empty() {
        return Val::DevAny;
    }
    if ints.iter().all(|&n| n >= 20) {
        Val::Dev(DevVar::Sm)
    } else {
        Val::Dev(DevVar::Major)
    }
}

fn is_concrete(val: &Val) -> bool {
    matches!(
        val,
        Val::Int(_) | Val::Str(_) | Val::Bool(_) | Val::Cuda { .. } | Val::Dev(_) | Val::DevObj
    )
}

fn compare_cuda(left: &Val, op: CmpOp, right: &Val) -> Option<Val> {
    let Val::Cuda { numeric } = left else {
        return None;
    };
    let (version, string) = match right {
        Val::Str(text) => {
            let mut parts = text.split('.').map(|p| p.trim().parse::<u32>());
            let major = parts.next()?.ok()?;
            let minor = parts.next().unwrap_or(Ok(0)).ok()?;
            ((major, minor), (!numeric).then(|| text.clone()))
        }
        Val::Seq(items) if *numeric => {
            let major = u32::try_from(as_int(items.first()?)?).ok()?;
            let minor = items
                .get(1)
                .and_then(as_int)
                .map_or(Some(0), |m| u32::try_from(m).ok())?;
            ((major, minor), None)
        }
        _ => return None,
    };
    if matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        return None;
    }
    Some(Val::Pred(Pred::atom(
        Atom::Cuda {
            op,
            version,
            string,
        },
        Form::HelperCall,
    )))
}

/// Truthiness of a value used as a condition.
pub fn to_pred(val: Val) -> Pred {
    match val {
        Val::Pred(pred) => pred,
        Val::Bool(b) => Pred::Const(b),
        Val::NoneV => Pred::Const(false),
        Val::Int(n) => Pred::Const(n != 0),
        Val::Str(s) => Pred::Const(!s.is_empty()),
        Val::Seq(items) | Val::Table(items) => Pred::Const(!items.is_empty()),
        Val::Free(text) | Val::External(text) => Pred::free(text),
        Val::Choice(arms) => Pred::or(
            arms.into_iter()
                .map(|(g, v)| Pred::and(vec![g, to_pred(v)]))
                .collect(),
        ),
        Val::Unknown(reason) => Pred::unknown(reason, Form::HelperCall),
        // A device number, the CUDA version string, a function or module: truthy on NVIDIA.
        _ => Pred::Const(true),
    }
}

/// Folds a function's returns into one value: a predicate when they are boolean, the single
/// value when only one path returns, unknown when the paths disagree in kind.
fn combine_returns(returns: Vec<(Pred, Val)>, func: &FuncRef) -> Val {
    let live: Vec<(Pred, Val)> = returns
        .into_iter()
        .filter(|(path, _)| *path != Pred::Const(false))
        .collect();
    if let [(path, val)] = live.as_slice() {
        return match (path, val) {
            (Pred::Const(true), v) => v.clone(),
            (p, v @ (Val::Pred(_) | Val::Bool(_) | Val::NoneV)) => {
                Val::Pred(Pred::and(vec![p.clone(), to_pred(v.clone())]))
            }
            (_, v) => v.clone(),
        };
    }
    let boolean = live.iter().all(|(_, v)| {
        matches!(
            v,
            Val::Pred(_) | Val::Bool(_) | Val::NoneV | Val::Free(_) | Val::Unknown(_)
        )
    });
    if boolean {
        return Val::Pred(Pred::or(
            live.into_iter()
                .map(|(path, val)| Pred::and(vec![path, to_pred(val)]))
                .collect(),
        ));
    }
    // A device value with an override on free paths (`if os.environ.get("X_ARCH") is not
    // None: return parse(...)`, then `return major * 10 + minor`): without the override the
    // function answers the device's value, and that is what is assumed (and said).
    if !live.iter().any(|(path, _)| path.is_arch_dependent()) {
        let device: Vec<&(Pred, Val)> = live.iter().filter(|(_, v)| carries_device(v)).collect();
        if let [(_, val)] = device.as_slice() {
            let overrides: Vec<String> = live
                .iter()
                .filter(|(_, v)| !carries_device(v))
                .map(|(path, _)| path.to_string())
                .collect();
            assume(&format!(
                "`{}` is not overridden ({})",
                func.qualname,
                overrides.join("; ")
            ));
            return val.clone();
        }
    }
    // Non-boolean returns on arch-dependent paths: which value wins depends on the device.
    if live.iter().any(|(path, _)| path.is_arch_dependent()) {
        return match choice(live) {
            Val::Unknown(_) => Val::Unknown(format!(
                "`{}` returns different values per architecture",
                func.qualname
            )),
            other => other,
        };
    }
    Val::Free(format!("{}()", func.qualname))
}

/// Whether a function, lambda or comprehension around `byte` binds `name` (with
/// `through_global`, also one that binds it under `global`).
fn function_binds(model: &SemanticModel, name: &str, byte: usize, through_global: bool) -> bool {
    function_binding(model, name, byte, through_global).is_some()
}

/// The first binding of `name` in the innermost function, lambda or comprehension around
/// `byte` that binds it (see `function_binds`): it stands for the name in that scope, so a
/// memo key holds a number, not the name.
fn function_binding(
    model: &SemanticModel,
    name: &str,
    byte: usize,
    through_global: bool,
) -> Option<BindingId> {
    let mut current = Some(model.scope_at(byte));
    while let Some(id) = current {
        let s = model.scope(id);
        match s.kind {
            ScopeKind::Module => return None,
            ScopeKind::Class => {}
            _ if !through_global && s.globals.iter().any(|g| g == name) => return None,
            _ => {
                if let Some(&first) = s.bindings.get(name).and_then(|b| b.first()) {
                    return Some(first);
                }
            }
        }
        current = s.parent;
    }
    None
}

/// Whether a binding is a function's local that resolution reads by value: one made in a
/// function, lambda or comprehension; the module's and classes' bindings, and imports,
/// definitions and classes made anywhere, are found by name (`Resolver::global`).
fn function_scoped(model: &SemanticModel, binding: &Binding) -> bool {
    !matches!(
        model.scope(binding.scope).kind,
        ScopeKind::Module | ScopeKind::Class
    ) && !matches!(
        binding.kind,
        BindingKind::Import { .. } | BindingKind::FunctionDef | BindingKind::ClassDef
    )
}

fn meaning_value(meaning: crate::rules::ParamMeaning) -> Val {
    use crate::rules::ParamMeaning;
    match meaning {
        ParamMeaning::Sm => Val::Dev(DevVar::Sm),
        ParamMeaning::Major => Val::Dev(DevVar::Major),
        ParamMeaning::Capability => Val::Dev(DevVar::Cap),
        ParamMeaning::CapabilityObject => Val::DevObj,
        ParamMeaning::Any => Val::DevAny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversion_of_a_choice_converts_each_arm() {
        let minor = |op, n| {
            Pred::Atom(
                Atom::Dev {
                    var: DevVar::Minor,
                    op,
                    rhs: Rhs::Int(n),
                },
                Form::CapabilityCompare,
            )
        };
        // `version("12.9" if minor >= 1 else torch.version.cuda)`: each arm converted.
        let picked = Val::Choice(vec![
            (minor(CmpOp::Ge, 1), Val::Str("12.9".into())),
            (minor(CmpOp::Lt, 1), Val::Cuda { numeric: false }),
        ]);
        assert_eq!(
            call_builtin(Builtin::Version, vec![picked], &Expr::Slice),
            Val::Choice(vec![
                (minor(CmpOp::Ge, 1), Val::Str("12.9".into())),
                (minor(CmpOp::Lt, 1), Val::Cuda { numeric: true }),
            ])
        );
    }

    fn major_ge(n: i64) -> Pred {
        Pred::atom(
            Atom::Dev {
                var: DevVar::Major,
                op: CmpOp::Ge,
                rhs: Rhs::Int(n),
            },
            Form::CapabilityCompare,
        )
    }

    #[test]
    fn a_choice_joins_flattens_and_merges() {
        let test = major_ge(10);
        let joined = choice(vec![
            (test.clone(), Val::Str("fast".into())),
            (test.clone().negate(), Val::Str("slow".into())),
        ]);
        let Val::Choice(arms) = &joined else {
            panic!("two values: {joined:?}")
        };
        assert_eq!(arms.len(), 2);
        // One value on every arm is that value.
        let same = choice(vec![
            (test.clone(), Val::Int(1)),
            (test.clone().negate(), Val::Int(1)),
        ]);
        assert!(matches!(same, Val::Int(1)), "{same:?}");
        // Impossible arms go; an arm that always holds is the value.
        let only = choice(vec![
            (Pred::Const(false), Val::Int(2)),
            (Pred::Const(true), Val::Int(3)),
        ]);
        assert!(matches!(only, Val::Int(3)), "{only:?}");
        // A nested choice splits into its arms.
        let nested = choice(vec![(Pred::Const(true), joined.clone())]);
        assert!(matches!(nested, Val::Choice(ref a) if a.len() == 2));
    }

    #[test]
    fn too_many_arms_on_the_configuration_are_a_free_value() {
        // `backend` reassigned under ten tests of the configuration: which value holds is
        // not the device's business.
        let config_arms = |n: usize| -> Vec<(Pred, Val)> {
            (0..n)
                .map(|i| {
                    (
                        Pred::free(format!("quant == \"q{i}\"")),
                        Val::Str(format!("backend{i}")),
                    )
                })
                .collect()
        };
        let free = choice(config_arms(MAX_CHOICE_ARMS + 2));
        assert!(
            matches!(&free, Val::Free(text) if text == INDEPENDENT_CHOICE),
            "{free:?}"
        );
        // One arm the device picks stays apart; the rest are one free value where it does
        // not hold.
        let mut arms = config_arms(MAX_CHOICE_ARMS + 2);
        arms.push((major_ge(12), Val::Str("cutlass".into())));
        let Val::Choice(kept) = choice(arms) else {
            panic!("a device arm and the configuration's")
        };
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert_eq!(kept[0], (major_ge(12), Val::Str("cutlass".into())));
        assert_eq!(
            kept[1],
            (major_ge(12).negate(), Val::Free(INDEPENDENT_CHOICE.into()))
        );
        // Values that depend on the device are never folded into the configuration's.
        let device_values: Vec<(Pred, Val)> = (0..MAX_CHOICE_ARMS as i64 + 2)
            .map(|i| (Pred::free(format!("mode == {i}")), Val::Pred(major_ge(i))))
            .chain(std::iter::once((Pred::free("other"), Val::Int(0))))
            .collect();
        let unknown = choice(device_values);
        assert!(
            matches!(&unknown, Val::Unknown(reason) if reason == TOO_MANY_VALUES),
            "{unknown:?}"
        );
    }

    #[test]
    fn compare_distributes_over_a_choice() {
        let test = major_ge(10);
        let mode = choice(vec![
            (test.clone(), Val::Str("fast".into())),
            (test.clone().negate(), Val::Str("slow".into())),
        ]);
        let pred = to_pred(compare(
            mode,
            CmpOp::Eq,
            Val::Str("fast".into()),
            "mode == 'fast'",
        ));
        assert_eq!(pred.to_string(), "major >= 10");
    }

    #[test]
    fn a_capability_read_from_the_device_is_never_none() {
        let is_none = compare(Val::DevObj, CmpOp::Is, Val::NoneV, "cap is None");
        assert_eq!(is_none, Val::Bool(false));
        let is_not_none = compare(
            Val::NoneV,
            CmpOp::IsNot,
            Val::Dev(DevVar::Cap),
            "None is not cap",
        );
        assert_eq!(is_not_none, Val::Bool(true));
        // Any other value compared with None stays what it was.
        let free = compare(Val::Free("x".into()), CmpOp::Is, Val::NoneV, "x is None");
        assert!(matches!(free, Val::Free(_)), "{free:?}");
    }

    #[test]
    fn an_assumed_capability_takes_the_spelling_of_its_comparison() {
        let sm = to_pred(compare(Val::DevAny, CmpOp::Ge, Val::Int(90), "arch >= 90"));
        assert_eq!(sm.to_string(), "sm >= 90");
        let major = to_pred(compare(Val::DevAny, CmpOp::Eq, Val::Int(9), "cc == 9"));
        assert_eq!(major.to_string(), "major == 9");
        let pair = Val::Seq(vec![Val::Int(9), Val::Int(0)]);
        let cap = to_pred(compare(Val::DevAny, CmpOp::Ge, pair, "cc >= (9, 0)"));
        assert_eq!(cap.to_string(), "(major, minor) >= (9, 0)");
        let set = Val::Seq(vec![Val::Int(90), Val::Int(100)]);
        let member = to_pred(compare(Val::DevAny, CmpOp::In, set, "arch in (90, 100)"));
        assert_eq!(member.to_string(), "sm in {90, 100}");
    }

    #[test]
    fn subscripts_of_device_values_and_choices() {
        assert!(matches!(
            subscript(Val::DevAny, Val::Int(0), &Expr::Slice),
            Val::Dev(DevVar::Major)
        ));
        assert!(matches!(
            subscript(Val::Dev(DevVar::Cap), Val::Int(1), &Expr::Slice),
            Val::Dev(DevVar::Minor)
        ));
        let test = major_ge(9);
        let pick = choice(vec![
            (test.clone(), Val::Dev(DevVar::Cap)),
            (test.negate(), Val::Seq(vec![Val::Int(0), Val::Int(0)])),
        ]);
        let first = subscript(pick, Val::Int(0), &Expr::Slice);
        assert!(
            matches!(first, Val::Choice(ref arms) if arms.len() == 2),
            "{first:?}"
        );
    }

    #[test]
    fn a_select_on_the_device_is_a_choice() {
        let val = select(
            major_ge(9),
            Val::Str("cutlass".into()),
            Val::Str("triton".into()),
            &Expr::Slice,
        );
        assert!(matches!(val, Val::Choice(_)), "{val:?}");
        let free = select(
            Pred::free("x"),
            Val::Str("a".into()),
            Val::Str("b".into()),
            &Expr::Slice,
        );
        assert!(matches!(free, Val::Free(_)), "{free:?}");
        // `detect() if override is None else override`: the free test guards a device arm.
        let overridable = select(
            Pred::free("_arch is None"),
            Val::Dev(DevVar::Sm),
            Val::Free("_arch".into()),
            &Expr::Slice,
        );
        assert!(
            matches!(overridable, Val::Choice(ref arms) if arms.len() == 2),
            "{overridable:?}"
        );
        let major = binop(BinOp::FloorDiv, overridable, Val::Int(10), &Expr::Slice);
        assert!(
            matches!(&major, Val::Choice(arms) if arms.iter().any(|(_, v)| matches!(v, Val::Dev(DevVar::Major)))),
            "{major:?}"
        );
    }
}
