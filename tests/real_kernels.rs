//! Kernel layers on real pinned wheels (issue 14): the device guards and host checks of the
//! sources flashinfer's JIT generators compile, evaluated per target. `#[ignore]`d in a plain
//! `cargo test`; `.ci/run` fetches the wheels (`ci/fetch-wheels.sh`) and runs them with
//! `--ignored`.

mod common;

use std::sync::OnceLock;

use common::fixture::{run, stdout, wheel_site};
use gatefix::arch::Arch;
use gatefix::kernel::layers::{Layer, LayerAnswer, Verdict};
use gatefix::kernel::query::{Answer, KernelIndex, LayeredAnswer, Requirement};
use gatefix::rules::Rules;
use gatefix::scan::{ScanOptions, scan_with};
use gatefix::site::Site;

struct Indexed {
    _dir: tempfile::TempDir,
    site: Site,
    index: KernelIndex,
}

fn indexed(wheels: &[&str]) -> Indexed {
    let dir = wheel_site(wheels);
    let site = Site::open(dir.path()).unwrap();
    let rules = Rules::load(None).unwrap();
    let options = ScanOptions {
        kernel_sources: true,
        ..ScanOptions::default()
    };
    let result = scan_with(&site, &rules, options);
    let index = KernelIndex::build(&site, &result);
    Indexed {
        _dir: dir,
        site,
        index,
    }
}

fn flashinfer_050() -> &'static Indexed {
    static SITE: OnceLock<Indexed> = OnceLock::new();
    SITE.get_or_init(|| indexed(&["flashinfer_python-0.5.0-"]))
}

fn flashinfer_072() -> &'static Indexed {
    static SITE: OnceLock<Indexed> = OnceLock::new();
    SITE.get_or_init(|| indexed(&["flashinfer_python-0.7.2-"]))
}

fn layers(site: &Indexed, id: &str, target: Arch) -> LayeredAnswer {
    site.index
        .coverage_layers(&Requirement::Jit(id.into()), target, &site.site)
}

fn layer(answer: &LayeredAnswer, which: Layer) -> &LayerAnswer {
    answer
        .layers
        .iter()
        .find(|l| l.layer == which)
        .unwrap_or_else(|| panic!("no {which:?}: {answer:?}"))
}

const COMM: &str = "flashinfer.jit.comm:gen_trtllm_comm_module";
const ALLREDUCE: &str = "flashinfer/data/include/flashinfer/comm/trtllm_allreduce.cuh";
const GUARD: &str =
    "`#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))`";

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_trtllm_comm_is_closed_at_sm120_by_the_list_and_the_guards() {
    let site = flashinfer_050();
    let sm120 = layers(site, COMM, Arch::new(12, 0));
    assert_eq!(layer(&sm120, Layer::L2).verdict, Verdict::No);
    let l3 = layer(&sm120, Layer::L3);
    assert_eq!(l3.verdict, Verdict::Partly, "{l3:?}");
    assert_eq!(
        l3.evidence[0],
        format!(
            "{ALLREDUCE}:711 {GUARD} compiles `lamport_style_one_shot_all_reduce_norm_kernel` \
             ({ALLREDUCE}:710) to an empty body at sm_120: it returns without computing and \
             without an error"
        )
    );
    // The twelve other guards drop the programmatic-launch calls of the kernels that stay.
    let partial: Vec<u32> = l3.evidence[1..]
        .iter()
        .filter(|e| e.contains("(compiled with parts removed)"))
        .map(|e| {
            assert!(e.starts_with(ALLREDUCE) && e.contains(GUARD), "{e}");
            assert!(
                e.contains("removes cudaGridDependencySynchronize() from")
                    || e.contains("removes cudaTriggerProgrammaticLaunchCompletion() from"),
                "{e}"
            );
            e[ALLREDUCE.len() + 1..]
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        partial,
        [
            417, 455, 485, 533, 895, 950, 991, 1053, 1207, 1265, 1335, 1444
        ]
    );
    assert_eq!(l3.evidence.len(), 13, "{:?}", l3.evidence);
    match &sm120.answer {
        Answer::NotCovered { evidence } => {
            assert!(evidence[0].ends_with("supported_major_versions=[9, 10]"));
            assert!(evidence.iter().any(|e| e.contains("empty body")));
        }
        other => panic!("{other:?}"),
    }
    // Where the list and the guards admit it, every layer does.
    let sm100 = layers(site, COMM, Arch::new(10, 0));
    for which in [Layer::L2, Layer::L3, Layer::L4] {
        assert_eq!(layer(&sm100, which).verdict, Verdict::Yes, "{which:?}");
    }
    assert!(matches!(sm100.answer, Answer::Covered { .. }));
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_072_trtllm_comm_passes_every_layer_at_sm120() {
    let sm120 = layers(flashinfer_072(), COMM, Arch::new(12, 0));
    for which in [Layer::L2, Layer::L3, Layer::L4] {
        let l = layer(&sm120, which);
        assert_eq!(l.verdict, Verdict::Yes, "{l:?}");
    }
    assert_eq!(
        layer(&sm120, Layer::L3).summary,
        "12 kernels in 12 files have bodies at sm_120"
    );
    assert!(
        matches!(sm120.answer, Answer::Covered { .. }),
        "{:?}",
        sm120.answer
    );
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_fused_moe_launcher_checks_major_10() {
    let site = flashinfer_050();
    let id = "flashinfer.jit.fused_moe:gen_trtllm_gen_fused_moe_sm100_module";
    let check = "flashinfer/data/csrc/trtllm_fused_moe_kernel_launcher.cu:98 \
                 `TVM_FFI_ICHECK_EQ(std::get<0>(device_props), 10)`";
    for (major, minor, verdict) in [
        (10, 0, Verdict::Yes),
        (10, 3, Verdict::Yes),
        (12, 0, Verdict::No),
    ] {
        let answer = layers(site, id, Arch::new(major, minor));
        let l4 = layer(&answer, Layer::L4);
        assert_eq!(l4.verdict, verdict, "sm_{major}{minor}: {l4:?}");
        if verdict == Verdict::No {
            assert!(l4.evidence[0].starts_with(check), "{l4:?}");
        }
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_trtllm_gen_fmha_runner_checks_sm100_or_sm103() {
    // No arch list: L2 admits every target, and the runner's constructor decides.
    let site = flashinfer_050();
    let id = "flashinfer.jit.attention.modules:gen_trtllm_gen_fmha_module";
    let check = "flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:30 \
                 `FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, \"Unsupported architecture\")` \
                 fails at sm_120";
    for (major, minor, verdict) in [
        (10, 0, Verdict::Yes),
        (10, 3, Verdict::Yes),
        (12, 0, Verdict::No),
        (12, 1, Verdict::No),
        (9, 0, Verdict::No),
    ] {
        let answer = layers(site, id, Arch::new(major, minor));
        assert_eq!(layer(&answer, Layer::L2).verdict, Verdict::Yes);
        let l4 = layer(&answer, Layer::L4);
        assert_eq!(l4.verdict, verdict, "sm_{major}{minor}: {l4:?}");
        if (major, minor) == (12, 0) {
            assert!(l4.evidence.iter().any(|e| e.starts_with(check)), "{l4:?}");
        }
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_072_tinygemm_kernel_has_a_body_from_sm90_only() {
    let site = flashinfer_072();
    let id = "flashinfer.jit.tinygemm2:gen_tinygemm2_module";
    let sm89 = layers(site, id, Arch::new(8, 9));
    let l3 = layer(&sm89, Layer::L3);
    assert_eq!(l3.verdict, Verdict::No);
    assert_eq!(
        l3.evidence,
        [
            "flashinfer/data/csrc/tinygemm2.cu:149 `#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= \
          900)` compiles `tinygemm_kernel` (flashinfer/data/csrc/tinygemm2.cu:145) to an empty \
          body at sm_89: it returns without computing and without an error"
        ]
    );
    for (major, minor) in [(9, 0), (10, 0), (12, 0), (12, 1)] {
        let answer = layers(site, id, Arch::new(major, minor));
        assert_eq!(layer(&answer, Layer::L3).verdict, Verdict::Yes);
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn forcing_the_fusion_patch_over_flashinfer_050_warns_that_the_kernels_are_empty() {
    let site = wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    let out = run([
        "apply".to_string(),
        "sm_120".into(),
        "--site".into(),
        site.path().display().to_string(),
        "--force-unverified".into(),
        "--dry-run".into(),
    ]);
    let text = stdout(&out);
    assert!(text.contains("supported_major_versions=[9, 10]"), "{text}");
    assert!(
        text.contains(&format!(
            "L3 device guards {ALLREDUCE}:711 {GUARD} compiles \
             `lamport_style_one_shot_all_reduce_norm_kernel`"
        )) && text.contains("to an empty body at sm_120"),
        "{text}"
    );
}
