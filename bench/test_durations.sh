#!/usr/bin/env bash
# The default suite (`make test`: pytest with the addopts' -m 'not slow') timed as a whole, and
# its slowest tests and test files, from pytest's own per-phase durations.
#
#   bash bench/test_durations.sh [LOG] [-- extra pytest arguments, e.g. -m slow]
#
# LOG keeps pytest's whole output (default: a temporary file). Prints the wall time, the machine
# (CPUs, load average before and after: a loaded machine stretches every figure), the slowest
# 30 tests (setup + call + teardown) and the 25 slowest files, as Markdown tables.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
LOG=${1:-$(mktemp -t durations.XXXXXX)}
shift || true
[ "${1:-}" = "--" ] && shift
export LITELLM_LOCAL_MODEL_COST_MAP=True
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
start=$(date +%s)
status=0
"$PY" -m pytest --durations=0 --durations-min=0.5 -q -p no:cacheprovider "$@" >"$LOG" 2>&1 || status=$?
wall=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
echo "wall: ${wall} s ($(( wall / 60 )) min $(( wall % 60 )) s); pytest exit ${status}; $(nproc) CPUs; load average ${load_before} before, ${load_after} after"
grep -E "^(=+ )?[0-9]+ (passed|failed)|passed|failed" "$LOG" | tail -n 1 || true
"$PY" - "$LOG" <<'PY'
import re, sys
from collections import defaultdict

per_test, per_file = defaultdict(float), defaultdict(float)
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)", line)
    if m:
        seconds, node = float(m[1]), m[3]
        per_test[node] += seconds
        per_file[node.split("::")[0]] += seconds
print("\n| test (setup + call + teardown) | s |\n| --- | ---: |")
for node, s in sorted(per_test.items(), key=lambda kv: -kv[1])[:30]:
    print(f"| `{node}` | {s:.1f} |")
print("\n| file (tests over 0.5 s) | s |\n| --- | ---: |")
for path, s in sorted(per_file.items(), key=lambda kv: -kv[1])[:25]:
    print(f"| `{path}` | {s:.1f} |")
print(f"\nsum over files: {sum(per_file.values()):.0f} s")
PY
exit 0
