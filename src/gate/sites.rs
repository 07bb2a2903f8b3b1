//! From candidate decision sites to gates: each site's predicate and form. A site whose
//! predicate does not depend on the device is not a gate and is dropped.

use super::ir::{CmpOp, Expr, SharedModule, Site, SiteKind};
use super::predicate::{Atom, DevVar, Form, Pred, Rhs};
use super::resolve::{Resolver, Scope, Val, reset_budget, table_lookup, take_assumptions, to_pred};

/// A resolved gate inside one module, before it is placed in the report.
#[derive(Debug, Clone)]
pub struct ResolvedSite {
    pub site_index: usize,
    pub form: Form,
    pub predicate: Pred,
    /// The parameter assumed to be the device's value, for a parametric gate.
    pub assumes: Option<String>,
}

/// Resolves every candidate site of a module; keeps the arch-dependent ones.
pub fn resolve_module(resolver: &Resolver, module: &SharedModule) -> Vec<ResolvedSite> {
    module
        .sites
        .iter()
        .enumerate()
        .filter_map(|(site_index, site)| {
            let (predicate, form) = resolve_site(resolver, module, site)?;
            let assumes = take_assumptions();
            // A JIT call without an arch list compiles for every target: not a gate on its
            // own, but the kernel index needs to know the generator exists.
            // A comparison on a parameter is a gate when the parameter is the device's value
            // (or unknown by its name), not when resolving its callers merely gave up.
            let keep = if site.parametric {
                predicate.reads_device_or_parameter()
            } else if !site.own_token && predicate.only_limit_unknowns() {
                // Reached only through derived names and unknown only where resolution gave
                // up: nothing shows the device is involved.
                false
            } else {
                predicate.is_arch_dependent() || form == Form::JitArchList
            };
            keep.then_some(ResolvedSite {
                site_index,
                form,
                predicate,
                assumes,
            })
        })
        .collect()
}

fn resolve_site(resolver: &Resolver, module: &SharedModule, site: &Site) -> Option<(Pred, Form)> {
    reset_budget();
    let scope = Scope::at(module, site.function, site.byte);
    // A site only reached where a platform fact fails on NVIDIA (`if is_hip():`) is not an
    // NVIDIA gate.
    for (guard, holds) in &site.guards {
        let test = resolver.condition(guard, scope, 0);
        if test == Pred::Const(!*holds) {
            return None;
        }
    }
    let function_name = site
        .function
        .map(|f| module.functions[f].qualname.as_str())
        .unwrap_or("");
    match site.kind {
        SiteKind::JitArchList => Some((
            jit_arch_list(resolver, &site.expr, scope),
            Form::JitArchList,
        )),
        SiteKind::Decorator => Some((
            decorator(resolver, &site.expr, scope),
            Form::CapabilityDecorator,
        )),
        SiteKind::MinCapability => {
            // A literal, or a delegation read through the other class's method.
            let min = match &site.expr {
                Expr::Int(n) => Val::Int(*n),
                expr => resolver.eval(expr, scope, 0),
            };
            match min {
                Val::Int(n) => Some((
                    sm_atom(CmpOp::Ge, Rhs::Int(n), Form::MinCapability),
                    Form::MinCapability,
                )),
                Val::Unknown(reason) => Some((
                    Pred::unknown(reason, Form::MinCapability),
                    Form::MinCapability,
                )),
                _ => None,
            }
        }
        SiteKind::Return
        | SiteKind::ModuleFlag
        | SiteKind::LocalFlag
        | SiteKind::Argument
        | SiteKind::AttrStore => {
            let val = resolver.eval(&site.expr, scope, 0);
            let pred = match val {
                Val::Pred(pred) => pred,
                Val::Unknown(reason) => Pred::unknown(reason, Form::HelperCall),
                _ => return None,
            };
            let form = match site.kind {
                SiteKind::ModuleFlag | SiteKind::LocalFlag | SiteKind::AttrStore => {
                    Form::CachedFlag
                }
                _ if is_backend_check(function_name) => Form::BackendCapability,
                _ => pred.first_arch_form()?,
            };
            Some((pred, form))
        }
        SiteKind::TableLookup => {
            let Expr::Subscript(table, key) = &site.expr else {
                return None;
            };
            let table = resolver.eval(table, scope, 0);
            let key = resolver.eval(key, scope, 0);
            let pred = table_lookup(table, key, &site.text)?;
            Some((pred.with_form(Form::ArchTable), Form::ArchTable))
        }
        SiteKind::ValueSelect => {
            Some((resolver.condition(&site.expr, scope, 0), Form::ValueSelect))
        }
        SiteKind::Test | SiteKind::Assert => {
            let pred = resolver.condition(&site.expr, scope, 0);
            let form = pred.first_arch_form()?;
            Some((pred, form))
        }
    }
}

fn is_backend_check(function: &str) -> bool {
    let name = function.rsplit('.').next().unwrap_or(function);
    name == "supports_compute_capability" || name == "get_min_capability" || name == "is_supported"
}

fn sm_atom(op: CmpOp, rhs: Rhs, form: Form) -> Pred {
    Pred::atom(
        Atom::Dev {
            var: DevVar::Sm,
            op,
            rhs,
        },
        form,
    )
}

/// `get_nvcc_flags_list(supported_major_versions=[9, 10])`: compiles only for those majors;
/// no list (or `None`) compiles for every target.
fn jit_arch_list(resolver: &Resolver, call: &Expr, scope: Scope) -> Pred {
    let Expr::Call { func, args, kwargs } = call else {
        return Pred::unknown("not a call", Form::JitArchList);
    };
    let positional = func
        .to_string()
        .ends_with("get_nvcc_flags_list")
        .then(|| args.first())
        .flatten();
    let list = kwargs
        .iter()
        .find(|(k, _)| k == "supported_major_versions")
        .map(|(_, v)| v)
        .or(positional);
    let Some(list) = list else {
        return Pred::Const(true);
    };
    match resolver.eval(list, scope, 0) {
        Val::NoneV => Pred::Const(true),
        Val::Seq(items) => int_set(&items, DevVar::Major, Form::JitArchList, list),
        Val::Unknown(reason) => Pred::unknown(reason, Form::JitArchList),
        _ => Pred::unknown(
            format!("the arch list `{list}` could not be resolved"),
            Form::JitArchList,
        ),
    }
}

/// `@supported_compute_capability([90, 100])`: exact `major * 10 + minor` values.
fn decorator(resolver: &Resolver, call: &Expr, scope: Scope) -> Pred {
    let Expr::Call { args, .. } = call else {
        return Pred::unknown("not a call", Form::CapabilityDecorator);
    };
    let Some(list) = args.first() else {
        return Pred::unknown(
            "the decorator has no capability list",
            Form::CapabilityDecorator,
        );
    };
    match resolver.eval(list, scope, 0) {
        Val::Seq(items) => int_set(&items, DevVar::Sm, Form::CapabilityDecorator, list),
        other => match to_pred(other) {
            Pred::Atom(Atom::Unknown(reason), _) => {
                Pred::unknown(reason, Form::CapabilityDecorator)
            }
            _ => Pred::unknown(
                format!("the capability list `{list}` could not be resolved"),
                Form::CapabilityDecorator,
            ),
        },
    }
}

fn int_set(items: &[Val], var: DevVar, form: Form, source: &Expr) -> Pred {
    let mut values = Vec::new();
    for item in items {
        match item {
            Val::Int(n) => values.push(*n),
            _ => {
                return Pred::unknown(
                    format!("`{source}` holds a value that is not an integer"),
                    form,
                );
            }
        }
    }
    values.sort_unstable();
    values.dedup();
    Pred::atom(
        Atom::Dev {
            var,
            op: CmpOp::In,
            rhs: Rhs::Ints(values),
        },
        form,
    )
}
