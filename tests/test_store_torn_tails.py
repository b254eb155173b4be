"""Every torn or unreadable tail heals: the store splits bytes into lines before it decodes, so
a record cut anywhere — inside a multi-byte UTF-8 character included — is one skipped line
(named by file and line number), never a traceback, never a lost complete record, and its
episode runs again.

The property test cuts the last of a few random records (unicode text included) at byte
offsets: a seeded sample in the default suite, every offset in the slow suite."""

from __future__ import annotations

import random

import pytest

from runtime import report as report_cli
from runtime.batch import pending
from runtime.episode.spec import RunSpec
from runtime.llm.layer import ModelSpec
from runtime.folder.records import EpisodeRecord
from runtime.reports.summary import summarize
from runtime.folder.store import RECORDS, RunStore
from tests.test_no_bad_answer_kept import TASK, gold_stub  # noqa: F401 - the fixture

ALPHABET = "abc xyz 0123 — “quoted” é ß 東京 🙂 \\ \" \n\t{}[]"
SPEC = RunSpec(run_id="r", env="tau2", domain="mock", task_ids=["t1", "t2", "t3"],
               modes=["direct", "plan-first"], models={"model": ModelSpec(model="scripted/x")})


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def random_records(rng: random.Random, n: int) -> list[EpisodeRecord]:
    out = []
    for key in SPEC.keys()[:n]:
        out.append(EpisodeRecord(
            run_id="r", key=key, record_id=key.id(), status="ok", seed=0,
            opening_request=_text(rng, 20), score=rng.choice([0.0, 1.0]), score_name="reward",
            messages=[{"role": "assistant", "content": _text(rng, 30)}],
            started_at="2026-01-01T00:00:00", finished_at="2026-01-01T00:00:01"))
    return out


def _write(folder, records) -> bytes:
    store = RunStore(folder)
    for record in records:
        store.append(record)
    return (folder / RECORDS).read_bytes()


def _check_cut(folder, whole: bytes, cut_at: int, complete: list[EpisodeRecord],
               last: EpisodeRecord, report: bool = False) -> RunStore:
    """The file cut ``cut_at`` bytes into the last record: every complete record read, the cut
    one pending again, the report (``report``) built, and the next append lands on a line of
    its own."""
    start = len(whole) - len(last.model_dump_json().encode()) - 1
    (folder / RECORDS).write_bytes(whole[:start + cut_at])
    store = RunStore(folder)
    ids = {r.record_id for r in store.records()}
    assert ids == {r.record_id for r in complete}, cut_at
    assert store.torn_lines == (1 if 0 < cut_at < len(whole) - start - 1 else 0)
    todo, _ = pending(SPEC, store)
    assert last.key in todo and not {r.key for r in complete} & set(todo)
    summarize(store.records())
    if report:
        assert report_cli.main([str(folder)]) == 0
    store.append(last)  # the cut episode, run again
    again = RunStore(folder)
    assert {r.record_id for r in again.records()} == ids | {last.record_id}
    return store


def _offsets(line: bytes, sample: int | None, rng: random.Random) -> list[int]:
    """Every offset inside the record, or a sample: half cuts inside a multi-byte character (a
    continuation byte follows the cut), half anywhere."""
    every = list(range(1, len(line)))
    if sample is None:
        return every
    inside = [i for i in every if 0x80 <= line[i] < 0xC0]
    chosen = set(rng.sample(inside, min(sample // 2, len(inside))))
    chosen |= set(rng.sample(every, min(sample - len(chosen), len(every))))
    return sorted(chosen)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_record_cut_at_sampled_byte_offsets_heals(tmp_path, seed):
    _property(tmp_path, seed, sample=40)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_a_record_cut_at_every_byte_offset_heals(tmp_path, seed):
    _property(tmp_path, seed, sample=None)


def _property(tmp_path, seed: int, sample: int | None) -> None:
    rng = random.Random(seed)
    records = random_records(rng, rng.randint(2, 5))
    whole = _write(tmp_path / "w", records)
    last = records[-1]
    offsets = _offsets(last.model_dump_json().encode(), sample, rng)
    reported = set(offsets[:: max(1, len(offsets) // 4)])  # the whole report: a few cuts
    for cut_at in offsets:
        folder = tmp_path / f"cut{cut_at}"
        folder.mkdir()
        _check_cut(folder, whole, cut_at, records[:-1], last, report=cut_at in reported)


def test_a_tail_cut_inside_a_multibyte_character_is_named_by_file_and_line(tmp_path, capsys):
    records = random_records(random.Random(3), 3)
    whole = _write(tmp_path, records)
    dash = "—".encode()
    torn = records[0].model_copy(update={"opening_request": "a — b"}).model_dump_json().encode()
    cut = torn[:torn.index(dash) + 1]  # the dash's first byte only
    (tmp_path / RECORDS).write_bytes(whole + cut)
    store = RunStore(tmp_path)
    assert len(store.records()) == 3
    assert store.skipped == [4]
    byte = len(cut) - 1  # the byte where the character is cut
    assert store.skipped_note() == (f"1 unreadable line(s) in {tmp_path / RECORDS} skipped "
                                    f"(line 4: not UTF-8 text at byte {byte})")

    # The report reads it too, says what it skipped, and writes its files.
    assert report_cli.main([str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: 1 unreadable line(s) in {tmp_path / RECORDS} skipped (line 4: not UTF-8" in err
    assert "skipped (line 4: not UTF-8" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_resume_of_a_folder_with_a_tail_torn_inside_a_character_warns_and_goes_on(
        gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    from runtime import validate

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    argv = ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", TASK,
            "--model", "openai/m", "--api-base", gold_stub + "/v1", "--out", str(out), "--no-cache"]
    assert validate.main(argv) == 0
    line = (out / RECORDS).read_bytes().splitlines()[0]
    torn = line.replace(b'"opening_request":"', '"opening_request":"a — '.encode(), 1)
    with open(out / RECORDS, "ab") as fh:
        fh.write(torn[:torn.index("—".encode()) + 1])
    capsys.readouterr()
    assert validate.main(argv) == 0
    said = " ".join(capsys.readouterr().out.split())
    # the console folds a path longer than its width (a worker's tmp_path is): compared unfolded
    warning = f"warning: 1 unreadable line(s) in {out / RECORDS} skipped (line 2: not UTF-8"
    assert "".join(warning.split()) in "".join(said.split())
    assert "1 episodes (1 already done)" in said
