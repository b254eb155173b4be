"""The env-server protocol and its lifecycle, without any benchmark installed.

A fake environment (``tests/fake_env_server.py``) is served in a subprocess: start + health
check, every op with callbacks both ways, clean shutdown, a crash or a hang mid-episode turned
into an errored episode (not a hung run), and start failures that name their cause.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

import pytest

from envs import protocol as p
from envs.base import EnvError, Score, TaskSelection, TaskView, Trajectory, UnknownTaskError
from envs.server_client import (
    EnvServer,
    EnvUnavailableError,
    RemoteEnvironment,
    ServerCommand,
    ServerCrashed,
    ServerPool,
    ServerTimeout,
)

FAKE = Path(__file__).with_name("fake_env_server.py")


def fake_command(**env: str) -> ServerCommand:
    return ServerCommand(name="fake", argv=[sys.executable, str(FAKE)], env=env)


def agent_done(messages, tools):
    return {"role": "assistant", "content": "done"}


def user_says(system_prompt, messages, tools):
    return {"role": "assistant", "content": "please ping"}


@pytest.fixture
def server():
    s = EnvServer(fake_command(), start_timeout=60, reply_timeout=30)
    s.start()
    yield s
    s.close()


# ---- framing and models ----------------------------------------------------------------------

def test_every_message_kind_round_trips():
    view = TaskView(env="x", domain="d", task_id="t", policy="p", tools=[])
    messages = [
        p.Request(id=1, op="load", args={"domain": "d", "task_id": "t"}),
        p.Response(id=1, result=p.LoadResult(view=view, supervision={"task_id": "t"}).model_dump(mode="json")),
        p.Response(id=2, error=p.ErrorInfo(type="unknown_task", message="no such task")),
        p.Callback(id=1, name="agent_turn", args={"messages": [{"role": "user", "content": "é\nx"}], "tools": []}),
        p.CallbackReply(id=1, result={"message": {"role": "assistant", "content": "hi"}}),
    ]
    for message in messages:
        line = p.encode(message)
        assert line.endswith("\n") and line.count("\n") == 1
        assert p.decode(line) == message


def test_op_payloads_validate_and_round_trip():
    args = p.PlayArgs(domain="d", task_id="t", opening_request="hi", seed=3, max_steps=9)
    assert p.ARGS["play"].model_validate(args.model_dump(mode="json")) == args
    traj = Trajectory(messages=[{"role": "user", "content": "hi"}], termination="done", turns=1,
                      native={"ctx": {"a": [1, 2.5, None, True]}})
    result = p.PlayResult(trajectory=traj)
    assert p.RESULTS["play"].model_validate(result.model_dump(mode="json")) == result
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="task_id"):
        p.ARGS["load"].model_validate({"domain": "d"})


def test_garbage_is_a_protocol_error():
    with pytest.raises(p.ProtocolError, match="not a protocol message"):
        p.decode("hello world\n")
    with pytest.raises(p.ProtocolError):
        p.decode('{"kind": "request", "id": 1, "op": "dance"}')


def test_serve_answers_requests_and_relays_callbacks_in_process():
    """The server loop on in-memory streams: a play that calls back to the agent."""
    sys.path.insert(0, str(FAKE.parent))
    try:
        from fake_env_server import FakeEnvironment
    finally:
        sys.path.pop(0)
    requests = [
        p.Request(id=1, op="hello", args={}),
        p.Request(id=2, op="play", args=p.PlayArgs(domain="default", task_id="ok",
                                                     opening_request="hi").model_dump(mode="json")),
        p.CallbackReply(id=1, result={"message": {"role": "assistant", "content": "done"}}),
        p.Request(id=3, op="load", args={"domain": "default", "task_id": "nope"}),
        p.Request(id=4, op="shutdown", args={}),
    ]
    reader = io.StringIO("".join(p.encode(m) for m in requests))
    writer = io.StringIO()
    assert p.serve(FakeEnvironment, p.ServerConnection(reader, writer)) == 0
    out = [p.decode(line) for line in writer.getvalue().splitlines()]
    assert [m.kind for m in out] == ["response", "callback", "response", "response", "response"]
    assert out[0].result["env"] == "fake" and out[0].result["protocol"] == p.PROTOCOL_VERSION
    assert out[1].name == "agent_turn" and out[1].args["messages"][0]["content"] == "hi"
    assert out[2].result["trajectory"]["native"] == {"final": "done"}
    assert out[3].error.type == "unknown_task" and "nope" in out[3].error.message


# ---- a real server process -------------------------------------------------------------------

def test_start_health_ops_and_clean_shutdown(server):
    assert server.hello.env == "fake" and server.hello.domains == ["default"]
    assert server.health()
    env_pid = server.pid
    ids = server.request("list_tasks", p.ListTasksArgs(selection=TaskSelection(domain="default")))
    assert ids["task_ids"] == ["ok", "crash", "hang", "noisy"]
    opening = server.request("opening_request", p.OpeningArgs(domain="default", task_id="ok"), user=user_says)
    assert opening == {"opening_request": "please ping"}
    played = server.request("play", p.PlayArgs(domain="default", task_id="ok", opening_request="hi"),
                            agent=agent_done, user=user_says)
    trajectory = Trajectory.model_validate(played["trajectory"])
    scored = server.request("score", p.ScoreArgs(domain="default", task_id="ok", trajectory=trajectory))
    assert Score.model_validate(scored["score"]).value == 1.0
    server.close()
    assert not server.alive and server._proc.returncode == 0 and server.pid == env_pid


@pytest.mark.parametrize("ending", ["shutdown", "eof"])
def test_a_server_with_a_slow_teardown_ends_at_once_with_exit_0(ending):
    """A benchmark whose interpreter teardown takes longer than the close grace (τ²'s takes
    seconds) must not be terminated: a server that is done ends at once, exit code 0."""
    s = EnvServer(fake_command(FAKE_ENV_SLOW_EXIT="60"), start_timeout=60, reply_timeout=30)
    s.start()
    t0 = time.monotonic()
    if ending == "shutdown":
        s.close(timeout=3)       # the shutdown op, then EOF
    else:
        s.kill(grace=3)          # EOF on stdin alone
    assert s._proc.returncode == 0, f"ended with {s._proc.returncode} after {time.monotonic() - t0:.1f} s"


def test_tool_call_round_trip_reaches_the_user_callback(server):
    calls = []

    def agent(messages, tools):
        calls.append(("agent", [t["function"]["name"] for t in tools]))
        if len(calls) == 1:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}
        return {"role": "assistant", "content": "done"}

    def user(system_prompt, messages, tools):
        calls.append(("user", system_prompt))
        return {"role": "assistant", "content": "ok"}

    played = server.request("play", p.PlayArgs(domain="default", task_id="ok", opening_request="hi"),
                            agent=agent, user=user)
    assert calls == [("agent", ["ping"]), ("user", "You are a user."), ("agent", ["ping"])]
    assert played["trajectory"]["native"]["final"] == "done"


def test_remote_errors_are_typed(server):
    with pytest.raises(UnknownTaskError, match="nope"):
        server.request("load", p.TaskArgs(domain="default", task_id="nope"))
    with pytest.raises(EnvError, match="no final message"):
        server.request("score", p.ScoreArgs(domain="default", task_id="ok",
                                            trajectory=Trajectory(termination="x", turns=0)))
    assert server.health()  # errors leave the server usable


def test_a_failing_callback_raises_the_runtimes_own_error_and_keeps_the_server(server):
    class ModelDown(RuntimeError):
        pass

    def broken_agent(messages, tools):
        raise ModelDown("provider unreachable")

    with pytest.raises(ModelDown, match="provider unreachable"):
        server.request("play", p.PlayArgs(domain="default", task_id="ok", opening_request="hi"),
                       agent=broken_agent, user=user_says)
    assert server.health()


def test_stray_stdout_from_the_benchmark_does_not_break_the_protocol(server):
    played = server.request("play", p.PlayArgs(domain="default", task_id="noisy", opening_request="hi"),
                            agent=agent_done, user=user_says)
    assert played["trajectory"]["termination"] == "done"


def test_crash_mid_episode_raises_server_crashed_with_the_cause(server):
    started = time.monotonic()
    with pytest.raises(ServerCrashed, match="exited with code 3 during play") as info:
        server.request("play", p.PlayArgs(domain="default", task_id="crash", opening_request="hi"),
                       agent=agent_done, user=user_says)
    assert "simulated crash" in str(info.value)
    assert time.monotonic() - started < 10
    assert not server.alive
    with pytest.raises(ServerCrashed, match="unusable"):
        server.request("health", p.Empty())


def test_hang_mid_episode_times_out_and_kills_the_server():
    server = EnvServer(fake_command(), start_timeout=60, reply_timeout=1.5)
    server.start()
    started = time.monotonic()
    with pytest.raises(ServerTimeout, match="did not answer play within 1.5 s"):
        server.request("play", p.PlayArgs(domain="default", task_id="hang", opening_request="hi"),
                       agent=agent_done, user=user_says)
    assert time.monotonic() - started < 10
    server._proc.wait(timeout=10)
    assert not server.alive


def test_start_failure_in_the_environment_names_the_cause():
    server = EnvServer(fake_command(FAKE_ENV_FAIL_START="1"), start_timeout=60)
    with pytest.raises(EnvUnavailableError, match="did not start: startup failed: No module named 'fake_benchmark'"):
        server.start()
    assert not server.alive


def test_missing_interpreter_names_the_path(tmp_path):
    missing = str(tmp_path / "venv" / "bin" / "python")
    server = EnvServer(ServerCommand(name="fake", argv=[missing, str(FAKE)]))
    with pytest.raises(EnvUnavailableError, match=f"cannot start the fake env server: {missing}"):
        server.start()


def test_a_process_that_exits_at_once_is_reported_with_its_exit_code():
    cmd = ServerCommand(name="fake", argv=[sys.executable, "-c",
                                           "import sys; sys.stderr.write('boom: no such module\\n'); sys.exit(5)"])
    with pytest.raises(EnvUnavailableError, match=r"exited with code 5 before answering hello \(stderr: boom"):
        EnvServer(cmd, start_timeout=30).start()


def test_a_server_that_never_answers_hello_times_out():
    cmd = ServerCommand(name="fake", argv=[sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(EnvUnavailableError, match="did not answer hello within 1 s"):
        EnvServer(cmd, start_timeout=1).start()


def test_secrets_stay_out_of_the_server_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HF_TOKEN", "hf-test")
    env = fake_command(EXTRA="1").environment()
    assert "OPENAI_API_KEY" not in env and "HF_TOKEN" not in env and env["EXTRA"] == "1"


# ---- the pool and the remote environment -----------------------------------------------------

def test_pool_gives_each_concurrent_lease_its_own_server_and_replaces_crashed_ones():
    pool = ServerPool(fake_command(), max_size=3, start_timeout=60, reply_timeout=30)
    try:
        pids, barrier = [], threading.Barrier(3)

        def use():
            with pool.lease() as server:
                pids.append(server.pid)
                barrier.wait(timeout=60)

        threads = [threading.Thread(target=use) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=90)
        assert len(set(pids)) == 3 and pool.size == 3

        env = RemoteEnvironment("fake", pool)
        with pytest.raises(ServerCrashed):
            env.play("default", "crash", "hi", agent_done, user_says, 0, 10)
        assert pool.size == 2  # the dead server left the pool
        trajectory = env.play("default", "ok", "hi", agent_done, user_says, 0, 10)
        assert env.score("default", "ok", trajectory).value == 1.0
    finally:
        pool.close()
    assert pool.size == 0


def test_a_request_interrupted_mid_callback_retires_its_server():
    """Ctrl-C while answering a callback leaves the server waiting for a reply: never reuse it."""
    pool = ServerPool(fake_command(), max_size=1, start_timeout=60, reply_timeout=30)
    env = RemoteEnvironment("fake", pool)
    try:
        def interrupted(messages, tools):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            env.play("default", "ok", "hi", interrupted, user_says, 0, 10)
        assert pool.size == 0
        trajectory = env.play("default", "ok", "hi", agent_done, user_says, 0, 10)  # a fresh server
        assert env.score("default", "ok", trajectory).value == 1.0
    finally:
        env.close()

def test_remote_environment_implements_the_environment_protocol():
    from envs.base import Environment

    env = RemoteEnvironment("fake", ServerPool(fake_command(), max_size=1))
    try:
        assert isinstance(env, Environment)
        assert env.domains() == ["default"]
        assert env.select(TaskSelection(domain="default", ids=["ok"])) == ["ok"]
        with pytest.raises(UnknownTaskError, match="unknown fake domain"):
            env.select(TaskSelection(domain="nope"))
        view, supervision = env.load("default", "ok")
        assert view.categories == ["FAKE"] and supervision.expected_outcomes
        assert env.load("default", "ok")[0] is view  # cached
        assert env.task_info("default", "ok")["categories"] == ["FAKE"]
        assert env.opening_request("default", "ok", user_says, 0) == "please ping"
    finally:
        env.close()


# ---- through the runtime: a dead server is an errored episode, not a hung run ----------------

def _run(tmp_path, task_ids, reply_timeout=30.0):
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services
    from runtime.episode.spec import RunSpec
    from runtime.llm.layer import ModelLayer, ModelSpec
    from runtime.folder.store import RunStore
    from testkit.scripted import register_script, text

    def script(request, context):
        return text("please ping" if context.get("purpose") == "user" else "done")

    spec = ModelSpec(model=register_script("fake-env-roles", script))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    pool = ServerPool(fake_command(), max_size=2, start_timeout=60, reply_timeout=reply_timeout)
    env = RemoteEnvironment("fake", pool)
    run_spec = RunSpec(run_id="fake", env=env.name, domain="default", task_ids=task_ids,
                       modes=["direct"], models=layer.specs, planner="none", concurrency=2)
    try:
        records = run_in_threads(run_spec, Services(env, layer, lambda m: None), RunStore(tmp_path / "run"))
        return {r.key.task_id: r for r in records}
    finally:
        pool.close()


def test_crashed_and_hung_servers_become_errored_episodes(tmp_path):
    started = time.monotonic()
    records = _run(tmp_path, ["ok", "crash", "hang"], reply_timeout=3.0)
    assert time.monotonic() - started < 60
    assert records["ok"].status == "ok" and records["ok"].score == 1.0
    crash, hang = records["crash"], records["hang"]
    assert crash.status == "error" and crash.error.stage == "execute"
    assert crash.error.type == "ServerCrashed" and "exited with code 3" in crash.error.message
    assert hang.status == "error" and hang.error.type == "ServerTimeout"
    assert "did not answer play within 3 s" in hang.error.message


# ---- the same protocol serves τ²-bench unchanged ----------------------------------------------

def test_tau2_served_over_the_protocol_scores_like_in_process(tmp_path):
    """``python -m envs.protocol envs.tau2:Tau2Environment``: τ²'s adapter behind a server,
    replayed by the τ² gold script, scores exactly what it scores in-process, and names its task
    set (as a container does: the fingerprint records the image's, not the runtime's)."""
    from envs.tau2 import Tau2Environment
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services
    from runtime.episode.spec import RunSpec
    from runtime.llm.layer import ModelLayer, ModelSpec
    from runtime.folder.store import RunStore
    from testkit.gold import GoldReplay

    cmd = ServerCommand(name="tau2", argv=[sys.executable, "-m", "envs.protocol", "envs.tau2:Tau2Environment"])
    remote = RemoteEnvironment("tau2", ServerPool(cmd, max_size=2, start_timeout=120, reply_timeout=120))
    try:
        ids = remote.select(TaskSelection(domain="airline", split="base"))[:2]
        assert remote.load("airline", ids[0]) == Tau2Environment().load("airline", ids[0])
        # a served τ² (a container's) names the task set it plays, for the run's fingerprint
        from runtime.compose.fingerprint import task_set_of

        named = task_set_of(remote, "airline")
        assert named == Tau2Environment().task_set("airline") and named["tasks_sha256"], named
        spec = ModelSpec(model=GoldReplay().model_name("gold-over-protocol"))
        layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
        run_spec = RunSpec(run_id="tau2-remote", env=remote.name, domain="airline", task_ids=ids,
                           modes=["direct"], models=layer.specs, planner="none", concurrency=2)
        records = run_in_threads(run_spec, Services(remote, layer, lambda m: None), RunStore(tmp_path / "run"))
    finally:
        remote.close()
    assert [r.status for r in records] == ["ok", "ok"], [r.error for r in records]
    assert {r.score for r in records} == {1.0}
