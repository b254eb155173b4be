"""Bad input is refused at once, in one line, with exit 2, before anything is written: an
unwritable ``--apb-out``, an unreachable ``--ray-address`` (work pending or not), an
``--api-base`` that is not a URL, a model whose provider litellm does not know, an empty
``ablate --strategies``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from runtime import ablate, report as report_cli, validate
from runtime.folder.store import RunStore
from tests.conftest import read_records
from tests.test_no_bad_answer_kept import TASK, gold_stub  # noqa: F401 - the fixture
from tests.test_store_torn_tails import random_records


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def _mock(url: str, out: Path, *extra: str) -> list[str]:
    return ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", TASK,
            "--model", "openai/m", "--api-base", url, "--out", str(out), "--no-cache", *extra]


def test_an_unwritable_apb_out_is_refused_before_any_report_file(tmp_path, capsys):
    store = RunStore(tmp_path)
    for record in random_records(random.Random(0), 2):
        store.append(record)
    before = _files(tmp_path)
    assert report_cli.main([str(tmp_path), "--apb-out", "/proc/x"]) == 2
    err = _one_error_line(capsys)
    assert "--apb-out /proc/x" in err and "writable folder" in err
    assert _files(tmp_path) == before  # no report.md, no plots, no explorer


def test_an_apb_out_that_is_a_folder_is_refused(tmp_path, capsys):
    store = RunStore(tmp_path)
    for record in random_records(random.Random(0), 1):
        store.append(record)
    assert report_cli.main([str(tmp_path), "--apb-out", str(tmp_path)]) == 2
    assert "it is a folder" in _one_error_line(capsys)


def test_an_unreachable_ray_address_is_refused_before_run_json_changes(gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    ray = ["--backend", "ray", "--ray-address", "127.0.0.1:1"]
    pending = tmp_path / "pending"
    assert validate.main(_mock(gold_stub + "/v1", pending, *ray)) == 2
    assert "--ray-address '127.0.0.1:1': nothing answers there" in _one_error_line(capsys)
    assert not (pending / "run.json").exists() and read_records(pending) == []

    done = tmp_path / "done"
    assert validate.main(_mock(gold_stub + "/v1", done)) == 0
    run_json = (done / "run.json").read_bytes()
    capsys.readouterr()
    assert validate.main(_mock(gold_stub + "/v1", done, *ray)) == 2  # nothing pending: still refused
    assert "nothing answers there" in _one_error_line(capsys)
    assert (done / "run.json").read_bytes() == run_json


@pytest.mark.parametrize("argv,message", [
    (["--api-base", "not a url"], "api_base = 'not a url': Value error, not an http(s) URL"),
    (["--api-base", "ftp://host/v1"], "not an http(s) URL"),
    (["--critic-api-base", "http://"], "critic_api_base = 'http://'"),
    (["--api-base", "http://localhost:8000/v1", "--model", "nosuchprovider/m"],
     "model 'nosuchprovider/m': unknown provider 'nosuchprovider'"),
    (["--api-base", "http://localhost:8000/v1", "--model", "openai/m", "--critic-model", "acme/c"],
     "unknown provider 'acme'"),
], ids=["not-a-url", "ftp", "no-host", "provider", "critic-provider"])
def test_a_bad_endpoint_or_provider_exits_2_before_the_folder_exists(tmp_path, monkeypatch, capsys,
                                                                   argv, message):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    assert validate.main(["--env", "tau2", "--domain", "mock", "--out", str(out), *argv]) == 2
    assert message in _one_error_line(capsys)
    assert not out.exists()


def test_ablate_with_no_strategy_named_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert ablate.main(["--env", "tau2", "--domain", "mock", "--model", "scripted/roles",
                        "--out", str(out), "--strategies", ","]) == 2
    err = _one_error_line(capsys)
    assert "--strategies ','" in err and "anti-leak" in err
    assert not out.exists()
