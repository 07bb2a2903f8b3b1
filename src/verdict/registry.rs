//! Checker registries: an API decorated with `@backend_requirement({"cutlass": _check_cutlass},
//! common_check=_check_common)` (a `[[checker_registry]]` rule) raises unless the chosen
//! backend's checker passes, and each checker carries a capability decorator
//! (`@supported_compute_capability([100, 103])`). That decorator is a gate with no branch of its
//! own: what it guards is the API's branch for the checker's backend (`if backend ==
//! "cutlass": ...`), or the whole API for a common check. This pass finds, for each checker
//! gate the link search left without a kernel, the registries that name the checker, and
//! follows those branches.

use crate::syntax::Node;

use super::code::{Facts, enclosing_ranges, facts, field_is, plain_word, text};
use super::link::{GateLink, LinkOutcome, Linker};
use super::site_text::Hit;
use crate::gate::predicate::Form;
use crate::rules::CheckerRegistry;

/// Where a checker is registered, and what that registration guards.
struct Registration {
    module: String,
    facts: Facts,
    what: String,
}

/// Links the capability decorators of checkers through the registries that name them.
pub fn link_checkers(linker: &Linker, links: &mut [GateLink]) {
    let registries = &linker.rules.checker_registries;
    if registries.is_empty() {
        return;
    }
    let candidates: Vec<(usize, String)> = linker
        .gates
        .iter()
        .enumerate()
        .filter(|(i, g)| {
            g.form == Form::CapabilityDecorator
                && matches!(links[*i].outcome, LinkOutcome::NotLinked(_))
        })
        .filter_map(|(i, g)| {
            let function = g.function.as_deref()?;
            Some((i, function.rsplit('.').next()?.to_string()))
        })
        .collect();
    if candidates.is_empty() {
        return;
    }
    let mut names: Vec<String> = candidates.iter().map(|(_, n)| n.clone()).collect();
    names.sort();
    names.dedup();
    let hits = linker.text.find_words(&names);
    // Most hits of a checker's name are its definition and its calls; only files that use a
    // registry decorator, and hits that are a dict value or a keyword's value, are parsed.
    let decorators: Vec<&[u8]> = registries.iter().map(|r| r.decorator.as_bytes()).collect();
    let mut uses_registry: Vec<Option<bool>> = vec![None; linker.text.files.len()];
    for (index, name) in candidates {
        let position = names.binary_search(&name).expect("a searched name");
        let registrations: Vec<Registration> = hits[position]
            .iter()
            .filter(|hit| {
                let src = &linker.text.files[hit.file].src;
                is_value_position(src, hit.start)
                    && *uses_registry[hit.file].get_or_insert_with(|| {
                        decorators
                            .iter()
                            .any(|d| memchr::memmem::find(src, d).is_some())
                    })
            })
            .filter_map(|hit| registration(linker, registries, hit))
            .collect();
        let gate = &linker.gates[index];
        let mut found = Vec::new();
        for r in &registrations {
            let mut reached = linker.follow_code(
                &r.module,
                &r.facts,
                vec![r.what.clone()],
                &[],
                gate.dist.as_deref(),
            );
            found.append(&mut reached.links);
        }
        if !found.is_empty() {
            links[index].outcome = LinkOutcome::Linked(found);
            links[index].stop = None;
        }
    }
}

/// Whether the word at `start` follows a `:` or an `=` (a dict value, a keyword's value): the
/// only places a registration names its checker.
fn is_value_position(src: &[u8], start: usize) -> bool {
    src[..start]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b':' | b'='))
}

/// The registration a hit of a checker's name is, if it is one: a value of the registry's
/// dict (`"cutlass": _check_cutlass`) or one of its common keywords, in a decorator the rules
/// name, above a `def`.
fn registration(
    linker: &Linker,
    registries: &[CheckerRegistry],
    hit: &Hit,
) -> Option<Registration> {
    let file = &linker.text.files[hit.file];
    let module = file.module.clone()?;
    let parsed = linker.code.module(&module)?;
    let src = &parsed.src;
    let around = enclosing_ranges(&parsed, hit.start).around;
    let tree = parsed.parse(&around);
    let node = tree
        .root_node()
        .descendant_for_byte_range(hit.start, hit.end)?;
    if node.kind() != "identifier" {
        return None;
    }
    let parent = node.parent()?;
    let (backend, arguments) = match parent.kind() {
        "pair" if field_is(parent, "value", node) => {
            let key = plain_word(parent.child_by_field_name("key")?, src)?;
            let arguments = parent.parent()?.parent()?;
            (Some(key), arguments)
        }
        "keyword_argument" if field_is(parent, "value", node) => (None, parent.parent()?),
        _ => return None,
    };
    let call = arguments.parent()?;
    if arguments.kind() != "argument_list" || call.kind() != "call" {
        return None;
    }
    let decorator_name = text(call.child_by_field_name("function")?, src);
    let decorator_name = decorator_name.rsplit('.').next().unwrap_or(decorator_name);
    let registry = registries.iter().find(|r| r.decorator == decorator_name)?;
    if backend.is_none() {
        let keyword = text(parent.child_by_field_name("name")?, src);
        if !registry.common.iter().any(|c| c == keyword) {
            return None;
        }
    }
    let decorated = call.parent()?.parent()?;
    if decorated.kind() != "decorated_definition" {
        return None;
    }
    let definition = decorated.child_by_field_name("definition")?;
    let api = text(definition.child_by_field_name("name")?, src).to_string();
    let body = definition.child_by_field_name("body")?;
    let line = call.start_position().row + 1;
    // A backend with no branch of its own (chosen through a heuristic list or a runner
    // table) is not followed: the rest of the API serves the other backends.
    let (facts, what) = match &backend {
        Some(backend) => (
            backend_branches(body, src, &registry.parameter, backend)?,
            format!(
                "{}:{line} registers the checker for backend \"{backend}\" of {api}(); followed its `{} == \"{backend}\"` branches",
                file.path, registry.parameter
            ),
        ),
        None => (
            facts(body, src),
            format!(
                "{}:{line} registers the common check of {api}(); followed {api}()",
                file.path
            ),
        ),
    };
    Some(Registration {
        module,
        facts,
        what,
    })
}

/// The branches of `body` whose test compares `parameter` with `backend` (`backend ==
/// "cutlass"`, `backend in ("cutlass", "cudnn")`), as one set of facts; `None` when there is
/// none.
fn backend_branches(body: Node, src: &[u8], parameter: &str, backend: &str) -> Option<Facts> {
    let mut found: Option<Facts> = None;
    let mut stack = vec![body];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "function_definition" | "class_definition") {
            continue;
        }
        if matches!(node.kind(), "if_statement" | "elif_clause")
            && let Some(test) = node.child_by_field_name("condition")
            && names_backend(test, src, parameter, backend)
            && let Some(consequence) = node.child_by_field_name("consequence")
        {
            found
                .get_or_insert_with(Facts::default)
                .extend(facts(consequence, src));
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    found
}

/// Whether a test compares the parameter with the backend's name.
fn names_backend(test: Node, src: &[u8], parameter: &str, backend: &str) -> bool {
    let mut stack = vec![test];
    while let Some(node) = stack.pop() {
        if node.kind() == "comparison_operator" {
            let mut has_parameter = false;
            let mut has_backend = false;
            let mut inner = vec![node];
            while let Some(n) = inner.pop() {
                match n.kind() {
                    "identifier" if text(n, src) == parameter => has_parameter = true,
                    "attribute"
                        if n.child_by_field_name("attribute")
                            .is_some_and(|a| text(a, src) == parameter) =>
                    {
                        has_parameter = true
                    }
                    "string" if plain_word(n, src).as_deref() == Some(backend) => {
                        has_backend = true
                    }
                    _ => {}
                }
                let mut cursor = n.walk();
                inner.extend(n.named_children(&mut cursor));
            }
            if has_parameter && has_backend {
                return true;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::is_value_position;

    #[test]
    fn only_dict_and_keyword_values_can_register_a_checker() {
        let src = b"@backend_requirement({\n    \"cutlass\": _check,\n}, common_check=_common)\ndef _check(): _check()";
        let at = |word: &str, nth: usize| {
            let w = word.as_bytes();
            src.windows(w.len())
                .enumerate()
                .filter(|(_, s)| *s == w)
                .nth(nth)
                .unwrap()
                .0
        };
        assert!(is_value_position(src, at("_check", 0)));
        assert!(is_value_position(src, at("_common", 0)));
        assert!(!is_value_position(src, at("_check", 1)));
        assert!(!is_value_position(src, at("_check", 2)));
    }
}
