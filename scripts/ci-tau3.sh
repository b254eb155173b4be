#!/usr/bin/env bash
# τ³-bench (tau2-bench 1.0.1) in CI, from its source archive (never part of this repository):
#
#   1. extract the archive into a cache folder outside the repository, after checking its sha256;
#   2. `python -m runtime.envs setup tau3 --source <it>` (the venv is kept when source, extras
#      and interpreter are unchanged, so a second run on the same machine is quick);
#   3. every τ³ test, the slow ones included, with TAU3_SOURCE set and EVR_REQUIRE_TAU3=1: a skip
#      is a failure, and the run's summary must show none.
#
#   scripts/ci-tau3.sh [ARCHIVE]
#   scripts/ci-tau3.sh --prepare [ARCHIVE]   steps 1-2 only; prints the source folder (the venv's
#                                            record is under $EVR_TAU3_CACHE/envs)
#
# ARCHIVE (or TAU3_ARCHIVE) defaults to ../shared/vendor/tau2-bench-a2c0247.tar.gz beside the
# checkout. Settings: PY (default .venv/bin/python), TAU3_SHA256 (the archive's published
# sha256), TAU3_BASE_PYTHON (a Python 3.12 for the venv; default: found on PATH, pyenv or uv),
# EVR_TAU3_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/exec-validation-runtime/ci-tau3),
# TAU3_MARK (default: all; `not slow` runs the default suite's sample only).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=all
if [ "${1:-}" = --prepare ]; then MODE=prepare; shift; exec 3>&1 1>&2; fi
PY=${PY:-.venv/bin/python}
ARCHIVE=${1:-${TAU3_ARCHIVE:-../shared/vendor/tau2-bench-a2c0247.tar.gz}}
SHA256=${TAU3_SHA256:-e8300e38d1d8988e48bdbdef30aff67eca7e581c156c4311e9bf4e5acfb93e25}
CACHE=${EVR_TAU3_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exec-validation-runtime/ci-tau3}
TESTS=(tests/test_tau3.py tests/test_tau3_task_sets.py tests/test_tau3_fidelity.py tests/test_tau3_regrade.py tests/test_tau3_embeddings.py tests/test_tau3_nl_judge.py
       tests/test_tau3_export.py tests/test_sealed_tau3.py)
export LITELLM_LOCAL_MODEL_COST_MAP=True
# The tests on TEST_WORKERS pytest-xdist workers (0: in one process), as `make test` runs the
# default suite.
XDIST=(); [ "${TEST_WORKERS:-2}" != 0 ] && XDIST=(-n "${TEST_WORKERS:-2}")
T0=$(date +%s)

say()  { printf '[ci-tau3 %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[ci-tau3] FAILED: %s\n' "$*" >&2; exit 1; }
lap()  { LAP=$(date +%s); }
took() { say "ok: $* ($(( $(date +%s) - LAP )) s)"; }

[ -x "$PY" ] || fail "$PY is missing: run \`make install\` first"
[ -f "$ARCHIVE" ] || fail "no tau2-bench archive at $ARCHIVE (pass its path, or set TAU3_ARCHIVE)"
mkdir -p "$CACHE"

# ---- 1. the source -----------------------------------------------------------------------------
lap
GOT=$(sha256sum "$ARCHIVE" | cut -d' ' -f1)
[ "$GOT" = "$SHA256" ] || fail "$ARCHIVE has sha256 $GOT, expected $SHA256 (TAU3_SHA256)"
SRC_ROOT="$CACHE/src-${SHA256:0:16}"
if [ ! -f "$SRC_ROOT/tau2-bench/pyproject.toml" ]; then
    rm -rf "$SRC_ROOT" "$SRC_ROOT.tmp"
    mkdir -p "$SRC_ROOT.tmp"
    tar -xzf "$ARCHIVE" -C "$SRC_ROOT.tmp" || fail "cannot extract $ARCHIVE"
    [ -f "$SRC_ROOT.tmp/tau2-bench/pyproject.toml" ] || fail "$ARCHIVE holds no tau2-bench/ folder"
    mv "$SRC_ROOT.tmp" "$SRC_ROOT"
fi
SRC="$SRC_ROOT/tau2-bench"
took "source $SRC (sha256 checked)"

# ---- 2. the venv -------------------------------------------------------------------------------
lap
export EVR_ENVS_HOME="$CACHE/envs"
unset TAU3_PYTHON
BASE=()
[ -n "${TAU3_BASE_PYTHON:-}" ] && BASE=(--python "$TAU3_BASE_PYTHON")
"$PY" -m runtime.envs setup tau3 --source "$SRC" "${BASE[@]}" \
    || fail "τ³ setup failed (log: $EVR_ENVS_HOME/tau3/setup.log)"
took "setup"
if [ "$MODE" = prepare ]; then echo "$SRC" >&3; exit 0; fi

# ---- 3. the tests, none skipped ----------------------------------------------------------------
lap
LOG="$CACHE/tests.log"
MARK=(-m "${TAU3_MARK:-slow or not slow}")  # the slow suites too: pytest deselects them by default
EXISTING=()
for t in "${TESTS[@]}"; do [ -f "$t" ] && EXISTING+=("$t"); done
TAU3_SOURCE="$SRC" EVR_REQUIRE_TAU3=1 "$PY" -m pytest -q -rs -p no:cacheprovider "${XDIST[@]}" "${MARK[@]}" \
    "${EXISTING[@]}" 2>&1 | tee "$LOG" || fail "τ³ tests failed (log: $LOG)"
SUMMARY=$(tail -n 1 "$LOG")
case "$SUMMARY" in *skipped*|*error*) fail "τ³ tests did not all run: $SUMMARY" ;; esac
case "$SUMMARY" in *" passed"*) ;; *) fail "no τ³ test passed: $SUMMARY" ;; esac
took "τ³ tests: $SUMMARY"
say "done in $(( $(date +%s) - T0 )) s"
