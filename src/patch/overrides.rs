//! Switches that need no edit: for a planned patch or fix, the `[[override]]` rules whose
//! switch selects what one of its edits would open (issue: "overrides before patches").
//! Only what the installed code shows is offered: a file the rule names must still read the
//! switch, and the edited file must mention the setting where the rule asks for it.

use crate::kernel::query::glob_match;
use crate::rules::OverrideRule;
use crate::site::Site;

use super::plan::{Alternative, Plan};

/// Fills each patch plan's `alternatives` from the rules, reading the site's files.
pub fn attach(plan: &mut Plan, rules: &[OverrideRule], site: &Site) {
    for patch in &mut plan.patches {
        let mut found: Vec<Alternative> = Vec::new();
        for (file, _) in &patch.hits {
            for rule in rules.iter().filter(|r| {
                super::plan::normalise(&r.dist) == super::plan::normalise(&patch.patch.dist)
                    && glob_match(&r.applies_to, file)
            }) {
                if found
                    .iter()
                    .any(|a| a.switch == rule.switch && a.instead_of == *file)
                {
                    continue;
                }
                let mentions = |path: &str| -> Option<usize> {
                    let text = std::fs::read(site.root.join(path)).ok()?;
                    let at = memchr::memmem::find(&text, rule.reads.as_bytes())?;
                    Some(text[..at].iter().filter(|&&b| b == b'\n').count() + 1)
                };
                let read_at = rule
                    .read_in
                    .iter()
                    .find_map(|path| mentions(path).map(|line| format!("{path}:{line}")));
                let Some(read_at) = read_at else {
                    continue;
                };
                if let Some(setting) = &rule.edit_mentions {
                    let text = std::fs::read(site.root.join(file)).unwrap_or_default();
                    if memchr::memmem::find(&text, setting.as_bytes()).is_none() {
                        continue;
                    }
                }
                found.push(Alternative {
                    switch: rule.switch.clone(),
                    read_at,
                    instead_of: file.clone(),
                    says: rule.says.clone(),
                });
            }
        }
        patch.alternatives = found;
    }
}
