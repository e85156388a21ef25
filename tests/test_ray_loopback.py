"""A Ray head the tool starts itself (``--ray local``: :func:`~autorubric_local.runner.distributed.
start_local_ray`, also the Ray test modules' cluster) listens on loopback only: every TCP socket
that the driver or a process under it (GCS server, raylet and its object manager, agents, idle
workers, actors) listens on is bound to 127.0.0.1 or ::1, never to every interface (``0.0.0.0``,
``::``) or to the machine's address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable

import pytest

from ray_guard import ray, ray_installed  # noqa: E402, F401 (ray_installed: autouse fixture)

pytestmark = pytest.mark.ray
psutil = pytest.importorskip("psutil", reason="psutil is not installed (it lists the sockets Ray's processes use)")

from autorubric_local.runner import DistributedConfig  # noqa: E402
from autorubric_local.runner.distributed import RayActors  # noqa: E402


def idle_actor() -> type:
    """An actor class that only answers ``ready()``: a pool of them starts Ray's worker processes.
    Defined in a function, so that Ray ships it by value (workers cannot import test modules)."""

    class Idle:
        def ready(self) -> tuple[str, int, None]:
            return socket.gethostname(), os.getpid(), None

    return Idle


def is_loopback(ip: str) -> bool:
    """Whether a listening socket's address is loopback (127.0.0.0/8, ::1, or 127.0.0.1 mapped into
    IPv6 by a dual-stack socket, ``::ffff:127.0.0.1``)."""
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def listening(processes: Iterable[psutil.Process]) -> list[tuple[str, int, str, int]]:
    """``(process name, pid, ip, port)`` of every TCP socket the processes listen on."""
    found = []
    for process in processes:
        try:
            name, sockets = process.name(), process.net_connections(kind="tcp")
        except psutil.NoSuchProcess:  # ended since it was listed (e.g. an idle worker)
            continue
        found += [(name, process.pid, s.laddr.ip, s.laddr.port) for s in sockets if s.status == psutil.CONN_LISTEN]
    return found


def test_a_local_ray_head_and_its_workers_listen_on_loopback_only() -> None:
    assert not ray.is_initialized(), "another test left Ray running: this test must start its own head"
    with RayActors(DistributedConfig(workers=2)) as pool:  # as grade/sweep --ray local start it
        answers = pool.start(idle_actor())
        driver = psutil.Process()
        sockets = listening([driver, *driver.children(recursive=True)])
    names = {name for name, _, _, _ in sockets}
    assert {"gcs_server", "raylet"} <= names, sockets
    assert {pid for _, pid, _ in answers} <= {pid for _, pid, _, _ in sockets}, sockets  # the actors listen too
    exposed = [f"{name} (pid {pid}) on {ip} port {port}" for name, pid, ip, port in sockets if not is_loopback(ip)]
    assert not exposed, "Ray listens beyond loopback: " + ", ".join(exposed)
