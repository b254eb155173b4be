"""τ³ banking's dense retrieval configurations through the runtime's embeddings endpoint.

Without one configured, each is refused in one line naming it and the offline ones. With one
(here the scripted stub's ``/v1/embeddings``, deterministic vectors: plumbing, never meaning),
the release's own pipeline embeds its 698 documents and the agent's query through ``embed_turn``
callbacks answered by litellm in the runtime: the env server holds no key, the key the runtime
uses comes from its environment, and nothing it writes carries the key. Needs τ³ set up
(``TAU3_SOURCE``) for the second part.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from envs.base import UnknownTaskError
from envs.tau3 import retrieval
from tests.conftest import tau3_record

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-embeddings-secret-0123456789"


@pytest.mark.parametrize("name", retrieval.EMBEDDINGS)
def test_a_dense_configuration_without_an_endpoint_is_refused_in_one_line(name):
    with pytest.raises(UnknownTaskError) as caught:
        retrieval.check(name, retrieval.DOMAIN)
    line = str(caught.value)
    assert "\n" not in line and f"--retrieval {name}" in line and "--embeddings-api-base" in line
    assert all(o in line for o in retrieval.OFFLINE), line
    assert retrieval.check(name, retrieval.DOMAIN, embeddings=True) == name


def test_the_runtime_refuses_it_before_any_server_starts(capsys, tmp_path, monkeypatch):
    tau3_record()  # (without τ³ set up, the set-up line comes first)
    from runtime import validate

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code = validate.main(["--env", "tau3", "--domain", "banking_knowledge", "--retrieval",
                          "openai_embeddings", "--model", "openai/x", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--retrieval openai_embeddings" in err[0], err
    assert not (tmp_path / "run").exists()


def test_a_worker_builds_the_environment_the_driver_fingerprinted():
    """A Ray worker opens its own services from the ``RunSpec``: the retrieval configuration and
    the embeddings endpoint travel as settings (never a key) and are rebuilt there."""
    from runtime.episode.services import environment_options
    from runtime.episode.spec import RunSpec
    from runtime.llm.layer import ModelSpec

    spec = RunSpec(run_id="r", env="tau3", domain=retrieval.DOMAIN, task_ids=["task_001"], modes=["direct"],
                   models={"model": ModelSpec(model="openai/m")},
                   env_options={"retrieval": "openai_embeddings", "embeddings_api_base": "http://127.0.0.1:9/v1"})
    again = RunSpec.model_validate(spec.model_dump())
    options = environment_options(again)
    assert options["retrieval"] == "openai_embeddings"
    assert options["embeddings"].setting() == {"model": None, "api_base": "http://127.0.0.1:9/v1"}
    assert environment_options(spec.model_copy(update={"env_options": {}})) == {}


def _stats(port: int) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10).read())


def test_dense_retrieval_embeds_through_the_runtime(monkeypatch):
    record = tau3_record()
    from envs.tau3 import Tau3Environment
    from runtime.llm.embeddings import EmbeddingsEndpoint

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env_vars = {**os.environ, "PYTHONPATH": str(ROOT), "TAU2_DATA_DIR": record["data_dir"]}
    stub = subprocess.Popen([record["python"], str(ROOT / "bench" / "stub_server.py"), "--port", str(port),
                             "--domains", retrieval.DOMAIN, "--task-ids", "task_001"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env_vars)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    endpoint = EmbeddingsEndpoint(api_base=f"http://127.0.0.1:{port}/v1")
    env = None
    try:
        assert "stub model on" in stub.stdout.readline()
        env = Tau3Environment(retrieval="openai_embeddings", max_servers=1, embeddings=endpoint)
        assert env.retrieval_for(retrieval.DOMAIN) == "openai_embeddings"
        view, _ = env.load(retrieval.DOMAIN, "task_001")
        search = next(t for t in view.tools if t["function"]["name"] == "KB_search")
        after_load = _stats(port)
        assert after_load["embeddings"] >= 1 and after_load["embedded_texts"] >= 698, after_load

        def agent(messages, tools):
            if not any(m.get("role") == "tool" for m in messages):
                arg = next(iter(search["function"]["parameters"]["properties"]))
                return {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_0", "type": "function",
                    "function": {"name": "KB_search", "arguments": json.dumps({arg: "credit card rewards"})}}]}
            return {"role": "assistant", "content": "That completes your request."}

        trajectory = env.play(retrieval.DOMAIN, "task_001", "Hi, I have a question.", agent,
                              lambda system, messages, tools: {"role": "user", "content": "###STOP###"}, 0, 20)
        found = [m for m in trajectory.messages if m.get("role") == "tool"]
        assert found and len(found[0]["content"] or "") > 100, trajectory.messages
        assert _stats(port)["embedded_texts"] > after_load["embedded_texts"]  # the query
        assert endpoint.calls >= 2
        for server in env.pool._idle:  # the servers held no key and logged none
            assert not any(SECRET in v for v in server.command.environment().values())
            assert SECRET not in "\n".join(server._stderr)
    finally:
        if env is not None:
            env.close()
        stub.terminate()
        stub.wait(timeout=10)
