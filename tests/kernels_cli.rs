//! `gatefix kernels` and the coverage query on the fixture site: native libraries (copies of
//! the fatbin samples), JIT arch lists, fixed-arch builds and a cubin table.

mod common;

use assert_cmd::Command;
use gatefix::arch::Arch;
use gatefix::kernel::query::{Answer, KernelIndex};
use gatefix::kernel::requirement::Requirement;
use gatefix::rules::Rules;
use gatefix::scan::{ScanOptions, scan_with};
use gatefix::site::Site;
use serde_json::Value;

const SITE: &str = "testdata/sites/mixed";

fn kernels_json(args: &[&str]) -> Value {
    common::gatefix_json(["kernels"].iter().chain(args).chain(&["--format", "json"]))
}

fn file<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

#[test]
fn libraries_are_listed_per_distribution_with_coverage_per_target() {
    let doc = kernels_json(&[SITE, "-t", "sm_120", "-t", "sm_90"]);
    let common = file(&doc, "sgl_kernel/common_ops.abi3.so");
    assert_eq!(common["dist"], "sglang-kernel");
    assert_eq!(common["dist_version"], "0.4.10");
    assert_eq!(
        common["sass"],
        serde_json::json!(["sm_80", "sm_90a", "sm_100a", "sm_120a", "sm_120f"])
    );
    assert_eq!(common["ptx"], serde_json::json!(["sm_90"]));
    assert_eq!(common["coverage"]["sm_120"]["sass"], 2);
    assert_eq!(common["coverage"]["sm_120"]["none"], 0);
    let flash = file(&doc, "sgl_kernel/flash_ops.sm_90a.cubin");
    assert_eq!(flash["coverage"]["sm_120"]["none"], 1);
    assert_eq!(flash["coverage"]["sm_90"]["sass"], 1);
    // Per-entry loadability is in the JSON, for comparison with cuobjdump.
    let entry = &flash["containers"][0]["entries"][0];
    assert_eq!(
        (
            entry["kind"].as_str(),
            entry["arch"].as_u64(),
            entry["variant"].as_str()
        ),
        (Some("sass"), Some(90), Some("a"))
    );
    assert_eq!(entry["load"]["sm_120"], "no");
    assert_eq!(entry["load"]["sm_90"], "sass");
    // Summed per distribution: one library with code for sm_120, one without.
    let dist = &doc["distributions"][0];
    assert_eq!(dist["distribution"], "sglang-kernel 0.4.10");
    assert_eq!(
        (
            dist["coverage"]["sm_120"]["sass"].as_u64(),
            dist["coverage"]["sm_120"]["none"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(
        (
            dist["coverage"]["sm_90"]["sass"].as_u64(),
            dist["coverage"]["sm_90"]["none"].as_u64()
        ),
        (Some(3), Some(0))
    );
}

#[test]
fn jit_sources_are_listed_with_their_arch_lists() {
    let doc = kernels_json(&[SITE, "-t", "sm_120"]);
    let generators = doc["generators"].as_array().unwrap();
    let find = |id: &str| {
        generators
            .iter()
            .find(|g| g["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    let comm = find("flashinfer.jit.comm:gen_trtllm_comm_module");
    assert_eq!(comm["majors"], serde_json::json!([9, 10]));
    assert_eq!(comm["admits"]["sm_120"], "no");
    assert_eq!(
        (comm["file"].as_str(), comm["line"].as_u64()),
        (Some("flashinfer/jit/comm.py"), Some(7))
    );
    assert_eq!(
        find("flashinfer.jit.comm:gen_named_module")["majors"],
        serde_json::json!([9, 10, 12])
    );
    let any = find("flashinfer.jit.comm:gen_any_module");
    assert_eq!(any["majors"], Value::Null);
    assert_eq!(any["admits"]["sm_120"], "yes");
    let fixed = doc["fixed_arch"].as_array().unwrap();
    assert!(
        fixed
            .iter()
            .any(|f| f["id"] == "flashinfer.jit.gemm:gen_gemm_sm120_module"
                && f["archs"] == serde_json::json!(["sm_120a"]))
    );
    let tables = doc["cubin_tables"].as_array().unwrap();
    assert_eq!(
        tables[0]["id"],
        "flashinfer.jit.metainfo:BLACKWELL_CUBIN_ARCHS"
    );
    assert_eq!(
        tables[0]["archs"],
        serde_json::json!(["sm_100a", "sm_100f", "sm_103a"])
    );
}

/// `--generator` reads the layers of a generator that has no arch list (listed after the
/// others, marked `asked`), and says so of one the site does not have.
#[test]
fn a_generator_without_an_arch_list_is_read_when_asked_for() {
    let sm120 = "flashinfer.jit.gemm:gen_gemm_sm120_module";
    let doc = kernels_json(&[
        SITE,
        "-t",
        "sm_120",
        "--generator",
        sm120,
        "--generator",
        "no.such:gen",
    ]);
    let generators = doc["generators"].as_array().unwrap();
    let asked: Vec<&Value> = generators.iter().filter(|g| g["asked"] == true).collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["id"], sm120);
    let layers = &asked[0]["layers"]["sm_120"];
    assert_eq!(layers["layers"][0]["layer"], "L2");
    assert_eq!(
        layers["layers"][0]["evidence"][0],
        "flashinfer/jit/gemm.py:8 builds with sm120a_nvcc_flags only"
    );
    assert_eq!(asked[1]["layers"]["sm_120"]["answer"], "unknown");
    assert_eq!(
        asked[1]["layers"]["sm_120"]["evidence"][0],
        "no JIT generator `no.such:gen` in the site"
    );
    // Without --generator, a generator with no arch list is not listed.
    let plain = kernels_json(&[SITE, "-t", "sm_120"]);
    let ids: Vec<&Value> = plain["generators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["id"])
        .collect();
    assert!(!ids.iter().any(|id| *id == sm120), "{ids:?}");
    // It reads layers, so it needs them.
    Command::new(common::gatefix_bin())
        .args(["kernels", SITE, "--layers", "list", "--generator", sm120])
        .assert()
        .code(2);
}

#[test]
fn a_single_file_and_a_file_that_is_not_device_code() {
    let doc = kernels_json(&[
        "testdata/fatbin-samples/fatbin/variants.fatbin",
        "-t",
        "sm_120",
    ]);
    assert_eq!(doc["files"].as_array().unwrap().len(), 1);
    let output = Command::cargo_bin("gatefix")
        .unwrap()
        .args(["kernels", "README.md"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("README.md: not a CUDA binary"));
}

fn index() -> (Site, KernelIndex) {
    let site = Site::open(std::path::Path::new(SITE)).unwrap();
    let rules = Rules::load(None).unwrap();
    let options = ScanOptions {
        kernel_sources: true,
        ..ScanOptions::default()
    };
    let result = scan_with(&site, &rules, options);
    let index = KernelIndex::build(&site, &result);
    (site, index)
}

#[test]
fn coverage_answers_carry_their_evidence() {
    let (site, index) = index();
    let sm120 = Arch::new(12, 0);
    let sm100 = Arch::new(10, 0);
    let jit = Requirement::Jit("flashinfer.jit.comm:gen_trtllm_comm_module".into());
    match index.coverage(&jit, sm120, &site) {
        Answer::NotCovered { evidence } => {
            // The arch list first, as before; then the device guards that also close it.
            assert_eq!(
                evidence[0],
                "flashinfer/jit/comm.py:7 supported_major_versions=[9, 10]"
            );
            assert_eq!(
                evidence[1],
                "L3 device guards partly: 1 of 2 kernels are compiled out or trap at sm_120"
            );
            assert!(
                evidence[2].starts_with(
                    "L3 device guards flashinfer/data/include/flashinfer/comm/trtllm_allreduce.cuh:17 \
                     `#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))` \
                     compiles `lamport_style_one_shot_all_reduce_norm_kernel`"
                ) && evidence[2].contains("empty body"),
                "{evidence:?}"
            );
            assert!(
                evidence[3].contains("trtllm_allreduce.cuh:9")
                    && evidence[3]
                        .contains("removes cudaGridDependencySynchronize() from `rms_norm_kernel`"),
                "{evidence:?}"
            );
            assert_eq!(evidence.len(), 4, "{evidence:?}");
        }
        other => panic!("{other:?}"),
    }
    match index.coverage(&jit, sm100, &site) {
        Answer::Covered { evidence, .. } => assert_eq!(
            evidence,
            [
                "flashinfer/jit/comm.py:7 supported_major_versions=[9, 10]",
                "L3 device guards yes: 2 kernels in 2 files have bodies at sm_100",
                "L4 host checks yes: no host check on the SM in the 2 files read",
            ]
        ),
        other => panic!("{other:?}"),
    }

    // A fixed-arch build whose function builds no JIT spec: its sources are not known, so it
    // is never covered by default; where the flags leave the target out, it is not covered.
    let fixed = Requirement::Jit("flashinfer.jit.gemm:gen_gemm_sm120_module".into());
    match index.coverage(&fixed, sm120, &site) {
        Answer::Unknown { why } => assert!(why.contains("sources not found"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            index.coverage(&fixed, Arch::new(12, 1), &site),
            Answer::NotCovered { .. }
        ),
        "sm_120a does not load on 12.1"
    );

    let table = Requirement::CubinTable("flashinfer.jit.metainfo:BLACKWELL_CUBIN_ARCHS".into());
    assert!(matches!(
        index.coverage(&table, sm120, &site),
        Answer::NotCovered { .. }
    ));
    assert!(matches!(
        index.coverage(&table, Arch::new(10, 3), &site),
        Answer::Covered { .. }
    ));

    let common = Requirement::Library {
        dist: Some("sglang-kernel".into()),
        glob: "sgl_kernel/common_ops*.so".into(),
    };
    match index.coverage(&common, sm120, &site) {
        Answer::Covered { how, evidence } => {
            assert_eq!(how, "sass");
            assert!(evidence[0].starts_with("sgl_kernel/common_ops.abi3.so: 2 containers sass"));
        }
        other => panic!("{other:?}"),
    }
    let flash = Requirement::Library {
        dist: None,
        glob: "sgl_kernel/flash_ops*".into(),
    };
    assert!(matches!(
        index.coverage(&flash, sm120, &site),
        Answer::NotCovered { .. }
    ));
    let missing = Requirement::Jit("flashinfer.jit.comm:no_such".into());
    assert!(matches!(
        index.coverage(&missing, sm120, &site),
        Answer::Unknown { .. }
    ));
}
