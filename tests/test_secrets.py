"""No secret reaches disk or the console: planted keys, endpoints that echo them back, and the
scrubber measured on generated error bodies."""

from __future__ import annotations

import json

import pytest

from runtime import validate
from testkit.loopback import EchoServer
from testkit.secret_corpus import clean_texts, leaky_texts

PLANTED = {
    "OPENAI_API_KEY": "sk-proj-PLANTEDopenai0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDanthropic0123456789",
    "GEMINI_API_KEY": "AIzaSyPLANTEDgemini0123456789abcdefgh",
    "EVR_TEST_SERVICE_TOKEN": "tok-PLANTEDservice-0123456789",
}

FAMILIES = {
    "openai-compatible": ("openai/gpt-4o", "/v1"),
    "anthropic": ("anthropic/claude-3-5-sonnet-20240620", ""),
    "gemini": ("gemini/gemini-1.5-pro", ""),
}


def test_scrubber_removes_every_planted_key_and_leaves_clean_text_alone():
    from runtime.folder.scrub import scrub

    secrets = list(PLANTED.values())
    leaky = leaky_texts(secrets, n=600, seed=3)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in PLANTED.items():
            mp.setenv(name, value)
        caught = sum(not any(s in scrub(t) for s in secrets) for t in leaky)
        clean = clean_texts(n=300, seed=4)
        untouched = sum(scrub(t) == t for t in clean)
    print(f"catch rate {caught}/{len(leaky)}, clean texts untouched {untouched}/{len(clean)}")
    assert caught == len(leaky)
    assert untouched == len(clean)


def test_unknown_bearer_tokens_in_echoed_headers_are_removed_too():
    from runtime.folder.scrub import REDACTED, scrub, scrub_data

    # a key that is in no environment variable (e.g. given to a proxy some other way)
    text = 'upstream said: {"headers": {"Authorization": "Bearer xyz-unlisted-9876543210"}}'
    assert "xyz-unlisted-9876543210" not in scrub(text) and REDACTED in scrub(text)
    assert scrub_data({"a": ["x-api-key: zz-unlisted-0123456789"]}) == {"a": [f"x-api-key: {REDACTED}"]}


@pytest.mark.parametrize("family", FAMILIES)
def test_planted_keys_echoed_by_an_endpoint_reach_no_file_and_no_stream(family, tmp_path, monkeypatch, capfd):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    model, suffix = FAMILIES[family]
    out, cache = tmp_path / "run", tmp_path / "cache"
    argv = ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--tasks", "2",
            "--model", model, "--out", str(out), "--cache-dir", str(cache), "--concurrency", "1"]
    with EchoServer(status=400) as server:
        argv += ["--api-base", server.url + suffix]
        # 400: each episode fails with the echoed headers in its error, and is recorded
        codes = [validate.main(argv)]
        # 401: the run stops at once, with one line on the console
        server.status = 401
        codes.append(validate.main([*argv, "--retry-errors"]))
        seen = json.dumps(server.requests)
    captured = capfd.readouterr()
    key = PLANTED[{"openai-compatible": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                   "gemini": "GEMINI_API_KEY"}[family]]
    assert key in seen, "the endpoint should have received the key it echoes"
    records = (out / "records.jsonl").read_text()
    assert '"status":"error"' in records
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"records.jsonl", "summary.json", "run.json", "responses.sqlite"} <= {p.name for p in files}
    for value in PLANTED.values():
        assert value not in captured.out + captured.err
        for path in files:
            assert value.encode() not in path.read_bytes(), f"{value} written to {path}"
    # every episode errored: exit 3; rejected credentials stop the run: one line, exit 2
    assert codes == [3, 2] and "run stopped" in captured.err


def test_container_logs_pass_through_the_scrubber(tmp_path, monkeypatch):
    """A container's stderr (an env server echoing a key in a traceback, say) is written to the
    run folder through the scrubber the runtime hands the environment."""
    from envs.docker.container import ContainerProcess, ContainerSpec
    from runtime.folder.scrub import scrub

    key = "sk-container-" + "7" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)

    class Container:
        attrs = {"State": {"Status": "exited", "ExitCode": 0}}

        def reload(self):
            pass

        def logs(self, stdout, stderr):
            return f"Traceback ... Authorization: Bearer {key}\nsecond line {key}\n".encode()

    proc = object.__new__(ContainerProcess)
    proc.container, proc.name = Container(), "evr-test-1"
    proc.spec = ContainerSpec(image="img", command=["x"], env="tau2")
    proc._log_dir, proc._scrub = (lambda: tmp_path), scrub
    proc._save_logs()
    written = (tmp_path / "evr-test-1.log").read_text()
    assert key not in written and "second line" in written and '"exit_code": 0' in written


def test_the_word_prefilter_never_changes_what_is_scrubbed():
    """``scrub`` runs each credential pattern only when one of its words is in the text; on
    credential forms written in random casing and layouts, inside long record-like text, it
    gives what running every pattern gives."""
    import random

    from runtime.folder import scrub as scrub_module

    def every_pattern(text: str) -> str:
        for pattern, replacement, _ in scrub_module._PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    rng = random.Random(7)
    names = ["Authorization", "x-api-key", "X-Goog-Api-Key", "api_key", "apiKey", "API-KEY",
             "access_token", "Access-Token", "accesstoken", "bearer", "?key=", "&key="]
    filler = json.dumps({"key": {"task_id": "12", "mode": "direct"}, "messages": [
        {"role": "assistant", "content": "Your order #W2378156 has shipped; key facts below."}] * 20})
    for _ in range(400):
        name = "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in rng.choice(names))
        sep = rng.choice([": ", "=", '": "', " = ", ":", " "])
        secret = "".join(rng.choice("abcdefXYZ0123456789-_.") for _ in range(rng.randint(4, 30)))
        planted = f"{name}{sep}{secret}" if not name.lower().startswith("bearer") else f"{name} {secret}"
        cut = rng.randint(0, len(filler))
        text = filler[:cut] + planted + filler[cut:]
        assert scrub_module.scrub(text, []) == every_pattern(text), planted
