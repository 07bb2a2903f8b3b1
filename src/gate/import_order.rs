//! Work in import order: each module after the modules it imports from, so that what those
//! bind from the device is known when it is lowered (`scan::lower_hits`), instead of lowering
//! it first without and again with (issue 37: each module lowered once where the imports
//! allow it).
//!
//! The graph is the files' `from m import ...` statements. Modules that import each other
//! (an import cycle, one strongly connected component) are worked on together, none seeing
//! what another binds; the scan's importer rounds fill those names in afterwards, as they did
//! for every module before.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The strongly connected components of the graph whose node `n` depends on `deps[n]`,
/// dependencies first (a component comes after every component it depends on). Tarjan's
/// algorithm with an explicit stack: import chains of real sites run hundreds deep.
pub fn components(deps: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = deps.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut next = 0usize;
    // (node, position in its dependency list)
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        work.push((root, 0));
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(node, at)) = work.last() {
            if let Some(&dep) = deps[node].get(at) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index[dep] == UNSEEN {
                    index[dep] = next;
                    low[dep] = next;
                    next += 1;
                    stack.push(dep);
                    on_stack[dep] = true;
                    work.push((dep, 0));
                } else if on_stack[dep] {
                    low[node] = low[node].min(index[dep]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                component.sort_unstable();
                out.push(component);
            }
        }
    }
    out
}

/// Runs `work` once per component of the graph (`components`), each after every component
/// it depends on, on the thread pool: components whose dependencies are done run side by
/// side. `work` gets the component's nodes (ascending) and the results of the nodes done so
/// far (`Done`), and returns one result per node in that order. What a node's work can
/// read is its dependencies' results, never another member's of its own component, so the
/// results do not depend on scheduling.
/// `cost`: a node's expected share of the work; of the components ready at the start, the
/// costliest run first, so that no long one is left to start when the rest are done.
pub fn in_dependency_order<T, F>(
    deps: &[Vec<usize>],
    cost: impl Fn(usize) -> u64,
    work: F,
) -> Vec<T>
where
    T: Send + Sync,
    F: Fn(&[usize], &Done<T>) -> Vec<T> + Sync,
{
    let components = components(deps);
    let mut component_of = vec![0usize; deps.len()];
    for (c, members) in components.iter().enumerate() {
        for &member in members {
            component_of[member] = c;
        }
    }
    // Per component: the components waiting for it, and how many it still waits for.
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); components.len()];
    let mut waiting: Vec<usize> = vec![0; components.len()];
    for (c, members) in components.iter().enumerate() {
        let mut on: Vec<usize> = members
            .iter()
            .flat_map(|&m| deps[m].iter().map(|&d| component_of[d]))
            .filter(|&d| d != c)
            .collect();
        on.sort_unstable();
        on.dedup();
        waiting[c] = on.len();
        for d in on {
            dependents[d].push(c);
        }
    }
    let waiting: Vec<AtomicUsize> = waiting.into_iter().map(AtomicUsize::new).collect();
    let results: Vec<OnceLock<T>> = (0..deps.len()).map(|_| OnceLock::new()).collect();
    let mut ready: Vec<usize> = (0..components.len())
        .filter(|&c| waiting[c].load(Ordering::Relaxed) == 0)
        .collect();
    // A worker runs what it spawned last first (others take from the front): the cheapest
    // are spawned first.
    ready.sort_by_key(|&c| components[c].iter().map(|&m| cost(m)).sum::<u64>());
    let shared = Shared {
        components: &components,
        dependents: &dependents,
        waiting: &waiting,
        results: &results,
        work: &work,
    };
    rayon::scope(|scope| {
        for c in ready {
            let shared = &shared;
            scope.spawn(move |scope| shared.run(c, scope));
        }
    });
    results
        .into_iter()
        .map(|cell| cell.into_inner().expect("every component runs once"))
        .collect()
}

/// The results of the nodes done so far, for `in_dependency_order`'s work to read.
pub struct Done<'a, T>(&'a [OnceLock<T>]);

impl<T> Done<'_, T> {
    /// The node's result, if its component is done.
    pub fn get(&self, node: usize) -> Option<&T> {
        self.0.get(node)?.get()
    }
}

struct Shared<'a, T, F> {
    components: &'a [Vec<usize>],
    dependents: &'a [Vec<usize>],
    waiting: &'a [AtomicUsize],
    results: &'a [OnceLock<T>],
    work: &'a F,
}

impl<'a, T, F> Shared<'a, T, F>
where
    T: Send + Sync,
    F: Fn(&[usize], &Done<T>) -> Vec<T> + Sync,
{
    fn run<'s>(&'s self, component: usize, scope: &rayon::Scope<'s>) {
        let members = &self.components[component];
        let out = (self.work)(members, &Done(self.results));
        assert_eq!(out.len(), members.len(), "one result per member");
        for (&member, result) in members.iter().zip(out) {
            let _ = self.results[member].set(result);
        }
        for &next in &self.dependents[component] {
            if self.waiting[next].fetch_sub(1, Ordering::AcqRel) == 1 {
                scope.spawn(move |scope| self.run(next, scope));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_come_after_what_they_depend_on_and_cycles_stay_together() {
        // 0 -> 1 -> 2 -> 1 (a cycle), 3 -> 0, 4 alone, 5 -> 5 (a self-import).
        let deps = vec![vec![1], vec![2], vec![1], vec![0], vec![], vec![5]];
        let order = components(&deps);
        let position = |n: usize| order.iter().position(|c| c.contains(&n)).unwrap();
        assert!(order.contains(&vec![1, 2]), "{order:?}");
        assert_eq!(order.len(), 5, "{order:?}");
        assert!(position(1) < position(0));
        assert!(position(0) < position(3));
        assert_eq!(order.iter().map(Vec::len).sum::<usize>(), deps.len());
    }

    #[test]
    fn a_chain_thousands_deep_needs_no_deep_stack() {
        let n = 100_000;
        let deps: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        let order = components(&deps);
        assert_eq!(order.len(), n);
        assert_eq!(order[0], vec![n - 1]);
        assert_eq!(order[n - 1], vec![0]);
    }

    #[test]
    fn each_node_sees_its_dependencies_done_and_never_its_own_component() {
        // 0 and 1 import each other; 2 imports 0; 3 imports 2 and 1; 4 imports nothing.
        let deps = vec![vec![1], vec![0], vec![0], vec![2, 1], vec![]];
        // A node's result: 1 + the largest result among its dependencies outside its cycle.
        let depth = in_dependency_order(
            &deps,
            |_| 1,
            |members, done| {
                members
                    .iter()
                    .map(|&m| {
                        let seen: Vec<usize> = deps[m]
                            .iter()
                            .filter(|d| !members.contains(d))
                            .map(|&d| *done.get(d).expect("a dependency outside the cycle is done"))
                            .collect();
                        for other in members {
                            assert!(
                                done.get(*other).is_none(),
                                "a member of the cycle is not done yet"
                            );
                        }
                        1 + seen.into_iter().max().unwrap_or(0)
                    })
                    .collect()
            },
        );
        assert_eq!(depth, vec![1, 1, 2, 3, 1]);
    }
}
