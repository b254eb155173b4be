"""Every bad input a hostile user tried: one line naming the bad value and what is accepted,
exit code 2, no traceback, nothing finished touched; questionable successes refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime import ablate, report, table3, validate

from testkit.loopback import EchoServer

FINISHED = '{"finished": "before"}\n'


@pytest.fixture(scope="module")
def endpoint():
    """Answers 400 at once: no case should reach a model, and one that does fails fast."""
    with EchoServer(status=400) as server:
        yield server


@pytest.fixture
def base(endpoint):
    return ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--model", "openai/gpt-4o",
            "--api-base", endpoint.url + "/v1"]


def _boom_planner(tmp: Path) -> list[str]:
    (tmp / "boom_planner.py").write_text("raise RuntimeError('planner module exploded')\n")
    return ["--planner", "boom_planner:Planner"]


def _config(tmp: Path, data: bytes) -> list[str]:
    path = tmp / "c.yaml"
    path.write_bytes(data)
    return ["--config", str(path)]


def _records_dir(tmp: Path) -> list[str]:
    (tmp / "odd").mkdir()
    (tmp / "odd" / "records.jsonl").mkdir()
    return ["--out", str(tmp / "odd")]


# (id, argv maker, words the one-line error must contain)
VALIDATE_CASES = [
    ("out-is-a-file", lambda t: ["--out", str(t / "file.txt")], ["--out", "file.txt", "writable folder"]),
    ("out-under-proc", lambda t: ["--out", "/proc/evr-run"], ["--out /proc/evr-run", "writable folder"]),
    ("out-parent-is-a-file", lambda t: ["--out", str(t / "file.txt" / "run")], ["--out", "writable folder"]),
    ("cache-dir-is-a-file", lambda t: ["--cache-dir", str(t / "file.txt")], ["--cache-dir", "file.txt"]),
    ("records-is-a-directory", _records_dir, ["records.jsonl", "is a directory"]),
    ("config-not-utf8", lambda t: _config(t, b"env: tau2\nmodel: \xff\xfe\n"), ["c.yaml", "not UTF-8"]),
    ("config-non-string-key", lambda t: _config(t, b"env: tau2\n1: airline\n"), ["key 1", "option name"]),
    ("planner-raises-on-import", _boom_planner, ["boom_planner", "planner module exploded"]),
    ("trials-unbounded", lambda t: ["--trials", "1000000000"], ["trials = 1000000000", "less than or equal to 1000"]),
    ("run-id-escapes", lambda t: ["--run-id", "../../escaped"], ["run_id = '../../escaped'", "folder name"]),
    ("tasks-beyond-the-split", lambda t: ["--tasks", "1000000"], ["--tasks 1000000", "give at most"]),
    ("model-empty", lambda t: ["--model", ""], ["model = ''", "must not be empty"]),
]


def _check_one_line_exit_2(code: int, err: str, words: list[str]) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "Traceback" not in err


@pytest.mark.parametrize("make,words", [c[1:] for c in VALIDATE_CASES], ids=[c[0] for c in VALIDATE_CASES])
def test_validate_bad_input(make, words, base, endpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    (tmp_path / "file.txt").write_text("keep me\n")
    finished = tmp_path / "finished"
    finished.mkdir()
    (finished / "records.jsonl").write_text(FINISHED)
    made = make(tmp_path)
    where = [] if "--out" in made or "--run-id" in made else ["--out", str(finished)]
    calls = len(endpoint.requests)
    argv = [*base, *where, "--cache-dir", str(tmp_path / "cache"), *made]
    try:
        code = validate.main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    _check_one_line_exit_2(code, capsys.readouterr().err, words)
    assert (finished / "records.jsonl").read_text() == FINISHED
    assert (tmp_path / "file.txt").read_text() == "keep me\n"
    assert not (tmp_path.parent / "escaped").exists()
    assert len(endpoint.requests) == calls, "no model may be called"


def test_ablate_out_is_a_file(base, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    target = tmp_path / "file.txt"
    target.write_text("keep me\n")
    argv = [a for a in base if a not in ("--mode", "direct")]  # ablate chooses its modes itself
    code = ablate.main([*argv, "--out", str(target), "--strategies", "none"])
    _check_one_line_exit_2(code, capsys.readouterr().err, ["--out", "file.txt"])
    assert target.read_text() == "keep me\n"


TABLE3 = """
name: t3-bad
trials: 1
models: [openai/gpt-4o]
api_base: {api_base}
environments:
  - env: tau2
    domains: [{domain}]
    split: {split}
    tasks: 2
"""

TABLE3_CASES = [
    ("unknown-domain", {"domain": "banking"}, [], ["banking", "accepted: airline"]),
    ("unknown-domain-dry-run", {"domain": "banking"}, ["--dry-run"], ["banking", "accepted: airline"]),
    ("unknown-split", {"split": "holdout"}, [], ["holdout", "accepted"]),
    ("unknown-split-dry-run", {"split": "holdout"}, ["--dry-run"], ["holdout", "accepted"]),
    ("unknown-strategy", {"strategy": "sideways"}, ["--dry-run"], ["strategy = 'sideways'", "accepted"]),
    ("out-is-a-file", {}, ["--out", "{tmp}/file.txt"], ["--out", "file.txt"]),
    ("garbage-sample", {"sample": "{not json"}, [], ["sample.json", "move it away"]),
    ("wrong-shape-sample", {"sample": '{"sample": {"tau2": ["1", "2"]}}'}, [], ["sample.json", "move it away"]),
]


@pytest.mark.parametrize("values,extra,words", [c[1:] for c in TABLE3_CASES], ids=[c[0] for c in TABLE3_CASES])
def test_table3_bad_config(values, extra, words, endpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    (tmp_path / "file.txt").write_text("keep me\n")
    out = tmp_path / "t3"
    out.mkdir()
    (out / "records.jsonl").write_text(FINISHED)
    text = TABLE3.format(domain=values.get("domain", "mock"), split=values.get("split", "null"),
                         api_base=endpoint.url + "/v1")
    text += f"out: {out}\n"
    if "strategy" in values:
        text += f"strategy: {values['strategy']}\n"
    if "sample" in values:
        (out / "sample.json").write_text(values["sample"])
    config = tmp_path / "t3.yaml"
    config.write_text(text)
    code = table3.main(["--config", str(config), *[e.format(tmp=tmp_path) for e in extra]])
    _check_one_line_exit_2(code, capsys.readouterr().err, words)
    assert (out / "records.jsonl").read_text() == FINISHED
    assert (tmp_path / "file.txt").read_text() == "keep me\n"


def test_report_never_creates_the_folder_it_is_asked_about(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = report.main([str(tmp_path / "missing")])
    _check_one_line_exit_2(code, capsys.readouterr().err, ["missing", "does not exist"])
    with pytest.raises(SystemExit) as help_exit:
        report.main(["--help"])
    assert help_exit.value.code == 0 and "run folder" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_resuming_over_garbage_lines_says_so(tmp_path, capsys):
    from testkit.roles import ScriptedRoles

    model = ScriptedRoles().model_name("roles-garbage-resume")
    out = tmp_path / "run"
    out.mkdir()
    (out / "records.jsonl").write_text("this is not a record\n{\"also\": \"not one\"}\n")
    code = validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--tasks", "1",
                          "--model", model, "--out", str(out), "--no-cache"])
    assert code == 0
    assert "warning: 2 unreadable line(s)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("extra,words", [
    (["--mode", "direct"], ["--mode direct", "plan-first and refine"]),
    (["--strategy", "leaky"], ["--strategy leaky", "--strategies"]),
], ids=["mode", "strategy"])
def test_ablate_refuses_options_it_would_ignore(extra, words, base, endpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    calls = len(endpoint.requests)
    argv = [a for a in base if a not in ("--mode", "direct")]
    code = ablate.main([*argv, *extra, "--out", str(tmp_path / "run"), "--strategies", "none"])
    _check_one_line_exit_2(code, capsys.readouterr().err, words)
    assert not (tmp_path / "run" / "records.jsonl").exists() and len(endpoint.requests) == calls


def _docker_main(argv):
    from envs.docker import cli

    return cli.main(argv)


def _envs_main(argv):
    from runtime import envs

    return envs.main(argv)


@pytest.mark.parametrize("main,argv,words", [
    (validate.main, ["--mode", "sideways"], ["--mode", "invalid choice: 'sideways'", "'plan-first'"]),
    (validate.main, ["--trials", "two"], ["--trials", "invalid int value: 'two'"]),
    (ablate.main, ["--no-such-option"], ["unrecognized arguments: --no-such-option"]),
    (table3.main, [], ["--config", "required"]),
    (report.main, [], ["run", "required"]),
    (_envs_main, ["setup", "webshop"], ["invalid choice: 'webshop'", "'toolsandbox'"]),
    (_docker_main, ["rebuild"], ["invalid choice: 'rebuild'", "'build'"]),
], ids=["validate-choice", "validate-type", "ablate-unknown", "table3-missing", "report-missing",
        "envs-choice", "docker-choice"])
def test_argument_errors_are_one_line(main, argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    _check_one_line_exit_2(exit_.value.code, capsys.readouterr().err, words)
