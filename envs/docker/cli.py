"""``python -m envs.docker build|tag|status|clean``: images and containers by hand.

``build`` makes (or reuses) an image from the Dockerfile and prints one JSON line per target;
``tag`` prints the tag the current inputs hash to; ``status`` lists the engine, the project's
images and containers; ``clean`` removes containers whose runtime process is gone (and, with
``--images``, the project's images). No engine: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

from envs.docker.engine import LABEL, OWNER_LABEL, DockerUnavailable, connect, pid_alive, say
from envs.docker.images import (
    BASE_IMAGE_VAR,
    DEFAULT_BASE_IMAGE,
    LOCAL_BASE_IMAGE,
    TARGETS,
    WHEELS_VAR,
    build_image,
    build_inputs,
    image_exists,
)
from envs.server_client import EnvUnavailableError


class _OneLineParser(argparse.ArgumentParser):
    """Errors in one line and exit 2, like the runtime's commands (``runtime.cli.args``, which this
    package may not import)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=_Version, nargs=0, default=argparse.SUPPRESS,
                          help="print the version and exit")

    def error(self, message: str):
        print(f"error: {self.prog}: {' '.join(message.split())} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


class _Version(argparse.Action):
    """The installed version, looked up only when asked (as ``evrcore.args`` does)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata

        try:
            found = metadata.version("exec-validation-runtime")
        except metadata.PackageNotFoundError:
            found = "unknown (not installed; pip install -e . names it)"
        print(f"{parser.prog} {found}")
        parser.exit()


def parser(prog: str = "python -m envs.docker") -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=prog, description="Env-server images and containers.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    build = sub.add_parser("build", help="build (or reuse) an image from the Dockerfile")
    build.add_argument("--target", default="env-tau2", choices=[*TARGETS, "all"])
    build.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    build.add_argument("--force", action="store_true", help="build even if the tag exists")
    build.add_argument("--base-image", help=f"default: ${BASE_IMAGE_VAR}, else {DEFAULT_BASE_IMAGE} "
                                            f"or the local {LOCAL_BASE_IMAGE}, whichever is here")
    build.add_argument("--wheels", type=Path, help=f"default: ${WHEELS_VAR}")
    build.add_argument("--alias", action="store_true",
                       help="also tag the image <repository>:latest")
    tag = sub.add_parser("tag", help="print the tag the current inputs hash to")
    tag.add_argument("--target", default="env-tau2", choices=list(TARGETS))
    sub.add_parser("status", help="is an engine reachable; which images exist")
    clean = sub.add_parser("clean", help="remove the project's containers (and images)")
    clean.add_argument("--images", action="store_true")
    return parser


def main(argv: Optional[list[str]] = None, prog: str = "python -m envs.docker") -> int:
    args = parser(prog).parse_args(argv)
    try:
        client = connect()
    except DockerUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return {"build": _build, "tag": _tag, "status": _status, "clean": _clean}[args.cmd](client, args)
    except EnvUnavailableError as exc:  # bad input or a missing setup: 2, as in runtime.envs
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _build(client, args) -> int:
    targets = list(TARGETS) if args.target == "all" else [args.target]
    for target in targets:
        inputs = build_inputs(target, client, base_image=args.base_image, wheels=args.wheels)
        tag = inputs.tag()
        started = time.monotonic()
        if args.force or args.no_cache or not image_exists(client, tag):
            build_image(client, inputs, nocache=args.no_cache, say=say)
            how = "built"
        else:
            how = "reused"
        if args.alias:
            client.images.get(tag).tag(inputs.target.repository, "latest")
        print(json.dumps({"target": target, "tag": tag, "how": how, "base": inputs.base_image,
                          "seconds": round(time.monotonic() - started, 2)}))
    return 0


def _tag(client, args) -> int:
    print(build_inputs(args.target, client).tag())
    return 0


def _status(client, args) -> int:
    version = client.version()
    print(f"engine: Docker {version.get('Version')} (API {version.get('ApiVersion')})")
    for image in client.images.list(filters={"label": LABEL}):
        print(f"image: {', '.join(image.tags) or image.short_id}")
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        print(f"container: {container.name} {container.status} {container.labels.get(OWNER_LABEL)}")
    return 0


def _clean(client, args) -> int:
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(OWNER_LABEL, "")
        pid = owner.rpartition(":")[2]
        if pid.isdigit() and pid_alive(int(pid)) and int(pid) != os.getpid():
            print(f"kept {container.name}: its runtime process {pid} is running")
            continue
        container.remove(force=True)
        print(f"removed container {container.name}")
    if args.images:
        for image in client.images.list(filters={"label": LABEL}):
            for name in image.tags:
                client.images.remove(name)
                print(f"removed image {name}")
    return 0
