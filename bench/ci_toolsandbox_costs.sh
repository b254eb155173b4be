#!/usr/bin/env bash
# What the ToolSandbox parts of .ci/run cost, cold and warm, written to bench/CI_TOOLSANDBOX.md:
#
#   cold: an empty cache folder and an empty pip cache (every pin downloaded, both venvs built);
#   warm: the same command again (venvs kept by their fingerprint, source already extracted);
#   with a Docker engine (and EVR_DOCKER_BASE_IMAGE): the container check with its image removed
#   first (cold), then again (warm).
#
#   bash bench/ci_toolsandbox_costs.sh [PART ...]     PART: cold warm docker-cold docker-warm
#                                                     (default: all four, in that order)
#
# "warm" reuses the cache folder EVR_TS_CACHE (default: a fresh scratch folder, filled by "cold"
# when it runs first). The per-step seconds are the scripts' own "ok: ... (N s)" lines. All four
# parts take 30-60 minutes on 2 cores. The archive: TOOLSANDBOX_ARCHIVE, as for the CI script.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
ARCHIVE=${TOOLSANDBOX_ARCHIVE:-../shared/vendor/ToolSandbox-165848b.tar.gz}
OUT=${OUT:-bench/CI_TOOLSANDBOX.md}
PARTS=("$@"); [ ${#PARTS[@]} -gt 0 ] || PARTS=(cold warm docker-cold docker-warm)
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/evr-ci-costs.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
export EVR_TS_CACHE=${EVR_TS_CACHE:-$SCRATCH/cache}

timed() {  # timed <label> <command...>: runs it, keeps its step lines and its wall time
    local label=$1; shift
    local log; log="$SCRATCH/$(printf '%s' "$label" | tr -c 'A-Za-z0-9' _).log"
    local t0; t0=$(date +%s)
    "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
    local wall=$(( $(date +%s) - t0 ))
    {
        echo "### $label: ${wall} s"
        echo
        echo '```'
        grep -E '\] ok: |\] done in ' "$log" \
            | sed -e "s|$EVR_TS_CACHE|<cache>|g" -e "s|$SCRATCH|<scratch>|g" -e "s|$HOME|~|g"
        echo '```'
        echo
    } >>"$SCRATCH/results.md"
    echo "$label: $wall s" >&2
}

{
    echo "# ToolSandbox in CI: what each part costs"
    echo
    echo "Written by \`bash bench/ci_toolsandbox_costs.sh\` on $(date -u +%Y-%m-%d);"
    echo "$(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg), $(python3 --version)."
    echo "Cold: empty cache folder and empty pip cache (every pin downloaded). Warm: venvs kept."
    echo "Parts measured: ${PARTS[*]}."
    echo
} >"$SCRATCH/results.md"

export TOOLSANDBOX_ARCHIVE="$ARCHIVE"
for part in "${PARTS[@]}"; do
    case "$part" in
        cold) [ ! -e "$EVR_TS_CACHE" ] || { echo "cold needs an empty EVR_TS_CACHE" >&2; exit 2; }
              PIP_CACHE_DIR="$SCRATCH/pip" timed "scripts/ci-toolsandbox.sh, cold" \
                  env PY="$PY" bash scripts/ci-toolsandbox.sh ;;
        warm) timed "scripts/ci-toolsandbox.sh, warm" env PY="$PY" bash scripts/ci-toolsandbox.sh ;;
        docker-cold|docker-warm)
            if ! docker info >/dev/null 2>&1; then
                echo "No Docker engine answered: $part was not measured." >>"$SCRATCH/results.md"; continue
            fi
            if [ "$part" = docker-cold ]; then
                for image in $(docker image ls --format '{{.Repository}}:{{.Tag}}' evr-env-toolsandbox); do
                    docker image rm "$image" >/dev/null 2>&1 || true
                done
            fi
            timed "scripts/docker-ci-toolsandbox.sh, ${part#docker-}" env PY="$PY" WORK="$SCRATCH/docker" \
                bash scripts/docker-ci-toolsandbox.sh ;;
        *) echo "unknown part '$part'; accepted: cold warm docker-cold docker-warm" >&2; exit 2 ;;
    esac
done
cp "$SCRATCH/results.md" "$OUT"
echo "wrote $OUT" >&2
