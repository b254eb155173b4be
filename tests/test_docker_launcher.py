"""The docker launcher (``envs.docker``): env servers in containers.

Unit tests need no engine: image tags (stable, and changing with what goes into the image),
the Dockerfile cut down to a target, stdout/stderr demultiplexing, the one-line message when no
engine is reachable (fallback with ``auto``, exit 2 when docker was demanded).

Engine tests run the fake env server (``tests/fake_env_server.py``) in the env-tau2 image: start,
limits, crash, hang, a container killed mid-episode, cleanup. They skip, with one line saying
why, when no engine answers or the image for the current inputs has not been built
(``scripts/docker-ci.sh`` builds it and runs them).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from envs import docker as dl
from envs import protocol as p
from envs.server_client import ServerCrashed, ServerTimeout

REPO = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).with_name("fake_env_server.py")


# ---- image inputs and tags ---------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the env-tau2 and runtime images are built from."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, root / name)
    (root / "envs").mkdir()
    (root / "envs" / "__init__.py").write_text("x = 1\n")
    (root / "envs" / "__pycache__").mkdir()
    (root / "envs" / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    for name in ("evrcore", "runtime", "critique", "planners", "testkit", "configs"):
        (root / name).mkdir()
        (root / name / "a.py").write_text("pass\n")
    return root


def inputs(repo: Path, target: str = "env-tau2", **kw) -> dl.BuildInputs:
    args = {"BASE_IMAGE": kw.pop("base", "evr-base:test"), "TAU2_VERSION": "26.3"}
    args.update(kw.pop("args", {}))
    return dl.BuildInputs(target=dl.TARGETS[target], base_image=args["BASE_IMAGE"], build_args=args,
                          repo=repo, **kw)


def test_tag_is_stable_and_names_the_repository(repo):
    first, second = inputs(repo).tag(), inputs(repo).tag()
    assert first == second
    assert first.startswith("evr-env-tau2:") and len(first.split(":")[1]) == 16


def test_tag_changes_with_each_input_that_goes_into_the_image(repo, tmp_path):
    base = inputs(repo).tag()
    assert inputs(repo, args={"TAU2_VERSION": "26.4"}).tag() != base
    assert inputs(repo, base="other:base").tag() != base
    assert inputs(repo, base_image_id="sha256:abc").tag() != base
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "a-1.0-py3-none-any.whl").write_bytes(b"w")
    assert inputs(repo, wheels=wheels).tag() != base
    (repo / "envs" / "__init__.py").write_text("x = 2\n")
    assert inputs(repo).tag() != base


def test_tag_ignores_what_does_not_go_into_the_image(repo, tmp_path):
    base = inputs(repo).tag()
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert inputs(repo, ca_bundle=ca).tag() == base          # transport only
    (repo / "envs" / "__pycache__" / "more.pyc").write_bytes(b"\1")
    assert inputs(repo).tag() == base                         # bytecode
    (repo / "runtime" / "a.py").write_text("changed\n")
    assert inputs(repo).tag() == base                         # not copied into env-tau2
    assert inputs(repo, "runtime").tag() != inputs(repo, "runtime", base="x").tag()
    text = (repo / "Dockerfile").read_text()
    (repo / "Dockerfile").write_text(text.replace('CMD ["--help"]', 'CMD ["--version"]'))
    assert inputs(repo).tag() == base                         # another target's stage


def test_the_dockerfile_is_cut_down_to_the_target_and_its_parents():
    text = (REPO / "Dockerfile").read_text()
    preamble, stages = dl.dockerfile_stages(text)
    assert "ARG BASE_IMAGE=python:3.11-slim" in preamble
    names = [name for name, _, _ in stages]
    assert {"base", "env-tau2", "env-toolsandbox", "runtime"} <= set(names)
    assert names[-1] == "runtime"  # the default target
    cut = dl.dockerfile_for("env-tau2", text)
    assert "AS base" in cut and "AS env-tau2" in cut
    assert "AS runtime" not in cut and "AS env-toolsandbox" not in cut
    with pytest.raises(dl.ImageBuildError, match="no stage 'nope'"):
        dl.dockerfile_for("nope", text)


def test_the_runtime_image_holds_every_package_the_project_installs():
    """The runtime stage copies, and its build inputs hash, each top-level package of the
    project (a package left out builds an image whose `import runtime.validate` fails)."""
    import tomllib

    found = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.rstrip("*") for pattern in found["include"]}
    stage = dl.dockerfile_for("runtime", (REPO / "Dockerfile").read_text()).split("AS runtime")[1]
    copied = {line.split()[1].strip("/") for line in stage.splitlines() if line.startswith("COPY ")}
    assert packages <= copied, f"not copied into the runtime image: {packages - copied}"
    assert packages <= set(dl.TARGETS["runtime"].sources), "not hashed into the runtime tag"


def test_the_build_context_holds_only_what_the_target_copies(repo, tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("CA")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "a-1.0-py3-none-any.whl").write_bytes(b"w")
    ctx = inputs(repo, ca_bundle=ca, wheels=wheels).context(tmp_path / "ctx")
    assert sorted(p.name for p in ctx.iterdir()) == [".dockerignore", ".evr-build", "Dockerfile", "envs"]
    assert (ctx / ".evr-build" / "ca.crt").read_text() == "CA"
    assert (ctx / ".evr-build" / "wheels" / "a-1.0-py3-none-any.whl").exists()
    assert not (ctx / "envs" / "__pycache__").exists()


# ---- stdout/stderr demultiplexing ----------------------------------------------------------------

def test_frames_become_whole_lines_per_stream():
    out, err = dl.LineQueue(), dl.LineQueue()
    frames = [(1, b'{"a":'), (2, b"warn"), (1, b'1}\n{"b":2}\n{"c"'), (2, b"ing\n"), (1, b":3}\n"),
              (1, b"tail")]
    dl.demux_lines(iter(frames), out, err)
    assert list(out) == [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n', b"tail"]
    assert list(err) == [b"warning\n"]


def test_a_broken_stream_still_ends_both_readers():
    def frames():
        yield (1, b"line\n")
        raise ConnectionResetError("gone")

    out, err = dl.LineQueue(), dl.LineQueue()
    dl.demux_lines(frames(), out, err)
    assert list(out) == [b"line\n"] and list(err) == []


# ---- no engine ----------------------------------------------------------------------------------

@pytest.fixture
def no_engine(monkeypatch):
    docker = pytest.importorskip("docker", reason="the Docker SDK for Python is not installed")

    def refuse(*args, **kwargs):
        raise docker.errors.DockerException(
            "Error while fetching server API version: ('Connection aborted.', "
            "ConnectionRefusedError(111, 'Connection refused'))")

    monkeypatch.setattr(docker, "from_env", refuse)
    monkeypatch.delenv("DOCKER_HOST", raising=False)


def test_no_engine_is_one_line_naming_the_cause(no_engine):
    with pytest.raises(dl.DockerUnavailable) as info:
        dl.connect()
    assert str(info.value) == ("no Docker engine reachable (connection refused at "
                               "unix:///var/run/docker.sock)")


def test_auto_without_an_engine_says_so_once_and_runs_inproc(no_engine, capsys):
    from envs import get_environment
    from envs.tau2 import Tau2Environment

    env = get_environment("tau2", sandbox="auto")
    assert isinstance(env, Tau2Environment)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["sandbox auto: no Docker engine reachable (connection refused at "
                   "unix:///var/run/docker.sock); using the inproc launcher instead"]


def test_toolsandbox_falls_back_to_its_venv_launcher(no_engine):
    said = []
    assert dl.docker_environment("toolsandbox", demanded=False, say=said.append) is None
    assert said[0].endswith("using the venv launcher instead")


def test_demanded_docker_without_an_engine_exits_2_with_one_line(no_engine, tmp_path, capsys):
    from runtime import validate
    from testkit.scripted import register_script, text

    model = register_script("docker-none", lambda request, context: text("hi"))
    code = validate.main(["--env", "tau2", "--sandbox", "docker", "--model", model,
                          "--task-ids", "1", "--out", str(tmp_path / "run"), "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["error: sandbox docker: no Docker engine reachable (connection refused at "
                   "unix:///var/run/docker.sock)"]
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_the_command_line_without_an_engine_is_one_line_and_exit_2(no_engine, capsys):
    from envs.docker.cli import main

    assert main(["status"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: no Docker engine reachable (connection refused at unix:///var/run/docker.sock)"]


@pytest.mark.parametrize("module", ["envs.docker", "envs.docker_launcher"])
def test_the_command_line_runs_under_its_name_and_the_old_one(module):
    import subprocess

    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m {module} ") and "build" in done.stdout


def test_the_old_module_name_is_the_same_api():
    from envs import docker_launcher

    assert docker_launcher.docker_environment is dl.docker_environment
    assert docker_launcher.DockerLauncher is dl.DockerLauncher
    assert set(dl.__all__) <= set(dir(docker_launcher))


def test_ctrl_c_while_the_environment_starts_is_one_line_and_exit_130(monkeypatch, tmp_path, capsys):
    """Ctrl-C while a container's env server is still starting (before any episode) ends like
    Ctrl-C mid-run: one line, exit 130, no traceback."""
    import envs
    from runtime import validate
    from runtime.cli.lifecycle import INTERRUPTED
    from testkit.scripted import register_script, text

    def starting(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(envs, "get_environment", starting)
    model = register_script("docker-ctrl-c", lambda request, context: text("hi"))
    code = validate.main(["--env", "tau2", "--sandbox", "docker", "--model", model,
                          "--task-ids", "1", "--out", str(tmp_path / "run"), "--no-cache"])
    assert code == 130
    assert capsys.readouterr().err.strip().splitlines() == [INTERRUPTED]


def test_a_missing_sdk_reads_as_no_engine(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(dl.DockerUnavailable, match=r"pip install 'docker>=7'"):
        dl.connect()


def test_sandbox_is_a_config_key_with_closed_values():
    from runtime.compose.config import RunConfig, UsageError, build

    assert RunConfig().sandbox == "inproc"
    assert build({"sandbox": "docker"}, {}).sandbox == "docker"
    assert build({"sandbox": "docker"}, {"sandbox": "auto"}).sandbox == "auto"
    with pytest.raises(UsageError, match="sandbox = 'podman'"):
        build({"sandbox": "podman"}, {}, source="run.yaml")


# ---- which base image ----------------------------------------------------------------------------

class _Images:
    """A stand-in for ``client.images`` holding some local images; pulls fail (no registry)."""

    def __init__(self, *local: str):
        self.local = {name: f"sha256:{i}{name}" for i, name in enumerate(local)}
        self.pulled: list[str] = []

    def get(self, name):
        import docker

        if name not in self.local:
            raise docker.errors.ImageNotFound(name)
        return type("Image", (), {"id": self.local[name]})()

    def pull(self, name):
        self.pulled.append(name)
        raise RuntimeError("dial tcp: lookup registry-1.docker.io: no such host")


def _client(*local: str):
    pytest.importorskip("docker", reason="the Docker SDK for Python is not installed")
    return type("Client", (), {"images": _Images(*local)})()


@pytest.mark.parametrize("local, variable, want", [
    (("python:3.11-slim", dl.LOCAL_BASE_IMAGE), None, "python:3.11-slim"),
    ((dl.LOCAL_BASE_IMAGE,), None, dl.LOCAL_BASE_IMAGE),     # after scripts/docker-ci.sh
    ((dl.LOCAL_BASE_IMAGE, "mine:1"), "mine:1", "mine:1"),   # the variable wins
])
def test_the_base_image_is_found_without_a_variable(monkeypatch, local, variable, want):
    if variable:
        monkeypatch.setenv(dl.BASE_IMAGE_VAR, variable)
    else:
        monkeypatch.delenv(dl.BASE_IMAGE_VAR, raising=False)
    client = _client(*local)
    image, image_id, why = dl.choose_base_image(client)
    assert (image, image_id) == (want, client.images.local[want]) and why
    assert client.images.pulled == []
    inputs = dl.build_inputs("env-tau2", client)
    assert inputs.base_image == want and inputs.build_args["BASE_IMAGE"] == want


def test_no_base_image_anywhere_is_one_line_naming_the_ways_out(monkeypatch):
    monkeypatch.delenv(dl.BASE_IMAGE_VAR, raising=False)
    client = _client()
    with pytest.raises(dl.ImageBuildError) as info:
        dl.choose_base_image(client)
    assert client.images.pulled == ["python:3.11-slim"]
    message = str(info.value)
    assert "\n" not in message and dl.LOCAL_BASE_IMAGE in message
    assert "scripts/docker-ci.sh" in message and dl.BASE_IMAGE_VAR in message
    monkeypatch.setenv(dl.BASE_IMAGE_VAR, "mine:1")
    with pytest.raises(dl.ImageBuildError, match=r"mine:1 \(from EVR_DOCKER_BASE_IMAGE\)"):
        dl.choose_base_image(_client(dl.LOCAL_BASE_IMAGE), pull=False)


# ---- with an engine -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def engine():
    try:
        return dl.connect()
    except dl.DockerUnavailable as exc:
        pytest.skip(f"no Docker engine: {exc}")


@pytest.fixture(scope="module")
def tau2_image(engine):
    try:
        tag = dl.build_inputs("env-tau2", engine, pull=False).tag()
    except dl.ImageBuildError as exc:
        pytest.skip(str(exc))
    if not dl.image_exists(engine, tag):
        pytest.skip(f"no {tag} image for the current inputs: build it with `python -m "
                    "envs.docker build` (scripts/docker-ci.sh does, then runs these)")
    return tag


@pytest.fixture
def fake(engine, tau2_image, tmp_path):
    """A launcher whose containers serve the fake environment (its source passed with -c)."""
    launcher = dl.DockerLauncher(engine, "tau2", tau2_image, memory="256m", cpus=0.5, pids=64,
                                 log_dir=tmp_path / "logs")
    launcher.command = ["python", "-c", FAKE.read_text()]
    pools: list[dl.DockerServerPool] = []

    def pool(**kw) -> dl.DockerServerPool:
        made = dl.DockerServerPool(launcher, **{"start_timeout": 60, "reply_timeout": 60, **kw})
        pools.append(made)
        return made

    yield launcher, pool
    for made in pools:
        made.close()
    assert _ours(engine) == [], "containers left behind"


def _ours(client) -> list[str]:
    owner = dl.owner_id()
    return [c.name for c in client.containers.list(all=True, filters={"label": dl.LABEL})
            if c.labels.get(dl.OWNER_LABEL) == owner]


def agent_done(messages, tools):
    return {"role": "assistant", "content": "done"}


def test_a_container_serves_episodes_with_limits_and_no_network(engine, fake, tmp_path):
    launcher, pool = fake
    servers = pool(max_size=1)
    with servers.lease() as server:
        assert server.hello.env == "fake"
        assert server.health()
        name = server.container_name
        for _ in range(2):  # one container, several episodes
            played = server.request("play", p.PlayArgs(domain="default", task_id="ok",
                                                       opening_request="hi"), agent=agent_done)
            assert played["trajectory"]["native"] == {"final": "done"}
    attrs = engine.containers.get(name).attrs
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 256 * 1024 * 1024 and host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64 and host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert attrs["Config"]["User"] == "evr"
    assert attrs["Config"]["Labels"][dl.OWNER_LABEL] == dl.owner_id()
    servers.close()
    assert name not in _ours(engine)
    log = (tmp_path / "logs" / f"{name}.log").read_text()
    assert '"exit_code": 0' in log


@pytest.mark.parametrize("ending", ["shutdown", "eof"])
def test_a_closed_container_ends_by_itself_with_exit_0(engine, fake, tmp_path, ending):
    """Closing a server half-closes the attach socket: the server in the container reads EOF and
    ends (exit 0 in its log), even with a teardown slower than the grace period (τ²'s takes
    seconds), instead of being killed after it (137)."""
    launcher, pool = fake
    launcher.command = [*launcher.command, "--slow-exit", "60"]
    servers = pool(max_size=1)
    with servers.lease() as server:
        assert server.health()
        name = server.container_name
    if ending == "shutdown":
        servers.close()            # the run's end: the shutdown op, then EOF
    else:
        server.kill(grace=3)       # EOF on stdin alone, then removal
    assert name not in _ours(engine)
    header = json.loads((tmp_path / "logs" / f"{name}.log").read_text().splitlines()[0])
    assert (header["status"], header["exit_code"]) == ("exited", 0), header


def test_a_crash_mid_episode_names_the_cause_and_removes_the_container(engine, fake, tmp_path):
    launcher, pool = fake
    servers = pool(max_size=1)
    with pytest.raises(ServerCrashed, match=r"exited with code 3 during play.*simulated crash"):
        with servers.lease() as server:
            name = server.container_name
            server.request("play", p.PlayArgs(domain="default", task_id="crash", opening_request="hi"),
                           agent=agent_done)
    assert name not in _ours(engine)
    assert "simulated crash" in (tmp_path / "logs" / f"{name}.log").read_text()
    with servers.lease() as server:  # the pool starts a fresh container
        assert server.container_name != name and server.health()


def test_a_hung_server_times_out_and_its_container_goes(engine, fake):
    launcher, pool = fake
    servers = pool(max_size=1, reply_timeout=3)
    with pytest.raises(ServerTimeout, match="did not answer play within 3 s"):
        with servers.lease() as server:
            name = server.container_name
            server.request("play", p.PlayArgs(domain="default", task_id="hang", opening_request="hi"),
                           agent=agent_done)
    assert name not in _ours(engine)


def _hanging_episode(servers) -> tuple[threading.Thread, list[BaseException]]:
    """An episode on a leased server that plays the fake's ``hang`` task: returns once the
    server is inside ``play`` (its agent was called), with the list its error will land in."""
    started = threading.Event()
    errors: list[BaseException] = []

    def agent(messages, tools):
        started.set()
        return {"role": "assistant", "content": "done"}

    def episode():
        try:
            with servers.lease() as server:
                server.request("play", p.PlayArgs(domain="default", task_id="hang",
                                                  opening_request="hi"), agent=agent)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=episode)
    thread.start()
    assert started.wait(30)
    return thread, errors


def test_a_container_killed_mid_episode_is_a_crash_and_the_pool_goes_on(engine, fake):
    launcher, pool = fake
    servers = pool(max_size=1)
    thread, errors = _hanging_episode(servers)
    (name,) = _ours(engine)
    engine.containers.get(name).kill()
    thread.join(30)
    assert len(errors) == 1 and isinstance(errors[0], ServerCrashed)
    assert "exited with code 137 during play" in str(errors[0])
    assert name not in _ours(engine)
    with servers.lease() as server:
        assert server.health()


def test_a_container_that_dies_while_idle_is_replaced_and_removed(engine, fake):
    launcher, pool = fake
    servers = pool(max_size=1)
    with servers.lease() as server:
        first = server.container_name
    engine.containers.get(first).kill()
    with servers.lease() as server:
        assert server.container_name != first and server.health()
    deadline = time.monotonic() + 20
    while first in _ours(engine) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first not in _ours(engine)


def test_close_all_ends_containers_that_are_in_use(engine, fake):
    """Ctrl-C: ``close_all`` removes leased containers too, so in-flight episodes end now."""
    launcher, pool = fake
    servers = pool(max_size=2)
    thread, errors = _hanging_episode(servers)
    t0 = time.monotonic()
    dl.close_all()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - t0 < 20
    assert errors and _ours(engine) == []


def test_sandbox_docker_finds_the_base_image_without_a_variable(engine, monkeypatch):
    """After scripts/docker-ci.sh (it tags its base evr-base:local), `--sandbox docker` needs no
    EVR_DOCKER_BASE_IMAGE, and says in one line which base it used."""
    monkeypatch.delenv(dl.BASE_IMAGE_VAR, raising=False)
    found = [b for b in (dl.DEFAULT_BASE_IMAGE, dl.LOCAL_BASE_IMAGE) if dl.image_exists(engine, b)]
    if not found:
        pytest.skip(f"neither {dl.DEFAULT_BASE_IMAGE} nor {dl.LOCAL_BASE_IMAGE} is on this engine "
                    "(scripts/docker-ci.sh makes the second)")
    expected = dl.build_inputs("env-tau2", engine, base_image=found[0], pull=False).tag()
    if not dl.image_exists(engine, expected):
        pytest.skip(f"no {expected} image for the current inputs (scripts/docker-ci.sh builds it)")
    said: list[str] = []
    env = dl.docker_environment("tau2", demanded=True, say=said.append)
    try:
        assert isinstance(env, dl.DockerEnvironment) and env.launcher.image == expected
    finally:
        env.close()
    assert len(said) == 1 and f"base image {found[0]} (" in said[0], said


def test_stale_containers_of_dead_runtimes_are_swept(engine, tau2_image):
    container = engine.containers.create(tau2_image, ["sleep", "60"], labels={
        dl.LABEL: "1", dl.OWNER_LABEL: f"{socket.gethostname()}:999999"})
    try:
        assert container.name in dl.sweep_stale(engine)
    finally:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001
            pass
