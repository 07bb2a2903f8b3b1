#!/usr/bin/env bash
# Fuzzes gatefix's readers of untrusted bytes for a given time per target, outside CI (the
# bounded property tests are CI's part). Targets (fuzz/src/lib.rs):
#   kernel_bytes  ELF / fatbin / cubin / PTX reader (strict and lenient) and the format sniff
#   python_scan   the Python scan: the bytes are the one module of a site, audited
#   cuda_source   the CUDA C++ reader of the kernel layers, and the preprocessor's liveness
#   rules_toml    rule files;  patch_toml  patch files
#
# Usage: ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]        (default 60 s, every target)
#   FUZZ_ENGINE=libfuzzer  cargo-fuzz on nightly, coverage-guided, AddressSanitizer (default
#                          when `cargo +nightly fuzz` works)
#   FUZZ_ENGINE=loop       the stable-Rust harness: random mutation of the seeds
#   FUZZ_JOBS=N            parallel processes per target (default: the cores)
#   FUZZ_BIN=DIR           run prebuilt libFuzzer binaries from DIR (a machine without cargo)
#   FUZZ_MAX_LEN=N         libFuzzer's -max_len (default 8192 for python_scan and cuda_source,
#                          whose cost grows with the input, else 1 MiB)
#
# Seeds come from the repository (testdata, rules, patches); the corpus grows in
# fuzz/corpus/TARGET and findings land in fuzz/artifacts/TARGET (both ignored by git). The
# last lines are one summary per target: executions, seconds, findings. Exit 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all=(kernel_bytes python_scan cuda_source rules_toml patch_toml)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
jobs=${FUZZ_JOBS:-$(nproc)}

engine=${FUZZ_ENGINE:-}
if [ -z "$engine" ]; then
  if [ -n "${FUZZ_BIN:-}" ] || cargo +nightly fuzz --version >/dev/null 2>&1; then
    engine=libfuzzer
  else
    engine=loop
    echo "fuzz: no cargo-fuzz on nightly; using the stable loop harness" >&2
  fi
fi

summary=()
found=0
case "$engine" in
  loop)
    (cd fuzz && cargo build --release --bin loop) >&2
    for t in "${targets[@]}"; do
      logs=$(mktemp -d)
      for j in $(seq 1 "$jobs"); do
        fuzz/target/release/loop "$t" "$seconds" >"$logs/$j.out" 2>"$logs/$j.err" &
      done
      rc=0
      wait || rc=$?
      cat "$logs"/*.err >&2
      runs=$(awk '{s += $2} END {print s + 0}' "$logs"/*.out)
      panics=$(awk '{for (i = 1; i < NF; i++) if ($(i + 1) ~ /^panics/) s += $i} END {print s + 0}' "$logs"/*.out)
      slow=$(awk '{for (i = 1; i < NF; i++) if ($(i + 1) == "over") s += $i} END {print s + 0}' "$logs"/*.out)
      summary+=("$t: $runs executions in ${seconds} s x $jobs processes (loop), $panics panics, $slow hangs")
      [ $((panics + slow)) -eq 0 ] || found=1
      rm -rf "$logs"
    done
    ;;
  libfuzzer)
    bin=${FUZZ_BIN:-}
    if [ -z "$bin" ]; then
      (cd fuzz && cargo +nightly fuzz build --features libfuzzer -O --debug-assertions) >&2
      (cd fuzz && cargo build --release --bin loop) >&2
      bin=fuzz/target/x86_64-unknown-linux-gnu/release
    fi
    bin=$(cd "$bin" && pwd)
    for t in "${targets[@]}"; do
      corpus=fuzz/corpus/$t
      artifacts=fuzz/artifacts/$t
      mkdir -p "$corpus" "$artifacts"
      if [ -z "$(ls -A "$corpus")" ]; then
        [ -x fuzz/target/release/loop ] || { echo "fuzz: $corpus is empty and there is no loop binary to write its seeds" >&2; exit 2; }
        fuzz/target/release/loop --write-seeds "$t" "$corpus" >&2
      fi
      logs=$(mktemp -d)
      # -jobs/-workers: independent processes over one shared corpus, each writing its
      # final stats to fuzz-N.log; -timeout makes a hang a finding; -rss_limit_mb the same
      # for memory. -detect_leaks=0 for python_scan: its leak reports were single 32- or
      # 48-byte objects per job, once per process. The one symbolized was std's thread-local
      # registration (__cxa_thread_atexit) in a thread the scan spawned; with that work moved
      # to the rayon pool, 3 of 16 jobs in 300 s still reported one each (not symbolized).
      # A leak is no memory error in Rust, and AddressSanitizer still reports every
      # out-of-bounds or use-after-free access, in tree-sitter's C too.
      leaks=1
      [ "$t" != python_scan ] || leaks=0
      case "$t" in
        python_scan | cuda_source) max_len=${FUZZ_MAX_LEN:-8192} ;;
        *) max_len=${FUZZ_MAX_LEN:-1048576} ;;
      esac
      (cd "$logs" && "$bin/$t" -jobs="$jobs" -workers="$jobs" -max_len="$max_len" -detect_leaks="$leaks" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$OLDPWD/$artifacts/" "$OLDPWD/$corpus" >/dev/null 2>&1) || true
      runs=$(awk '/stat::number_of_executed_units/ {s += $NF} END {print s + 0}' "$logs"/fuzz-*.log)
      crashes=$( (grep -l -E '^==[0-9]+==ERROR|panicked at|deadly signal|ALARM: working on the last Unit|out-of-memory' "$logs"/fuzz-*.log 2>/dev/null || true) | wc -l)
      if [ "$crashes" -gt 0 ]; then
        found=1
        grep -h -E -A3 'panicked at|==ERROR|ALARM|out-of-memory' "$logs"/fuzz-*.log | head -20 >&2
      fi
      summary+=("$t: $runs executions in ${seconds} s x $jobs jobs (libFuzzer), $crashes findings, corpus $(ls "$corpus" | wc -l) inputs")
      rm -rf "$logs"
    done
    ;;
  *)
    echo "fuzz: FUZZ_ENGINE is libfuzzer or loop, not $engine" >&2
    exit 2
    ;;
esac
printf '%s\n' "${summary[@]}"
exit $found
