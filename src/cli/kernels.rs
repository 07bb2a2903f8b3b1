//! `gatefix kernels`: which GPU code is really installed, from the bytes and from the JIT
//! build code, and whether each target can load it.

use std::io::{IsTerminal, Write};
use std::path::Path;

use clap::Args;

use super::args::{ArchCheckArgs, CacheArgs, Format, SiteArgs, TargetArgs};
use super::audit::cached_jit;
use crate::arch::Arch;
use crate::error::{Error, Result, exit};
use crate::kernel::inventory_file;
use crate::kernel::jit::JitIndex;
use crate::kernel::query::KernelIndex;
use crate::report::kernels::{KernelsReport, render_human, render_json};
use crate::rules::Rules;
use crate::scan::{ScanOptions, scan_with};
use crate::site::{Site, discover};

#[derive(Args, Debug)]
pub struct KernelsArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// GPU architecture to check loadability at (repeatable).
    #[arg(long = "target", short = 't', value_name = "ARCH", default_values_t = vec![Arch::new(12, 0)])]
    pub targets: Vec<Arch>,
    #[command(flatten)]
    pub arch_check: ArchCheckArgs,
    /// Read rules from this folder's *.toml instead of the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Which layers of JIT generators to read: `all` (arch lists, device guards and host
    /// checks of their sources, toolchain) or `list` (arch lists only).
    #[arg(long, value_enum, default_value_t = Layers::All)]
    pub layers: Layers,
    /// CUDA version of the toolkit JIT builds use (default: the site's nvcc distribution).
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
    /// Also read every layer of this JIT generator (`module:function`, repeatable), one
    /// without an arch list too (those are not listed otherwise).
    #[arg(long, value_name = "MODULE:FUNCTION")]
    pub generator: Vec<String>,
    /// The JIT sources of an earlier `gatefix audit` of the unchanged site at the same
    /// targets are read from gatefix's cache instead of scanning again.
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layers {
    All,
    List,
}

pub fn run(args: KernelsArgs) -> Result<i32> {
    let index = match args.site.path.as_deref() {
        Some(path) if path.is_file() => single_file(path)?,
        path => {
            let root = discover(path)?;
            let site = Site::open(&root)?;
            let rules = Rules::load_for_site(args.rules.as_deref(), &site)?;
            let options = ScanOptions {
                kernel_sources: true,
                ..ScanOptions::default()
            };
            // An earlier `gatefix audit --target ...` of the unchanged site kept the JIT sources
            // a scan would read (its `--cuda` is another one: CUDA for `cuda >= X` atoms).
            let targets = TargetArgs {
                arch_check: args.arch_check.clone(),
                targets: args.targets.clone(),
                cuda: None,
                rules: args.rules.clone(),
            };
            let jit = match cached_jit(&site, &rules, &targets, options, &args.cache)? {
                Some(jit) => {
                    eprintln!(
                        "gatefix: the site is unchanged since an earlier audit at these targets: \
                         its JIT sources were read from gatefix's cache"
                    );
                    jit
                }
                None => JitIndex::build(&site, &scan_with(&site, &rules, options)),
            };
            let index = KernelIndex::build_with_jit(&site, jit)
                .with_layer_rules(rules.kernel_layers.clone(), args.cuda.clone());
            let report = KernelsReport::new(Some(&site), &root, &index, &args.targets);
            let report = match args.layers {
                Layers::All => report.with_layers(&args.generator),
                Layers::List if args.generator.is_empty() => report,
                Layers::List => {
                    return Err(Error::input(
                        "--generator reads a generator's layers; it needs --layers all (the default)",
                    ));
                }
            };
            return print(&report, args.format);
        }
    };
    let root = args.site.path.clone().unwrap_or_default();
    print(
        &KernelsReport::new(None, &root, &index, &args.targets),
        args.format,
    )
}

fn single_file(path: &Path) -> Result<KernelIndex> {
    let inventory = inventory_file(path).ok_or_else(|| {
        Error::input(format!(
            "{}: not a CUDA binary (ELF with device code, cubin, fatbin or PTX)",
            path.display()
        ))
    })?;
    Ok(KernelIndex::new(vec![inventory], Default::default()))
}

fn print(report: &KernelsReport, format: Format) -> Result<i32> {
    let text = match format {
        Format::Json => render_json(report),
        Format::Human => render_human(report, std::io::stdout().is_terminal()),
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    for file in report.errors() {
        eprintln!("gatefix: warning: {file}");
    }
    Ok(exit::OK)
}
