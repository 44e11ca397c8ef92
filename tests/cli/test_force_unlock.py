"""`skyform force-unlock CLUSTER`: asks first (only -y in a script), frees a live lock, and
says so when there is nothing to free."""

from __future__ import annotations

from skyform.state.db import open_state
from skyform.state.lock import cluster_lease


def _held_elsewhere(cluster: str):
    with open_state() as db:
        lease = db.try_lease(cluster_lease(cluster), purpose="skyform apply plan.json", ttl=600)
        assert lease is not None
        with db.transaction() as conn:  # a holder on another machine: alive as far as we know
            conn.execute("UPDATE leases SET host='ci-runner' WHERE name=?", (lease.name,))
    return lease


def _lease(cluster: str):
    with open_state() as db:
        return db.get_lease(cluster_lease(cluster))


def test_force_unlock_needs_confirmation_and_changes_nothing_without_it(cli):
    _held_elsewhere("train")
    refused = cli("force-unlock", "train")
    assert refused.exit_code == 1
    assert "needs confirmation, but stdin is not a terminal" in refused.stderr
    assert _lease("train") is not None


def test_force_unlock_frees_the_lock_naming_its_holder(cli):
    lease = _held_elsewhere("train")
    freed = cli("force-unlock", "train", "-y")
    assert freed.exit_code == 0
    assert f"Cluster 'train' is unlocked (it was held by {lease.owner} pid {lease.pid}" in (
        freed.stdout
    )
    assert "skyform apply plan.json" in freed.stdout
    assert _lease("train") is None


def test_force_unlock_of_an_unlocked_cluster_says_so(cli):
    done = cli("force-unlock", "train", "-y")
    assert done.exit_code == 0 and "Cluster 'train' is not locked: nothing to do." in done.stdout
