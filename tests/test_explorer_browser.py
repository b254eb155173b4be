"""The explorer in a real headless browser: the system's chromium, driven by playwright (no
browser download). Every page loads with no console error, failed request or script error, and
every episode panel opens and shows its plans, critique and conversation. Skips, saying why,
where chromium or playwright is missing (``.ci/run`` installs chromium)."""

from __future__ import annotations

import os
import shutil

import pytest

from explorer_run import ERROR_MESSAGE, scripted_run
from runtime import report as report_cli

# A real browser over a real run's explorer: the slow suite, which CI runs with Debian's chromium.
pytestmark = pytest.mark.slow

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> str | None:
    """``EVR_CHROMIUM`` or the first chromium on PATH."""
    for name in (os.environ.get("EVR_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    path = chromium()
    if path is None:
        pytest.skip("no chromium on PATH (apt-get install chromium, or set EVR_CHROMIUM)")
    folder = scripted_run(tmp_path_factory.mktemp("explorer-browser") / "run")
    assert report_cli.main([str(folder)]) == 0
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=path, headless=True, args=CHROMIUM_ARGS)
        page = context.new_page()
        page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
        yield folder, page, problems
        context.close()


def test_pages_load_and_every_episode_opens_with_its_parts(browser_page):
    folder, page, problems = browser_page
    index = (folder / "explorer" / "index.html").as_uri()
    page.goto(index, wait_until="load")
    assert page.locator("h1").inner_text().startswith("Report")
    assert page.locator("img.plot").count() >= 1
    assert all(page.locator("img.plot").nth(i).evaluate("img => img.naturalWidth > 0")
               for i in range(page.locator("img.plot").count()))
    links = sorted({h.split("#")[0] for h in page.locator("#task-table a").evaluate_all("as => as.map(a => a.href)")})
    assert len(links) == 2
    opened = {"direct": 0, "plan-first": 0, "refine": 0, "error": 0}
    for link in links:
        page.goto(link, wait_until="load")
        panels = page.locator("details.episode")
        for i in range(panels.count()):
            panel = panels.nth(i)
            mode = panel.get_attribute("data-record").split("|")[3]
            assert panel.locator(".panel").is_hidden()
            panel.locator(":scope > summary").click()
            assert panel.evaluate("d => d.open")
            if panel.locator(".episode-error").count():
                assert ERROR_MESSAGE in panel.locator(".episode-error").inner_text()
                opened["error"] += 1
                continue
            assert panel.locator(".opening pre").is_visible()
            conversation = panel.locator(".conversation")
            assert conversation.is_visible() and conversation.locator(".turn").count() >= 2
            plans = panel.locator(".plan-text")
            assert plans.count() == {"direct": 0, "plan-first": 1, "refine": 2}[mode]
            for j in range(plans.count()):
                assert plans.nth(j).is_visible() and plans.nth(j).inner_text().strip()
            results = panel.locator("pre.result.json")
            if results.count():  # JSON tool results are indented once their panel opens
                assert results.first.inner_text().startswith('{\n  "')
            if mode == "refine":
                assert panel.locator(".critique").is_visible()
                assert "grade" in panel.locator(".critique").inner_text()
                assert panel.locator(".plans-section ins").count() >= 1
                assert "hidden from the tested model" in panel.locator(".judge").inner_text()
            opened[mode] += 1
    assert opened == {"direct": 2, "plan-first": 2, "refine": 2, "error": 1}
    assert not problems, problems


def test_an_index_link_opens_its_episode(browser_page):
    folder, page, problems = browser_page
    page.goto((folder / "explorer" / "index.html").as_uri(), wait_until="load")
    page.locator("#task-table").get_by_role("link", name="tau2/airline · 1").first.click()
    page.wait_for_load_state("load")
    assert page.locator("details.episode[open]").count() == 0
    page.go_back()
    page.locator("table", has=page.locator("code", has_text="RateLimitError")).locator("a").first.click()
    page.wait_for_load_state("load")
    target = page.locator("details.episode[open]")
    assert target.count() == 1 and ERROR_MESSAGE in target.inner_text()
    page.goto((folder / "explorer" / "index.html").as_uri(), wait_until="load")
    page.locator("#filter").fill("airline 1 ")
    assert page.locator("#task-table tbody tr:visible").count() == 1
    assert not problems, problems
