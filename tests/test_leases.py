"""Run leases in the store: acquire (compare-and-set), refusal of a second writer while the
lease is live, takeover of a stale lease (old heartbeat, or a holder on this host whose process
ended), renewal, release, and chunk commits / run ends that write nothing once the lease is lost.
No model, no grading: rows are written directly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from autorubric_local.core.errors import RunLockedError
from autorubric_local.store import Store
from autorubric_local.store.leases import LeaseOwner, pid_alive
from autorubric_local.store.provenance import utc_now

OLD = "2000-01-01T00:00:00+00:00"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "results.sqlite")
    yield opened
    opened.close()


def new_run(store: Store, name: str = "demo", lease: LeaseOwner | None = None) -> str:
    return store.start_run(name=name, judges=[], grader={}, rubric=None, data_path=None, lease=lease)


def put_lease(store: Store, run_id: str, *, pid: int, host: str, heartbeat_utc: str) -> None:
    """A lease as another writer would have left it."""
    store.db["run_leases"].upsert(
        {"run_id": run_id, "owner": f"{host}:{pid}:feedface", "pid": pid, "host": host,
         "acquired_utc": heartbeat_utc, "heartbeat_utc": heartbeat_utc},
        pk="run_id",
    )


def ended_pid() -> int:
    """The pid of a process of this host that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


def test_owner_names_host_and_pid_and_is_unique() -> None:
    first, second = LeaseOwner.for_this_process(), LeaseOwner.for_this_process()
    assert (first.pid, first.host) == (os.getpid(), socket.gethostname())
    assert first.owner.startswith(f"{socket.gethostname()}:{os.getpid()}:")
    assert first.owner != second.owner


def test_start_run_with_a_lease_holds_it(store: Store) -> None:
    owner = LeaseOwner.for_this_process()
    run_id = new_run(store, lease=owner)
    holder = store.lease_holder(run_id)
    assert holder is not None
    assert (holder.owner, holder.pid, holder.host) == (owner.owner, owner.pid, owner.host)
    assert holder.acquired_utc == holder.heartbeat_utc
    assert holder.stale_reason(60.0) is None


def test_acquire_a_free_lease(store: Store) -> None:
    run_id = new_run(store)
    assert store.lease_holder(run_id) is None
    owner = LeaseOwner.for_this_process()
    assert store.acquire_run_lease(run_id, owner) is None
    assert store.lease_holder(run_id).owner == owner.owner  # type: ignore[union-attr]
    assert store.acquire_run_lease(run_id, owner) is None  # the holder may take it again


def test_second_writer_is_refused_while_the_lease_is_live(store: Store) -> None:
    first, second = LeaseOwner.for_this_process(), LeaseOwner.for_this_process()
    run_id = new_run(store, "busy", lease=first)
    holder = store.lease_holder(run_id)
    assert holder is not None
    with pytest.raises(RunLockedError) as refused:
        store.acquire_run_lease(run_id, second)
    message = str(refused.value)
    for fragment in ("'busy'", run_id, f"pid {os.getpid()}", f"host {socket.gethostname()}",
                     f"last heartbeat {holder.heartbeat_utc}", "60 s"):
        assert fragment in message
    assert store.lease_holder(run_id).owner == first.owner  # type: ignore[union-attr]


def test_live_lease_of_another_host_is_refused(store: Store) -> None:
    """A pid on another host cannot be checked: only the heartbeat decides."""
    run_id = new_run(store)
    put_lease(store, run_id, pid=ended_pid(), host="another-host", heartbeat_utc=utc_now())
    with pytest.raises(RunLockedError, match="host another-host"):
        store.acquire_run_lease(run_id, LeaseOwner.for_this_process())


def test_lease_with_an_old_heartbeat_is_taken_over(store: Store) -> None:
    run_id = new_run(store)
    put_lease(store, run_id, pid=os.getpid(), host="another-host", heartbeat_utc=OLD)
    owner = LeaseOwner.for_this_process()
    takeover = store.acquire_run_lease(run_id, owner, timeout_seconds=60.0)
    assert takeover is not None
    assert (takeover.previous.pid, takeover.previous.host) == (os.getpid(), "another-host")
    assert "heartbeat" in takeover.reason and "timeout 60 s" in takeover.reason
    assert store.lease_holder(run_id).owner == owner.owner  # type: ignore[union-attr]


def test_lease_of_an_ended_process_on_this_host_is_taken_over(store: Store) -> None:
    run_id = new_run(store)
    pid = ended_pid()
    put_lease(store, run_id, pid=pid, host=socket.gethostname(), heartbeat_utc=utc_now())
    takeover = store.acquire_run_lease(run_id, LeaseOwner.for_this_process())
    assert takeover is not None and takeover.reason == f"its process {pid} on this host has ended"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zombies are read from /proc")
def test_a_killed_child_not_yet_reaped_counts_as_ended() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert pid_alive(child.pid)
        child.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, still a zombie: not reaped
        assert not pid_alive(child.pid)
    finally:
        child.kill()
        child.wait(timeout=60)
    assert pid_alive(os.getpid())
    assert not pid_alive(0) and not pid_alive(-1)


def test_renew_moves_the_heartbeat_of_its_owner_only(store: Store) -> None:
    owner, other = LeaseOwner.for_this_process(), LeaseOwner.for_this_process()
    run_id = new_run(store, lease=owner)
    store.db.execute("update run_leases set heartbeat_utc = ?", [OLD])
    store.db.conn.commit()
    assert not store.renew_run_lease(run_id, other)
    assert store.lease_holder(run_id).heartbeat_utc == OLD  # type: ignore[union-attr]
    assert store.renew_run_lease(run_id, owner)
    assert store.lease_holder(run_id).heartbeat_utc > OLD  # type: ignore[union-attr]


def test_release_gives_the_lease_back_once(store: Store) -> None:
    owner, other = LeaseOwner.for_this_process(), LeaseOwner.for_this_process()
    run_id = new_run(store, lease=owner)
    assert not store.release_run_lease(run_id, other)
    assert store.release_run_lease(run_id, owner)
    assert store.lease_holder(run_id) is None
    assert not store.release_run_lease(run_id, owner)
    assert store.acquire_run_lease(run_id, other) is None


def test_finish_run_releases_the_lease_in_the_same_transaction(store: Store) -> None:
    owner = LeaseOwner.for_this_process()
    run_id = new_run(store, lease=owner)
    assert store.finish_run(run_id, "finished", wall_seconds=1.5, lease=owner)
    assert store.lease_holder(run_id) is None
    assert store.find_run(run_id)["status"] == "finished"  # type: ignore[index]


def test_a_writer_that_lost_its_lease_writes_nothing(store: Store) -> None:
    loser, winner = LeaseOwner.for_this_process(), LeaseOwner.for_this_process()
    run_id = new_run(store, "taken", lease=loser)
    store.db.execute("update run_leases set heartbeat_utc = ?", [OLD])
    store.db.conn.commit()
    assert store.acquire_run_lease(run_id, winner) is not None  # stale: taken over
    item = {"item_id": "a", "item_index": 0, "score": 1.0}
    judgment = {"item_id": "a", "criterion_index": 0, "judge_id": "j", "permutation_index": 0, "verdict": "MET"}
    with pytest.raises(RunLockedError, match=r"'taken'.*lost the run's lease.*not committed"):
        store.record_items(run_id, [item], [judgment], lease=loser)
    assert store.judgment_count(run_id) == 0 and store.item_rows(run_id) == []
    assert not store.finish_run(run_id, "failed", wall_seconds=3.0, lease=loser)
    assert store.find_run(run_id)["status"] == "running"  # type: ignore[index]
    assert store.lease_holder(run_id).owner == winner.owner  # type: ignore[union-attr]
    store.record_items(run_id, [item], [judgment], lease=winner)
    assert store.judgment_count(run_id) == 1


def test_unique_name_refuses_a_run_started_meanwhile(store: Store) -> None:
    holder = LeaseOwner.for_this_process()
    new_run(store, "race", lease=holder)
    with pytest.raises(RunLockedError, match=f"'race'.*being graded by another process: pid {os.getpid()}"):
        store.start_run(name="race", judges=[], grader={}, rubric=None, data_path=None,
                        lease=LeaseOwner.for_this_process(), unique_name=True)
    new_run(store, "done")
    with pytest.raises(RunLockedError, match="'done'.*started by another process.*run again to resume"):
        store.start_run(name="done", judges=[], grader={}, rubric=None, data_path=None, unique_name=True)
    assert store.run_names() == ["race", "done"]
    new_run(store, "race")  # without unique_name (resume=False): a new run of the same name
    assert store.run_names() == ["race", "done", "race"]
