//! Kernel layers on real pinned wheels (issue 14): the device guards and host checks of the
//! sources flashinfer's JIT generators compile, evaluated per target, as `gatefix kernels
//! --format json` reports them (one run per site). `#[ignore]`d in a plain
//! `cargo test`; `.ci/run` fetches the wheels (`ci/fetch-wheels.sh`) and runs them with
//! `--ignored`.

mod common;

use std::sync::OnceLock;

use common::fixture::{renamed_fork, run, stdout, wheel_site};
use serde::Deserialize;
use serde_json::Value;

/// `gatefix kernels --format json` of a pristine site of these wheels, at every target the
/// tests ask about: run once per site (the binary `.ci/run` ships, see `common::gatefix_bin`).
fn kernels(wheels: &[&str], generators: &[&str]) -> Value {
    let dir = wheel_site(wheels);
    let mut args = vec![
        "kernels".to_string(),
        dir.path().display().to_string(),
        "--format".into(),
        "json".into(),
    ];
    for id in generators {
        args.push("--generator".into());
        args.push(id.to_string());
    }
    for target in ["sm_89", "sm_90", "sm_100", "sm_103", "sm_120", "sm_121"] {
        args.push("--target".into());
        args.push(target.into());
    }
    common::gatefix_json(args)
}

fn flashinfer_050() -> &'static Value {
    static SITE: OnceLock<Value> = OnceLock::new();
    // The trtllm-gen FMHA generator has no arch list: asked for by name.
    SITE.get_or_init(|| kernels(&["flashinfer_python-0.5.0-"], &[FMHA]))
}

fn flashinfer_072() -> &'static Value {
    static SITE: OnceLock<Value> = OnceLock::new();
    SITE.get_or_init(|| kernels(&["flashinfer_python-0.7.2-"], &[]))
}

/// A JIT generator's answer at one target, with the layer answers it combines.
#[derive(Debug, Deserialize)]
struct Layered {
    answer: String,
    evidence: Vec<String>,
    layers: Vec<LayerAnswer>,
}

#[derive(Debug, Deserialize)]
struct LayerAnswer {
    layer: String,
    verdict: String,
    summary: String,
    evidence: Vec<String>,
}

fn layers(site: &Value, id: &str, target: &str) -> Layered {
    let generator = site["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("no generator {id}"));
    let layered = &generator["layers"][target];
    serde_json::from_value(layered.clone())
        .unwrap_or_else(|e| panic!("{id} at {target}: {e}: {layered}"))
}

fn layer<'a>(answer: &'a Layered, which: &str) -> &'a LayerAnswer {
    answer
        .layers
        .iter()
        .find(|l| l.layer == which)
        .unwrap_or_else(|| panic!("no {which}: {answer:?}"))
}

const FMHA: &str = "flashinfer.jit.attention.modules:gen_trtllm_gen_fmha_module";
const COMM: &str = "flashinfer.jit.comm:gen_trtllm_comm_module";
const ALLREDUCE: &str = "flashinfer/data/include/flashinfer/comm/trtllm_allreduce.cuh";
const GUARD: &str =
    "`#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))`";

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_trtllm_comm_is_closed_at_sm120_by_the_list_and_the_guards() {
    let site = flashinfer_050();
    let sm120 = layers(site, COMM, "sm_120");
    assert_eq!(layer(&sm120, "L2").verdict, "no");
    let l3 = layer(&sm120, "L3");
    assert_eq!(l3.verdict, "partly", "{l3:?}");
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
    assert_eq!(sm120.answer, "not covered", "{sm120:?}");
    assert!(sm120.evidence[0].ends_with("supported_major_versions=[9, 10]"));
    assert!(sm120.evidence.iter().any(|e| e.contains("empty body")));
    // Where the list and the guards admit it, every layer does.
    let sm100 = layers(site, COMM, "sm_100");
    for which in ["L2", "L3", "L4"] {
        assert_eq!(layer(&sm100, which).verdict, "yes", "{which}");
    }
    assert_eq!(sm100.answer, "covered");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_072_trtllm_comm_passes_every_layer_at_sm120() {
    let sm120 = layers(flashinfer_072(), COMM, "sm_120");
    for which in ["L2", "L3", "L4"] {
        let l = layer(&sm120, which);
        assert_eq!(l.verdict, "yes", "{l:?}");
    }
    assert_eq!(
        layer(&sm120, "L3").summary,
        "12 kernels in 13 files have bodies at sm_120"
    );
    assert_eq!(sm120.answer, "covered", "{sm120:?}");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_fused_moe_launcher_checks_major_10() {
    let site = flashinfer_050();
    let id = "flashinfer.jit.fused_moe:gen_trtllm_gen_fused_moe_sm100_module";
    let check = "flashinfer/data/csrc/trtllm_fused_moe_kernel_launcher.cu:98 \
                 `TVM_FFI_ICHECK_EQ(std::get<0>(device_props), 10)`";
    for (target, verdict) in [("sm_100", "yes"), ("sm_103", "yes"), ("sm_120", "no")] {
        let answer = layers(site, id, target);
        let l4 = layer(&answer, "L4");
        assert_eq!(l4.verdict, verdict, "{target}: {l4:?}");
        if verdict == "no" {
            assert!(l4.evidence[0].starts_with(check), "{l4:?}");
        }
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_050_trtllm_gen_fmha_runner_checks_sm100_or_sm103() {
    // No arch list: L2 admits every target, and the runner's constructor decides.
    let site = flashinfer_050();
    let id = FMHA;
    let check = "flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:30 \
                 `FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, \"Unsupported architecture\")` \
                 fails at sm_120";
    for (target, verdict) in [
        ("sm_100", "yes"),
        ("sm_103", "yes"),
        ("sm_120", "no"),
        ("sm_121", "no"),
        ("sm_90", "no"),
    ] {
        let answer = layers(site, id, target);
        assert_eq!(layer(&answer, "L2").verdict, "yes");
        let l4 = layer(&answer, "L4");
        assert_eq!(l4.verdict, verdict, "{target}: {l4:?}");
        if target == "sm_120" {
            assert!(l4.evidence.iter().any(|e| e.starts_with(check)), "{l4:?}");
        }
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_072_tinygemm_kernel_has_a_body_from_sm90_only() {
    let site = flashinfer_072();
    let id = "flashinfer.jit.tinygemm2:gen_tinygemm2_module";
    let sm89 = layers(site, id, "sm_89");
    let l3 = layer(&sm89, "L3");
    assert_eq!(l3.verdict, "no");
    assert_eq!(
        l3.evidence,
        [
            "flashinfer/data/csrc/tinygemm2.cu:149 `#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= \
          900)` compiles `tinygemm_kernel` (flashinfer/data/csrc/tinygemm2.cu:145) to an empty \
          body at sm_89: it returns without computing and without an error"
        ]
    );
    for target in ["sm_90", "sm_100", "sm_120", "sm_121"] {
        let answer = layers(site, id, target);
        assert_eq!(layer(&answer, "L3").verdict, "yes", "{target}");
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

/// The host-code reader parses only the items of a C++ file that can hold a check, a
/// shared-memory request or a constant such a request is written with
/// (`kernel::cpp_items`); a whole-file parse must read the same from every file of a real
/// wheel: the same checks with the same contexts, the same requests, and the same value for
/// every constant a request names (and every constant those name).
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn host_code_from_items_is_host_code_from_the_whole_file() {
    for wheel in ["flashinfer_python-0.7.2-", "flashinfer_python-0.5.0-"] {
        host_code_from_items_matches(wheel);
    }
}

fn host_code_from_items_matches(wheel: &str) {
    use gatefix::kernel::cpp::{CExpr, host_code, host_code_whole_file};
    use gatefix::kernel::layer_rules::LayerRules;
    use rayon::prelude::*;
    use std::collections::HashMap;

    fn names(expr: &CExpr, out: &mut Vec<String>) {
        match expr {
            CExpr::Name(name) => out.push(name.clone()),
            CExpr::Not(inner) => names(inner, out),
            CExpr::Bin(_, a, b) => {
                names(a, out);
                names(b, out);
            }
            _ => {}
        }
    }

    let site = wheel_site(&[wheel]);
    let macros = &LayerRules::embedded().checks;
    let mut files = Vec::new();
    let mut stack = vec![site.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| {
                ["cu", "cuh", "h", "hpp", "cpp", "cc", "inl"].contains(&e.to_str().unwrap_or(""))
            }) {
                files.push(path);
            }
        }
    }
    // The files the reader parses at all: those naming a check macro, `throw` or the
    // shared-memory attribute (`FileFacts::from_text`'s prefilter is narrower still).
    let started = std::time::Instant::now();
    let results: Vec<(String, usize, usize, Vec<String>)> = files
        .par_iter()
        .filter_map(|path| {
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
            let names_check =
                macros.iter().any(|(m, _)| text.contains(m.as_str())) || text.contains("throw");
            let shared = text.contains(gatefix::kernel::cpp::SHARED_MEMORY_ATTRIBUTE);
            if !names_check && !shared {
                return None;
            }
            let macros = names_check.then_some(macros.as_slice());
            let whole = host_code_whole_file(&text, macros, shared);
            let items = host_code(&text, macros, shared);
            let mut differences = Vec::new();
            if whole.checks != items.checks {
                differences.push(format!("checks {:?} != {:?}", whole.checks, items.checks));
            }
            if whole.shared_memory != items.shared_memory {
                differences.push(format!(
                    "requests {:?} != {:?}",
                    whole.shared_memory, items.shared_memory
                ));
            }
            let whole_constants: HashMap<_, _> = whole.constants.into_iter().collect();
            let item_constants: HashMap<_, _> = items.constants.into_iter().collect();
            let mut named = Vec::new();
            for request in &whole.shared_memory {
                names(&request.bytes, &mut named);
            }
            let mut next = 0;
            while next < named.len() && next < 10_000 {
                let name = named[next].clone();
                next += 1;
                if let Some(value) = whole_constants.get(&name) {
                    names(value, &mut named);
                }
                if whole_constants.get(&name) != item_constants.get(&name) {
                    differences.push(format!("constant {name}"));
                }
            }
            let relative = path
                .strip_prefix(site.path())
                .unwrap()
                .display()
                .to_string();
            Some((
                relative,
                whole.checks.len(),
                whole.shared_memory.len(),
                differences,
            ))
        })
        .collect();
    let checks: usize = results.iter().map(|r| r.1).sum();
    let requests: usize = results.iter().map(|r| r.2).sum();
    eprintln!(
        "{wheel}: {} C++ files, {} read for host code: {checks} checks, {requests} shared-memory requests ({:?})",
        files.len(),
        results.len(),
        started.elapsed()
    );
    // The wheel has both kinds, and many of each: a reader that found nothing would pass.
    assert!(
        checks > 500 && requests > 50,
        "{checks} checks, {requests} requests"
    );
    let differing: Vec<_> = results.iter().filter(|r| !r.3.is_empty()).collect();
    assert!(
        differing.is_empty(),
        "{wheel}: {} file(s) read differently, the first: {:?}",
        differing.len(),
        differing.first()
    );
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn a_renamed_fork_of_flashinfer_072_gets_the_same_kernel_answers() {
    let fork = wheel_site(&["flashinfer_python-0.7.2-"]);
    renamed_fork(fork.path(), "flashinfer", "flashinfer_fork");
    let mut args = vec![
        "kernels".to_string(),
        fork.path().display().to_string(),
        "--format".into(),
        "json".into(),
    ];
    let targets = ["sm_90", "sm_100", "sm_120"];
    for target in targets {
        args.push("--target".into());
        args.push(target.into());
    }
    let forked = common::gatefix_json(args);
    let original = flashinfer_072();
    let generators = original["generators"].as_array().unwrap();
    assert!(generators.len() > 50, "{}", generators.len());
    let mut compared = 0;
    for generator in generators {
        let id = generator["id"].as_str().unwrap();
        let forked_id = id.replacen("flashinfer.", "flashinfer_fork.", 1);
        for target in targets {
            let before = layers(original, id, target);
            let after = layers(&forked, &forked_id, target);
            let verdicts = |l: &Layered| {
                l.layers
                    .iter()
                    .map(|x| (x.layer.clone(), x.verdict.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                (before.answer.as_str(), verdicts(&before)),
                (after.answer.as_str(), verdicts(&after)),
                "{id} at {target}: {:?} in the fork, {:?} in flashinfer",
                after.layers,
                before.layers
            );
            compared += 1;
        }
    }
    // The layers that read sources decided something: the comparison is not of unknowns.
    let sm120 = layers(
        &forked,
        &COMM.replacen("flashinfer.", "flashinfer_fork.", 1),
        "sm_120",
    );
    assert_eq!(layer(&sm120, "L3").verdict, "yes", "{sm120:?}");
    assert!(compared > 150, "{compared}");
}
