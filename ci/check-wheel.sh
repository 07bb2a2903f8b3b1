#!/usr/bin/env bash
# The wheel as a user gets it: pip-installs WHEEL into a fresh venv together with a small
# distribution with gates (testdata/dists/gatefix-fixture, built by pip offline with its
# stdlib-only backend), runs `gatefix audit` there with NO arguments (venv not activated, from
# an empty folder), and checks that the JSON names that venv's site-packages and exactly the
# fixture's gates. Then the GitHub Action's script (ci/action.sh) as a shell step with that
# wheel, and the pre-commit hook through `pre-commit try-repo` against this checkout.
#   usage: ci/check-wheel.sh WHEEL
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$wheel"
"$work/venv/bin/pip" install -q --no-index testdata/dists/gatefix-fixture
test -x "$work/venv/bin/gatefix"
mkdir "$work/elsewhere"
(cd "$work/elsewhere" && env -u VIRTUAL_ENV "$work/venv/bin/gatefix" audit --format json --fail-on none) \
  > "$work/audit.json"
"$work/venv/bin/gatefix" --version
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
doc = json.load(open(os.path.join(work, "audit.json")))
purelib = os.path.realpath(os.path.join(work, "venv/lib/python%d.%d/site-packages" % sys.version_info[:2]))
assert os.path.realpath(doc["site"]) == purelib, (doc["site"], purelib)
names = {d["name"] for d in doc["distributions"]}
assert {"gatefix", "gatefix-fixture"} <= names, names
found = sorted((g["dist"], g["file"], g["line"], g["form"]) for g in doc["gates"])
expected = [
    ("gatefix-fixture", "gatefix_fixture/backends.py", 6, "capability-compare"),
    ("gatefix-fixture", "gatefix_fixture/backends.py", 11, "helper-call"),
    ("gatefix-fixture", "gatefix_fixture/backends.py", 13, "capability-compare"),
]
assert found == expected, found
print("wheel check: gatefix audit with no arguments audited %s: %d gates of gatefix-fixture" % (doc["site"], len(found)))
PY

# The Action's script, as a plain shell step: annotations on stdout, the step summary, SARIF.
export GITHUB_STEP_SUMMARY=$work/summary.md GITHUB_OUTPUT=$work/output
mkdir "$work/project"
printf 'gatefix-fixture==1.0.0\n' > "$work/project/requirements.txt"
ln -s "$work/venv" "$work/project/.venv"
(cd "$work/project" && GATEFIX_WHEEL=$wheel GATEFIX_FAIL_ON=none GATEFIX_SARIF=$work/gatefix.sarif \
  "$OLDPWD/ci/action.sh") > "$work/action.out"
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
sarif = json.load(open(os.path.join(work, "gatefix.sarif")))
assert sarif["version"] == "2.1.0", sarif.get("version")
results = sarif["runs"][0]["results"]
summary = open(os.path.join(work, "summary.md")).read()
assert "| target | trap | opportunity | wall | unverified | open |" in summary, summary
assert "sarif=%s/gatefix.sarif" % work in open(os.path.join(work, "output")).read()
print("action check: SARIF 2.1.0 with %d result(s), step summary written" % len(results))
PY
unset GITHUB_STEP_SUMMARY GITHUB_OUTPUT

# The pre-commit hook (gatefix on PATH), tried against this checkout as a user's repo would.
if python3 -m venv "$work/pc" && "$work/pc/bin/pip" install -q pre-commit; then
  checkout=$PWD
  cd "$work/project"
  git init -q . && git add requirements.txt
  "$work/venv/bin/gatefix" audit .venv --write-baseline .gatefix-baseline.json --fail-on none \
    --format json > /dev/null
  PATH=$work/venv/bin:$PATH "$work/pc/bin/pre-commit" try-repo "$checkout" gatefix-audit-system \
    --all-files
  # A finding outside the baseline fails the hook: an empty baseline accepts nothing (the
  # audit of a folder whose one Python file has no gate writes one).
  mkdir "$work/empty"
  echo 'answer = 42' > "$work/empty/plain.py"
  "$work/venv/bin/gatefix" audit "$work/empty" --write-baseline .gatefix-baseline.json \
    --fail-on none --format json > /dev/null
  if PATH=$work/venv/bin:$PATH "$work/pc/bin/pre-commit" try-repo "$checkout" \
      gatefix-audit-system --all-files > "$work/precommit-fail.out" 2>&1; then
    echo "pre-commit check: the hook passed with an empty baseline" >&2
    cat "$work/precommit-fail.out" >&2
    exit 1
  fi
  # Failed on findings (exit 1), not on an error (exit 2).
  grep -q -- "- exit code: 1" "$work/precommit-fail.out" || { cat "$work/precommit-fail.out" >&2; exit 1; }
  cd "$checkout"
  echo "pre-commit check: try-repo passes with the baseline and fails without it"
else
  echo "pre-commit check: NOT RUN: pre-commit could not be installed from the package index" >&2
  exit 1
fi
