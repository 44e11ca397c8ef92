"""Fencing tokens on both stores (SQLite and PostgreSQL): every time a lease is taken anew
its token goes up, released or not; a process fenced with an older token has every write
refused — nothing of it lands — while the newer holder's writes go through; a renewer that
finds its lease taken makes the process stop at its next check."""

from __future__ import annotations

import time

import pytest
from helpers import local_cluster_record

from skyform.errors import Fenced
from skyform.state import fencing
from skyform.state.db import open_state
from skyform.state.lock import Renewer

pytestmark = pytest.mark.usefixtures("backend")

_record = local_cluster_record


@pytest.fixture(autouse=True)
def unfenced():
    yield
    fencing.fence_process(None)


def test_a_lease_taken_anew_gets_a_higher_token_even_after_a_release():
    with open_state() as db:
        first = db.try_lease("managed/1", purpose="a", ttl=30)
        assert first is not None
        db.release_lease(first)
        second = db.try_lease("managed/1", purpose="b", ttl=30)
        assert second is not None
        db.force_unlock("managed/1")
        third = db.try_lease("managed/1", purpose="c", ttl=30)
        assert third is not None
        assert first.fence < second.fence < third.fence
        assert db.get_lease("managed/1").fence == third.fence
        other = db.try_lease("managed/2", purpose="d", ttl=30)
        assert other is not None and other.fence == 1  # each name counts on its own


def test_a_fenced_process_writes_nothing_once_its_lease_is_taken_anew():
    with open_state() as db:
        stale = db.try_lease("managed/1", purpose="old controller", ttl=0.2)
        assert stale is not None
        fencing.fence_process(fencing.Fence(stale.name, stale.fence))
        db.put_cluster(_record("before"))  # its own lease: written
        time.sleep(0.3)  # it stalled past its lease...
        fencing.fence_process(None)
        newer = db.try_lease("managed/1", purpose="new controller", ttl=30)  # ...and lost it
        assert newer is not None
        fencing.fence_process(fencing.Fence(stale.name, stale.fence))
        serial = db.serial
        with pytest.raises(Fenced) as refused:
            db.put_cluster(_record("stale"))
        assert "managed/1 was taken by another holder" in refused.value.message
        assert f"(token {newer.fence} > {stale.fence})" in refused.value.message
        with pytest.raises(Fenced), db.transaction() as conn:  # any write, any table
            conn.execute("DELETE FROM clusters")
        fencing.fence_process(fencing.Fence(newer.name, newer.fence))
        db.put_cluster(_record("newer"))
        fencing.fence_process(None)
        assert [c.name for c in db.list_clusters()] == ["before", "newer"]
        assert db.serial == serial + 1  # nothing of the stale writes landed


def test_a_renewer_that_finds_its_lease_taken_stops_the_process_at_its_next_check():
    with open_state() as db:
        lease = db.try_lease("managed/1", purpose="controller", ttl=0.6)
        assert lease is not None
        fencing.fence_process(fencing.Fence(lease.name, lease.fence))
        fencing.raise_if_lost()  # its own lease: nothing to say
        renewer = Renewer(db, lease, 0.6)
        with open_state() as other:
            other.force_unlock("managed/1")
            assert other.try_lease("managed/1", purpose="another", ttl=30) is not None
        renewer.start()
        renewer.join(timeout=5)
        assert renewer.lost
        with pytest.raises(Fenced):
            fencing.raise_if_lost()
