//! Parameters their callers feed the device's value: the def-use step that lowering one file
//! at a time cannot take.
//!
//! A file is lowered on its own, so a parameter without an arch token is not known to hold a
//! device value: in vllm's `cute/interface.py`, `if fp8_kv_dequant:` is no candidate, although
//! `flash_attn_interface.py` passes `fp8_kv_dequant=fa4_fp8_kv_dequant`, a flag built from
//! `get_device_capability()[0] == 9`. After the scan has lowered every file, this pass reads
//! the calls that pass device-dependent arguments, finds each callee's definition (in the
//! caller's module, through its imports and re-exports, `self.m` in the caller's class, a
//! class's `__init__`), and lowers the callee's module again with those parameters treated
//! as the device's, as a `[[parameter]]` rule's are. What those re-lowered modules pass on feeds the next round
//! (`self.fp8_kv_dequant = fp8_kv_dequant` in a kernel class's `__init__`), up to
//! `MAX_ROUNDS`. Which value the parameter holds is the resolver's business (it reads the same
//! callers): this pass only decides which sites are candidates.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use rayon::prelude::*;

use super::chunks::MayDefine;
use super::ir::{CallSite, Expr, Import, ModuleIr, Param, SharedModule};

/// Rounds of re-lowering: each follows device values one call further.
pub const MAX_ROUNDS: usize = 4;
/// Re-exports followed from an import to the definition.
const MAX_EXPORT_HOPS: usize = 3;

/// What the pass needs from the scan.
pub trait Lowering: Sync {
    /// The module lowered as the scan lowers files (chunked on the fast path, whole with
    /// `--exhaustive`), with these parameter names taken as the device's, as a rule's are:
    /// the chunking keeps what reads them (`None` when it cannot be read or parsed).
    fn lower_fed(&self, module: &str, device_params: &[String]) -> Option<SharedModule>;
    /// What the module binds to the top-level `name`: its definition with its signature
    /// (with its methods', for a class) or its import; bodies and other names may be left out.
    fn definitions(&self, module: &str, name: &str) -> Option<SharedModule>;
    /// Whether the dotted name is a module of the site.
    fn is_module(&self, module: &str) -> bool;
    /// What the module's text may define or mention as `name` (`chunks::may_define`), so
    /// that a module is parsed whole only when the parse may find it; all `true` when the
    /// text cannot be read.
    fn may_define(&self, module: &str, name: &str) -> MayDefine;
    /// Whether lowering already treats a parameter of this name as arch-dependent (it names
    /// an arch token, or a rule declares it).
    fn already_device(&self, name: &str) -> bool;
    /// For each ask, whether the argument carries the device's value where the call is,
    /// with `modules` as the scan's modules (the resolver's answer, not the lowering's
    /// textual guess).
    fn device_arguments(
        &mut self,
        modules: &BTreeMap<String, SharedModule>,
        asks: &[Ask<'_>],
    ) -> Vec<bool>;
}

/// One argument of one call in a caller module: does it pass a device value?
pub struct Ask<'m> {
    pub caller: &'m SharedModule,
    pub site: &'m CallSite,
    pub argument: &'m Expr,
    /// The argument is an item of a splat (`f(*cap)` passes `cap[1]`): only a device number
    /// counts, as what else a spread sequence holds is not known item by item.
    pub spread: bool,
}

/// What the pass did.
pub struct Fed {
    /// The modules lowered again (or added), sorted.
    pub relowered: Vec<String>,
    /// Whether the last `device_arguments` call saw the modules as they are now (no round
    /// changed them after it), so what it built for them can be kept.
    pub last_ask_current: bool,
}

/// Re-lowers, in rounds, the modules whose functions receive device values from callers.
/// `modules` holds the scan's lowered modules by name and is updated in place.
pub fn feed_parameters(
    modules: &mut BTreeMap<String, SharedModule>,
    lowering: &mut dyn Lowering,
) -> Fed {
    let mut fed: HashMap<String, BTreeSet<String>> = HashMap::new();
    let probes: Probes = Mutex::new(HashMap::new());
    let mut changed: Vec<String> = modules.keys().cloned().collect();
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut last_ask_current = false;
    let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
    for _round in 0..MAX_ROUNDS {
        let clock = std::time::Instant::now();
        let callers: Vec<SharedModule> = changed
            .iter()
            .filter_map(|n| modules.get(n).cloned())
            .collect();
        prefetch_definitions(&callers, modules, &*lowering);
        // Each caller's calls are looked up on a thread of their own (reading definitions
        // means parsing parts of other modules); the candidates keep the callers' order.
        let shared: &dyn Lowering = &*lowering;
        let candidates: Vec<Candidate> = callers
            .par_iter()
            .map(|caller| candidates_of(caller, modules, &fed, &probes, shared))
            .collect::<Vec<_>>()
            .into_iter()
            .flatten()
            .collect();
        if candidates.is_empty() {
            break;
        }
        let asks: Vec<Ask> = candidates
            .iter()
            .map(|(caller, site, _, _, argument)| Ask {
                caller,
                site,
                argument: argument.as_ref(),
                // `Expr::positional` builds an argument only for a splat's item.
                spread: matches!(argument, std::borrow::Cow::Owned(_)),
            })
            .collect();
        let found = clock.elapsed();
        let answers = lowering.device_arguments(modules, &asks);
        if timings {
            let device = answers.iter().filter(|a| **a).count();
            eprintln!(
                "scan: fed parameters: {} arguments asked, {device} device (calls found in {found:?}, asked in {:?})",
                asks.len(),
                clock.elapsed() - found
            );
        }
        last_ask_current = true;
        let mut grown: BTreeSet<String> = BTreeSet::new();
        for ((_, _, target, param, _), device) in candidates.iter().zip(answers) {
            if device && fed.entry(target.clone()).or_default().insert(param.clone()) {
                grown.insert(target.clone());
            }
        }
        if grown.is_empty() {
            break;
        }
        changed.clear();
        let relowering = std::time::Instant::now();
        let count = grown.len();
        let grown: Vec<String> = grown.into_iter().collect();
        let shared: &dyn Lowering = &*lowering;
        let relowered: Vec<Option<SharedModule>> = grown
            .par_iter()
            .map(|target| {
                let names: Vec<String> = fed[target].iter().cloned().collect();
                shared.lower_fed(target, &names)
            })
            .collect();
        for (target, ir) in grown.into_iter().zip(relowered) {
            if let Some(ir) = ir {
                modules.insert(target.clone(), ir);
                touched.insert(target.clone());
                changed.push(target);
                last_ask_current = false;
            }
        }
        if timings {
            eprintln!(
                "scan: fed parameters: {count} modules lowered again in {:?}",
                relowering.elapsed()
            );
        }
    }
    Fed {
        relowered: touched.into_iter().collect(),
        last_ask_current,
    }
}

/// (caller, call, target module, parameter, argument): a call that may feed a parameter.
type Candidate<'m> = (
    &'m SharedModule,
    &'m CallSite,
    String,
    String,
    std::borrow::Cow<'m, Expr>,
);

/// Lowerings of modules read only to see what they bind to a top-level name, by module and
/// name.
type Probes = Mutex<HashMap<(String, String), Option<SharedModule>>>;

/// The parameters one caller's device calls may feed that are not known to be fed yet, in
/// the order of its calls.
fn candidates_of<'m>(
    caller: &'m SharedModule,
    modules: &BTreeMap<String, SharedModule>,
    fed: &HashMap<String, BTreeSet<String>>,
    probes: &Probes,
    lowering: &dyn Lowering,
) -> Vec<Candidate<'m>> {
    let mut candidates = Vec::new();
    let mut callees: Vec<&String> = caller.calls.keys().collect();
    callees.sort();
    for key in callees {
        for site in &caller.calls[key] {
            if site.device_args.is_empty() && site.device_kwargs.is_empty() {
                continue;
            }
            let Some((target, qualname)) = locate(caller, site, modules, probes, lowering) else {
                continue;
            };
            let Some(function) = function_of(&target, &qualname, modules, probes, lowering) else {
                continue;
            };
            for (param, argument) in fed_arguments(&function, site) {
                let known = fed.get(&target).is_some_and(|names| names.contains(&param));
                if known || lowering.already_device(&param) {
                    continue;
                }
                candidates.push((caller, site, target.clone(), param, argument));
            }
        }
    }
    candidates
}

/// Reads, in parallel, the definitions of the names the callers' device calls import (what
/// `locate` would otherwise read one at a time).
fn prefetch_definitions(
    callers: &[SharedModule],
    modules: &BTreeMap<String, SharedModule>,
    lowering: &dyn Lowering,
) {
    // (module, name): the first module `exported` reads for a call's callee.
    let mut wanted: BTreeSet<(String, &str)> = BTreeSet::new();
    for caller in callers {
        for site in caller.calls.values().flatten() {
            if site.device_args.is_empty() && site.device_kwargs.is_empty() {
                continue;
            }
            let parts: Vec<&str> = site.callee.split('.').collect();
            match (caller.imports.get(parts[0]), parts.as_slice()) {
                (Some(Import::Member(module, member)), [_]) => {
                    wanted.insert((module.clone(), member.as_str()));
                }
                (Some(Import::Member(module, member)), [_, name]) => {
                    wanted.insert((format!("{module}.{member}"), name));
                }
                (Some(Import::Module(module)), [_, name]) => {
                    wanted.insert((module.clone(), name));
                }
                _ => {}
            }
        }
    }
    // What `exported` would parse whole: a module whose scan lowering does not show the name,
    // and whose text mentions it.
    let needed = |(module, name): &(String, &str)| {
        lowering.is_module(module)
            && modules.get(module).is_none_or(|ir| {
                ir.partial && !defines(ir, name) && !ir.imports.contains_key(*name)
            })
            && lowering.may_define(module, name).mentioned
    };
    let wanted: Vec<(String, &str)> = wanted.into_iter().collect();
    wanted
        .par_iter()
        .filter(|pair| needed(pair))
        .for_each(|(module, name)| {
            lowering.definitions(module, name);
        });
}

/// The parameters of `function` that the call passes a device-dependent argument to, with
/// the argument.
fn fed_arguments<'s>(
    function: &Signature,
    site: &'s CallSite,
) -> Vec<(String, std::borrow::Cow<'s, Expr>)> {
    let bound = usize::from(
        function.method
            && function
                .params
                .first()
                .is_some_and(|p| p.name == "self" || p.name == "cls"),
    );
    let mut found: Vec<(String, std::borrow::Cow<'s, Expr>)> = Vec::new();
    for &i in &site.device_args {
        // `f(*get_compute_capability(d))`: the splat's items are the parameters from there on;
        // only a capability's two numbers count as the device's (`Ask::spread`), so two are
        // asked.
        let last = match site.args.get(i) {
            Some(Expr::Starred(_)) => i + 2,
            _ => i + 1,
        };
        for position in i..last {
            if let (Some(param), Some(argument)) = (
                function.params.get(position + bound),
                Expr::positional(&site.args, position),
            ) {
                found.push((param.name.clone(), argument));
            }
        }
    }
    for keyword in &site.device_kwargs {
        if function
            .params
            .iter()
            .skip(bound)
            .any(|p| p.name == *keyword)
            && let Some((_, argument)) = site.kwargs.iter().find(|(k, _)| k == keyword)
        {
            found.push((keyword.clone(), std::borrow::Cow::Borrowed(argument)));
        }
    }
    found.retain(|(n, _)| n != "self" && n != "cls" && !n.starts_with('*'));
    found
}

/// The module and qualname of the function a call runs: a function or class of the
/// caller's module, an imported one (through re-exports), `self.m`/`cls.m` in the caller's
/// class, or `alias.f` of an imported module. A class runs its `__init__`.
fn locate(
    caller: &ModuleIr,
    site: &CallSite,
    modules: &BTreeMap<String, SharedModule>,
    probes: &Probes,
    lowering: &dyn Lowering,
) -> Option<(String, String)> {
    let parts: Vec<&str> = site.callee.split('.').collect();
    let found = match parts.as_slice() {
        [name] => {
            if defines(caller, name) {
                Some((caller.module.clone(), name.to_string()))
            } else {
                match caller.imports.get(*name) {
                    Some(Import::Member(module, member)) => {
                        exported(module, member, modules, probes, lowering, 0)
                    }
                    Some(Import::Module(_)) => None,
                    // A partial parse may have left the definition out (a class without a
                    // token): the module's definitions of the name tell.
                    None => (caller.partial && {
                        let may = lowering.may_define(&caller.module, name);
                        may.function || may.class
                    })
                    .then(|| definitions(&caller.module, name, modules, probes, lowering))
                    .flatten()
                    .filter(|found| defines(found, name))
                    .map(|_| (caller.module.clone(), name.to_string())),
                }
            }
        }
        [receiver, method] if *receiver == "self" || *receiver == "cls" => {
            let class = site
                .function
                .and_then(|f| caller.functions.get(f))
                .and_then(|f| f.class.clone())?;
            Some((caller.module.clone(), format!("{class}.{method}")))
        }
        [alias, name] => {
            let module = match caller.imports.get(*alias)? {
                Import::Module(module) => module.clone(),
                Import::Member(module, member) => format!("{module}.{member}"),
            };
            if !lowering.is_module(&module) {
                return None;
            }
            exported(&module, name, modules, probes, lowering, 0)
        }
        _ => None,
    }?;
    let (module, qualname) = found;
    let is_class = |ir: &ModuleIr| ir.classes.contains_key(&qualname);
    let class = match modules.get(&module) {
        Some(ir) if is_class(ir) => true,
        Some(ir) if !ir.partial => false,
        _ => {
            lowering.may_define(&module, last_segment(&qualname)).class
                && definitions(&module, &qualname, modules, probes, lowering)
                    .is_some_and(|ir| is_class(&ir))
        }
    };
    if class {
        return Some((module, format!("{qualname}.__init__")));
    }
    Some((module, qualname))
}

/// Where `module.name` is defined, following `from x import name` re-exports.
fn exported(
    module: &str,
    name: &str,
    modules: &BTreeMap<String, SharedModule>,
    probes: &Probes,
    lowering: &dyn Lowering,
    hops: usize,
) -> Option<(String, String)> {
    // The scan's lowering keeps every import and the definitions around candidates; only
    // when it shows neither is the whole module read.
    let scanned = modules
        .get(module)
        .filter(|ir| defines(ir, name) || ir.imports.contains_key(name) || !ir.partial)
        .cloned();
    let ir = match scanned {
        Some(ir) => ir,
        None if !lowering.may_define(module, name).mentioned => return None,
        None => definitions(module, name, modules, probes, lowering)?,
    };
    if defines(&ir, name) {
        return Some((module.to_string(), name.to_string()));
    }
    match ir.imports.get(name)? {
        Import::Member(next, member) if hops < MAX_EXPORT_HOPS => {
            let (next, member) = (next.clone(), member.clone());
            exported(&next, &member, modules, probes, lowering, hops + 1)
        }
        _ => None,
    }
}

fn defines(ir: &ModuleIr, name: &str) -> bool {
    ir.classes.contains_key(name)
        || ir
            .functions
            .iter()
            .any(|f| f.parent.is_none() && f.class.is_none() && f.qualname == name)
}

/// What of a function's definition the pass reads.
struct Signature {
    method: bool,
    params: Vec<Param>,
}

/// A function's definition: in the scan's lowering when it is there (a partial parse keeps
/// the definitions around its candidates), else in a whole lowering of its module.
fn function_of(
    module: &str,
    qualname: &str,
    modules: &BTreeMap<String, SharedModule>,
    probes: &Probes,
    lowering: &dyn Lowering,
) -> Option<Signature> {
    let find = |ir: &ModuleIr| {
        ir.functions
            .iter()
            .find(|f| f.qualname == qualname)
            .map(|f| Signature {
                method: f.class.is_some(),
                params: f.params.clone(),
            })
    };
    if let Some(function) = modules.get(module).and_then(|ir| find(ir)) {
        return Some(function);
    }
    if !lowering.may_define(module, last_segment(qualname)).function {
        return None;
    }
    definitions(module, qualname, modules, probes, lowering).and_then(|ir| find(&ir))
}

/// `B` of `A.B`.
fn last_segment(qualname: &str) -> &str {
    qualname.rsplit('.').next().unwrap_or(qualname)
}

/// What a module binds to the top-level name of `qualname` (`A` of `A.B`): the scan's
/// lowering when it parsed the whole file, else a lowering of what binds that name, made once
/// here.
fn definitions(
    module: &str,
    qualname: &str,
    modules: &BTreeMap<String, SharedModule>,
    probes: &Probes,
    lowering: &dyn Lowering,
) -> Option<SharedModule> {
    if let Some(ir) = modules.get(module)
        && !ir.partial
    {
        return Some(ir.clone());
    }
    if !lowering.is_module(module) {
        return None;
    }
    let name = qualname.split('.').next().unwrap_or(qualname);
    let key = (module.to_string(), name.to_string());
    if let Some(found) = probes.lock().expect("no poisoned lock").get(&key) {
        return found.clone();
    }
    // Read outside the lock: another thread may read the same meanwhile, to the same
    // result, and the first kept wins.
    let found = lowering.definitions(module, name);
    probes
        .lock()
        .expect("no poisoned lock")
        .entry(key)
        .or_insert(found)
        .clone()
}
