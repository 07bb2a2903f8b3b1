//! Verdicts on pinned real wheels (issue 15): the flag-flow trap of the original story, and the
//! share of decided verdicts with the stop reasons of the rest. `#[ignore]`d in a plain
//! `cargo test`; `.ci/run` runs them with `--ignored` after `ci/fetch-wheels.sh`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::audits::audit_wheels;
use serde_json::Value;

/// The gate of `file` whose text is `text`, inside `function`.
fn gate<'a>(doc: &'a Value, file: &str, function: &str, text: &str) -> &'a Value {
    let found: Vec<&Value> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == file && g["function"] == function && g["text"] == text)
        .collect();
    assert!(!found.is_empty(), "no gate {file} {function} {text}");
    found[0]
}

fn evidence(gate: &Value) -> Vec<String> {
    gate["evidence"]["sm_120"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

/// sglang 0.5.5's GptOss adjustment turns the allreduce fusion on for every Blackwell-class
/// GPU (`is_blackwell_supported()` admits major 12 there); the flag is read in the layer
/// communicator and, through the models' `_sglang_needs_allreduce_fusion`, runs flashinfer's
/// trtllm allreduce fusion, whose JIT list in flashinfer 0.5.0 is [9, 10]: a trap at sm_120.
/// Over flashinfer 0.7.2 (list [9, 10, 12]) it is no trap.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_055_fusion_auto_enable_is_a_trap_over_flashinfer_050_and_no_trap_over_072() {
    let old = audit_wheels(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    let site_gate = gate(
        &old,
        "sglang/srt/server_args.py",
        "ServerArgs._handle_model_specific_adjustments",
        "is_blackwell_supported()",
    );
    assert_eq!(site_gate["line"], 966);
    assert_eq!(site_gate["verdict"]["sm_120"], "trap", "{site_gate:#?}");
    let chain = evidence(site_gate);
    for hop in [
        "sglang/srt/server_args.py:968 stores the flag",
        "sets attribute .enable_flashinfer_allreduce_fusion",
        "sets attribute ._sglang_needs_allreduce_fusion",
        "calls flashinfer.jit.comm:gen_trtllm_comm_module",
        "needs JIT generator flashinfer.jit.comm:gen_trtllm_comm_module: MISSING at sm_120",
    ] {
        assert!(chain.iter().any(|e| e == hop), "{hop}: {chain:#?}");
    }
    // The generator's L2 line; the kernel layers' own lines (L3 guards, L4 checks) follow it.
    assert!(
        chain
            .iter()
            .any(|e| e == "flashinfer/jit/comm.py:60 supported_major_versions=[9, 10]"),
        "{chain:#?}"
    );

    let new = audit_wheels(&["sglang-0.5.5-", "flashinfer_python-0.7.2-py"]);
    let site_gate = gate(
        &new,
        "sglang/srt/server_args.py",
        "ServerArgs._handle_model_specific_adjustments",
        "is_blackwell_supported()",
    );
    assert_eq!(site_gate["line"], 966);
    // Over 0.7.2 the kernel is there (its JIT list gained 12), but the communicator's
    // branch also calls code gatefix does not read (a callee held in a local): no trap, and
    // no `open` either until that part is read (`path-left-out`, naming the hop).
    let chain = evidence(site_gate);
    assert_eq!(site_gate["verdict"]["sm_120"], "unverified", "{chain:#?}");
    assert!(
        chain
            .iter()
            .any(|e| e == "flashinfer/jit/comm.py:197 supported_major_versions=[9, 10, 12]")
            && chain.iter().any(|e| e == "stop: path-left-out")
            && chain.iter().any(|e| e.starts_with(
                "not open: the kernels above are those of the part of the path gatefix read; it left out sglang/srt/layers/communicator.py:"
            )),
        "{chain:#?}"
    );
}

/// The hand-checked sample of tests/data/verdict-samples.toml for one package: a verdict
/// checked right must not change; a wrong or doubtful one may change only to the verdict the
/// check found (`hand`) or to `unverified`; a right `open` or `opportunity` may become
/// `unverified` only where its path was not read whole (`path-left-out`). Returns how many
/// are still wrong and how many right ones that unread path took, printing them.
fn check_samples(package: &str, doc: &Value) -> (usize, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/verdict-samples.toml");
    let samples: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut still_wrong = 0;
    let mut unread = 0;
    let mut checked = 0;
    let mut failures = Vec::new();
    for sample in samples["sample"].as_array().unwrap() {
        if sample["package"].as_str() != Some(package) {
            continue;
        }
        checked += 1;
        let (file, line, column) = (
            sample["file"].as_str().unwrap(),
            sample["line"].as_integer().unwrap(),
            sample["column"].as_integer().unwrap(),
        );
        let found = doc["gates"].as_array().unwrap().iter().find(|g| {
            g["file"] == file
                && g["line"].as_i64() == Some(line)
                && g["column"].as_i64() == Some(column)
        });
        let now = found.map_or("(no gate)", |g| g["verdict"]["sm_120"].as_str().unwrap());
        let then = sample["gatefix"].as_str().unwrap();
        let reason = sample["reason"].as_str().unwrap();
        if sample["right"].as_bool() == Some(true) {
            // An open or opportunity whose gated path was not read whole is no verdict
            // (`path-left-out`): a loss, counted and printed, never a wrong verdict.
            let left_out = found.is_some_and(|g| {
                now == "unverified"
                    && matches!(then, "open" | "opportunity")
                    && evidence(g).iter().any(|e| e == "stop: path-left-out")
            });
            if left_out {
                unread += 1;
                eprintln!(
                    "{package} sample right as {then}, now unverified (path-left-out): {file}:{line}"
                );
            } else if now != then {
                failures.push(format!(
                    "{file}:{line}:{column} was checked right as {then}, now {now}: {reason}"
                ));
            }
            continue;
        }
        let hand = sample["hand"].as_str().unwrap();
        if now == then {
            still_wrong += 1;
            eprintln!("{package} sample still wrong: {file}:{line} {now} ({reason})");
        } else if now != hand && now != "unverified" {
            failures.push(format!(
                "{file}:{line}:{column} was {then} (checked wrong: {reason}); now {now}, not the checked {hand} or unverified: check it again"
            ));
        }
    }
    // Every sample that moved the wrong way, not only the first.
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(checked, 40, "{package}: 40 samples");
    eprintln!(
        "{package}: {still_wrong} of 40 hand-checked verdicts still wrong or doubtful; {unread} right ones unverified because their path was not read whole"
    );
    (still_wrong, unread)
}

/// Counts per verdict and per stop reason of the gates whose admission is yes or no; prints
/// them, and returns (decided, yes-or-no).
fn counts(name: &str, doc: &Value) -> (usize, usize) {
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let mut stops: BTreeMap<String, usize> = BTreeMap::new();
    let mut decided = 0;
    let mut admitted = 0;
    for g in doc["gates"].as_array().unwrap() {
        let admits = g["admits"]["sm_120"].as_str().unwrap();
        if admits != "yes" && admits != "no" {
            continue;
        }
        admitted += 1;
        let verdict = g["verdict"]["sm_120"].as_str().unwrap().to_string();
        if verdict != "unverified" {
            decided += 1;
        } else {
            let stop = evidence(g)
                .iter()
                .find_map(|e| e.strip_prefix("stop: ").map(str::to_string))
                .unwrap_or_else(|| "linked-but-unknown".into());
            *stops.entry(stop).or_default() += 1;
        }
        *verdicts.entry(verdict).or_default() += 1;
    }
    eprintln!(
        "{name}: {decided} of {admitted} yes/no gates decided; verdicts {verdicts:?}; stops {stops:?}"
    );
    (decided, admitted)
}

/// Not yet at the 50%: the counts are printed, and the test
/// holds the number of decided gates reached so far so that it cannot silently fall back. A
/// count, not a share: each gain in recall (issue 13) adds undecided gates, and a share floor
/// would fail on finding more gates (it did: 1,768 -> 1,956 yes/no gates at 90 -> 92 decided).
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn decided_share_and_stop_reasons_at_sm120() {
    // With the triton these stacks run (its bundled ptxas decides where Triton kernels build).
    let sglang = audit_wheels(&[
        "sglang-0.5.23-",
        "flashinfer_python-0.7.2-py",
        "triton-3.5.1-",
    ]);
    let (decided, admitted) = counts("sglang 0.5.23 + flashinfer 0.7.2 + triton 3.5.1", &sglang);
    // 692 of 3,041 (22.8%) on 2026-12-05 with launch features (`rules/launch.toml`: 246
    // PDL gates judged by the hardware); 352 of 2,374 (14.8%) on 2026-12-02 with Triton kernels, generic JIT specs, alternatives,
    // guards in the followed code, exits, checks and checker registries; 110 of 1,959 (5.6%)
    // on 2026-12-01 with L5 (CuTe DSL admission); 92 before it.
    // 514 of 3,089 (16.6%) on 2026-12-06 once `open` and `opportunity` need the whole path
    // read (741 before: 232 of them had kernels found beside a hop left unread, `path-left-out`).
    assert!(decided >= 510, "{decided}/{admitted}");
    // 14 of the 40 were wrong or doubtful when checked (2026-12-02), 9 on 2026-12-06, 4 once
    // the path must be read whole; that rule took 8 right ones to `unverified`. The issue
    // wants none wrong.
    let (wrong, unread) = check_samples("sglang", &sglang);
    assert!(wrong <= 4 && unread <= 8, "{wrong} wrong, {unread} unread");
    // L5 decides: flashinfer's SM100 GDN prefill builds tcgen05 MMAs (through the kernel class
    // of another module), which admit the sm_100f/sm_110f families only; and the masked
    // grouped GEMM sends every major >= 10, sm_120 included, to its SM100 kernel: a trap.
    let gdn = gate(
        &sglang,
        "flashinfer/gdn_prefill.py",
        "chunk_gated_delta_rule",
        "_arch_major == 10",
    );
    assert_eq!(gdn["verdict"]["sm_120"], "wall", "{:#?}", evidence(gdn));
    assert!(
        evidence(gdn).iter().any(|e| e.starts_with("L5 DSL admission")
            && e.contains("builds tcgen05.MmaF16BF16Op through flashinfer.gdn_kernels.blackwell.gated_delta_net_chunked.GatedDeltaNetChunkedKernel")
            && e.ends_with("does not admit sm_120a")),
        "{:#?}",
        evidence(gdn)
    );
    let sm120 = gate(
        &sglang,
        "flashinfer/gdn_prefill.py",
        "chunk_gated_delta_rule",
        "_arch_major == 12",
    );
    assert_eq!(sm120["verdict"]["sm_120"], "open", "{:#?}", evidence(sm120));
    let grouped = gate(
        &sglang,
        "flashinfer/gemm/kernels/grouped_gemm_masked_wrapper.py",
        "grouped_gemm_nt_masked",
        "major >= 10",
    );
    assert_eq!(
        grouped["verdict"]["sm_120"],
        "trap",
        "{:#?}",
        evidence(grouped)
    );
    assert!(
        evidence(grouped).iter().any(|e| e.starts_with(
            "L5 DSL admission flashinfer/gemm/kernels/grouped_gemm_masked_blackwell.py:"
        ) && e
            .contains("_grouped_gemm_nt_masked_sm100 builds tcgen05.")
            && e.contains("Sm100BlockScaledPersistentDenseGemmKernel")
            && e.ends_with("does not admit sm_120a")),
        "{:#?}",
        evidence(grouped)
    );
    let vllm = audit_wheels(&[
        "vllm-0.33.0-",
        "flashinfer_python-0.7.2.post1-",
        "triton-3.5.1-",
    ]);
    let (decided, admitted) = counts("vllm 0.33.0 + flashinfer 0.7.2.post1 + triton 3.5.1", &vllm);
    // 476 of 2,711 (17.6%) on 2026-12-05 with launch features; 312 of 2,338 (13.3%) on
    // 2026-12-02; 76 of 1,746 (4.4%) on 2026-12-01 with L5; 298
    // after torch ops stopped taking the weakest of a package's libraries (false traps, such
    // as marlin_gemm, whose library carries sm_120 SASS) and triton's docstrings stopped
    // making `tl.static_range` a kernel.
    // 366 of 2,744 (13.3%) on 2026-12-06 with the whole path read (499 before).
    assert!(decided >= 360, "{decided}/{admitted}");
    // 16 of the 40 were wrong or doubtful when checked; 14 after the torch-op libraries and
    // triton's docstrings were fixed, 9 on 2026-12-06, 3 with the whole path read (9 right
    // ones went to `unverified`).
    let (wrong, unread) = check_samples("vllm", &vllm);
    assert!(wrong <= 3 && unread <= 9, "{wrong} wrong, {unread} unread");
}

/// flashinfer 0.7.2's Rubin switch (`get_compute_capability(device) == (10, 7)` choosing
/// the trtllm-gen GEMM module) is no opportunity at sm_120: that module's JIT spec has no arch
/// list and its runner compiles no kernel gatefix can read (the GEMM kernels are prebuilt
/// cubins fetched by name at run time), so nothing on the site says one exists for sm_120.
/// It was an opportunity with an unsafe fix offered while a spec without a list counted as
/// a kernel present.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn flashinfer_072_rubin_switch_is_not_an_opportunity_over_fetched_cubins() {
    let doc = audit_wheels(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]);
    let rubin = gate(
        &doc,
        "flashinfer/gemm/gemm_base.py",
        "get_trtllm_gemm_module",
        "get_compute_capability(device) == (10, 7)",
    );
    for target in ["sm_120", "sm_90", "sm_100"] {
        assert_eq!(
            rubin["verdict"][target], "unverified",
            "{target}: {rubin:#?}"
        );
    }
    let chain = evidence(rubin);
    assert!(
        chain.iter().any(|e| e.contains(
            "needs JIT generator flashinfer.jit.gemm.core:gen_trtllm_gen_gemm_module: unknown"
        )),
        "{chain:#?}"
    );
}

/// An upstream narrowing as a before/after test. sglang 0.5.23 narrowed the CuTe DSL GDN and
/// KDA prefill checks from `major >= 10` (`_is_blackwell`) to `major == 10` (`_is_sm10x`:
/// "SM120 (desktop Blackwell) lacks tcgen05 despite its larger capability number"). The
/// prefill kernels behind `if not self.supports_prefill: raise` (reached through the function
/// `_ensure_extend_loaded` stores on `self._extend_fn`) drive tcgen05 through MLIR's `nvvm`
/// dialect (`sglang/kernels/ops/attention/cute_utils/_tcgen05.py`), which the PTX ISA gives
/// to sm_100a/101a/103a/110a and their families only. Before the fix (0.5.22) the check lets
/// sm_120 onto them: a trap; after it (0.5.23) it keeps sm_120 off: a wall, not an
/// opportunity that would offer to undo upstream's fix.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0522_cute_dsl_prefill_checks_are_traps_that_0523_narrowed_to_walls() {
    let before = audit_wheels(&[
        "sglang-0.5.22-",
        "flashinfer_python-0.7.2-py",
        "triton-3.5.1-",
    ]);
    let after = audit_wheels(&[
        "sglang-0.5.23-",
        "flashinfer_python-0.7.2-py",
        "triton-3.5.1-",
    ]);
    for (doc, release, admits, verdict) in [
        (&before, "0.5.22", "no", "trap"),
        (&after, "0.5.23", "yes", "wall"),
    ] {
        for (kind, class, kernel) in [
            ("gdn", "CuteDSLGDNKernel", "Sm100ChunkUWKernel"),
            ("kda", "CuteDSLKDAKernel", "Sm100KdaChunkUWKernel"),
        ] {
            let check = gate(
                doc,
                &format!("sglang/srt/layers/attention/linear/kernels/{kind}_cutedsl.py"),
                &format!("{class}._ensure_extend_loaded"),
                "not self.supports_prefill",
            );
            let chain = evidence(check);
            // 0.5.22 raises only below major 10; 0.5.23 raises at sm_120 too.
            assert_eq!(
                check["admits"]["sm_120"], admits,
                "{release} {kind}: {chain:#?}"
            );
            assert_eq!(
                check["verdict"]["sm_120"], verdict,
                "{release} {kind}: {chain:#?}"
            );
            let needs = format!(
                "needs CuTe DSL kernel sglang.kernels.ops.attention.linear.{kind}_blackwell.kernel_kkt_inv_uw:{kernel}: MISSING at sm_120"
            );
            assert!(
                chain.contains(&needs)
                    && chain.iter().any(|e| e.starts_with("L5 DSL admission ")
                        && e.contains(" builds nvvm.tcgen05 through ")
                        && e.ends_with("does not admit sm_120a")),
                "{release} {kind}: {chain:#?}"
            );
        }
    }
}

/// A fork that publishes sglang 0.5.23 and flashinfer 0.7.2 under other names (folders,
/// imports, module paths, distributions and RECORDs renamed) audits as the originals do:
/// every gate, with
/// the same form and the same admission and verdict at every target. The rules name the
/// published packages (`rules/links.toml`'s `flashinfer.jit.fused_moe` generators,
/// `rules/sglang.toml`'s platform probe table, `rules/flashinfer.toml`'s
/// `version_at_least`, `rules/kernels.toml`'s `flashinfer/data/csrc`); a site whose package
/// has their layout under another name gets them, and the copy's distribution gets the
/// `dist = "..."` rules of the published one. Before, 67 admissions and 59 verdicts at sm_120
/// moved (`get_platform().is_sm90` unknown, JIT sources not found, backends not linked).
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn a_renamed_fork_of_sglang_0523_and_flashinfer_072_audits_as_the_originals() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let fork = common::fixture::wheel_site(&wheels);
    for package in ["sglang", "flashinfer"] {
        common::fixture::renamed_fork(fork.path(), package, &format!("{package}_fork"));
    }
    assert_audits_as(&wheels, fork.path(), &|file: &str| {
        ["sglang", "flashinfer"]
            .iter()
            .find_map(|p| {
                file.strip_prefix(&format!("{p}_fork/"))
                    .map(|rest| format!("{p}/{rest}"))
            })
            .unwrap_or_else(|| file.to_string())
    });
}

/// The fork most often met: the packages under their own names, published as other
/// distributions (`sglang-custom`, `flashinfer-custom`). The rules that name the published
/// distributions (`dist = "flashinfer-python"`: the mixed-comm and FP4 GEMM `[[link]]`s,
/// sglang's `[[backend]]`s and overrides) apply to the ones that install the packages here.
/// Before, four verdicts at sm_120 moved.
#[test]
#[ignore = "needs the pinned wheels: ci/fetch-wheels.sh"]
fn sglang_0523_and_flashinfer_072_published_as_other_distributions_audit_as_the_originals() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let fork = common::fixture::wheel_site(&wheels);
    for (folder, name, renamed) in [
        ("sglang-0.5.23.dist-info", "sglang", "sglang-custom"),
        (
            "flashinfer_python-0.7.2.dist-info",
            "flashinfer-python",
            "flashinfer-custom",
        ),
    ] {
        let dist_info = fork.path().join(folder);
        let renamed_folder = format!(
            "{}-{}",
            renamed.replace('-', "_"),
            folder.split_once('-').unwrap().1
        );
        let metadata = std::fs::read_to_string(dist_info.join("METADATA")).unwrap();
        let metadata =
            metadata.replacen(&format!("Name: {name}\n"), &format!("Name: {renamed}\n"), 1);
        assert!(metadata.contains(&format!("Name: {renamed}\n")), "{folder}");
        std::fs::write(dist_info.join("METADATA"), metadata).unwrap();
        let record = std::fs::read_to_string(dist_info.join("RECORD")).unwrap();
        std::fs::write(
            dist_info.join("RECORD"),
            record.replace(&format!("{folder}/"), &format!("{renamed_folder}/")),
        )
        .unwrap();
        std::fs::rename(&dist_info, fork.path().join(&renamed_folder)).unwrap();
    }
    assert_audits_as(&wheels, fork.path(), &|file: &str| file.to_string());
}

/// Every gate of the shared audit of `wheels` is in the audit of `fork` (its files named
/// back by `published`), with the same form, admissions and verdicts.
fn assert_audits_as(wheels: &[&str], fork: &Path, published: &dyn Fn(&str) -> String) {
    let original = audit_wheels(wheels);
    let args = common::audits::uncached_audit_args(fork);
    let forked = common::gatefix_json(args);
    // Every target's admission and verdict.
    type Row = (String, String);
    let rows = |doc: &Value, rename: bool| -> BTreeMap<(String, u64, u64, String), Row> {
        doc["gates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let file = g["file"].as_str().unwrap();
                let file = if rename {
                    published(file)
                } else {
                    file.to_string()
                };
                let key = (
                    file,
                    g["line"].as_u64().unwrap(),
                    g["column"].as_u64().unwrap(),
                    g["form"].as_str().unwrap().to_string(),
                );
                (key, (g["admits"].to_string(), g["verdict"].to_string()))
            })
            .collect()
    };
    let (before, after) = (rows(&original, false), rows(&forked, true));
    assert!(before.len() > 3_000, "{}", before.len());
    let moved: Vec<_> = before
        .iter()
        .filter(|(key, row)| after.get(*key) != Some(*row))
        .map(|(key, row)| (key, row, after.get(key)))
        .collect();
    assert!(
        moved.is_empty(),
        "{} gates differ, the first: {:#?}",
        moved.len(),
        &moved[..moved.len().min(20)]
    );
    assert_eq!(before.len(), after.len());
}
