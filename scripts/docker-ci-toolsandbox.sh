#!/usr/bin/env bash
# The container proof for ToolSandbox, called by scripts/docker-ci.sh (engine up, base image in
# EVR_DOCKER_BASE_IMAGE) or by hand after it:
#
#   1. ToolSandbox's source and venv from its archive (scripts/ci-toolsandbox.sh --prepare);
#   2. the env-toolsandbox image from that source, through the launcher's CLI (reused when its
#      inputs are unchanged);
#   3. scripted gold and wrong plays (testkit.toolsandbox_gold) on scenarios from every category
#      the scripts cover — single tool, multiple tools, multiple user turns, insufficient
#      information, scrambled names, distraction tools — in the venv and in a container; the
#      similarity, milestone and minefield scores and turn counts must be equal, the gold ones 1.0,
#      the wrong ones partial or 0 with a minefield set off.
#
# `--prepare` does steps 1-2 only (.ci/run builds the image while the test suites run).
#
# Settings: PY (default .venv/bin/python), WORK (default runs/docker-ci/toolsandbox), and those
# of scripts/ci-toolsandbox.sh (the archive, its cache). Removes only the containers it made.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=all
if [ "${1:-}" = --prepare ]; then MODE=prepare; shift; fi
PY=${PY:-.venv/bin/python}
WORK=${WORK:-runs/docker-ci/toolsandbox}
export LITELLM_LOCAL_MODEL_COST_MAP=True
T0=$(date +%s)
say()  { printf '[docker-ci toolsandbox %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[docker-ci toolsandbox] FAILED: %s\n' "$*" >&2; exit 1; }

docker info >/dev/null 2>&1 || fail "no Docker engine answers (scripts/docker-ci.sh starts one)"
# Run by hand after scripts/docker-ci.sh: the base image and the CA bundle it would have named.
if [ -z "${EVR_DOCKER_BASE_IMAGE:-}" ]; then
    . /etc/os-release
    LOCAL_BASE="evr-base:${VERSION_CODENAME:-bookworm}"
    if docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then export EVR_DOCKER_BASE_IMAGE=$LOCAL_BASE
    else say "EVR_DOCKER_BASE_IMAGE is not set: the launcher's default base image is used"; fi
fi
for ca in "${EVR_DOCKER_CA_BUNDLE:-}" "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    if [ -n "$ca" ] && [ -f "$ca" ]; then export EVR_DOCKER_CA_BUNDLE=$ca; break; fi
done
mkdir -p "$WORK"

# ---- 1. source and venv ------------------------------------------------------------------------
CACHE=${EVR_TS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exec-validation-runtime/ci-toolsandbox}
SRC=$(EVR_TS_CACHE="$CACHE" PY="$PY" bash scripts/ci-toolsandbox.sh --prepare) \
    || fail "ToolSandbox's source or venv could not be prepared"
export TOOLSANDBOX_SOURCE="$SRC" EVR_ENVS_HOME="$CACHE/envs"
unset TOOLSANDBOX_PYTHON
say "ToolSandbox source $SRC"

# ---- 2. the image ------------------------------------------------------------------------------
say "image env-toolsandbox (built if its inputs changed, else reused)"
"$PY" -m envs.docker build --target env-toolsandbox --alias >"$WORK/build.json" \
    || fail "building the env-toolsandbox image failed (build logs: ~/.cache/exec-validation-runtime/envs/docker/)"
say "ok: image $(cat "$WORK/build.json")"
[ "$MODE" = prepare ] && exit 0

# ---- 3. the same scores in the venv and in a container -----------------------------------------
GOLD=cellular_off,wifi_off_10_distraction_tools,send_message_with_contact_content_cellular_off
GOLD+=,remove_contact_by_phone_multiple_user_turn,find_days_till_holiday_insufficient_information
GOLD+=,send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled
GOLD+=,update_contact_relationship_with_relationship_multiple_user_turn_3_distraction_tools_tool_name_scrambled
WRONG=cellular_off,cellular_off_3_distraction_tools_tool_name_scrambled,remove_contact_by_phone
WRONG+=,send_message_with_contact_content_cellular_off,find_days_till_holiday_insufficient_information
WRONG+=,send_message_with_contact_content_cellular_off_insufficient_information
play() {  # play <out> [--wrong] <tasks> [validate options]
    local out=$WORK/$1; shift
    local wrong=(); if [ "$1" = --wrong ]; then wrong=(--wrong); shift; fi
    local tasks=$1; shift
    rm -rf "$out"
    "$PY" -m testkit.toolsandbox_gold "${wrong[@]}" --mode direct --task-ids "$tasks" --out "$out" \
        --no-cache "$@" >"$out.log" 2>&1 || fail "the play $(basename "$out") failed (see $out.log)"
}
say "gold and wrong plays in ToolSandbox's venv"
play venv "$GOLD"
play venv-wrong --wrong "$WRONG"
say "the same in a container (one container for every episode)"
EVR_DOCKER_SERVERS=1 play docker "$GOLD" --sandbox docker
EVR_DOCKER_SERVERS=1 play docker-wrong --wrong "$WRONG" --sandbox docker

"$PY" - "$WORK" <<'PY' || fail "ToolSandbox scores in a container differ from those in its venv"
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])

def records(name):
    rows = [json.loads(l) for l in (work / name / "records.jsonl").read_text().splitlines() if l.strip()]
    return {r["key"]["task_id"]: r for r in rows}

def scores(r):
    b = r["breakdown"] or {}
    return (r["status"], r["score"], b.get("milestone_similarity"), b.get("minefield_similarity"),
            b.get("turn_count"), r["termination"])

covered = set()
for venv, docker in (("venv", "docker"), ("venv-wrong", "docker-wrong")):
    left, right = records(venv), records(docker)
    assert left and left.keys() == right.keys(), f"{venv} vs {docker}: different episodes"
    for task in sorted(left):
        assert scores(left[task]) == scores(right[task]), \
            f"{task}: venv {scores(left[task])} != container {scores(right[task])}"
        assert left[task]["status"] == "ok", f"{venv} {task}: {left[task]['error']}"
        covered |= set(left[task]["score_info"]["categories"])
    print(f"{venv} == {docker}: {len(left)} episodes, similarity {sorted({r['score'] for r in left.values()})}")

gold, wrong = records("venv"), records("venv-wrong")
assert {r["score"] for r in gold.values()} == {1.0}, {t: r["score"] for t, r in gold.items()}
partial = [t for t, r in wrong.items() if 0.0 < r["score"] < 1.0]
mined = [t for t, r in wrong.items() if r["score"] == 0.0 and r["breakdown"]["minefield_similarity"] > 0]
assert len(partial) >= 2 and len(mined) >= 2, (partial, mined)
want = {"SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN", "INSUFFICIENT_INFORMATION",
        "TOOL_NAME_SCRAMBLED", "THREE_DISTRACTION_TOOLS", "TEN_DISTRACTION_TOOLS"}
assert want <= covered, f"categories not covered: {sorted(want - covered)}"
logs = sorted((work / "docker" / "containers").glob("*.log"))
assert len(logs) == 1, f"expected one container to serve every episode, got {len(logs)}"
print(f"partial scores on {partial}; minefields set off on {mined}; categories {sorted(covered)}")
PY
say "ok: ToolSandbox scores equal in its venv and in a container (gold 1.0, wrong partial and 0)"

LEFT=$(docker ps -aq --filter label=evr.managed --filter label=evr.env=toolsandbox 2>/dev/null || true)
[ -z "$LEFT" ] || fail "containers left behind: $LEFT"
say "done in $(( $(date +%s) - T0 )) s"
