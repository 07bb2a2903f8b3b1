//! Real-package checks on pinned wheels (docs/gates.md §3). They need the wheels that
//! `ci/fetch-wheels.sh` downloads, so they are `#[ignore]`d in a plain `cargo test`;
//! `.ci/run` fetches the wheels and runs them with `--ignored`.
//!
//! Gates are found by file, enclosing function and text, not by line, so a re-release that
//! only shifts lines does not break the checks.

mod common;

use common::audits::audit_wheels;
use common::fixture::wheel_site;

use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// The shared audit of the pristine site (`common::audits`: sm_90 ... sm_121, CUDA 12.8).
fn old_site() -> &'static Value {
    static DOC: OnceLock<Arc<Value>> = OnceLock::new();
    DOC.get_or_init(|| audit_wheels(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]))
}

fn new_site() -> &'static Value {
    static DOC: OnceLock<Arc<Value>> = OnceLock::new();
    DOC.get_or_init(|| audit_wheels(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]))
}

/// The gates in `file` (inside `function`, when given) whose text contains every needle.
fn find<'a>(
    doc: &'a Value,
    file: &str,
    function: Option<&str>,
    needles: &[&str],
) -> Vec<&'a Value> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == file)
        .filter(|g| function.is_none_or(|f| g["function"] == f))
        .filter(|g| {
            needles
                .iter()
                .all(|n| g["text"].as_str().unwrap().contains(n))
        })
        .collect()
}

fn one<'a>(doc: &'a Value, file: &str, function: Option<&str>, needles: &[&str]) -> &'a Value {
    let found = find(doc, file, function, needles);
    assert_eq!(
        found.len(),
        1,
        "{file} {function:?} {needles:?}: {found:#?}"
    );
    found[0]
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_055_communicator_fusion_gate_blocks_sm120() {
    let doc = old_site();
    let gate = one(
        doc,
        "sglang/srt/layers/communicator.py",
        Some("CommunicateWithAllReduceAndLayerNormFn._gather_hidden_states_and_residual"),
        &["(_is_sm100_supported or _is_sm90_supported)"],
    );
    assert_eq!(gate["form"], "flag-use");
    assert_eq!(gate["admits"]["sm_120"], "no");
    assert_eq!(gate["admits"]["sm_121"], "no");
    assert_eq!(gate["dist"], "sglang");
    assert_eq!(gate["dist_version"], "0.5.5");
    // The flags it reads are cached at import: one record each.
    let flag = one(
        doc,
        "sglang/srt/layers/communicator.py",
        None,
        &["is_cuda() and is_sm100_supported()"],
    );
    assert_eq!(flag["form"], "cached-flag");
    assert_eq!(flag["predicate"], "major == 10 and cuda >= \"12.8\"");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_055_is_blackwell_supported_admits_sm120() {
    let doc = old_site();
    let uses = find(
        doc,
        "sglang/srt/server_args.py",
        None,
        &["is_blackwell_supported()"],
    );
    assert!(!uses.is_empty());
    for gate in &uses {
        let text = gate["text"].as_str().unwrap();
        let negated = text.trim_start().starts_with("not ");
        let expected = if negated { "no" } else { "yes" };
        assert_eq!(gate["admits"]["sm_120"], expected, "{text}");
        assert_eq!(gate["admits"]["sm_121"], expected, "{text}");
    }
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_trtllm_comm_arch_list_per_version() {
    let old = one(
        old_site(),
        "flashinfer/jit/comm.py",
        Some("gen_trtllm_comm_module"),
        &["supported_major_versions"],
    );
    assert_eq!(old["form"], "jit-arch-list");
    assert_eq!(old["predicate"], "major in {9, 10}");
    assert_eq!(old["admits"]["sm_120"], "no");
    let new = one(
        new_site(),
        "flashinfer/jit/comm.py",
        Some("gen_trtllm_comm_module"),
        &["supported_major_versions"],
    );
    assert_eq!(new["predicate"], "major in {9, 10, 12}");
    assert_eq!(new["admits"]["sm_120"], "yes");
    assert_eq!(new["admits"]["sm_121"], "yes");
    let mnnvl = one(
        new_site(),
        "flashinfer/jit/comm.py",
        Some("gen_trtllm_mnnvl_comm_module"),
        &["supported_major_versions"],
    );
    assert_eq!(mnnvl["predicate"], "major in {9, 10}");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_add_norm_fusion_gate_through_get_platform() {
    let doc = new_site();
    let file = "sglang/srt/layers/layer_boundary/residual/add_norm.py";
    for needle in ["get_platform().is_sm90", "get_platform().is_sm100"] {
        let flag = one(doc, file, None, &[needle]);
        assert_eq!(flag["form"], "cached-flag");
        assert_eq!(flag["admits"]["sm_120"], "no", "{needle}");
    }
    let gate = one(
        doc,
        file,
        Some("flashinfer_ar_fusion_applies"),
        &["(_is_sm90_supported or _is_sm100_supported)"],
    );
    assert_eq!(gate["form"], "flag-use");
    assert_eq!(gate["admits"]["sm_120"], "no");
    assert_eq!(gate["admits"]["sm_121"], "no");
    assert!(
        gate["predicate"]
            .as_str()
            .unwrap()
            .starts_with("(major == 9 and cuda >= 12.3 or major == 10 and cuda >= 12.8)")
    );
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_comm_fusion_raises_on_sm120_and_never_picks_mnnvl() {
    let doc = new_site();
    let file = "sglang/srt/layers/flashinfer_comm_fusion.py";
    // `if not (is_sm90 or is_sm100): raise` — the raising branch runs on SM120.
    let raise = one(
        doc,
        file,
        Some("_resolve_backend"),
        &["not (get_platform().is_sm90 or get_platform().is_sm100)"],
    );
    assert_eq!(raise["form"], "platform-attr");
    assert_eq!(raise["admits"]["sm_120"], "yes");
    // `auto` resolves to mnnvl only where is_sm100 holds: never on SM12x.
    let mnnvl_choices = find(
        doc,
        file,
        Some("_resolve_backend"),
        &["get_platform().is_sm100"],
    );
    assert!(mnnvl_choices.len() >= 2);
    for gate in mnnvl_choices {
        let text = gate["text"].as_str().unwrap();
        if text == "get_platform().is_sm100" {
            assert_eq!(gate["admits"]["sm_120"], "no");
        }
    }
    let supported = one(
        doc,
        file,
        Some("_mnnvl_supported"),
        &["get_platform().is_sm90"],
    );
    assert_eq!(supported["admits"]["sm_121"], "no");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_fusion_auto_enable_blocks_sm120() {
    let doc = new_site();
    let gate = one(
        doc,
        "sglang/srt/arg_groups/overrides.py",
        Some("_flashinfer_allreduce_fusion_auto_enable"),
        &["(get_platform().is_sm90 or get_platform().is_sm100)"],
    );
    assert_eq!(gate["admits"]["sm_120"], "no");
    assert_eq!(gate["admits"]["sm_121"], "no");
    // The MoE auto-selection that already routes SM120 to flashinfer_cutlass admits it.
    let cutlass = one(
        doc,
        "sglang/srt/arg_groups/overrides.py",
        Some("_moe_runner_backend_quant_constraints"),
        &["get_platform().is_sm120 or get_platform().is_sm110"],
    );
    assert_eq!(cutlass["admits"]["sm_120"], "yes");
}

#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_is_blackwell_means_different_things_in_srt_and_multimodal_gen() {
    let doc = new_site();
    let gates = doc["gates"].as_array().unwrap();
    // srt: `is_blackwell` is _check_cuda_device_version([10, 11, 12], (12, 8)).
    let srt: Vec<&Value> = gates
        .iter()
        .filter(|g| {
            g["file"].as_str().unwrap().starts_with("sglang/srt/") && g["text"] == "is_blackwell()"
        })
        .collect();
    assert!(!srt.is_empty());
    for gate in &srt {
        assert_eq!(
            gate["predicate"], "major in {10, 11, 12} and cuda >= 12.8",
            "{gate}"
        );
        assert_eq!(gate["admits"]["sm_120"], "yes");
    }
    // multimodal_gen: `current_platform.is_blackwell()` is `get_device_capability()[0] == 10`.
    let mm: Vec<&Value> = gates
        .iter()
        .filter(|g| {
            g["file"]
                .as_str()
                .unwrap()
                .starts_with("sglang/multimodal_gen/")
                && g["text"] == "current_platform.is_blackwell()"
        })
        .collect();
    assert!(!mm.is_empty());
    for gate in &mm {
        assert_eq!(gate["predicate"], "major == 10", "{gate}");
        assert_eq!(gate["admits"]["sm_120"], "no");
    }
}

/// Verdicts of docs/gates.md §4 rows 1–3 on sglang 0.5.23 + flashinfer-python 0.7.2.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_fusion_verdicts_follow_the_kernels() {
    let doc = new_site();
    let verdict =
        |gate: &Value, target: &str| gate["verdict"][target].as_str().unwrap().to_string();
    // Row 1: the add+norm fusion gate blocks SM12x over a trtllm module that has 12: patchable.
    let add_norm = one(
        doc,
        "sglang/srt/layers/layer_boundary/residual/add_norm.py",
        Some("flashinfer_ar_fusion_applies"),
        &["_is_sm90_supported or _is_sm100_supported"],
    );
    assert_eq!(verdict(add_norm, "sm_120"), "opportunity");
    assert_eq!(verdict(add_norm, "sm_121"), "opportunity");
    // Row 2: `auto` picks mnnvl on SM100 only, and mnnvl's JIT list is [9, 10]: a wall.
    let mnnvl = find(
        doc,
        "sglang/srt/layers/flashinfer_comm_fusion.py",
        Some("_resolve_backend"),
        &["get_platform().is_sm100"],
    );
    let picks_mnnvl: Vec<&&Value> = mnnvl
        .iter()
        .filter(|g| {
            g["evidence"]["sm_120"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e.as_str().unwrap().contains("chooses backend \"mnnvl\""))
        })
        .collect();
    assert!(!picks_mnnvl.is_empty(), "{mnnvl:#?}");
    for gate in picks_mnnvl {
        assert_eq!(verdict(gate, "sm_120"), "wall", "{gate:#?}");
        let evidence = gate["evidence"]["sm_120"].to_string();
        assert!(
            evidence.contains("supported_major_versions=[9, 10]"),
            "{evidence}"
        );
    }
    // Row 3: the auto-enable feeds row 1: an opportunity too.
    let auto_enable = one(
        doc,
        "sglang/srt/arg_groups/overrides.py",
        Some("_flashinfer_allreduce_fusion_auto_enable"),
        &["(get_platform().is_sm90 or get_platform().is_sm100)"],
    );
    assert_eq!(verdict(auto_enable, "sm_120"), "opportunity");
}

/// The original story: sglang 0.5.5's fusion gate over the flashinfer it pinned is a wall.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_055_fusion_gate_is_a_wall_over_its_pinned_flashinfer() {
    let gate = one(
        old_site(),
        "sglang/srt/layers/communicator.py",
        Some("CommunicateWithAllReduceAndLayerNormFn._gather_hidden_states_and_residual"),
        &["(_is_sm100_supported or _is_sm90_supported)"],
    );
    assert_eq!(gate["verdict"]["sm_120"], "wall");
    assert!(
        gate["evidence"]["sm_120"]
            .to_string()
            .contains("supported_major_versions=[9, 10]")
    );
}

/// More rows of docs/gates.md §4 on sglang 0.5.23 + flashinfer-python 0.7.2, at sm_120.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_more_rows_of_the_kernel_table() {
    let doc = new_site();
    let verdict = |file: &str, function: Option<&str>, needles: &[&str]| {
        one(doc, file, function, needles)["verdict"]["sm_120"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // Row 2: the raise guards the fusion backends; off SM100 it resolves to trtllm ([9, 10, 12]).
    assert_eq!(
        verdict(
            "sglang/srt/layers/flashinfer_comm_fusion.py",
            Some("_resolve_backend"),
            &["not (get_platform().is_sm90 or get_platform().is_sm100)"]
        ),
        "opportunity"
    );
    // Row 5: modelopt_fp4 on SM120/SM110 already picks flashinfer_cutlass, whose SM12x module exists.
    let cutlass = find(
        doc,
        "sglang/srt/arg_groups/overrides.py",
        None,
        &["modelopt_fp4", "is_sm120"],
    );
    assert!(
        cutlass.iter().any(|g| g["verdict"]["sm_120"] == "open"),
        "{cutlass:#?}"
    );
    // Row 7: llama4 picks trtllm-gen MoE on SM100 only; its cubins are SM100-only: a wall.
    assert_eq!(
        verdict(
            "sglang/srt/arg_groups/model_overrides/llama4.py",
            None,
            &["get_platform().is_sm100 and cfg.moe_runner_backend == \"auto\""]
        ),
        "wall"
    );
    // Row 14: the NVFP4 KV cache already admits SM120, and its JIT module has 12: open.
    assert_eq!(
        verdict(
            "sglang/srt/arg_groups/kv_cache_hook.py",
            None,
            &["kv_cache_dtype == \"nvfp4\"", "not ("]
        ),
        "open"
    );
    // Row 16: mm_fp4's cutlass backend admits SM12x and builds the SM12x CUTLASS FP4 module.
    assert_eq!(
        verdict(
            "flashinfer/gemm/gemm_base.py",
            Some("_cutlass_gemm_fp4_requirement"),
            &["supported_compute_capability"]
        ),
        "open"
    );
    // Row 15: flashinfer's own decorator and JIT list agree ([90, 100] / [9, 10]): a wall.
    assert_eq!(
        verdict(
            "flashinfer/comm/mixed_comm.py",
            None,
            &["supported_compute_capability([90, 100])"]
        ),
        "wall"
    );
}

/// The audit is a function of the site, not of thread scheduling: one thread and many
/// (oversubscribed, as on a CI runner with more cores than this test's machine) give the
/// same gates, admissions, verdicts and evidence. The resolver's memo tables were once
/// shared between threads, and a value one site cut short (depth, budget, cycle) leaked into
/// another site: `fp8_utils.py` flipped between resolved and unknown from run to run. The
/// shared audit (as many threads as cores) is the third run.
#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0523_audit_does_not_depend_on_thread_count() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let site = wheel_site(&wheels);
    let gates_and_warnings =
        |doc: &Value| serde_json::json!({"gates": doc["gates"], "warnings": doc["warnings"]});
    let run = |threads: &str| -> Value {
        // Each run computes its own result: gatefix's cache would hand the second the first's.
        let args = common::audits::uncached_audit_args(site.path());
        let out = common::fixture::run_env(&args, &[("RAYON_NUM_THREADS", threads)]);
        assert!(out.status.success(), "{}", common::fixture::stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        gates_and_warnings(&doc)
    };
    let one = run("1");
    for (label, many) in [
        ("16 threads", run("16")),
        (
            "the shared audit",
            gates_and_warnings(&audit_wheels(&wheels)),
        ),
    ] {
        let (a, b) = (
            one["gates"].as_array().unwrap(),
            many["gates"].as_array().unwrap(),
        );
        assert_eq!(
            a.len(),
            b.len(),
            "gate count differs between 1 thread and {label}"
        );
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y, "a gate differs between 1 thread and {label}");
        }
        assert_eq!(one["warnings"], many["warnings"], "{label}");
    }
}

/// gatefix's cache on a real site: the second audit reads the first one's result and prints
/// the same bytes as an audit without the cache, in every text format; an edit to one module
/// makes the next audit run whole and agree with an uncached one again.
#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0523_cached_audit_is_byte_identical() {
    let site = wheel_site(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]);
    let cache = tempfile::tempdir().unwrap();
    let run = |format: &str, cached: bool| -> (Vec<u8>, String) {
        let mut args: Vec<String> = vec!["audit".into(), site.path().display().to_string()];
        args.extend(["--format", format, "--fail-on", "none", "--cuda", "12.8"].map(String::from));
        args.extend(["-t", "sm_120", "-t", "sm_100"].map(String::from));
        if cached {
            args.extend([
                "--cache-dir".to_string(),
                cache.path().display().to_string(),
            ]);
        } else {
            args.push("--no-cache".into());
        }
        let out = common::fixture::run_env(&args, &[]);
        assert!(out.status.success(), "{}", common::fixture::stderr(&out));
        (out.stdout.clone(), common::fixture::stderr(&out))
    };
    const HIT: &str = "read from gatefix's cache";
    let (first, err) = run("json", true);
    assert!(!err.contains(HIT), "{err}");
    for format in ["json", "human", "sarif", "github"] {
        let (uncached, _) = run(format, false);
        let (cached, err) = run(format, true);
        assert!(err.contains(HIT), "{format}: {err}");
        assert!(uncached == cached, "{format}: the cached audit differs");
    }
    let file = site
        .path()
        .join("sglang/srt/layers/flashinfer_comm_fusion.py");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}\nif torch.cuda.get_device_capability()[0] == 12:\n    pass\n"),
    )
    .unwrap();
    let (edited, err) = run("json", true);
    assert!(!err.contains(HIT), "{err}");
    assert!(edited != first, "the edit adds a gate");
    assert!(edited == run("json", false).0, "after the edit");
}
