"""What the leak guard removed in a run folder: words removed per guarded critique, and the
finding kinds, per environment — the anti-leak control's cost to the reviser.

    python bench/guard_removed.py runs/controls/anti-leak [more run folders]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def summary(folder: Path) -> dict:
    critiques = fired = redacted = words = rationale_words = 0
    kinds: Counter[str] = Counter()
    for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        guard = record.get("guard")
        if not guard or not record.get("critique"):
            continue
        critiques += 1
        fired += bool(guard.get("fired"))
        redacted += guard.get("action") == "redacted"
        words += sum(len(span.split()) for span in guard.get("removed", []))
        rationale_words += len(str(record["critique"].get("rationale", "")).split())
        kinds.update(f["kind"] for f in guard.get("rule_findings", []))
    return {"critiques": critiques, "fired": fired, "redacted": redacted,
            "words removed per critique": round(words / critiques, 2) if critiques else 0.0,
            "words left per critique": round(rationale_words / critiques, 2) if critiques else 0.0,
            "rule findings by kind": dict(kinds.most_common())}


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg, json.dumps(summary(Path(arg)), ensure_ascii=False))
