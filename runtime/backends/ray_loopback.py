"""A local Ray instance listens on loopback only.

Ray's C++ servers (GCS, raylet, every core worker's) bind to every interface unless the node's
address is loopback, and its Python agents bind to the node's address. On Linux, Ray never
leaves the address at loopback: it turns ``127.0.0.1`` (``--node-ip-address``,
``_node_ip_address``) into the machine's routable address, so that other machines could join.
Ray has its own switch for a single-machine instance, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
(the default on macOS and Windows). With it, the node's address stays ``127.0.0.1``. Every
server then binds ``127.0.0.1`` (an IPv6 socket binds ``::ffff:127.0.0.1``), and no other node
can join.

Ray reads the switch once, when it is imported. So it is set both in the environment of the
processes Ray starts and in this process's copy of the constant. After the start, the
instance's address is checked: an instance that is not on loopback is refused.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Callable

SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch for a local-only instance ("0": the node's address stays 127.0.0.1)."""


def keep_on_loopback() -> Callable[[], None]:
    """Make the next local Ray instance of this process a loopback-only one. Returns what puts
    the switch back as it was, so a cluster joined later in this process is joined normally."""
    from ray._private import ray_constants

    env_before = os.environ.get(SWITCH)
    constant_before = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False

    def restore() -> None:
        ray_constants.ENABLE_RAY_CLUSTER = constant_before
        if env_before is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = env_before

    return restore


def is_loopback(host: str) -> bool:
    """``127.0.0.0/8``, ``::1`` or an IPv4-mapped loopback address (``::ffff:127.0.0.1``)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host == "localhost"
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def check_on_loopback(address: str) -> None:
    """``RuntimeError`` when the running instance's address (``host:port``) is not loopback."""
    host = address.rpartition(":")[0]
    if not is_loopback(host):
        raise RuntimeError(f"the local Ray instance came up on {host}, not on loopback, so its "
                           f"servers would listen on every interface; refused")
