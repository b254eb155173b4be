#!/usr/bin/env bash
# The container proof, run by .ci/run (as root, CI=true) and by hand:
#
#   1. a Docker engine: install docker.io if missing, start dockerd if nothing answers
#      (overlay2, else vfs);
#   2. a local base image (no registry here): debootstrap a minimal Debian with python3, docker
#      import it, tag it evr-base:local (where --sandbox docker finds it with no variable set);
#      the rootfs tarball is cached, so reruns skip debootstrap;
#   3. the images from the Dockerfile (env-tau2, runtime) through envs.docker: reused
#      when their input hash is unchanged, pip inside the build trusting the host's CA bundle;
#   4. the engine tests of tests/test_docker_launcher.py;
#   5. τ²-bench end to end, all three modes, scripted model: in process vs. in a container, one
#      container serving every episode, and in containers under the Ray backend (2 workers); the
#      records' rewards must be equal (a sabotaged run too, so that 0.0 is compared as well as 1.0);
#   6. a container killed mid-run: that episode is recorded as errored, the run goes on, nothing
#      is left behind; Ctrl-C (SIGINT) mid-run leaves nothing behind either;
#   7. the runtime image runs a scripted episode with no network;
#   8. ToolSandbox: its env image from its source archive, gold and wrong plays scoring the same
#      in its venv and in a container (scripts/docker-ci-toolsandbox.sh; EVR_DOCKER_TOOLSANDBOX=0
#      leaves it out, saying so).
#
#   scripts/docker-ci.sh            every step
#   scripts/docker-ci.sh --base     steps 1-2 only (needs no .venv: .ci/run runs it while the venv
#                                   is built)
#   scripts/docker-ci.sh --prepare  steps 1-3 and step 8's image, no test (.ci/run runs it while
#                                   the test suites run; the full run then reuses the images)
#
# Fails loudly (non-zero, with the reason) when any step cannot be done. Leaves dockerd running
# and removes every container it made. Settings: EVR_CACHE (default /var/cache/evr-docker),
# EVR_DOCKER_BASE_IMAGE (skip step 2 and use this base), WORK (default runs/docker-ci).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=all
case "${1:-}" in
    --base) MODE=base; shift ;;
    --prepare) MODE=prepare; shift ;;
esac
PY=${PY:-.venv/bin/python}
CACHE=${EVR_CACHE:-/var/cache/evr-docker}
WORK=${WORK:-runs/docker-ci}
export LITELLM_LOCAL_MODEL_COST_MAP=True
T0=$(date +%s)
CHECKS=0

say()  { printf '[docker-ci %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[docker-ci] FAILED: %s\n' "$*" >&2; exit 1; }
passed() { CHECKS=$((CHECKS + 1)); say "ok: $*"; }

mkdir -p "$CACHE" "$WORK"

# ---- 1. the engine -----------------------------------------------------------------------------
if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "no dockerd and not root: cannot install docker.io"
    say "installing docker.io and debootstrap (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -q docker.io debootstrap >"$CACHE/apt.log" 2>&1 \
        || fail "apt-get install docker.io failed (see $CACHE/apt.log)"
fi

engine_up() { docker info >/dev/null 2>&1; }
alive() {  # alive PID: running and not a zombie
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat")" != Z ]
}
dockerd_running() {
    local pid
    for pid in $(pgrep -x dockerd || true); do alive "$pid" && return 0; done
    return 1
}
clear_stale_state() {
    # A dockerd/containerd killed outright (as at the end of a session) leaves pid files behind;
    # when the pid is a zombie or gone, the next dockerd waits forever for "its" containerd.
    local pidfile pid
    for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -f "$pidfile" ] && ! alive "$pid"; then rm -f "$pidfile"; fi
    done
}
if ! engine_up; then
    [ "$(id -u)" = 0 ] || fail "no Docker engine answers and not root: cannot start dockerd"
    # overlay2 (twice: the second time with dockerd's runtime state cleared), vfs as a last resort
    # (slow: every layer is a full copy, and images built on overlay2 are not visible to it).
    for attempt in overlay2 overlay2-clean vfs; do
        driver=${attempt%-clean}
        if [ "$attempt" = overlay2-clean ] && ! dockerd_running; then rm -rf /var/run/docker; fi
        [ "$driver" = vfs ] && say "WARNING: falling back to the vfs storage driver (slow; images rebuilt)"
        say "starting dockerd (storage driver $driver)"
        clear_stale_state
        nohup dockerd --storage-driver="$driver" >"$CACHE/dockerd-$attempt.log" 2>&1 &
        DOCKERD_PID=$!
        for _ in $(seq 1 60); do
            engine_up && break
            kill -0 "$DOCKERD_PID" 2>/dev/null || break
            sleep 1
        done
        engine_up && break
        kill "$DOCKERD_PID" 2>/dev/null || true
        wait "$DOCKERD_PID" 2>/dev/null || true
        say "dockerd with $driver did not come up: $(tail -n 1 "$CACHE/dockerd-$attempt.log")"
    done
fi
engine_up || fail "no Docker engine: dockerd did not start (logs: $CACHE/dockerd-*.log)"
say "engine: $(docker info --format 'Docker {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}}')"

# ---- 2. the base image -------------------------------------------------------------------------
. /etc/os-release
CODENAME=${VERSION_CODENAME:-bookworm}
BASE=${EVR_DOCKER_BASE_IMAGE:-evr-base:$CODENAME}
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    [ -z "${EVR_DOCKER_BASE_IMAGE:-}" ] || fail "EVR_DOCKER_BASE_IMAGE=$BASE is not on this engine"
    TARBALL="$CACHE/base-$CODENAME.tar"
    if [ ! -s "$TARBALL" ]; then
        command -v debootstrap >/dev/null 2>&1 || apt-get install -y -q debootstrap >/dev/null \
            || fail "debootstrap is missing and cannot be installed"
        # The Debian mirror this machine's apt already uses (deb822 or one-line format).
        MIRROR=$(awk -v s="$CODENAME" '
            /^URIs:/ {u=$2} /^Suites:/ {for (i=2;i<=NF;i++) if ($i==s) {print u; exit}}
            /^deb / && $3==s {print $2; exit}' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
            | head -n 1)
        MIRROR=${MIRROR:-http://deb.debian.org/debian}
        say "debootstrap $CODENAME from $MIRROR (about a minute; cached in $TARBALL)"
        ROOTFS=$(mktemp -d /tmp/evr-rootfs.XXXXXX)
        debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
            "$CODENAME" "$ROOTFS" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || fail "debootstrap failed (see $CACHE/debootstrap.log)"
        rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
        tar -C "$ROOTFS" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
        rm -rf "$ROOTFS"
    fi
    say "importing $TARBALL as $BASE"
    docker import "$TARBALL" "$BASE" >/dev/null || fail "docker import of $TARBALL failed"
fi
docker run --rm --network none "$BASE" python3 -c 'import sys, venv; assert sys.version_info >= (3, 11)' \
    || fail "the base image $BASE has no python3 >= 3.11 with venv"
if [ -z "${EVR_DOCKER_BASE_IMAGE:-}" ]; then
    # The well-known tag: the launcher uses it when no registry base image is on the engine and
    # EVR_DOCKER_BASE_IMAGE is unset, so `--sandbox docker` works after this script by itself.
    docker tag "$BASE" evr-base:local || fail "cannot tag $BASE as evr-base:local"
    passed "base image $BASE, tagged evr-base:local"
else
    export EVR_DOCKER_BASE_IMAGE
    passed "base image $BASE (from EVR_DOCKER_BASE_IMAGE)"
fi

[ "$MODE" = base ] && { say "base ready in $(( $(date +%s) - T0 )) s"; exit 0; }
[ -x "$PY" ] || fail "$PY is missing: run \`make install\` first"
"$PY" -c "import docker" 2>/dev/null || "$PY" -m pip install --quiet "docker>=7,<8" \
    || fail "cannot install the Docker SDK for Python"

# Containers reach the package registry through the host's TLS setup: a copy of its CA bundle
# goes into the build context (envs.docker does the copying).
for ca in "${EVR_DOCKER_CA_BUNDLE:-}" "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    if [ -n "$ca" ] && [ -f "$ca" ]; then export EVR_DOCKER_CA_BUNDLE=$ca; break; fi
done

# ---- 3. images from the Dockerfile -------------------------------------------------------------
for target in env-tau2 runtime; do
    say "image $target (built if its inputs changed, else reused)"
    "$PY" -m envs.docker build --target "$target" --alias >"$WORK/build-$target.json" \
        || fail "building the $target image failed (build logs: ~/.cache/exec-validation-runtime/envs/docker/)"
    passed "image $(cat "$WORK/build-$target.json")"
done
RUNTIME_TAG=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag"])' "$WORK/build-runtime.json")
TAU2_TAG=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["tag"])' "$WORK/build-env-tau2.json")
# Older tags of these two images (inputs that changed since) only take disk: drop them.
for old in $(docker image ls --format '{{.Repository}}:{{.Tag}}' evr-env-tau2; docker image ls --format '{{.Repository}}:{{.Tag}}' evr-runtime); do
    case "$old" in "$TAU2_TAG"|"$RUNTIME_TAG"|*:latest|*:"<none>") ;; *) docker image rm "$old" >/dev/null 2>&1 || true ;; esac
done
docker image prune -f >/dev/null 2>&1 || true

if [ "$MODE" = prepare ]; then
    if [ "${EVR_DOCKER_TOOLSANDBOX:-1}" != 0 ]; then
        PY="$PY" WORK="$WORK/toolsandbox" bash scripts/docker-ci-toolsandbox.sh --prepare \
            || fail "the env-toolsandbox image could not be prepared"
    fi
    say "images ready in $(( $(date +%s) - T0 )) s"
    exit 0
fi

# ---- 4. engine tests ---------------------------------------------------------------------------
say "engine tests (tests/test_docker_launcher.py)"
"$PY" -m pytest -q -p no:cacheprovider tests/test_docker_launcher.py -rs -W ignore \
    || fail "engine tests failed"
passed "engine tests"

# ---- 5. same rewards in process and in a container ---------------------------------------------
run() {  # run <out> [run_scripted options --] [validate options]
    local out=$1; shift
    rm -rf "$out"
    "$PY" -m testkit.run_scripted "$@" --out "$out" --no-cache >"$out.log" 2>&1
}
TASKS=1,2,3
say "τ²-bench airline tasks $TASKS, all three modes: in process"
run "$WORK/inproc" -- --env tau2 --domain airline --mode all --task-ids $TASKS --model scripted/roles \
    || fail "in-process run failed (see $WORK/inproc.log)"
say "the same in a container (one container for every episode)"
EVR_DOCKER_SERVERS=1 run "$WORK/docker" -- --env tau2 --domain airline --mode all --task-ids $TASKS \
    --model scripted/roles --sandbox docker || fail "container run failed (see $WORK/docker.log)"
say "the same in containers under the Ray backend (a local instance, 2 workers, a container each)"
EVR_DOCKER_SERVERS=1 run "$WORK/docker-ray" -- --env tau2 --domain airline --mode all --task-ids $TASKS \
    --model scripted/roles --sandbox docker --backend ray --ray-workers 2 \
    || fail "container run under Ray failed (see $WORK/docker-ray.log)"
say "sabotaged replays (rewards 0.0 and 1.0): in process, then in a container"
run "$WORK/inproc-sabotage" --sabotage -- --env tau2 --domain airline --mode direct --task-ids 1,2 \
    --model scripted/roles || fail "sabotaged in-process run failed"
run "$WORK/docker-sabotage" --sabotage -- --env tau2 --domain airline --mode direct --task-ids 1,2 \
    --model scripted/roles --sandbox docker || fail "sabotaged container run failed"

"$PY" - "$WORK" <<'PY' || fail "rewards in a container differ from in process"
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])

def records(name):
    rows = [json.loads(l) for l in (work / name / "records.jsonl").read_text().splitlines() if l.strip()]
    return {(r["key"]["task_id"], r["key"]["mode"], r["key"]["trial"]):
            (r["status"], r["score"], r["breakdown"], r["termination"]) for r in rows}

# The gold replay scores 1.0 everywhere; the sabotaged one 0.0 where the dropped write matters
# (airline task 2) and 1.0 where the task has no state-changing write (task 1).
for a, b, want in (("inproc", "docker", {1.0}), ("inproc", "docker-ray", {1.0}),
                   ("inproc-sabotage", "docker-sabotage", {0.0, 1.0})):
    left, right = records(a), records(b)
    assert left and left.keys() == right.keys(), f"{a} vs {b}: different episodes"
    for key in sorted(left):
        assert left[key] == right[key], f"{key}: in process {left[key]} != container {right[key]}"
        assert left[key][0] == "ok", f"{a} {key}: {left[key]}"
    rewards = {v[1] for v in left.values()}
    assert rewards == want, f"{a}: rewards {rewards}, expected {want}"
    print(f"{a} == {b}: {len(left)} episodes, rewards {sorted(rewards)}")
logs = sorted((work / "docker" / "containers").glob("*.log"))
assert len(logs) == 1, f"expected one container to serve every episode, got {len(logs)}"
print(f"one container served {len(records('docker'))} episodes: {logs[0].name}")
# Under Ray each worker has its own container; the driver's own (it listed the tasks) is the third.
ray_logs = sorted((work / "docker-ray" / "containers").glob("*.log"))
assert 2 <= len(ray_logs) <= 3, f"expected a container per Ray worker and the driver's, got {len(ray_logs)}"
print(f"under Ray, {len(ray_logs)} containers (2 workers' and the driver's) for {len(records('docker-ray'))} episodes")
# A container closed at the end of a run ends by itself when its stdin closes: exit 0, not 137.
for log in sorted(work.glob("docker*/containers/*.log")):
    header = json.loads(log.read_text().splitlines()[0])
    assert (header["status"], header["exit_code"]) == ("exited", 0), f"{log}: {header}"
print("every container of those runs exited 0 when closed")
PY
passed "rewards equal in process, in a container and in containers under Ray (1.0 and 0.0); containers exit 0 when closed"

# ---- 6. a container killed mid-run; Ctrl-C mid-run ---------------------------------------------
say "killing the container mid-run"
"$PY" - "$WORK" <<'PY' || fail "the kill test failed"
import json, os, pathlib, signal, subprocess, sys, time
import docker

work = pathlib.Path(sys.argv[1])
client = docker.from_env()

def ours(pid=None):
    found = client.containers.list(all=True, filters={"label": "evr.managed"})
    return [c for c in found if pid is None or c.labels.get("evr.owner", "").endswith(f":{pid}")]

def start(out, *extra):
    out = work / out
    subprocess.run(["rm", "-rf", str(out)], check=True)
    log = open(f"{out}.log", "w")
    argv = [sys.executable, "-m", "testkit.run_scripted", "--latency", "0.7", "--",
            "--env", "tau2", "--domain", "airline", "--mode", "direct", "--task-ids", "1,2,3,4",
            "--concurrency", "1", "--model", "scripted/roles", "--sandbox", "docker",
            "--out", str(out), "--no-cache", *extra]
    return out, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

def wait_for(what, check, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")

def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []

# Kill: after the first episode is recorded, the second is under way in the same container.
out, proc = start("kill")
wait_for("the first record", lambda: len(lines(out / "records.jsonl")) >= 1)
(victim,) = wait_for("a running container", lambda: [c for c in ours(proc.pid) if c.status == "running"])
time.sleep(1.0)
victim.kill()
print(f"killed {victim.name} with {len(lines(out / 'records.jsonl'))} record(s) written")
assert proc.wait(timeout=300) == 0, f"the run exited {proc.returncode} (see {out}.log)"
records = lines(out / "records.jsonl")
errors = [r for r in records if r["status"] == "error"]
ok = [r for r in records if r["status"] == "ok"]
assert len(records) == 4, f"{len(records)} records, expected 4"
assert len(errors) == 1, f"expected exactly one errored episode, got {[r['error'] for r in errors]}"
err = errors[0]["error"]
assert err["type"] == "ServerCrashed" and "exited with code 137" in err["message"], err
assert all(r["score"] == 1.0 for r in ok), [r["score"] for r in ok]
log = json.loads((out / "containers" / f"{victim.name}.log").read_text().splitlines()[0])
assert log["exit_code"] == 137, log
assert ours() == [], f"containers left behind: {[c.name for c in ours()]}"
print(f"errored: task {errors[0]['key']['task_id']} at {err['stage']}: {err['message'][:120]}")
print(f"the run went on: {len(ok)} other episodes scored 1.0; no container left")

# Ctrl-C: SIGINT while an episode is in a container; exit 130, nothing left behind.
out, proc = start("sigint")
wait_for("a running container", lambda: [c for c in ours(proc.pid) if c.status == "running"])
time.sleep(1.5)
t0 = time.monotonic()
proc.send_signal(signal.SIGINT)
code = proc.wait(timeout=120)
assert code == 130, f"Ctrl-C exit code {code} (see {out}.log)"
assert ours() == [], f"containers left behind after Ctrl-C: {[c.name for c in ours()]}"
print(f"Ctrl-C: exit 130 after {time.monotonic() - t0:.1f} s, no container left")
PY
passed "killed container → errored episode, run continued, nothing left; Ctrl-C leaves nothing"

# ---- 7. the runtime image ----------------------------------------------------------------------
say "runtime image $RUNTIME_TAG: one scripted τ² episode, no network"
docker run --rm --network none --entrypoint python "$RUNTIME_TAG" -m testkit.run_scripted -- \
    --env tau2 --domain airline --mode direct --task-ids 1 --model scripted/roles --out /tmp/run \
    --no-cache >"$WORK/runtime-image.log" 2>&1 || fail "the runtime image did not run (see $WORK/runtime-image.log)"
grep -q "1.000" "$WORK/runtime-image.log" || fail "the runtime image's episode did not score 1.0 ($WORK/runtime-image.log)"
passed "runtime image"

# ---- 8. ToolSandbox in a container (its own script, scripts/docker-ci-toolsandbox.sh) ----------
if [ "${EVR_DOCKER_TOOLSANDBOX:-1}" = 0 ]; then
    say "NOT CHECKED: ToolSandbox in a container (EVR_DOCKER_TOOLSANDBOX=0)"
else
    say "ToolSandbox: env-toolsandbox image; gold and wrong plays in its venv and in a container"
    PY="$PY" WORK="$WORK/toolsandbox" bash scripts/docker-ci-toolsandbox.sh \
        || fail "the ToolSandbox container check failed"
    passed "ToolSandbox scores equal in its venv and in a container"
fi
# ---- end of 8 ------------------------------------------------------------------------------------

LEFT=$(docker ps -aq --filter label=evr.managed)
[ -z "$LEFT" ] || fail "containers left behind: $LEFT"
say "done in $(( $(date +%s) - T0 )) s"
echo "docker-ci: $CHECKS passed, 0 failed"
