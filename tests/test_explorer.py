"""The episode explorer on a real scripted ``validate --mode all`` run: every episode reachable
from the index with its plans, critique and conversation; supervision-only values never shown
outside a labelled section; flips and errored episodes listed; content escaped."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from explorer_run import ERROR_MESSAGE, scripted_run
from html_tree import Node, parse
from runtime import report as report_cli
from runtime.reports import episode_view, explorer
from runtime.folder.store import RunStore


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    folder = scripted_run(tmp_path_factory.mktemp("explorer") / "run")
    assert report_cli.main([str(folder)]) == 0
    return folder


def pages(folder: Path) -> tuple[Node, dict[str, Node]]:
    """The index and every task page linked from it (by file name)."""
    index = parse((folder / "explorer" / "index.html").read_text(encoding="utf-8"))
    linked = {a.attrs["href"].split("#")[0] for a in index.find(lambda n: n.tag == "a")
              if a.attrs.get("href", "").startswith("tasks/")}
    return index, {href: parse((folder / "explorer" / href).read_text(encoding="utf-8")) for href in linked}


def test_every_episode_is_reachable_and_shows_plans_critique_and_conversation(run_folder):
    records = RunStore(run_folder).records()
    assert len(records) == 7  # 2 tasks × 3 modes, and the errored one
    _, task_pages = pages(run_folder)
    panels = {}
    for page in task_pages.values():
        for details in page.by_class("episode"):
            panels[details.attrs["id"]] = details
    for record in records:
        anchor = episode_view.episode_anchor(record.record_id)
        assert anchor in panels, f"{record.record_id} is not reachable from the index"
        panel = panels[anchor]
        text = panel.text()
        assert panel.attrs["data-record"] == record.record_id
        if record.status == "error":
            assert ERROR_MESSAGE in text and "critique" in text
            continue
        assert record.opening_request in text
        plan_boxes = panel.by_class("plan-text")
        if record.key.mode == "direct":
            assert not plan_boxes
        else:
            assert plan_boxes[0].text() == record.p0["plan"]
        if record.key.mode == "refine":
            assert plan_boxes[1].text() == record.p1["plan"]
            assert plan_boxes[1].find(lambda n: n.tag == "ins"), "p1's additions are not marked"
            critique = panel.by_class("critique")[0].text()
            assert record.critique["rationale"] in critique
            assert f"grade {record.critique['grade']}" in critique
            for code, on in record.critique["errors"].items():
                assert f"{code} {'✔' if on else '–'}" in critique
            assert record.judge_p1["judgement"]["reasoning"] in panel.by_class("judge")[0].text()
        conversation = panel.by_class("conversation")[0].text()
        for message in record.messages:
            if message.get("content") and message["role"] != "tool":
                assert message["content"].strip() in conversation
            for call in message.get("tool_calls") or []:
                assert call["function"]["name"] in conversation
        assert "DB" in panel.by_class("evaluation")[0].text()


def test_supervision_only_values_appear_only_under_a_label(run_folder):
    from envs.registry import get_environment

    env = get_environment("tau2")
    _, task_pages = pages(run_folder)
    labelled_somewhere = 0
    for page in task_pages.values():
        task_id = page.find(lambda n: n.tag == "h1")[0].text().split("task ")[-1].strip()
        view, supervision = env.load("airline", task_id)
        values = supervision.supervision_only_values(view)
        outside = page.text(skip=lambda n: bool(n.classes & {"supervision", "conversation"}))
        leaked = sorted(v for v in values if v in outside)
        assert not leaked, f"task {task_id}: supervision-only values shown unlabelled: {leaked}"
        for block in page.by_class("supervision"):
            assert explorer.SUPERVISION_NOTE in block.text(), "a supervision block without its label"
            labelled_somewhere += sum(v in block.text() for v in values)
    assert labelled_somewhere, "no supervision-only value shown at all: the check above proves nothing"


def test_errored_episode_listed_with_stage_and_message(run_folder):
    index, task_pages = pages(run_folder)
    assert index.by_id("errors").text() == "Errored episodes: 1"
    rows = [n for n in index.walk() if n.tag == "tr" and ERROR_MESSAGE in n.text()]
    assert len(rows) == 1 and "critique" in rows[0].text() and "RateLimitError" in rows[0].text()
    href = rows[0].find(lambda n: n.tag == "a")[0].attrs["href"]
    page, anchor = href.split("#")
    assert task_pages[page].by_id(anchor).tag == "details"


def test_flips_list_wins_and_losses_separately(run_folder, tmp_path):
    records = RunStore(run_folder).records()
    changed = []
    for r in records:
        if r.key.task_id == "0" and r.key.mode == "refine" and r.status == "ok":
            r = r.model_copy(update={"score": 0.0})  # Refine loses task 0
        if r.key.task_id == "1" and r.key.mode == "plan-first":
            r = r.model_copy(update={"score": 0.0})  # Refine wins task 1
        changed.append(r)
    wins, losses = explorer.flips(explorer.task_rows(changed))
    assert [(f.row.task_id, f.arm, f.delta) for f in wins] == [("1", "refine", 1.0)]
    assert [(f.row.task_id, f.arm, f.delta) for f in losses] == [("0", "refine", -1.0)]
    explorer.write(tmp_path, changed, "flips")
    index = parse((tmp_path / "explorer" / "index.html").read_text(encoding="utf-8"))
    text = index.by_id("flips").text() + "".join(t.text() for t in index.by_class("flips"))
    headings = [h.text() for h in index.find(lambda n: n.tag == "h3")]
    assert "Wins (Refine better): 1" in headings and "Losses (Refine worse): 1" in headings
    assert "+1.00" in text and "-1.00" in text


def test_model_written_markup_is_shown_as_text(run_folder, tmp_path):
    hostile = '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'
    records = []
    for r in RunStore(run_folder).records():
        if r.key.mode == "refine" and r.status == "ok":
            r = r.model_copy(update={
                "messages": r.messages + [{"role": "assistant", "content": hostile}],
                "p1": {**r.p1, "plan": hostile}, "critique": {**r.critique, "rationale": hostile}})
        records.append(r)
    explorer.write(tmp_path, records, "escaping")
    for page in (tmp_path / "explorer" / "tasks").glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "<script>document.title" not in html and "<img src=x" not in html
        assert "&lt;script&gt;document.title" in html


def test_word_diff_keeps_both_texts_and_marks_only_changes():
    """Generated pairs of texts: each side's segments spell that side exactly, removed words are
    only on the left, added only on the right, and identical texts have no marks."""
    rng = random.Random(18)
    vocabulary = ["check", "the", "user", "id", "then", "cancel", "refund", "policy", "\n", "  ", "tool"]
    for _ in range(500):
        before = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 25)))
        words = before.split(" ")
        after = " ".join(w for w in words if rng.random() > 0.2) + " " + rng.choice(vocabulary)
        left, right = episode_view.diff_words(before, after)
        assert "".join(t for _, t in left) == before
        assert "".join(t for _, t in right) == after
        assert {k for k, _ in left} <= {"same", "del"} and {k for k, _ in right} <= {"same", "ins"}
        same_left, same_right = episode_view.diff_words(before, before)
        assert all(k == "same" for k, _ in same_left + same_right)


def test_report_command_rejects_a_folder_without_records(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert report_cli.main([str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no records" in err
    assert not (empty / "explorer").exists()


def test_task_page_names_are_unique_and_safe():
    ids = ["1", "1 ", "[mobile]data/../x", "a" * 200, "ä", "1/2", "1_2"]
    slugs = {explorer.task_slug("tau2", "telecom", t) for t in ids}
    assert len(slugs) == len(ids)
    assert all(len(s) < 80 and "/" not in s and ".." not in s for s in slugs)



def test_toolsandbox_milestones_and_minefields_are_shown_under_the_label(tmp_path):
    """ToolSandbox's own evaluation output, as its env server stores it: milestone and minefield
    index → (snapshot index, similarity)."""
    from runtime.folder.records import EpisodeKey, EpisodeRecord

    key = EpisodeKey(env="toolsandbox", domain="toolsandbox", task_id="send_message_with_contact_content_cellular_off",
                     mode="direct", model="m", trial=0)
    breakdown = {"milestone_similarity": 0.5, "minefield_similarity": 0.0, "turn_count": 7}
    record = EpisodeRecord(
        run_id="ts", key=key, record_id=key.id(), status="ok", seed=1, score=0.5, score_name="similarity",
        breakdown=breakdown, messages=[{"role": "user", "content": "Send a message to Fredrik"}],
        score_info={"scenario": key.task_id, "categories": ["multiple_tool_call"], "exception_type": None,
                    "milestone_mapping": {"0": [2, 1.0], "1": [5, 0.0], "2": [6, 0.5]}, "minefield_mapping": {"0": [1, 0.0]},
                    **breakdown},
        started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:01+00:00")
    checks = episode_view.evaluation(record)["checks"]
    assert [(c["name"], c["ok"]) for c in checks] == [
        ("milestone 0: snapshot 2, similarity 1.00", True), ("milestone 1: snapshot 5, similarity 0.00", False),
        ("milestone 2: snapshot 6, similarity 0.50", None), ("minefield 0: snapshot 1, similarity 0.00", True)]
    explorer.write(tmp_path, [record], "ts")
    page = parse(next((tmp_path / "explorer" / "tasks").glob("*.html")).read_text(encoding="utf-8"))
    labelled = " ".join(b.text() for b in page.by_class("supervision"))
    assert "milestone 1: snapshot 5" in labelled and "minefield 0" in labelled
    assert "milestone" not in page.text(skip=lambda n: "supervision" in n.classes).replace("milestone_similarity", "")


def test_what_the_guard_found_and_removed_is_shown_only_under_the_label(run_folder, tmp_path):
    secret = "ZX81Q7"  # a value only the supervision holds, as the guard reports it
    records = []
    for r in RunStore(run_folder).records():
        if r.key.mode == "refine" and r.status == "ok":
            r = r.model_copy(update={"guard": {
                "fired": True, "action": "redacted", "critic_attempts": 3, "removed": [secret],
                "findings": [{"kind": "value", "text": secret},
                             {"kind": "sequence", "text": "get_user_details → cancel_reservation"}]}})
        records.append(r)
    explorer.write(tmp_path, records, "guard")
    for path in (tmp_path / "explorer" / "tasks").glob("*.html"):
        page = parse(path.read_text(encoding="utf-8"))
        guard = page.by_class("guard")[0].text()
        assert "fired: yes" in guard and "action: redacted" in guard and "critic attempts: 3" in guard
        assert guard.count(secret) == 2 and "sequence: get_user_details → cancel_reservation" in guard
        assert explorer.SUPERVISION_NOTE in guard
        assert secret not in page.text(skip=lambda n: "supervision" in n.classes)


def test_report_pages_are_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """Pages go through ``write_text_atomic``: a write that dies before it is complete (here:
    at the flush to disk) leaves the previous page as it was, never half of a new one."""
    import os

    from runtime.folder.store import write_text_atomic

    page = tmp_path / "tasks" / "t.html"
    write_text_atomic(page, "<p>old</p>")

    def crash(fd):
        raise OSError("disk went away")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk went away"):
        write_text_atomic(page, "<p>new</p>" * 10_000)
    assert page.read_text(encoding="utf-8") == "<p>old</p>"
