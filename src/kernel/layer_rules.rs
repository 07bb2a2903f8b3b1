//! The kernel-layer rules (`[kernel_layers]` of the rule files, `rules/kernels.toml` built
//! in): what cannot be inferred from kernel sources, read once and shared by the layers
//! (`layers.rs`) and the source discovery (`sources.rs`).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::cpp::CheckShape;
use crate::arch::{Arch, Variant};

/// The `[kernel_layers]` table of a rule file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerRuleFile {
    #[serde(default)]
    spec_calls: Vec<String>,
    #[serde(default)]
    include_dirs: Vec<String>,
    #[serde(default)]
    external_include_dirs: Vec<String>,
    #[serde(default)]
    nvcc_dists: Vec<String>,
    #[serde(default)]
    triton_decorators: Vec<String>,
    #[serde(default)]
    triton_dists: Vec<String>,
    #[serde(default)]
    triton_ptxas: Vec<String>,
    #[serde(default)]
    source_dir: Vec<SourceDirRule>,
    #[serde(default)]
    check: Vec<CheckRule>,
    #[serde(default)]
    sm_name: Vec<SmNameRule>,
    #[serde(default)]
    sm_constant: Vec<SmConstantRule>,
    #[serde(default)]
    jit_target: Vec<JitTargetRule>,
    #[serde(default)]
    shared_memory: Vec<SharedMemoryRule>,
    #[serde(default)]
    ptx_instruction: Vec<PtxInstructionRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PtxInstructionRule {
    /// The instruction's name as PTX spells it, up to a dot or the end (`tcgen05.`,
    /// `setmaxnreg`).
    prefix: String,
    /// Every target that assembles it (`sm_90a`); any other target does not.
    targets: Vec<String>,
    /// Where that is documented or measured.
    source: String,
}

/// A PTX instruction that only some targets assemble (`[[kernel_layers.ptx_instruction]]`):
/// a kernel whose code holds it in an `asm` string does not build for the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxInstruction {
    pub prefix: String,
    pub targets: Vec<Arch>,
    pub source: String,
}

impl PtxInstruction {
    /// Whether a build for `target` stops at this instruction: the target as built (`variant`)
    /// is not among those that have it, or, with the variant unknown, none of the target's
    /// variants is.
    pub fn missing_at(&self, target: Arch, variant: Option<Variant>) -> bool {
        let has = |variant: Variant| {
            let built = Arch {
                variant,
                ..target.plain()
            };
            self.targets.contains(&built)
        };
        match variant {
            Some(variant) => !has(variant),
            None => ![Variant::Plain, Variant::A, Variant::F]
                .into_iter()
                .any(has),
        }
    }

    /// Whether `text` (the contents of a string literal, escapes as written) holds the
    /// instruction where an instruction starts: at its beginning or after a blank, an escaped
    /// line break or tab (`\\n\\t`), `;`, `{`, `}` or a guard predicate (`@p `); not inside
    /// another word (`my_wgmma.x`).
    pub fn named_in(&self, text: &str) -> bool {
        text.match_indices(self.prefix.as_str()).any(|(at, _)| {
            let before = &text[..at];
            before.is_empty()
                || ["\\n", "\\t", "\\r"].iter().any(|e| before.ends_with(e))
                || before
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_whitespace() || matches!(c, ';' | '{' | '}'))
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedMemoryRule {
    target: String,
    /// The most dynamic shared memory one block may ask for (bytes, opt-in).
    max_per_block: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceDirRule {
    name: String,
    path: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckRule {
    name: String,
    /// `condition` (the first argument must hold) or a comparison `==`, `!=`, `<`, ...
    shape: String,
}

/// What an SM-holding name holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Holds {
    Major,
    Minor,
    /// `major * 10 + minor` (`getSMVersion()` is 100 on sm_100).
    Sm,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SmNameRule {
    /// The expression as written, whitespace ignored: `major`, `getSMVersion()`.
    name: String,
    holds: Holds,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SmConstantRule {
    /// `kSM_`: `kSM_100` is the constant 100 (a suffix letter makes it another name).
    prefix: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct JitTargetRule {
    target: String,
    suffix: String,
    min_cuda: String,
}

/// One way a JIT build can target a device: `sm_120` as `120f`, which needs CUDA 12.9.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitTarget {
    pub target: Arch,
    pub variant: Variant,
    pub min_cuda: (u32, u32),
}

/// The kernel-layer rules of every rule file, merged.
#[derive(Debug, Clone, Default)]
pub struct LayerRules {
    pub spec_calls: Vec<String>,
    /// Folder constant name → site-relative folder.
    pub source_dirs: Vec<(String, String)>,
    pub include_dirs: Vec<String>,
    pub external_include_dirs: Vec<String>,
    pub nvcc_dists: Vec<String>,
    /// Decorators that make a def a Triton kernel (`triton.jit`).
    pub triton_decorators: Vec<String>,
    /// The distributions that install triton, and where each bundles its ptxas.
    pub triton_dists: Vec<String>,
    pub triton_ptxas: Vec<String>,
    pub checks: Vec<(String, CheckShape)>,
    pub sm_names: Vec<(String, Holds)>,
    pub sm_constants: Vec<String>,
    /// In preference order per target.
    pub jit_targets: Vec<JitTarget>,
    /// The most dynamic shared memory a block may ask for, per target (plain arch).
    pub shared_memory: Vec<(Arch, u64)>,
    /// PTX instructions only some targets assemble.
    pub ptx_instructions: Vec<PtxInstruction>,
}

/// A table's `target = "sm_120"`; the error names the table.
fn parse_target(table: &str, text: &str) -> Result<Arch, String> {
    text.parse()
        .map_err(|_| format!("[[kernel_layers.{table}]]: `{text}` is not an arch"))
}

/// `"12.9"` → `(12, 9)`.
pub fn parse_cuda(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

impl LayerRules {
    /// Adds one file's table; errors say which entry is wrong.
    pub fn add(&mut self, file: LayerRuleFile) -> Result<(), String> {
        self.spec_calls.extend(file.spec_calls);
        self.include_dirs.extend(file.include_dirs);
        self.external_include_dirs
            .extend(file.external_include_dirs);
        self.nvcc_dists.extend(file.nvcc_dists);
        self.triton_decorators.extend(file.triton_decorators);
        self.triton_dists.extend(file.triton_dists);
        self.triton_ptxas.extend(file.triton_ptxas);
        for dir in file.source_dir {
            self.source_dirs.push((dir.name, dir.path));
        }
        for check in file.check {
            let shape = match check.shape.as_str() {
                "condition" => CheckShape::Condition,
                "==" => CheckShape::Compare("=="),
                "!=" => CheckShape::Compare("!="),
                "<" => CheckShape::Compare("<"),
                "<=" => CheckShape::Compare("<="),
                ">" => CheckShape::Compare(">"),
                ">=" => CheckShape::Compare(">="),
                other => {
                    return Err(format!(
                        "[[kernel_layers.check]] `{}`: shape `{other}` is not `condition`, ==, !=, <, <=, > or >=",
                        check.name
                    ));
                }
            };
            self.checks.push((check.name, shape));
        }
        for name in file.sm_name {
            self.sm_names.push((compact(&name.name), name.holds));
        }
        for constant in file.sm_constant {
            self.sm_constants.push(constant.prefix);
        }
        for rule in file.jit_target {
            let target = parse_target("jit_target", &rule.target)?;
            let variant = match rule.suffix.as_str() {
                "a" => Variant::A,
                "f" => Variant::F,
                "" => Variant::Plain,
                other => {
                    return Err(format!(
                        "[[kernel_layers.jit_target]] {}: suffix `{other}` is not a, f or empty",
                        rule.target
                    ));
                }
            };
            let min_cuda = parse_cuda(&rule.min_cuda).ok_or_else(|| {
                format!(
                    "[[kernel_layers.jit_target]] {}: min_cuda `{}` is not X.Y",
                    rule.target, rule.min_cuda
                )
            })?;
            self.jit_targets.push(JitTarget {
                target: target.plain(),
                variant,
                min_cuda,
            });
        }
        for rule in file.shared_memory {
            let target = parse_target("shared_memory", &rule.target)?;
            self.shared_memory
                .push((target.plain(), rule.max_per_block));
        }
        for rule in file.ptx_instruction {
            let valid = !rule.prefix.is_empty()
                && rule
                    .prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':'));
            if !valid {
                return Err(format!(
                    "[[kernel_layers.ptx_instruction]] `{}`: a prefix is an instruction name (letters, digits, `.`, `_`, `::`)",
                    rule.prefix
                ));
            }
            let targets = rule
                .targets
                .iter()
                .map(|t| parse_target("ptx_instruction", t))
                .collect::<Result<Vec<_>, _>>()?;
            self.ptx_instructions.push(PtxInstruction {
                prefix: rule.prefix,
                targets,
                source: rule.source,
            });
        }
        Ok(())
    }

    /// The most dynamic shared memory a block may ask for at `target` (`None`: not in the
    /// table, nothing is judged).
    pub(super) fn max_shared_memory(&self, target: Arch) -> Option<u64> {
        let plain = target.plain();
        self.shared_memory
            .iter()
            .find(|(arch, _)| *arch == plain)
            .map(|(_, bytes)| *bytes)
    }

    /// The rules shipped in the binary (`rules/kernels.toml`).
    pub fn embedded() -> &'static LayerRules {
        static RULES: OnceLock<LayerRules> = OnceLock::new();
        RULES.get_or_init(|| {
            #[derive(Deserialize)]
            struct Wrapper {
                kernel_layers: LayerRuleFile,
            }
            let mut rules = LayerRules::default();
            let text = include_str!("../../rules/kernels.toml");
            // The embedded file is checked by a test; a broken one gives empty rules.
            if let Ok(w) = toml::from_str::<Wrapper>(text) {
                let _ = rules.add(w.kernel_layers);
            }
            rules
        })
    }

    pub(super) fn holds(&self, name: &str) -> Option<Holds> {
        if let Some((_, holds)) = self.sm_names.iter().find(|(n, _)| n == name) {
            return Some(*holds);
        }
        None
    }

    pub(super) fn constant(&self, name: &str) -> Option<i64> {
        self.sm_constants.iter().find_map(|prefix| {
            let digits = name.strip_prefix(prefix.as_str())?;
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.parse().ok())
                .flatten()
        })
    }

    pub(super) fn prefilter_words(&self) -> Vec<String> {
        let mut words: Vec<String> = self
            .sm_names
            .iter()
            .map(|(n, _)| {
                n.split(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                    .find(|w| !w.is_empty() && w.len() > 1)
                    .unwrap_or(n)
                    .to_string()
            })
            .collect();
        words.extend(self.sm_constants.iter().cloned());
        words.sort();
        words.dedup();
        words
    }
}

fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instruction(prefix: &str, targets: &[&str]) -> PtxInstruction {
        PtxInstruction {
            prefix: prefix.into(),
            targets: targets.iter().map(|t| t.parse().unwrap()).collect(),
            source: String::new(),
        }
    }

    #[test]
    fn an_instruction_is_missing_where_no_listed_target_is_the_build() {
        let setmaxnreg = instruction("setmaxnreg", &["sm_90a", "sm_120a", "sm_120f"]);
        let sm120 = Arch::new(12, 0);
        assert!(setmaxnreg.missing_at(sm120, Some(Variant::Plain)));
        assert!(!setmaxnreg.missing_at(sm120, Some(Variant::A)));
        assert!(!setmaxnreg.missing_at(sm120, Some(Variant::F)));
        // The variant unknown: only where no variant of the target has it.
        assert!(!setmaxnreg.missing_at(sm120, None));
        assert!(setmaxnreg.missing_at(Arch::new(10, 0), None));
        // A target written with a variant is the same device.
        let sm120a: Arch = "sm_120a".parse().unwrap();
        assert!(setmaxnreg.missing_at(sm120a, Some(Variant::Plain)));
    }

    #[test]
    fn an_instruction_is_named_where_an_instruction_starts() {
        let wgmma = instruction("wgmma.", &["sm_90a"]);
        for named in [
            "wgmma.fence.sync.aligned;",
            "{\\n\\twgmma.commit_group.sync.aligned;\\n}",
            "@p wgmma.wait_group.sync.aligned 0;",
            "mov.u32 %0, %1; wgmma.fence.sync.aligned;",
        ] {
            assert!(wgmma.named_in(named), "{named}");
        }
        for not_named in ["my_wgmma.fence", "xwgmma.", "wgmma", "print wgmma"] {
            assert!(!wgmma.named_in(not_named), "{not_named}");
        }
    }

    #[test]
    fn the_embedded_ptx_table_parses() {
        let rules = LayerRules::embedded();
        let find = |p: &str| {
            rules
                .ptx_instructions
                .iter()
                .find(|i| i.prefix == p)
                .unwrap_or_else(|| panic!("{p}"))
        };
        let sm120 = Arch::new(12, 0);
        assert!(find("wgmma.").missing_at(sm120, None));
        assert!(!find("wgmma.").missing_at(Arch::new(9, 0), Some(Variant::A)));
        assert!(find("tcgen05.").missing_at(sm120, None));
        assert!(!find("tcgen05.").missing_at(Arch::new(10, 3), Some(Variant::F)));
        assert!(find("setmaxnreg").missing_at(sm120, Some(Variant::Plain)));
        assert!(!find("setmaxnreg").missing_at(sm120, Some(Variant::A)));
    }
}
