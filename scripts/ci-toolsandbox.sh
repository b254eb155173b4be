#!/usr/bin/env bash
# ToolSandbox in CI, from its unmodified upstream source archive (never part of this repository):
#
#   1. extract the archive into a cache folder outside the repository, after checking its sha256;
#   2. `python -m runtime.envs setup toolsandbox --source <it>` (the venv is kept when source,
#      pins and interpreter are unchanged, so a second run on the same machine is quick);
#   3. every ToolSandbox test with TOOLSANDBOX_SOURCE set and EVR_REQUIRE_TOOLSANDBOX=1: a skip is
#      a failure, and the run's summary must show none;
#   4. the check of the check: a copy of the source whose scoring is broken on purpose (minefields
#      no longer zero the similarity) is set up in a venv of its own, and the agreement and
#      wrong-play tests must fail on it, naming the broken score.
#
#   scripts/ci-toolsandbox.sh [ARCHIVE]
#   scripts/ci-toolsandbox.sh --prepare [ARCHIVE]   steps 1-2 only; prints the source folder (the
#                                                   venv's record is under $EVR_TS_CACHE/envs)
#   scripts/ci-toolsandbox.sh --prepare-all [ARCHIVE]   steps 1-2 and step 4's copy and venv, no
#                                                   test (.ci/run does it while other stages run)
#
# ARCHIVE (or TOOLSANDBOX_ARCHIVE) defaults to ../shared/vendor/ToolSandbox-165848b.tar.gz beside
# the checkout. Settings: PY (default .venv/bin/python), TOOLSANDBOX_SHA256 (the archive's
# published sha256), TOOLSANDBOX_BASE_PYTHON (interpreter for the venv, default python3, 3.9-3.11),
# EVR_TS_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/exec-validation-runtime/ci-toolsandbox),
# EVR_TS_SABOTAGE=0 skips step 4. Fails loudly (non-zero, with the reason).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=all
case "${1:-}" in
    --prepare) MODE=prepare; shift; exec 3>&1 1>&2 ;;
    --prepare-all) MODE=prepare-all; shift ;;
esac
PY=${PY:-.venv/bin/python}
ARCHIVE=${1:-${TOOLSANDBOX_ARCHIVE:-../shared/vendor/ToolSandbox-165848b.tar.gz}}
SHA256=${TOOLSANDBOX_SHA256:-c3146e6958f2d49c202a7196894d683ed20ac965283790178fbb565c9208f8cb}
BASE_PYTHON=${TOOLSANDBOX_BASE_PYTHON:-python3}
CACHE=${EVR_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exec-validation-runtime/ci-toolsandbox}
TESTS=(tests/test_toolsandbox.py tests/test_toolsandbox_agreement.py tests/test_provider_toolsandbox.py
       tests/test_toolsandbox_cluster.py tests/test_toolsandbox_budget.py tests/test_toolsandbox_requests.py
       tests/test_sealed_toolsandbox.py)
export LITELLM_LOCAL_MODEL_COST_MAP=True
# The tests on TEST_WORKERS pytest-xdist workers (0: in one process), as `make test` runs the
# default suite.
XDIST=(); [ "${TEST_WORKERS:-2}" != 0 ] && XDIST=(-n "${TEST_WORKERS:-2}")
T0=$(date +%s)

say()  { printf '[ci-toolsandbox %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[ci-toolsandbox] FAILED: %s\n' "$*" >&2; exit 1; }
lap()  { LAP=$(date +%s); }
took() { say "ok: $* ($(( $(date +%s) - LAP )) s)"; }

[ -x "$PY" ] || fail "$PY is missing: run \`make install\` first"
[ -f "$ARCHIVE" ] || fail "no ToolSandbox archive at $ARCHIVE (pass its path, or set TOOLSANDBOX_ARCHIVE)"
mkdir -p "$CACHE"

# ---- 1. the source -----------------------------------------------------------------------------
lap
GOT=$(sha256sum "$ARCHIVE" | cut -d' ' -f1)
[ "$GOT" = "$SHA256" ] || fail "$ARCHIVE has sha256 $GOT, expected $SHA256 (TOOLSANDBOX_SHA256)"
SRC_ROOT="$CACHE/src-${SHA256:0:16}"
if [ ! -f "$SRC_ROOT/ToolSandbox/pyproject.toml" ]; then
    rm -rf "$SRC_ROOT" "$SRC_ROOT.tmp"
    mkdir -p "$SRC_ROOT.tmp"
    tar -xzf "$ARCHIVE" -C "$SRC_ROOT.tmp" || fail "cannot extract $ARCHIVE"
    [ -f "$SRC_ROOT.tmp/ToolSandbox/pyproject.toml" ] || fail "$ARCHIVE holds no ToolSandbox/ folder"
    mv "$SRC_ROOT.tmp" "$SRC_ROOT"
fi
SRC="$SRC_ROOT/ToolSandbox"
took "source $SRC (sha256 checked)"

# ---- 2. the venv -------------------------------------------------------------------------------
lap
export EVR_ENVS_HOME="$CACHE/envs"
unset TOOLSANDBOX_PYTHON
"$PY" -m runtime.envs setup toolsandbox --source "$SRC" --python "$BASE_PYTHON" \
    || fail "ToolSandbox setup failed (log: $EVR_ENVS_HOME/toolsandbox/setup.log)"
took "setup"
if [ "$MODE" = prepare ]; then echo "$SRC" >&3; exit 0; fi

# ---- 4's set-up: a copy whose scoring is broken on purpose, in a venv of its own ---------------
BROKEN_ROOT="$CACHE/broken-${SHA256:0:16}"
BROKEN="$BROKEN_ROOT/ToolSandbox"
prepare_broken() {
    local eval_py="$BROKEN/tool_sandbox/common/evaluation.py"
    rm -rf "$BROKEN_ROOT" && mkdir -p "$BROKEN_ROOT" && cp -a "$SRC" "$BROKEN"
    sed -i 's/int(self\.minefield_similarity == 0) \* self\.milestone_similarity/self.milestone_similarity/' "$eval_py"
    grep -q 'int(self.minefield_similarity == 0)' "$eval_py" && fail "the sabotage patch did not apply to $eval_py"
    EVR_ENVS_HOME="$CACHE/envs-broken" "$PY" -m runtime.envs setup toolsandbox --source "$BROKEN" --python "$BASE_PYTHON" \
        || fail "setup of the sabotaged copy failed (log: $CACHE/envs-broken/toolsandbox/setup.log)"
    touch "$BROKEN_ROOT/.prepared"
}
if [ "$MODE" = prepare-all ]; then
    if [ "${EVR_TS_SABOTAGE:-1}" != 0 ]; then lap; prepare_broken; took "sabotaged copy's set-up"; fi
    say "prepared in $(( $(date +%s) - T0 )) s"
    exit 0
fi

# ---- 3. the tests, none skipped ----------------------------------------------------------------
lap
LOG="$CACHE/tests.log"
TOOLSANDBOX_SOURCE="$SRC" EVR_REQUIRE_TOOLSANDBOX=1 "$PY" -m pytest -q -rs -p no:cacheprovider "${XDIST[@]}" \
    "${TESTS[@]}" 2>&1 | tee "$LOG" || fail "ToolSandbox tests failed (log: $LOG)"
SUMMARY=$(tail -n 1 "$LOG")
case "$SUMMARY" in *skipped*|*deselected*|*error*) fail "ToolSandbox tests did not all run: $SUMMARY" ;; esac
case "$SUMMARY" in *" passed"*) ;; *) fail "no ToolSandbox test passed: $SUMMARY" ;; esac
took "ToolSandbox tests: $SUMMARY"

# ---- 4. broken on purpose, the tests must notice -----------------------------------------------
if [ "${EVR_TS_SABOTAGE:-1}" != 0 ]; then
    lap
    # Made by --prepare-all in this CI run (or now): the copy is rebuilt unless that left it ready.
    [ -f "$BROKEN_ROOT/.prepared" ] || prepare_broken
    rm -f "$BROKEN_ROOT/.prepared"
    export EVR_ENVS_HOME="$CACHE/envs-broken"
    BLOG="$CACHE/tests-broken.log"
    set +e
    TOOLSANDBOX_SOURCE="$BROKEN" EVR_REQUIRE_TOOLSANDBOX=1 "$PY" -m pytest -q -rf -p no:cacheprovider "${XDIST[@]}" \
        tests/test_toolsandbox_agreement.py \
        "tests/test_toolsandbox.py::test_wrong_sequences_score_lower_and_invented_information_scores_zero" \
        >"$BLOG" 2>&1
    CODE=$?
    set -e
    [ "$CODE" = 1 ] || fail "with scoring broken on purpose the tests exited $CODE, expected 1 (log: $BLOG)"
    for test in test_agreement_is_checked_away_from_one test_wrong_sequences_score_lower_and_invented_information_scores_zero; do
        grep -q "^FAILED .*::$test" "$BLOG" || fail "with scoring broken on purpose $test did not fail (log: $BLOG)"
    done
    took "scoring broken on purpose is caught: $(tail -n 1 "$BLOG")"
fi
say "done in $(( $(date +%s) - T0 )) s"
