//! JIT kernel sources, read from the site's Python code through the audit scanner: the arch
//! lists of JIT generators (`get_nvcc_flags_list(supported_major_versions=...)`), functions that
//! build with fixed-arch flag constants (`sm100a_nvcc_flags`), and tables that restrict
//! downloadable cubins (`BLACKWELL_CUBIN_ARCHS`).

use serde::{Deserialize, Serialize};

use crate::arch::Arch;
use crate::gate::index::module_name;
use crate::gate::ir::{CmpOp, Expr};
use crate::gate::predicate::{Atom, DevVar, Form, Pred, Rhs};
use crate::scan::ScanResult;
use crate::site::Site;

/// One arch list of a JIT generator, identified as `<module>:<function>`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Generator {
    pub id: String,
    pub dist: Option<String>,
    pub file: String,
    pub line: u32,
    /// The majors it compiles for; `None` means every target (no list was given).
    pub majors: Option<Vec<i64>>,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_because: Option<String>,
}

/// A function that builds for fixed archs, whatever the device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FixedArchBuild {
    pub id: String,
    pub dist: Option<String>,
    pub file: String,
    pub line: u32,
    pub flags: Vec<String>,
    pub archs: Vec<Arch>,
}

/// A module-level table of the archs that downloadable cubins exist for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CubinTable {
    pub id: String,
    pub dist: Option<String>,
    pub file: String,
    pub archs: Vec<Arch>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JitIndex {
    pub generators: Vec<Generator>,
    pub fixed_arch: Vec<FixedArchBuild>,
    pub cubin_tables: Vec<CubinTable>,
}

impl JitIndex {
    pub fn build(site: &Site, scan: &ScanResult) -> JitIndex {
        let mut index = JitIndex::default();
        for gate in scan.gates.iter().filter(|g| g.form == Form::JitArchList) {
            let function = gate.function.clone().unwrap_or_else(|| "<module>".into());
            let (majors, unknown_because) = majors_of(&gate.predicate);
            index.generators.push(Generator {
                id: format!("{}:{function}", dotted(&gate.file)),
                dist: gate.dist.clone(),
                file: gate.file.clone(),
                line: gate.line,
                majors,
                text: gate.text.clone(),
                unknown_because,
            });
        }
        for (file, module) in &scan.modules {
            let dist = site.owner(file).map(|d| d.name.clone());
            for function in &module.functions {
                let archs: Vec<Arch> = function
                    .fixed_arch_flags
                    .iter()
                    .filter_map(|f| flag_arch(f))
                    .collect();
                if !archs.is_empty() {
                    index.fixed_arch.push(FixedArchBuild {
                        id: format!("{}:{}", module.module, function.qualname),
                        dist: dist.clone(),
                        file: file.clone(),
                        line: function.line,
                        flags: function.fixed_arch_flags.clone(),
                        archs,
                    });
                }
            }
            let mut tables: Vec<(&String, &Expr)> = module
                .assigns
                .iter()
                .filter(|(name, _)| name.ends_with("CUBIN_ARCHS"))
                .collect();
            tables.sort_by(|a, b| a.0.cmp(b.0));
            for (name, value) in tables {
                if let Some(archs) = cubin_archs(value) {
                    index.cubin_tables.push(CubinTable {
                        id: format!("{}:{name}", module.module),
                        dist: dist.clone(),
                        file: file.clone(),
                        archs,
                    });
                }
            }
        }
        index.fixed_arch.sort_by(|a, b| a.id.cmp(&b.id));
        index.cubin_tables.sort_by(|a, b| a.id.cmp(&b.id));
        index
    }

    pub fn generators(&self, id: &str) -> Vec<&Generator> {
        self.generators.iter().filter(|g| g.id == id).collect()
    }
}

fn dotted(file: &str) -> String {
    module_name(std::path::Path::new(file))
        .map(|(m, _)| m)
        .unwrap_or_else(|| file.to_string())
}

fn majors_of(pred: &Pred) -> (Option<Vec<i64>>, Option<String>) {
    match pred {
        Pred::Const(true) => (None, None),
        Pred::Atom(
            Atom::Dev {
                var: DevVar::Major,
                op: CmpOp::In,
                rhs: Rhs::Ints(majors),
            },
            _,
        ) => (Some(majors.clone()), None),
        Pred::Atom(
            Atom::Dev {
                var: DevVar::Major,
                op: CmpOp::Eq,
                rhs: Rhs::Int(major),
            },
            _,
        ) => (Some(vec![*major]), None),
        Pred::Atom(Atom::Unknown(why), _) => (Some(Vec::new()), Some(why.clone())),
        other => (
            Some(Vec::new()),
            Some(format!("unexpected arch list predicate `{other}`")),
        ),
    }
}

/// `sm100a_nvcc_flags` is sm_100a.
fn flag_arch(flag: &str) -> Option<Arch> {
    flag.strip_suffix("_nvcc_flags")?.parse().ok()
}

/// `("Sm100a", "Sm100f", "Sm103a")` as archs.
fn cubin_archs(value: &Expr) -> Option<Vec<Arch>> {
    let (Expr::Tuple(items) | Expr::List(items) | Expr::Set(items)) = value else {
        return None;
    };
    items
        .iter()
        .map(|item| match item {
            Expr::Str(text) => text.parse::<Arch>().ok(),
            _ => None,
        })
        .collect()
}

/// Whether SASS built for `image` loads on `target` (fixed-arch builds and cubins are SASS).
pub fn sass_loads(image: Arch, target: Arch) -> bool {
    super::image_load(super::EntryKind::Sass, image, target.plain()) == super::Load::Sass
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Variant;

    #[test]
    fn flag_and_cubin_names_parse_to_archs() {
        assert_eq!(
            flag_arch("sm100a_nvcc_flags").map(|a| (a.sm(), a.variant)),
            Some((100, Variant::A))
        );
        assert_eq!(
            flag_arch("sm120f_nvcc_flags").map(|a| (a.sm(), a.variant)),
            Some((120, Variant::F))
        );
        let table = Expr::Tuple(vec![Expr::Str("Sm100a".into()), Expr::Str("Sm100f".into())]);
        let archs = cubin_archs(&table).unwrap();
        assert_eq!(
            archs.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            ["sm_100a", "sm_100f"]
        );
        assert!(!sass_loads(archs[0], Arch::new(12, 0)));
        assert!(sass_loads(archs[1], Arch::new(10, 3)));
    }
}
