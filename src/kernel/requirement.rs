//! What a gated path needs from the kernels underneath it, as rules and synthesized fixes
//! declare it; `query.rs` answers whether a target has it.

use serde::Serialize;

/// What a gated path needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    /// A JIT generator, `<module>:<function>` (`flashinfer.jit.comm:gen_trtllm_comm_module`).
    Jit(String),
    /// Native libraries matching a glob (relative to the site root), optionally only those
    /// owned by one distribution.
    Library { dist: Option<String>, glob: String },
    /// A cubin arch table, `<module>:<NAME>` (`flashinfer.jit.trtllm_gen_metainfo:BLACKWELL_CUBIN_ARCHS`).
    CubinTable(String),
    /// A CuTe DSL kernel, `<module>` or `<module>:<Kernel>` (a top-level class or function),
    /// judged by the `admissible_archs` of the ops it builds (`kernel::dsl`).
    Dsl(String),
    /// A Triton kernel, `<module>:<function>` (a `@triton.jit` def), compiled at launch by
    /// the installed triton (`kernel::triton`).
    Triton(String),
    /// A `torch.ops.<namespace>.<op>` call into the native libraries of the top-level folder
    /// `<namespace>`: which of them registers the op is not read, so they decide only where
    /// they agree.
    TorchOp { namespace: String, op: String },
}

impl Requirement {
    /// From the fields of a TOML `kernel`/`needs` table: exactly one of `jit`
    /// (`module:function`), `library` (a glob, with an optional `dist`), `cubin_table`
    /// (`module:NAME`), `dsl` (a module) or `triton` (`module:function`).
    pub fn from_parts(
        jit: Option<String>,
        library: Option<String>,
        dist: Option<String>,
        cubin_table: Option<String>,
        dsl: Option<String>,
        triton: Option<String>,
    ) -> Result<Requirement, String> {
        let module_item = |text: &str| {
            text.split_once(':')
                .is_some_and(|(m, f)| !m.is_empty() && !f.is_empty())
        };
        match (jit, library, cubin_table, dsl, triton) {
            (Some(jit), None, None, None, None) if module_item(&jit) && dist.is_none() => {
                Ok(Requirement::Jit(jit))
            }
            (None, Some(glob), None, None, None) => Ok(Requirement::Library { dist, glob }),
            (None, None, Some(table), None, None) if module_item(&table) && dist.is_none() => {
                Ok(Requirement::CubinTable(table))
            }
            (None, None, None, Some(kernel), None)
                if !kernel.is_empty() && !kernel.starts_with(':') && dist.is_none() =>
            {
                Ok(Requirement::Dsl(kernel))
            }
            (None, None, None, None, Some(kernel)) if module_item(&kernel) && dist.is_none() => {
                Ok(Requirement::Triton(kernel))
            }
            _ => Err("a kernel is exactly one of { jit = \"module:function\" }, \
                 { library = \"glob\", dist = \"...\" }, { cubin_table = \"module:NAME\" }, \
                 { dsl = \"module[:Kernel]\" } or { triton = \"module:function\" }"
                .into()),
        }
    }

    /// How a person would name it.
    pub fn words(&self) -> String {
        match self {
            Requirement::Jit(id) => format!("JIT generator {id}"),
            Requirement::Library { dist, glob } => match dist {
                Some(dist) => format!("native library {glob} of {dist}"),
                None => format!("native library {glob}"),
            },
            Requirement::CubinTable(id) => format!("cubin table {id}"),
            Requirement::Dsl(module) => format!("CuTe DSL kernel {module}"),
            Requirement::Triton(id) => format!("Triton kernel {id}"),
            Requirement::TorchOp { namespace, op } => {
                format!("native op torch.ops.{namespace}.{op} ({namespace}/**/*.so)")
            }
        }
    }
}
