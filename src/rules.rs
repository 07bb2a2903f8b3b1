//! Rules: what gatefix cannot infer from the site's own code, declared as data in
//! `rules/*.toml` (embedded in the binary, or read from `--rules DIR`).
//!
//! - `[[value]]`: a name whose value (or call result) is a device fact: `torch.version.cuda`,
//!   `torch.cuda.get_device_capability()`, platform facts such as `is_cuda()` on NVIDIA.
//! - `[[helper]]`: a helper's meaning as a Python expression over `major`, `minor`, `sm`,
//!   `capability`, `cuda` and the call's arguments `arg0`, `arg1`, ...
//! - `[[method]]`: a method of a platform object (`current_platform.has_device_capability(100)`).
//! - `[[probe_table]]`: an object whose attributes map, through a dict in the site, to functions
//!   (sglang's `get_platform().is_sm100`).
//! - `[[parameter]]`: a parameter that, by its name, annotation or function, is assumed to be
//!   the device's value when no caller in the site says what it is (`arch`, `capability:
//!   DeviceCapability`); gates on it say so (`assumes`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::Digest;

mod relocate;

use crate::error::{Error, Result};
use crate::gate::ir::Expr;
use crate::gate::lower::lower_expression;
use crate::kernel::requirement::Requirement;

/// The rule files shipped in the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("rules/python.toml", include_str!("../rules/python.toml")),
    ("rules/sglang.toml", include_str!("../rules/sglang.toml")),
    ("rules/vllm.toml", include_str!("../rules/vllm.toml")),
    (
        "rules/flashinfer.toml",
        include_str!("../rules/flashinfer.toml"),
    ),
    ("rules/links.toml", include_str!("../rules/links.toml")),
    ("rules/kernels.toml", include_str!("../rules/kernels.toml")),
    (
        "rules/parameters.toml",
        include_str!("../rules/parameters.toml"),
    ),
    ("rules/launch.toml", include_str!("../rules/launch.toml")),
    ("rules/quiet.toml", include_str!("../rules/quiet.toml")),
];

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    value: Vec<ValueRule>,
    #[serde(default)]
    helper: Vec<HelperRule>,
    #[serde(default)]
    method: Vec<MethodRule>,
    #[serde(default)]
    probe_table: Vec<ProbeTable>,
    #[serde(default)]
    link: Vec<LinkToml>,
    #[serde(default)]
    backend: Vec<BackendToml>,
    /// `[kernel_layers]`: see `kernel::layers`.
    #[serde(default)]
    kernel_layers: Option<crate::kernel::layer_rules::LayerRuleFile>,
    #[serde(default)]
    parameter: Vec<ParameterRule>,
    #[serde(default)]
    checker_registry: Vec<CheckerRegistry>,
    #[serde(rename = "override", default)]
    overrides: Vec<OverrideRule>,
    #[serde(default)]
    launch_feature: Vec<LaunchFeatureToml>,
    #[serde(default)]
    quiet: Vec<QuietToml>,
    #[serde(default)]
    own_kernels: Vec<OwnKernelsToml>,
}

/// A Python identifier: a letter or `_`, then letters, digits or `_`.
fn is_identifier(part: &str) -> bool {
    part.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && part.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// `[[own_kernels]]` as written (`rules/quiet.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnKernelsToml {
    #[serde(default)]
    packages: Vec<String>,
    #[serde(default)]
    methods: Vec<String>,
    source: String,
}

/// Calls outside the site whose kernels, where they launch any, are their library's own and
/// built for every GPU the library runs on (`rules/quiet.toml`, `[[own_kernels]]`): a search
/// that could not follow one hid no kernel of the site behind it.
#[derive(Debug, Clone, Default)]
pub struct OwnKernels {
    /// Top-level packages (`torch`, `numpy`, Python's standard library modules).
    packages: HashSet<String>,
    /// Method names, on an object gatefix cannot type (`x.to`, `w.float`).
    methods: HashSet<String>,
}

impl OwnKernels {
    /// Whether a function of this top-level package launches only its package's own kernels.
    pub fn package(&self, root: &str) -> bool {
        self.packages.contains(root)
    }

    /// Whether a method of this name launches only its library's own kernels.
    pub fn method(&self, name: &str) -> bool {
        self.methods.contains(name)
    }
}

/// `[[quiet]]` as written (`rules/quiet.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuietToml {
    #[serde(default)]
    functions: Vec<String>,
    #[serde(default)]
    methods: Vec<String>,
    source: String,
}

/// Calls outside the site that launch no GPU kernel (`rules/quiet.toml`): the verdicts' kernel
/// search leaves nothing out by not following them.
#[derive(Debug, Clone, Default)]
pub struct QuietCalls {
    /// Qualified function names (`types.SimpleNamespace`, `torch.empty`).
    functions: HashSet<String>,
    /// Modules every function of which is quiet (`math` for `math.*`).
    modules: HashSet<String>,
    /// Method names, quiet on an object of unknown type where the site defines none.
    methods: HashSet<String>,
}

impl QuietCalls {
    /// Whether the function of this qualified name launches nothing.
    pub fn function(&self, qualified: &str) -> bool {
        self.functions.contains(qualified)
            || qualified
                .rsplit_once('.')
                .is_some_and(|(module, _)| self.modules.contains(module))
    }

    /// Whether a method of this name, on an object that is not the site's, launches nothing.
    pub fn method(&self, name: &str) -> bool {
        self.methods.contains(name)
    }
}

/// `[[launch_feature]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchFeatureToml {
    name: String,
    words: Vec<String>,
    min_major: u32,
    source: String,
}

/// A launch feature the hardware decides (`rules/launch.toml`): a gate that only turns it on
/// or off is judged by whether the target has it.
#[derive(Debug, Clone)]
pub struct LaunchFeature {
    pub name: String,
    /// Lowercase words, each a whole part of an identifier (`pdl` in `enable_pdl`).
    pub words: Vec<String>,
    /// The lowest compute capability major with the feature.
    pub min_major: u32,
    /// Where the minimum is documented.
    pub source: String,
    /// The rule file.
    pub file: PathBuf,
}

/// `[[override]]`: a switch of the package (an environment variable, a server argument) that
/// selects what an edit in `applies_to` would open, so the user can have it with no edit.
/// `apply` names it beside a patch or fix that edits such a file, when the site's `read_in`
/// still reads `reads` and the edited file mentions it too.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideRule {
    pub dist: String,
    /// What the user sets, as they would type it (`VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm`).
    pub switch: String,
    /// The name the package reads (`VLLM_FLASHINFER_ALLREDUCE_BACKEND`, `moe_runner_backend`).
    pub reads: String,
    /// The site-relative files that may read it (releases move it): the first that does is
    /// cited.
    pub read_in: Vec<String>,
    /// A glob over the site-relative paths of the edits it stands in for.
    pub applies_to: String,
    /// When set, only an edited file that mentions this (the setting the gate decides) counts.
    #[serde(default)]
    pub edit_mentions: Option<String>,
    /// What setting it does, in a few words.
    pub says: String,
}

/// `[[checker_registry]]`: a decorator that maps backend names to checker functions
/// (`@backend_requirement({"cutlass": _check_cutlass}, common_check=_check_common)`), so a
/// checker's capability decorator gates the decorated function's branch for that backend.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckerRegistry {
    /// The decorator's last name (`backend_requirement`).
    pub decorator: String,
    /// Keyword arguments whose checker applies to every backend (`common_check`).
    #[serde(default)]
    pub common: Vec<String>,
    /// The decorated function's parameter that names the backend.
    pub parameter: String,
}

/// What an assumed parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParamMeaning {
    /// `major * 10 + minor`
    Sm,
    Major,
    /// the `(major, minor)` tuple
    Capability,
    /// an object with `.major`, `.minor`, `.to_int()`
    CapabilityObject,
    /// a capability whose spelling the comparison tells: an integer from 20 up is `sm`, a
    /// smaller one `major`, a pair the tuple; `.major`, `[0]` and `.to_int()` work too
    Any,
}

/// `[[parameter]]`: matches a parameter by `name`, by its `annotation` (the type's last
/// name), or as the first parameter after the receiver of functions named `function`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterRule {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub annotation: Option<String>,
    #[serde(default)]
    pub function: Option<String>,
    pub means: ParamMeaning,
}

/// `needs = { jit = ... }` and friends, as in patch files' `kernel`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NeedsToml {
    jit: Option<String>,
    library: Option<String>,
    dist: Option<String>,
    cubin_table: Option<String>,
    dsl: Option<String>,
    triton: Option<String>,
}

impl NeedsToml {
    fn requirement(self) -> std::result::Result<Requirement, String> {
        Requirement::from_parts(
            self.jit,
            self.library,
            self.dist,
            self.cubin_table,
            self.dsl,
            self.triton,
        )
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkToml {
    #[serde(default)]
    dist: Option<String>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    gate_contains: Option<String>,
    needs: NeedsToml,
    #[serde(default)]
    majors: Option<Vec<u32>>,
    #[serde(default)]
    why: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackendToml {
    name: String,
    #[serde(default)]
    dist: Option<String>,
    needs: NeedsToml,
    #[serde(default)]
    majors: Option<Vec<u32>>,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    module_imports: Option<String>,
}

/// `[[link]]`: the gates it matches (every given field must match) need this kernel.
#[derive(Debug, Clone)]
pub struct LinkRule {
    pub dist: Option<String>,
    /// A glob over the site-relative path (`*`, `**`, `?`).
    pub file: Option<String>,
    /// The enclosing function's qualified name, or its last component.
    pub function: Option<String>,
    pub gate_contains: Option<String>,
    pub needs: Requirement,
    /// The kernel is this one only at these majors (`[12]`: the SM12x module); elsewhere the
    /// rule says nothing.
    pub majors: Option<Vec<u32>>,
    pub why: Option<String>,
    pub source: PathBuf,
}

/// `[[backend]]`: a backend name a gated branch can choose (`return "mnnvl"`), and the kernel
/// that backend runs.
#[derive(Debug, Clone)]
pub struct BackendRule {
    pub name: String,
    pub dist: Option<String>,
    pub needs: Requirement,
    pub majors: Option<Vec<u32>>,
    pub why: Option<String>,
    /// The name means this backend only in a module that imports this one (or a module
    /// under it): a common word (`"trtllm"`) names other things elsewhere (a weight layout,
    /// an attention backend).
    pub module_imports: Option<String>,
    pub source: PathBuf,
}

/// What a name is, or what calling it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fact {
    Capability,
    CapabilityObject,
    Major,
    Minor,
    Sm,
    Cuda,
    True,
    False,
    None,
    Platform,
    /// An instance of the class named by the rule's `class` (`module.Class`): its methods
    /// are read from the site.
    Instance,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueRule {
    /// `module.member`, or a bare function name when `any_module` is set.
    pub name: String,
    #[serde(default)]
    pub any_module: bool,
    /// What the name itself is.
    #[serde(default)]
    pub is: Option<Fact>,
    /// What calling it returns.
    #[serde(default)]
    pub call: Option<Fact>,
    /// For `platform` facts: the object kind its `[[method]]` and `[[probe_table]]` rules name.
    #[serde(default)]
    pub object: Option<String>,
    /// For `instance` facts: the class, as `module.Class`.
    #[serde(default)]
    pub class: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HelperRule {
    name: String,
    admits: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MethodRule {
    object: String,
    name: String,
    #[serde(default)]
    admits: Option<String>,
    /// Used instead of `admits` when the first argument is a tuple.
    #[serde(default)]
    admits_tuple: Option<String>,
    #[serde(default)]
    call: Option<Fact>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeTable {
    pub object: String,
    /// Dicts (`module.NAME`) mapping an attribute name to a function name.
    pub tables: Vec<String>,
    /// The module those function names live in.
    pub functions: String,
}

/// A method rule, with its expressions lowered.
#[derive(Debug, Clone)]
pub struct Method {
    pub admits: Option<Expr>,
    pub admits_tuple: Option<Expr>,
    pub call: Option<Fact>,
}

/// All rules, indexed for lookup.
#[derive(Debug, Default)]
pub struct Rules {
    pub values: HashMap<String, ValueRule>,
    pub any_module_values: HashMap<String, ValueRule>,
    pub helpers: HashMap<String, Expr>,
    pub methods: HashMap<(String, String), Method>,
    pub probe_tables: HashMap<String, ProbeTable>,
    pub links: Vec<LinkRule>,
    pub backends: Vec<BackendRule>,
    pub kernel_layers: crate::kernel::layer_rules::LayerRules,
    pub parameters: Vec<ParameterRule>,
    pub checker_registries: Vec<CheckerRegistry>,
    pub overrides: Vec<OverrideRule>,
    pub launch_features: Vec<LaunchFeature>,
    pub quiet: QuietCalls,
    pub own_kernels: OwnKernels,
    pub files: Vec<PathBuf>,
    /// `(published, copy)`: the rules written for `published` read as `copy`'s in this site
    /// (`load_for_site`).
    pub relocations: Vec<(String, String)>,
    /// `(published, installed)`: the rules for the distribution `published` read as
    /// `installed`'s in this site (`load_for_site`).
    pub dist_renames: Vec<(String, String)>,
    /// SHA-256 of each file's path and text, in load order: what a cached result was computed
    /// under (`digest`).
    sources: Vec<[u8; 32]>,
}

/// The rule files' names and texts: the embedded ones, or every `*.toml` in `dir`.
fn rule_texts(dir: Option<&Path>) -> Result<Vec<(PathBuf, String)>> {
    toml_texts(EMBEDDED, dir, "rule")
}

/// The names and texts of `embedded` files, or of every `*.toml` in `dir` when given; a file
/// that cannot be read is an error naming it as a `what` file.
pub(crate) fn toml_texts(
    embedded: &[(&str, &str)],
    dir: Option<&Path>,
    what: &str,
) -> Result<Vec<(PathBuf, String)>> {
    match dir {
        None => Ok(embedded
            .iter()
            .map(|(name, text)| (PathBuf::from(name), text.to_string()))
            .collect()),
        Some(dir) => toml_files(dir)?
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).map_err(|e| Error::Input {
                    message: format!("cannot read {what} file {}: {e}", path.display()),
                })?;
                Ok((path, text))
            })
            .collect(),
    }
}

impl Rules {
    /// The embedded rules, or every `*.toml` in `dir` when given.
    pub fn load(dir: Option<&Path>) -> Result<Rules> {
        let mut rules = Rules::default();
        for (path, text) in rule_texts(dir)? {
            rules.add_file(&path, &text)?;
        }
        Ok(rules)
    }

    /// [`Rules::load`] for one site: where the site holds a fork or copy of a package the
    /// rules name, under another top-level name, the rules apply to it and to the
    /// distribution that installs it (`relocate`), and stderr says so once.
    pub fn load_for_site(dir: Option<&Path>, site: &crate::site::Site) -> Result<Rules> {
        let rules = Rules::load_for_site_quietly(dir, site)?;
        for (published, copy) in &rules.relocations {
            eprintln!(
                "gatefix: `{copy}` has the layout of `{published}`, which this site does not hold: the rules for `{published}` apply to it"
            );
        }
        for (published, installed) in &rules.dist_renames {
            eprintln!(
                "gatefix: the rules for the distribution `{published}` apply to `{installed}`, which installs its package here"
            );
        }
        Ok(rules)
    }

    /// [`Rules::load_for_site`] without its messages: for commands that only read which
    /// shipped patches concern the site (`status`, `revert`), where the audit already said so.
    pub fn load_for_site_quietly(dir: Option<&Path>, site: &crate::site::Site) -> Result<Rules> {
        let texts = rule_texts(dir)?;
        let relocations =
            relocate::relocations(texts.iter().map(|(_, text)| text.as_str()), &site.root);
        // The distribution that installs the package (or its copy) takes the `dist = ...`
        // rules of the published one.
        let dists = relocate::dist_renames(
            texts.iter().map(|(_, text)| text.as_str()),
            |name| site.distributions.iter().any(|d| d.name == name),
            |package| match relocations
                .iter()
                .find(|(published, _)| published == package)
            {
                Some((_, copy)) => Some(copy.clone()),
                None => site
                    .root
                    .join(package)
                    .join("__init__.py")
                    .is_file()
                    .then(|| package.to_string()),
            },
            |holder| {
                site.owner(&format!("{holder}/__init__.py"))
                    .map(|d| d.name.clone())
            },
        );
        let mut rules = Rules {
            relocations,
            dist_renames: dists,
            ..Rules::default()
        };
        for (path, text) in &texts {
            let text = rules.relocated_text(text);
            rules.add_file(path, &text)?;
        }
        Ok(rules)
    }

    /// A rule or patch text as it reads in this site: module paths, site paths and
    /// distribution names of the packages the rules follow to a fork written as the fork's.
    pub fn relocated_text(&self, text: &str) -> String {
        relocate::rewrite_dists(
            &relocate::rewrite(text, &self.relocations),
            &self.dist_renames,
        )
    }

    /// One hash of every rule file loaded (names and texts, in order): two loads with the same
    /// digest index the same rules.
    pub fn digest(&self) -> [u8; 32] {
        let mut hash = sha2::Sha256::new();
        for source in &self.sources {
            hash.update(source);
        }
        hash.finalize().into()
    }

    /// Parses and indexes one rule file; errors name the file, line and column.
    pub fn add_file(&mut self, path: &Path, text: &str) -> Result<()> {
        let file: RuleFile = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        let expr = |what: &str, source: &str| {
            lower_expression(source).map_err(|why| Error::Input {
                message: format!(
                    "{}: {what} `{source}` is not a Python expression: {why}",
                    path.display()
                ),
            })
        };
        for value in file.value {
            let instance = value.is == Some(Fact::Instance) || value.call == Some(Fact::Instance);
            if instance && value.class.as_ref().is_none_or(|c| !c.contains('.')) {
                return Err(Error::Input {
                    message: format!(
                        "{}: [[value]] `{}` is an instance and needs `class = \"module.Class\"`",
                        path.display(),
                        value.name
                    ),
                });
            }
            if value.is.is_none() && value.call.is_none() {
                return Err(Error::Input {
                    message: format!(
                        "{}: [[value]] `{}` needs `is` or `call`",
                        path.display(),
                        value.name
                    ),
                });
            }
            let map = if value.any_module {
                &mut self.any_module_values
            } else {
                &mut self.values
            };
            map.insert(value.name.clone(), value);
        }
        for helper in file.helper {
            let lowered = expr("helper admits", &helper.admits)?;
            self.helpers.insert(helper.name, lowered);
        }
        for method in file.method {
            let admits = method
                .admits
                .as_deref()
                .map(|a| expr("method admits", a))
                .transpose()?;
            let admits_tuple = method
                .admits_tuple
                .as_deref()
                .map(|a| expr("method admits_tuple", a))
                .transpose()?;
            self.methods.insert(
                (method.object, method.name),
                Method {
                    admits,
                    admits_tuple,
                    call: method.call,
                },
            );
        }
        for parameter in file.parameter {
            if [&parameter.name, &parameter.annotation, &parameter.function]
                .iter()
                .all(|f| f.is_none())
            {
                return Err(Error::Input {
                    message: format!(
                        "{}: a [[parameter]] needs `name`, `annotation` or `function`",
                        path.display()
                    ),
                });
            }
            self.parameters.push(parameter);
        }
        for table in file.probe_table {
            self.probe_tables.insert(table.object.clone(), table);
        }
        let needs_error = |what: &str, message: String| Error::Input {
            message: format!("{}: {what}: {message}", path.display()),
        };
        for link in file.link {
            let needs = link
                .needs
                .requirement()
                .map_err(|m| needs_error("[[link]] needs", m))?;
            self.links.push(LinkRule {
                dist: link.dist,
                file: link.file,
                function: link.function,
                gate_contains: link.gate_contains,
                needs,
                majors: link.majors,
                why: link.why,
                source: path.to_path_buf(),
            });
        }
        for backend in file.backend {
            let needs = backend
                .needs
                .requirement()
                .map_err(|m| needs_error(&format!("[[backend]] `{}` needs", backend.name), m))?;
            self.backends.push(BackendRule {
                name: backend.name,
                dist: backend.dist,
                needs,
                majors: backend.majors,
                why: backend.why,
                module_imports: backend.module_imports,
                source: path.to_path_buf(),
            });
        }
        self.checker_registries.extend(file.checker_registry);
        for feature in file.launch_feature {
            let words: Vec<String> = feature
                .words
                .iter()
                .map(|w| w.trim().to_ascii_lowercase())
                .collect();
            if feature.name.trim().is_empty()
                || words.is_empty()
                || words
                    .iter()
                    .any(|w| w.is_empty() || !w.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                return Err(Error::Input {
                    message: format!(
                        "{}: [[launch_feature]] `{}` needs a name and words of letters and digits (one part of an identifier each)",
                        path.display(),
                        feature.name
                    ),
                });
            }
            self.launch_features.push(LaunchFeature {
                name: feature.name,
                words,
                min_major: feature.min_major,
                source: feature.source,
                file: path.to_path_buf(),
            });
        }
        for quiet in file.quiet {
            let bad_function = quiet.functions.iter().find(|f| {
                let name = f.strip_suffix(".*").unwrap_or(f);
                !name.contains('.') && !f.ends_with(".*") || !name.split('.').all(is_identifier)
            });
            let bad_method = quiet.methods.iter().find(|m| !is_identifier(m));
            let problem = if quiet.source.trim().is_empty() {
                Some("needs a `source`".to_string())
            } else if quiet.functions.is_empty() && quiet.methods.is_empty() {
                Some("names no `functions` or `methods`".to_string())
            } else if let Some(f) = bad_function {
                Some(format!(
                    "function `{f}` is no qualified name (`module.function` or `module.*`)"
                ))
            } else {
                bad_method.map(|m| format!("method `{m}` is no identifier"))
            };
            if let Some(problem) = problem {
                return Err(Error::Input {
                    message: format!("{}: [[quiet]] {problem}", path.display()),
                });
            }
            for function in quiet.functions {
                match function.strip_suffix(".*") {
                    Some(module) => self.quiet.modules.insert(module.to_string()),
                    None => self.quiet.functions.insert(function),
                };
            }
            self.quiet.methods.extend(quiet.methods);
        }
        for own in file.own_kernels {
            let problem = if own.source.trim().is_empty() {
                Some("needs a `source`".to_string())
            } else if own.packages.is_empty() && own.methods.is_empty() {
                Some("names no `packages` or `methods`".to_string())
            } else if let Some(p) = own.packages.iter().find(|p| !is_identifier(p)) {
                Some(format!("package `{p}` is no top-level package name"))
            } else {
                own.methods
                    .iter()
                    .find(|m| !is_identifier(m))
                    .map(|m| format!("method `{m}` is no identifier"))
            };
            if let Some(problem) = problem {
                return Err(Error::Input {
                    message: format!("{}: [[own_kernels]] {problem}", path.display()),
                });
            }
            self.own_kernels.packages.extend(own.packages);
            self.own_kernels.methods.extend(own.methods);
        }
        for rule in &file.overrides {
            let fields = [
                ("dist", &rule.dist),
                ("switch", &rule.switch),
                ("reads", &rule.reads),
                ("applies_to", &rule.applies_to),
                ("says", &rule.says),
            ];
            let empty = fields
                .iter()
                .find(|(_, v)| v.trim().is_empty())
                .map(|(name, _)| *name)
                .or_else(|| rule.read_in.is_empty().then_some("read_in"));
            if let Some(name) = empty {
                return Err(Error::Input {
                    message: format!(
                        "{}: [[override]] `{}` has an empty `{name}`",
                        path.display(),
                        rule.switch
                    ),
                });
            }
        }
        self.overrides.extend(file.overrides);
        if let Some(layers) = file.kernel_layers {
            self.kernel_layers
                .add(layers)
                .map_err(|m| needs_error("[kernel_layers]", m))?;
        }
        self.files.push(path.to_path_buf());
        let mut hash = sha2::Sha256::new();
        hash.update(path.as_os_str().as_encoded_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        self.sources.push(hash.finalize().into());
        Ok(())
    }

    /// Names that make a file worth parsing: declared helpers, which may be named anything.
    /// Values (`get_platform`, `current_platform`) are not: a gate reads a fact through them
    /// (`.is_sm100`, `.has_device_capability(...)`) whose own name carries a form token.
    /// The parameter names `[[parameter]]` rules declare (`arch`, `cc`, ...): a function taking
    /// one is a gate candidate even in a file with no form token (`def supported(cls, arch)`).
    pub fn parameter_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .parameters
            .iter()
            .filter_map(|p| p.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    pub fn token_names(&self) -> Vec<String> {
        self.helpers.keys().cloned().collect()
    }

    /// Names that make an expression worth resolving: every name any rule mentions.
    /// torch's names are matched whole (`torch.version.cuda`): their last segments are common
    /// words. Other rule names are matched by their last segment, as call sites spell them.
    pub fn resolve_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .helpers
            .keys()
            .chain(self.values.keys())
            .map(|name| match name.strip_prefix("torch.") {
                Some(_) => name.clone(),
                None => name.rsplit('.').next().unwrap_or(name).to_string(),
            })
            .collect();
        names.extend(self.any_module_values.keys().cloned());
        names.extend(self.methods.keys().map(|(_, method)| method.clone()));
        names
    }

    /// The assumption a `[[parameter]]` rule makes for parameter `index` (`name`, annotated
    /// `annotation`) of function `function` (its last name), counting past the receiver.
    pub fn parameter(
        &self,
        function: &str,
        index: usize,
        name: &str,
        annotation: Option<&str>,
    ) -> Option<ParamMeaning> {
        let annotation_name = annotation.map(|a| {
            a.trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace())
                .rsplit('.')
                .next()
                .unwrap_or(a)
        });
        self.parameters
            .iter()
            .find(|rule| {
                rule.name.as_deref().is_some_and(|n| n == name)
                    || rule.annotation.is_some() && rule.annotation.as_deref() == annotation_name
                    || rule.function.as_deref().is_some_and(|f| f == function) && index == 0
            })
            .map(|rule| rule.means)
    }

    pub fn value(&self, qualified: &str) -> Option<&ValueRule> {
        self.values.get(qualified)
    }

    pub fn any_module_value(&self, bare: &str) -> Option<&ValueRule> {
        self.any_module_values.get(bare)
    }
}

pub fn toml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Input {
        message: format!("cannot read rules folder {}: {e}", dir.display()),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    if files.is_empty() {
        // Running with no rules (or patches) at all would look like a clean result.
        return Err(Error::Input {
            message: format!(
                "{}: no *.toml files in this folder; name a folder of rule or patch files, or leave the option out for the embedded ones",
                dir.display()
            ),
        });
    }
    files.sort();
    Ok(files)
}

/// A TOML error as `file:line:column: message`.
pub fn toml_error(path: &Path, text: &str, error: &toml::de::Error) -> Error {
    let (line, column) = error
        .span()
        .map(|span| line_column(text, span.start))
        .unwrap_or((1, 1));
    Error::Input {
        message: format!(
            "{}:{line}:{column}: {}",
            path.display(),
            error.message().trim()
        ),
    }
}

/// 1-based line and column of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_load() {
        let rules = Rules::load(None).unwrap();
        assert!(rules.value("torch.version.cuda").is_some());
        assert!(rules.any_module_value("get_device_capability").is_some());
        assert!(!rules.overrides.is_empty());
    }

    #[test]
    fn malformed_rule_names_file_line_and_column() {
        let mut rules = Rules::default();
        let err = rules
            .add_file(
                Path::new("bad.toml"),
                "[[helper]]\nname = \"x\"\nadmits = 3\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("bad.toml:3:10:"), "{err}");
        let err = rules
            .add_file(
                Path::new("bad.toml"),
                "[[helper]]\nname = \"x\"\nadmit = \"major\"\n",
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("bad.toml:3:1:") && err.contains("admit"),
            "{err}"
        );
        let err = rules
            .add_file(
                Path::new("bad.toml"),
                "[[helper]]\nname = \"x\"\nadmits = \"major ==\"\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a Python expression"), "{err}");
    }

    /// `[[quiet]]`: qualified functions, whole modules and method names; anything else is an
    /// error naming the file and the entry.
    #[test]
    fn quiet_calls_are_qualified_names_modules_or_methods() {
        let rules = Rules::load(None).unwrap();
        assert!(rules.quiet.function("types.SimpleNamespace"));
        assert!(rules.quiet.function("math.ceil"));
        assert!(rules.quiet.function("torch.empty"));
        assert!(!rules.quiet.function("torch.zeros"));
        assert!(!rules.quiet.function("torch.cuda.empty"));
        assert!(!rules.quiet.function("dataclasses.replace"));
        assert!(rules.quiet.method("append") && rules.quiet.method("view"));
        assert!(!rules.quiet.method("contiguous") && !rules.quiet.method("to"));
        for (entry, says) in [
            (
                "functions = [\"empty\"]\nsource = \"s\"",
                "function `empty`",
            ),
            (
                "functions = [\"torch.\"]\nsource = \"s\"",
                "function `torch.`",
            ),
            ("methods = [\"a.b\"]\nsource = \"s\"", "method `a.b`"),
            (
                "functions = [\"math.*\"]\nsource = \" \"",
                "needs a `source`",
            ),
            ("source = \"s\"", "names no `functions` or `methods`"),
        ] {
            let err = Rules::default()
                .add_file(Path::new("bad.toml"), &format!("[[quiet]]\n{entry}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("bad.toml: [[quiet]] ") && err.contains(says),
                "{err}"
            );
        }
    }

    /// `[[own_kernels]]`: top-level packages and method names whose kernels are their own
    /// library's; not `torch.ops` (that is a package path, not a top-level name), not a
    /// library that ships kernels of its own.
    #[test]
    fn own_kernels_are_top_level_packages_or_methods() {
        let rules = Rules::load(None).unwrap();
        let own = &rules.own_kernels;
        assert!(own.package("torch") && own.package("copy") && own.package("importlib"));
        assert!(!own.package("flashinfer") && !own.package("deep_gemm") && !own.package("cutlass"));
        assert!(own.method("to") && own.method("contiguous") && !own.method("run"));
        for (entry, says) in [
            (
                "packages = [\"torch.ops\"]\nsource = \"s\"",
                "package `torch.ops`",
            ),
            ("methods = [\"a.b\"]\nsource = \"s\"", "method `a.b`"),
            ("packages = [\"torch\"]\nsource = \"\"", "needs a `source`"),
            ("source = \"s\"", "names no `packages` or `methods`"),
        ] {
            let err = Rules::default()
                .add_file(
                    Path::new("bad.toml"),
                    &format!("[[own_kernels]]\n{entry}\n"),
                )
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("bad.toml: [[own_kernels]] ") && err.contains(says),
                "{err}"
            );
        }
    }
}
