//! Kernel layers on the fixture site `testdata/kernel-layers`: one JIT generator per guard
//! shape or check macro, each evaluated at sm_90, sm_100, sm_103, sm_110, sm_120 and sm_121.
//! The tables are exact: a layer that answers more or less than expected fails.

use std::path::Path;

use gatefix::arch::Arch;
use gatefix::kernel::layers::{Layer, Verdict};
use gatefix::kernel::query::{Answer, KernelIndex, LayeredAnswer};
use gatefix::kernel::requirement::Requirement;
use gatefix::rules::Rules;
use gatefix::scan::{ScanOptions, scan_with};
use gatefix::site::Site;

const SITE: &str = "testdata/kernel-layers";
const TARGETS: [(u32, u32); 6] = [(9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)];

fn index() -> (Site, KernelIndex) {
    let site = Site::open(Path::new(SITE)).unwrap();
    let rules = Rules::load(None).unwrap();
    let options = ScanOptions {
        kernel_sources: true,
        ..ScanOptions::default()
    };
    let result = scan_with(&site, &rules, options);
    let index = KernelIndex::build(&site, &result);
    (site, index)
}

fn layered(index: &KernelIndex, site: &Site, name: &str, target: Arch) -> LayeredAnswer {
    let id = format!("flashinfer.jit.layers:gen_{name}_module");
    index.coverage_layers(&Requirement::Jit(id), target, site)
}

fn verdict(answer: &LayeredAnswer, layer: Layer) -> Verdict {
    answer
        .layers
        .iter()
        .find(|l| l.layer == layer)
        .map(|l| l.verdict)
        .unwrap_or_else(|| panic!("no {layer:?} in {answer:?}"))
}

fn letters(text: &str) -> Vec<Verdict> {
    text.split_whitespace()
        .map(|w| match w {
            "Y" => Verdict::Yes,
            "P" => Verdict::Partly,
            "N" => Verdict::No,
            "U" => Verdict::Unknown,
            other => panic!("{other}"),
        })
        .collect()
}

fn check_table(layer: Layer, table: &[(&str, &str)]) {
    let (site, index) = index();
    let mut wrong = Vec::new();
    for (name, expected) in table {
        let expected = letters(expected);
        for (&(major, minor), want) in TARGETS.iter().zip(expected) {
            let target = Arch::new(major, minor);
            let got = verdict(&layered(&index, &site, name, target), layer);
            if got != want {
                wrong.push(format!("{name} at {target}: {got:?}, expected {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn device_guards_per_target() {
    //                          90 100 103 110 120 121
    check_table(
        Layer::L3,
        &[
            ("range", "Y Y Y Y N N"),
            ("feat", "N Y N N N N"),
            ("chain", "Y Y Y N Y Y"),
            ("nested", "N Y Y N Y Y"),
            ("trap", "N P P P Y P"),
            ("unknown", "P U U U U U"),
            ("defined", "P Y Y Y Y Y"),
            ("parts", "P Y Y Y Y Y"),
            ("icheck", "Y Y Y Y Y Y"),
            ("missing_sources", "U U U U U U"),
            ("named_list", "P Y Y Y P P"),
            // Unguarded `wgmma.`: only sm_90a assembles it (sm_90: a template's
            // `tcgen05.` leaves it unknown); `tcgen05.` behind an sm_10x/11x guard is fine.
            ("ptx", "U N N N N N"),
        ],
    );
}

#[test]
fn inline_ptx_the_target_lacks_fails_the_build() {
    let (site, index) = index();
    let l3 = |target| {
        let answer = layered(&index, &site, "ptx", target);
        answer
            .layers
            .into_iter()
            .find(|l| l.layer == Layer::L3)
            .unwrap()
    };
    let sm120 = l3(Arch::new(12, 0));
    assert_eq!(
        sm120.summary,
        "1 of 4 kernels hold PTX that sm_120's build does not assemble: the module does not build"
    );
    let says = |evidence: &[String], needle: &str| evidence.iter().any(|e| e.contains(needle));
    assert!(
        says(
            &sm120.evidence,
            "flashinfer/data/csrc/ptx.cu:6 `wgmma_kernel` (flashinfer/data/csrc/ptx.cu:5) holds PTX `wgmma.`, which a build for sm_120 (any variant) does not assemble"
        ),
        "{:?}",
        sm120.evidence
    );
    // The template is said, as unknown; the guarded kernel and the look-alike string not.
    assert!(
        says(&sm120.evidence, "`templated_tcgen05_kernel`")
            && says(&sm120.evidence, "if the template is instantiated"),
        "{:?}",
        sm120.evidence
    );
    let holds = |evidence: &[String], kernel: &str| {
        evidence
            .iter()
            .any(|e| e.contains(kernel) && e.contains("holds PTX"))
    };
    assert!(
        !holds(&sm120.evidence, "`guarded_tcgen05_kernel`")
            && !holds(&sm120.evidence, "`lookalike_kernel`"),
        "{:?}",
        sm120.evidence
    );
    // The guard removes the inline PTX: code, not a call (`asm volatile(...)` is none).
    assert!(
        says(
            &sm120.evidence,
            "removes code from `guarded_tcgen05_kernel` at sm_120"
        ),
        "{:?}",
        sm120.evidence
    );
    // sm_100 builds the guarded `tcgen05.` and the template (its build has it), not `wgmma.`.
    let sm100 = l3(Arch::new(10, 0));
    assert!(
        !holds(&sm100.evidence, "tcgen05_kernel`"),
        "{:?}",
        sm100.evidence
    );
    assert!(
        holds(&sm100.evidence, "`wgmma_kernel`"),
        "{:?}",
        sm100.evidence
    );
}

#[test]
fn host_checks_per_target() {
    //                                90 100 103 110 120 121
    check_table(
        Layer::L4,
        &[
            ("icheck", "N Y Y N Y Y"),
            ("icheck_eq", "N Y Y N N N"),
            ("icheck_cmp", "N Y N N Y Y"),
            ("flashinfer_check", "N Y Y N N N"),
            ("tllm_check", "Y Y Y Y N N"),
            ("if_throw", "N Y Y Y Y N"),
            ("range", "Y Y Y Y Y Y"),
            // Shared memory asked for above the target's (sm_110 is not in the table).
            ("smem", "P Y Y Y P P"),
            ("missing_sources", "U U U U U U"),
        ],
    );
}

#[test]
fn evidence_names_the_guard_the_kernel_and_what_is_removed() {
    let (site, index) = index();
    let sm120 = Arch::new(12, 0);
    let range = layered(&index, &site, "range", sm120);
    match &range.answer {
        Answer::NotCovered { evidence } => {
            assert_eq!(
                evidence[0],
                "flashinfer/jit/layers.py:7 supported_major_versions=[9, 10, 11, 12]"
            );
            assert_eq!(
                evidence[1],
                "L3 device guards no: all 1 kernels are compiled out or trap at sm_120"
            );
            assert_eq!(
                evidence[2],
                "L3 device guards flashinfer/data/csrc/range.cu:3 `#if (defined(__CUDA_ARCH__) && \
                 (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))` compiles `range_kernel` \
                 (flashinfer/data/csrc/range.cu:2) to an empty body at sm_120: it returns without \
                 computing and without an error"
            );
            assert_eq!(evidence.len(), 3, "{evidence:?}");
        }
        other => panic!("{other:?}"),
    }
    let parts = layered(&index, &site, "parts", sm120);
    let l3 = parts.layers.iter().find(|l| l.layer == Layer::L3).unwrap();
    assert_eq!(
        l3.evidence,
        [
            "flashinfer/data/csrc/parts.cu:3 `#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) \
          && (__CUDA_ARCH__ < 1200))` removes cudaGridDependencySynchronize() from `parts_kernel` \
          at sm_120 (compiled with parts removed)"
        ]
    );
    let trap = layered(&index, &site, "trap", Arch::new(12, 1));
    let l3 = trap.layers.iter().find(|l| l.layer == Layer::L3).unwrap();
    assert_eq!(
        l3.evidence[0],
        "flashinfer/data/csrc/trap.cu:6 `only_sm120_kernel` (flashinfer/data/csrc/trap.cu:2) traps \
         at sm_121 (asm trap / __trap)"
    );
    let parts90 = layered(&index, &site, "parts", Arch::new(9, 0));
    let l3 = parts90
        .layers
        .iter()
        .find(|l| l.layer == Layer::L3)
        .unwrap();
    assert_eq!(
        l3.evidence,
        [
            "flashinfer/data/csrc/parts.cu:15 `cluster_kernel` (flashinfer/data/csrc/parts.cu:14) \
          traps at sm_90 (asm trap / __trap)"
        ]
    );
    let throw = layered(&index, &site, "if_throw", Arch::new(10, 0));
    let l4 = throw.layers.iter().find(|l| l.layer == Layer::L4).unwrap();
    assert_eq!(l4.verdict, Verdict::Yes);
    assert_eq!(
        l4.evidence,
        [
            "flashinfer/data/csrc/if_throw.cu:12 `TVM_FFI_ICHECK_EQ(major, 9)` fails at sm_100 on the \
          path where `(use_fancy_mode())` holds (that path only)"
        ]
    );
    let eq = layered(&index, &site, "icheck_eq", sm120);
    let l4 = eq.layers.iter().find(|l| l.layer == Layer::L4).unwrap();
    assert_eq!(
        l4.evidence,
        [
            "flashinfer/data/csrc/icheck_eq.cu:6 `TVM_FFI_ICHECK_EQ(std::get<0>(device_props), 10)` \
          fails at sm_120 (major = 12, minor = 0, sm = 120): the launcher raises after a \
          successful build"
        ]
    );
}

#[test]
fn includes_across_folders_a_cycle_and_a_missing_header() {
    let (site, index) = index();
    let nested = layered(&index, &site, "nested", Arch::new(12, 0));
    let l3 = nested.layers.iter().find(|l| l.layer == Layer::L3).unwrap();
    // nested.cu, inner.cuh, common/defs.h and cycle.cuh, each once (the cycle ends).
    assert_eq!(
        l3.summary, "1 kernels in 4 files have bodies at sm_120",
        "{l3:?}"
    );
    assert_eq!(
        l3.evidence,
        ["1 quoted includes not found in the site (not read): \
          flashinfer/data/csrc/nested.cu:4 \"flashinfer/absent.cuh\""]
    );
    let missing = layered(&index, &site, "missing_sources", Arch::new(12, 0));
    match &missing.answer {
        Answer::Unknown { why } => assert!(
            why.contains("sources not found")
                && why.contains("flashinfer/data/csrc/not_there.cu (listed, not in the site)"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_toolchain_decides_when_given() {
    let (site, index) = index();
    let index = index.with_layer_rules(
        gatefix::kernel::layer_rules::LayerRules::embedded().clone(),
        Some("12.8".into()),
    );
    let at = |major, minor| {
        let answer = layered(&index, &site, "parts", Arch::new(major, minor));
        verdict(&answer, Layer::L6)
    };
    assert_eq!(at(12, 0), Verdict::Yes, "sm_120a needs 12.8");
    assert_eq!(at(12, 1), Verdict::No, "sm_121a needs 12.9");
    assert_eq!(at(11, 0), Verdict::No, "sm_110a needs 13.0");
    assert_eq!(at(10, 3), Verdict::No, "sm_103a needs 12.9");
    assert_eq!(at(9, 0), Verdict::Yes);
    match layered(&index, &site, "parts", Arch::new(12, 1)).answer {
        Answer::NotCovered { evidence } => assert!(
            evidence.iter().any(|e| e
                == "L6 toolchain no: the toolkit is CUDA 12.8 (--cuda 12.8): sm_121a needs CUDA >= 12.9"),
            "{evidence:?}"
        ),
        other => panic!("{other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// Hostile input: the preprocessor evaluator and the C++ reader never panic and never loop.
// ------------------------------------------------------------------------------------------

mod hostile {
    use std::time::{Duration, Instant};

    use gatefix::arch::{Arch, Variant};
    use gatefix::kernel::cpp;
    use gatefix::kernel::layer_rules::LayerRules;
    use gatefix::kernel::layers::FileFacts;
    use gatefix::kernel::preproc::{self, Env};
    use proptest::prelude::*;

    fn envs() -> Vec<Env> {
        vec![
            Env::device(Arch::new(12, 0), Some(Variant::F), Some((12, 9))),
            Env::device(Arch::new(10, 0), None, None),
            Env::host(None),
        ]
    }

    /// Fragments that real sources are made of, to reach deep paths more often than bytes.
    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("#if __CUDA_ARCH__ >= 900\n".to_string()),
            Just("#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 1200))\n".to_string()),
            Just("#ifdef __CUDA_ARCH_FEAT_SM100_ALL\n".to_string()),
            Just("#ifndef X\n#define X\n".to_string()),
            Just("#elif defined(Y) || !defined(Z)\n".to_string()),
            Just("#else\n".to_string()),
            Just("#endif\n".to_string()),
            Just("#define N 3 \\\n  + 4\n".to_string()),
            Just("#include \"a/b.cuh\"\n".to_string()),
            Just("__global__ void k(int* p) {\n".to_string()),
            Just("template <int N> __global__ void __launch_bounds__(128) t(".to_string()),
            Just("  asm(\"trap;\");\n".to_string()),
            Just("  cudaGridDependencySynchronize();\n".to_string()),
            Just("}\n".to_string()),
            Just("{".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("/* ".to_string()),
            Just("\"".to_string()),
            Just("TVM_FFI_ICHECK_EQ(major, 10) << \"x\";\n".to_string()),
            Just("if (sm < 90) throw std::runtime_error(\"old\");\n".to_string()),
            Just("FLASHINFER_CHECK(mSM == kSM_100 || (".to_string()),
            Just("k<<<1, 2>>>(p);\n".to_string()),
            "[ -~]{0,12}".prop_map(String::from),
        ]
    }

    fn exercise(text: &str) {
        let rules = LayerRules::embedded();
        for env in envs() {
            let _ = preproc::truth(text, &env);
        }
        let code = cpp::blank(text);
        assert_eq!(code.len(), text.len());
        let (dirs, lines) = preproc::directives(&code);
        for env in envs() {
            let live = preproc::liveness(&dirs, lines, &env);
            assert_eq!(live.lines.len(), lines as usize);
        }
        for kernel in cpp::kernels(&code) {
            assert!(kernel.body.0 <= kernel.body.1 && kernel.body.1 <= code.len());
            assert!(kernel.line <= kernel.open_line && kernel.open_line <= kernel.close_line);
        }
        let _ = cpp::includes(text, &dirs);
        let _ = cpp::calls_in(&code);
        let _ = FileFacts::from_text("x.cu", text, rules);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            exercise(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn arbitrary_conditions(text in "[ -~]{0,200}") {
            for env in envs() {
                let _ = preproc::eval(&text, &env);
            }
        }

        #[test]
        fn shaped_sources(parts in proptest::collection::vec(fragment(), 0..80)) {
            exercise(&parts.concat());
        }
    }

    #[test]
    fn deep_nesting_ends_quickly() {
        let start = Instant::now();
        let n = 100_000;
        let parens = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(
            preproc::truth(&parens, &Env::host(None)),
            preproc::Tri::Unknown,
            "deeper than the limit is unknown"
        );
        let nested = format!(
            "__global__ void k() {{\n{}x();\n{}}}\n",
            "#if __CUDA_ARCH__ >= 900\n".repeat(n),
            "#endif\n".repeat(n)
        );
        exercise(&nested);
        let braces = format!("void f() {}{}", "{".repeat(n), "}".repeat(n));
        exercise(&braces);
        let hits = "__global__ void k(".repeat(20_000);
        exercise(&hits);
        let checks = "TVM_FFI_ICHECK(".repeat(20_000) + " major";
        exercise(&checks);
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "took {:?}",
            start.elapsed()
        );
    }
}
