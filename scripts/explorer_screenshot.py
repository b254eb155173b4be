"""Screenshots of a run folder's episode explorer, for the README (headless chromium via playwright).

    python scripts/explorer_screenshot.py RUN_FOLDER OUT_DIR [--task TEXT]

Writes ``explorer-index.png`` (the index's flips) and
``explorer-episode.png`` (the first Refine episode of the first task whose link contains TEXT,
opened). Build the report first: ``python -m runtime.report RUN_FOLDER``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--task", default="", help="open the first task whose link text contains this")
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args()
    index = args.run / "explorer" / "index.html"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not index.exists() or not chromium:
        print(f"error: needs {index} (python -m runtime.report RUN) and chromium on PATH", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=chromium, headless=True,
                                                       args=ARGS, viewport={"width": args.width, "height": 900})
        page = context.new_page()
        page.goto(index.as_uri(), wait_until="load")
        top, bottom = page.locator("#flips").bounding_box(), page.locator("#errors").bounding_box()
        height = min(bottom["y"] - top["y"], 700)
        page.screenshot(path=str(args.out / "explorer-index.png"), full_page=True,
                        clip={"x": 0, "y": top["y"] - 10, "width": args.width, "height": height})
        page.locator("#task-table a", has_text=args.task).first.click()
        page.wait_for_load_state("load")
        panel = page.locator("details.episode[data-record*='|refine|']").first
        panel.locator(":scope > summary").click()
        panel.screenshot(path=str(args.out / "explorer-episode.png"))
        context.close()
    print(f"{args.out / 'explorer-index.png'}\n{args.out / 'explorer-episode.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
