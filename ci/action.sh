#!/usr/bin/env bash
# The script of action.yml (a composite GitHub Action), also run as a plain shell step by
# .ci/run. Installs gatefix into a tool venv of its own, writes GitHub annotations and the step
# summary (--format github), then the SARIF file for code scanning; the exit code is the
# SARIF run's (--fail-on).
#
# Inputs (environment): GATEFIX_PATH (site or venv to audit, default .venv), GATEFIX_TARGETS
# (space-separated, default sm_120), GATEFIX_ANCHOR (file results point at, used when it
# exists), GATEFIX_BASELINE (accepted findings, used when set), GATEFIX_FAIL_ON (default
# trap,new), GATEFIX_SARIF (output file, default gatefix.sarif), GATEFIX_WHEEL (a wheel to
# install; default: build from the action's own checkout, GATEFIX_SOURCE, with pip/maturin).
set -euo pipefail
path=${GATEFIX_PATH:-.venv}
targets=${GATEFIX_TARGETS:-sm_120}
fail_on=${GATEFIX_FAIL_ON:-trap,new}
sarif=${GATEFIX_SARIF:-gatefix.sarif}
source_dir=${GATEFIX_SOURCE:-$(cd "$(dirname "$0")/.." && pwd)}

tools=$(mktemp -d "${RUNNER_TEMP:-/tmp}/gatefix-tool.XXXXXX")
python3 -m venv "$tools"
if [ -n "${GATEFIX_WHEEL:-}" ]; then
  "$tools/bin/pip" install -q "$GATEFIX_WHEEL"
else
  "$tools/bin/pip" install -q "$source_dir"
fi
gatefix=$tools/bin/gatefix
"$gatefix" --version

args=(audit "$path")
for t in $targets; do args+=(--target "$t"); done
if [ -n "${GATEFIX_ANCHOR:-}" ] && [ -f "$GATEFIX_ANCHOR" ]; then args+=(--anchor "$GATEFIX_ANCHOR"); fi
if [ -n "${GATEFIX_BASELINE:-}" ]; then args+=(--baseline "$GATEFIX_BASELINE"); fi

# Annotations and the step summary: never the step's verdict.
"$gatefix" "${args[@]}" --format github --fail-on none
status=0
"$gatefix" "${args[@]}" --format sarif --fail-on "$fail_on" > "$sarif" || status=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "sarif=$sarif" >> "$GITHUB_OUTPUT"; fi
exit "$status"
