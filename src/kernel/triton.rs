//! Triton kernels. A `@triton.jit` function is compiled when it is launched, for the device's
//! own capability (triton's NVIDIA backend turns capability 120 into `sm_120a`), by the ptxas
//! that the installed triton bundles. Which targets a Triton kernel can run on is therefore the
//! toolchain question (L6) asked of that ptxas's CUDA release; there is no arch list (L2) and no
//! prebuilt binary (L7). The kernel's body is not read: a kernel that uses an instruction only
//! some archs have is not caught here.

use std::path::Path;

use super::layer_rules::LayerRules;
use super::layers::{Layer, LayerAnswer, Toolchain, Verdict, toolchain_layer};
use crate::arch::Arch;
use crate::site::Site;

/// The triton a site has installed, as far as its files say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TritonInstall {
    /// `triton 3.5.1`, from its dist-info.
    pub dist: String,
    /// The bundled ptxas (site-relative) and its CUDA release, when it is there and says one.
    pub ptxas: Option<(String, (u32, u32))>,
}

/// The marker ptxas prints with `--version`, kept verbatim in the binary.
const RELEASE_MARKER: &[u8] = b"Cuda compilation tools, release ";

/// The triton installed in the site, if any.
pub fn find(site: &Site, rules: &LayerRules) -> Option<TritonInstall> {
    let normal = |n: &str| n.to_ascii_lowercase().replace('_', "-");
    let dist = site.distributions.iter().find(|d| {
        rules
            .triton_dists
            .iter()
            .any(|t| normal(t) == normal(&d.name))
    })?;
    let ptxas = rules.triton_ptxas.iter().find_map(|relative| {
        let release = ptxas_release(&site.root.join(relative))?;
        Some((relative.clone(), release))
    });
    Some(TritonInstall {
        dist: format!("{} {}", dist.name, dist.version),
        ptxas,
    })
}

/// The CUDA release a ptxas binary was built from (`release 12.8`), read from its bytes (it is
/// never run).
fn ptxas_release(path: &Path) -> Option<(u32, u32)> {
    let bytes = std::fs::read(path).ok()?;
    release_in(&bytes)
}

fn release_in(bytes: &[u8]) -> Option<(u32, u32)> {
    let at = memchr::memmem::find(bytes, RELEASE_MARKER)? + RELEASE_MARKER.len();
    let rest = &bytes[at..bytes.len().min(at + 16)];
    let end = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.'))
        .unwrap_or(rest.len());
    super::layer_rules::parse_cuda(std::str::from_utf8(&rest[..end]).ok()?)
}

/// The layers of a Triton kernel `id` at a target.
pub fn layers(
    install: Option<&TritonInstall>,
    id: &str,
    target: Arch,
    rules: &LayerRules,
) -> Vec<LayerAnswer> {
    let Some(install) = install else {
        return vec![LayerAnswer::new(
            Layer::L6,
            Verdict::Unknown,
            format!(
                "{id} is a Triton kernel and triton is not installed in the site: it compiles \
                 when launched, with the installed triton's bundled ptxas"
            ),
        )];
    };
    let l2 = LayerAnswer::new(
        Layer::L2,
        Verdict::Yes,
        format!(
            "a Triton kernel ({}): compiled at launch for the device's own capability",
            install.dist
        ),
    );
    let l6 = match &install.ptxas {
        Some((path, release)) => {
            let toolchain = Toolchain {
                cuda: Some(*release),
                source: format!("{path} of {}", install.dist),
            };
            toolchain_layer(target, &toolchain, rules).1
        }
        None => LayerAnswer::new(
            Layer::L6,
            Verdict::Unknown,
            format!(
                "{} bundles no ptxas gatefix can read ({}): the toolkit it compiles with is \
                 not known",
                install.dist,
                rules.triton_ptxas.join(", ")
            ),
        ),
    };
    vec![
        l2,
        l6,
        LayerAnswer::new(
            Layer::L7,
            Verdict::NotApplicable,
            "compiled at launch: no prebuilt binary to read",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_the_version_banner() {
        let binary = b"\x7fELF...\0ptxas: NVIDIA (R) Ptx optimizing assembler\nCuda compilation tools, release 12.8, V12.8.93\n\0";
        assert_eq!(release_in(binary), Some((12, 8)));
        assert_eq!(release_in(b"no banner here"), None);
        assert_eq!(
            release_in(b"Cuda compilation tools, release 13.0, V13.0.48"),
            Some((13, 0))
        );
    }

    #[test]
    fn the_bundled_ptxas_decides_the_target() {
        let rules = LayerRules::embedded();
        let old = TritonInstall {
            dist: "triton 3.1.0".into(),
            ptxas: Some(("triton/backends/nvidia/bin/ptxas".into(), (12, 4))),
        };
        let new = TritonInstall {
            dist: "triton 3.5.1".into(),
            ptxas: Some(("triton/backends/nvidia/bin/ptxas".into(), (12, 8))),
        };
        let sm120: Arch = "sm_120".parse().unwrap();
        let sm90: Arch = "sm_90".parse().unwrap();
        let l6 = |install: &TritonInstall, target| {
            layers(Some(install), "m:k", target, rules)
                .into_iter()
                .find(|l| l.layer == Layer::L6)
                .unwrap()
                .verdict
        };
        assert_eq!(l6(&new, sm120), Verdict::Yes);
        assert_eq!(
            l6(&old, sm120),
            Verdict::No,
            "CUDA 12.4 cannot build sm_120a"
        );
        assert_eq!(l6(&old, sm90), Verdict::Yes);
        let missing = layers(None, "m:k", sm120, rules);
        assert_eq!(missing[0].verdict, Verdict::Unknown);
    }
}
