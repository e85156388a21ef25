"""Grade a run's chunks on Ray actors: :class:`RayExecutor` (``EvalConfig(distributed=...)``,
``autorubric-local grade --ray``) on a pool of actors (:class:`RayActors`, also under the bias
sweeps' executor). Needs the ``[ray]`` extra; this module is the only one that imports Ray, and
only when a pool connects (:func:`import_ray`), so importing it costs nothing without Ray.

How a distributed run goes: the driver (the process running
:class:`~autorubric_local.runner.runner.EvalRunner`) plans and chunks the dataset exactly as a
local run does. :class:`RayExecutor` starts ``workers`` actors (:class:`~.executors.GraderWorker`), each sent
a copy of the grader without its engines (judge configs, prompts, seed: never weights), so each
actor loads the judges' models from its own node's files. Chunks go to the actors through a
bounded queue (``chunks_per_worker`` in flight per actor); each returned chunk of
:class:`~autorubric_local.graders.criterion_grader.GradedItem` objects is committed by the driver
alone, in one transaction, exactly as a local run commits it: same rows, content hash, resume.

Failures use Ray's own mechanisms: actors are created with ``max_restarts`` and their calls with
``max_task_retries``, so when an actor's process dies its chunks in flight are graded again by
the restarted actor (at-least-once grading; the driver commits each chunk index once). A driver
that dies leaves its committed chunks in SQLite and a resume grades the rest.

A Ray head this package starts itself (``--ray local``: :func:`start_local_ray`) listens on
127.0.0.1 only; a cluster given by address is used as it is.
"""

from __future__ import annotations

import contextlib
import copy
import ipaddress
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Self

from autorubric_local.core.errors import EngineError, InputError
from autorubric_local.graders.criterion_grader import (
    CriterionGrader,
    JudgeSpec,
)
from autorubric_local.graders.decision_stage import DecisionClients
from autorubric_local.runner.config import RAY_AUTO, RAY_LOCAL, DistributedConfig
from autorubric_local.runner.executors import RunExecutor

logger = logging.getLogger(__name__)

RAY_MISSING = "distributed grading needs Ray: pip install 'autorubric-local[ray]' (or scripts/setup_ray.sh)"
LOOPBACK = "127.0.0.1"


def import_ray() -> Any:
    """The ``ray`` module.

    Raises
    ------
    EngineError
        Ray is not installed (the message says how to install the extra).
    """
    try:
        import ray
    except ImportError as exc:
        raise EngineError(RAY_MISSING) from exc
    return ray


def start_local_ray(num_cpus: int, num_gpus: int = 0, object_store_memory: int | None = None) -> str:
    """Start a new Ray head in this process whose services listen on 127.0.0.1 only; return its
    GCS address (``127.0.0.1:PORT``). Stop it with ``ray.shutdown()``.

    Ray binds the gRPC servers of its GCS, raylet, object manager and workers, and its agents, to
    127.0.0.1 when the node's IP is 127.0.0.1, and to every interface (or the node IP) otherwise.
    On Linux, Ray 2.60 replaces a node IP of 127.0.0.1 by the machine's address
    (``services.resolve_ip_for_localhost``) unless multi-node clusters are off
    (``ray_constants.ENABLE_RAY_CLUSTER``, read from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when Ray
    is imported); so they are off while ``ray.init`` starts the head, and on again after (a driver
    of another process joins this head only with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: otherwise
    it turns ``127.0.0.1:PORT`` into the machine's address). Ray's dashboard (web UI) is off.

    Parameters
    ----------
    num_cpus : int >= 1
        Logical CPUs of the head.
    num_gpus : int >= 0, default 0
        GPUs of the head.
    object_store_memory : int, optional
        Bytes of the object store (Ray's default when None).

    Raises
    ------
    EngineError
        Ray is not installed, or its head is not on a loopback address (then it is shut down).
    RuntimeError, ConnectionError, ValueError
        From ``ray.init``: e.g. this process is already connected to Ray.
    """
    ray = import_ray()
    from ray._private import ray_constants

    clusters = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(address=RAY_LOCAL, _node_ip_address=LOOPBACK, num_cpus=num_cpus, num_gpus=num_gpus,
                 object_store_memory=object_store_memory, include_dashboard=False, logging_level=logging.WARNING)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = clusters
    gcs_address: str = ray.get_runtime_context().gcs_address
    host = gcs_address.rsplit(":", 1)[0].strip("[]")
    address = ipaddress.ip_address(host)
    if not address.is_loopback:
        ray.shutdown()
        raise EngineError(f"Ray started its head on {gcs_address}, not on {LOOPBACK}, so its services would listen "
                          "on every interface: it was shut down (a Ray other than 2.60 may choose the node IP "
                          "differently; see start_local_ray)")
    return gcs_address


def refuse_built_engines(judges: Sequence[JudgeSpec]) -> None:
    """Refuse judges that cannot be sent to Ray workers.

    Raises
    ------
    InputError
        A judge's ``LLMConfig.engine`` holds an engine object built in this process: it cannot
        be sent to another process (weights, open devices); give the judge by ``model`` instead.
    """
    built = [j.judge_id for j in judges if getattr(j.llm_config, "engine", None) is not None]
    if built:
        raise InputError(
            f"distributed grading sends judge configs to Ray workers, which load the models themselves; judges "
            f"{built} have LLMConfig.engine (an engine object built in this process), which cannot be shipped. "
            "Give them by model (preset, model folder or .gguf file present on every node) instead"
        )


def shippable_grader(grader: CriterionGrader) -> CriterionGrader:
    """A copy of ``grader`` to send to workers: its settings and judge configs, without loaded
    engines (each worker loads its own from the judges' ``LLMConfig``) and without the configs
    they were loaded with here (vLLM memory shares depend on the worker's platform:
    :func:`~autorubric_local.judges.memory.with_memory_shares`).

    Raises
    ------
    InputError
        As :func:`refuse_built_engines`.
    """
    refuse_built_engines(grader.all_judges)
    shipped = copy.copy(grader)
    shipped._engines = {}  # loaded models stay in this process; the copy loads its own
    shipped._decision_clients = DecisionClients()  # decision-model clients (open connections) too
    shipped._load_configs = None  # memory shares are computed where the engines load
    shipped._priors = dict(grader._priors)
    shipped._examples = dict(grader._examples)
    if grader.escalation_grader is not None:  # a live cascade's second stage, shipped the same way
        shipped.escalation_grader = shippable_grader(grader.escalation_grader)
    return shipped


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Keep this process's SIGTERM and SIGHUP handlers across ``ray.init``, which sets its own
    SIGTERM handler (``sys.exit(15)``): a driver stopped by ``kill`` would then exit 15 with no
    message, its run left ``running`` and its lease held, where the CLI's handler
    (``cli.common.stops_on_termination``) stops it as Ctrl-C does. Off the main thread (where
    no handler can be set) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in kept.items():
            if handler is not None:
                signal.signal(s, handler)


class RayActors:
    """A pool of ``settings.workers`` Ray actors of one class and a bounded queue of chunks to
    them (a :class:`~.in_process.WorkerPool`); a context manager: the actors are killed on exit,
    and a Ray head this pool started is shut down. :class:`RayExecutor` (runs) and the bias
    sweeps' executor are built on it.

    An actor class for the pool is a :class:`~.in_process.Worker`: a ``ready()`` method
    answering ``(host, pid, payload)`` and chunk methods answering ``(pid, result)``.

    Parameters
    ----------
    settings : DistributedConfig

    Attributes
    ----------
    chunks_by_pid : dict of int to int
        How many chunks each actor process handed back (a restarted actor has a new pid).
    hosts : dict of int to str
        The host of each actor process seen at start-up.
    startup_seconds : float
        How long :meth:`start` took (connecting to Ray, the actors loading the judges).
    """

    remote = True

    def __init__(self, settings: DistributedConfig) -> None:
        self.settings = settings
        self.chunks_by_pid: dict[int, int] = {}
        self.hosts: dict[int, str] = {}
        self.startup_seconds = 0.0
        self._ray: Any = None
        self._started_ray = False
        self._actors: list[Any] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Kill the actors (chunks in flight are dropped: never committed) and shut down a Ray
        head that :meth:`connect` started.

        An actor that cannot be killed (e.g. its cluster is gone) is logged as a warning, not
        raised: the other actors are still killed, the head this pool started is still shut
        down, and the result or error of the run being closed is kept.
        """
        ray, self._ray = self._ray, None
        if ray is None:
            return
        actors, self._actors = self._actors, []
        started, self._started_ray = self._started_ray, False
        try:
            for actor in actors:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception as exc:  # any error of Ray's: logged, never raised (see above)
                    logger.warning("could not kill Ray actor %s (%s: %s)", actor, type(exc).__name__, exc)
        finally:
            if started:
                ray.shutdown()

    def connect(self) -> Any:
        """Connect to Ray as ``settings.address`` says (:class:`DistributedConfig`); return ``ray``.

        Raises
        ------
        EngineError
            Ray is not installed, or no cluster answers at the address.
        """
        if self._ray is not None:
            return self._ray
        ray = import_ray()
        if not ray.is_initialized():
            address = self.settings.address
            try:
                with _signal_handlers_kept():
                    self._init(ray, address)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise EngineError(f"Ray: could not connect to {address!r}: {exc}") from exc
            self._started_ray = address == RAY_LOCAL
        self._ray = ray
        return ray

    def _init(self, ray: Any, address: str) -> None:
        if address == RAY_LOCAL:
            start_local_ray(max(1, math.ceil(self.settings.workers * self.settings.num_cpus)),
                            math.ceil(self.settings.workers * self.settings.num_gpus))
        else:
            ray.init(address=None if address == RAY_AUTO else address, logging_level=logging.WARNING)

    def start(self, worker_class: type, *args: Any) -> list[tuple[str, int, Any]]:
        """Start the actors (``worker_class(*args)`` in each, sent by value: a restarted actor is
        built again from them) and wait until each is ready; their ``ready()`` answers.

        Raises
        ------
        EngineError
            Ray is missing or unreachable, or an actor could not start (the message holds its
            error, e.g. a judge it could not load).
        """
        started = time.perf_counter()
        ray = self.connect()
        s = self.settings
        actor_class = ray.remote(worker_class).options(
            num_cpus=s.num_cpus, num_gpus=s.num_gpus, max_restarts=s.max_restarts, max_task_retries=s.max_task_retries
        )
        self._actors = [actor_class.remote(*args) for _ in range(s.workers)]
        try:
            answers = ray.get([actor.ready.remote() for actor in self._actors])
        except ray.exceptions.RayError as exc:
            raise EngineError(f"a Ray worker could not load the judges: {exc}") from exc
        self.hosts = {pid: host for host, pid, _ in answers}
        self.startup_seconds = time.perf_counter() - started
        return answers

    def worker_pids(self) -> list[int]:
        """Process ids of the actors as they are now, one per actor (asks each actor)."""
        ray = self.connect()
        return [pid for _, pid, _ in ray.get([actor.ready.remote() for actor in self._actors])]

    def dispatch(
        self, method: str, chunks: Sequence[Any], args: tuple[Any, ...], stop: threading.Event
    ) -> Iterator[tuple[int, Any]]:
        """``(chunk index, result)`` of ``actor.method(chunk, *args)`` for every chunk, in
        completion order, each chunk once. Each actor holds at most ``chunks_per_worker`` chunks;
        a freed actor gets the next one. Once ``stop`` is set no chunk is sent; chunks already
        sent are still yielded.

        Raises
        ------
        EngineError
            An actor died more often than ``max_restarts`` allows, or a chunk was lost more
            often than ``max_task_retries`` allows.
        """
        ray = self.connect()
        if not self._actors:
            raise RuntimeError("RayActors.dispatch before start()")
        queue = list(enumerate(chunks))[::-1]  # popped from the end: chunk 0 first
        load = [0] * len(self._actors)
        in_flight: dict[Any, tuple[int, int]] = {}  # object ref -> (chunk index, actor index)
        while queue or in_flight:
            while queue and not stop.is_set():
                actor = min(range(len(load)), key=load.__getitem__)
                if load[actor] >= self.settings.chunks_per_worker:
                    break
                index, chunk = queue.pop()
                in_flight[getattr(self._actors[actor], method).remote(list(chunk), *args)] = (index, actor)
                load[actor] += 1
            if not in_flight:
                return
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            index, actor = in_flight.pop(ref)
            load[actor] -= 1
            try:
                pid, result = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                raise EngineError(f"Ray worker {actor} died while grading chunk {index}, beyond what Ray may restart "
                                  f"or retry (max_restarts={self.settings.max_restarts}, max_task_retries="
                                  f"{self.settings.max_task_retries}); committed chunks are kept: {exc}") from exc
            except ray.exceptions.ObjectLostError as exc:
                raise EngineError(f"chunk {index}: its result was lost: {exc}") from exc
            self.chunks_by_pid[pid] = self.chunks_by_pid.get(pid, 0) + 1
            yield index, result


class RayExecutor(RunExecutor):
    """Grades a run's chunks on ``settings.workers`` Ray actors (module docstring): a
    :class:`~.executors.RunExecutor` on :class:`RayActors` of :class:`~.executors.GraderWorker`,
    each sent :func:`shippable_grader`'s copy of the grader.

    Raises
    ------
    InputError
        From :meth:`engines`, as :func:`shippable_grader` (before Ray is asked for anything).
    """

    def __init__(self, settings: DistributedConfig,
                 loading: Callable[[list[str]], AbstractContextManager[object]] | None = None) -> None:
        self.actors = RayActors(settings)
        super().__init__(self.actors, loading)

    def worker_grader(self, grader: CriterionGrader) -> CriterionGrader:
        """:func:`shippable_grader`: the grader's settings and judge configs, no engines."""
        return shippable_grader(grader)

    @property
    def chunks_by_pid(self) -> dict[int, int]:
        """:attr:`RayActors.chunks_by_pid`."""
        return self.actors.chunks_by_pid

    @property
    def hosts(self) -> dict[int, str]:
        """:attr:`RayActors.hosts`."""
        return self.actors.hosts

    def worker_pids(self) -> list[int]:
        """:meth:`RayActors.worker_pids`."""
        return self.actors.worker_pids()
