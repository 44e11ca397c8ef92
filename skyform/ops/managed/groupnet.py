"""A job group's barrier and names (SkyPilot's JobGroup networking).

Every task of a group is provisioned before any is submitted: a branch that has its cluster
waits in `arrive` until the others have theirs (or the job is stopped or cancelled). Then the
names `<task>-<rank>.<group>` of every node are made to resolve on every node of the group
(exec/grouphosts.py), before the first job starts, so a client never races its server's
name. A task recovered later arrives again with a new cluster: no barrier then (the others
are running), but the names are written again wherever they changed, its own node included.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from skyform.errors import ExecError
from skyform.exec import grouphosts
from skyform.exec.run import open_cluster
from skyform.state.models import ClusterHandle

Log = Callable[[str], None]
_INSTALLED_AS = {"hosts": "/etc/hosts", "nss": "libnss_wrapper"}


class GroupNet:
    def __init__(self, job_id: int, group: str, tasks: dict[int, str]) -> None:
        """`tasks`: index → name of the group's tasks that still have to run."""
        self.group = group
        self.key = grouphosts.group_key(job_id, group)
        self.names = dict(tasks)
        self._cond = threading.Condition()
        self._waiting_for = set(tasks)
        self._released = False
        self._clusters: dict[int, ClusterHandle] = {}
        self._installed: dict[int, tuple[object, ...]] = {}
        self._publishing = threading.Lock()

    def arrive(self, index: int, cluster: ClusterHandle, *, check: Callable[[], None], log: Log):
        """Task `index` has `cluster`: wait for the rest of the first round, then make sure
        every node resolves every name. `check` raises when the branch must stop."""
        with self._cond:
            self._clusters[index] = cluster
            self._waiting_for.discard(index)
            self._cond.notify_all()
            if self._waiting_for and not self._released:
                others = ", ".join(self.names[i] for i in sorted(self._waiting_for))
                log(f"job group {self.group}: waiting for {others} to be provisioned")
            while self._waiting_for and not self._released:
                self._cond.wait(0.5)
                check()
            self._released = True
        self._publish(log)

    def leave(self, index: int) -> None:
        """Task `index` ended (or stopped): nothing more is written to its nodes. A task that
        leaves before it arrived failed or was stopped: the job stops, and the branches still
        waiting are told so by their `check`, not let through."""
        with self._cond:
            self._clusters.pop(index, None)
            self._installed.pop(index, None)

    def _publish(self, log: Log) -> None:
        with self._publishing:
            with self._cond:
                clusters = dict(self._clusters)
            members = [(self.names[i], clusters[i]) for i in sorted(clusters)]
            names = grouphosts.entries(self.group, members)
            for index, cluster in sorted(clusters.items()):
                stamp = (tuple(n.node_id for n in cluster.nodes), *names)
                if self._installed.get(index) == stamp:
                    continue
                if self._install_on(cluster, names, log):
                    with self._cond:
                        if self._clusters.get(index) is cluster:
                            self._installed[index] = stamp

    def _install_on(self, cluster: ClusterHandle, names: list, log: Log) -> bool:
        """True when every node of `cluster` now resolves `names`."""
        try:
            with open_cluster(cluster, require_all=False) as session:
                outcomes = session.fan_out(
                    lambda rank, runner: grouphosts.install(runner, self.key, self.group, names)
                )
        except ExecError as err:
            log(f"job group {self.group}: could not reach {cluster.name}: {err.message}")
            return False
        done = True
        for rank, outcome in sorted(outcomes.items()):
            where = f"{cluster.name} node {rank}"
            if outcome.error is not None:
                log(f"job group {self.group}: names not written on {where}: {outcome.error}")
                done = False
            elif outcome.value is not None and outcome.value.mode in _INSTALLED_AS:
                how = _INSTALLED_AS[outcome.value.mode]
                log(f"job group {self.group}: {len(names)} names on {where} ({how})")
            else:
                why = outcome.value.detail if outcome.value is not None else "no answer"
                log(
                    f"job group {self.group}: the group's names will not resolve on {where}: "
                    f"{why} (install libnss-wrapper there, or let its user sudo without a "
                    "password)"
                )
        return done
