"""Replica states: SkyPilot's 13 statuses, derived from what is known about a replica.

As in SkyPilot (sky/serve/replica_managers.py `to_replica_status`), the status is not stored:
it is a function of facts (launch and teardown progress, probe history, app failure,
preemption). Facts change by the pure transitions below; `status()` reads them.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

PROBE_INTERVAL_SECONDS = 10.0
FAILURE_WINDOW_SECONDS = 180.0  # continuous probe failure of a once-READY replica → teardown
DRAIN_SECONDS = 120.0
# a replica's launch is tried 3 times, 60 s then 120 s apart, before it is FAILED_PROVISION
# (SkyPilot replica_managers.py: max_retry=3, exponential backoff from _RETRY_INIT_GAP_SECONDS)
LAUNCH_TRIES = 3
LAUNCH_RETRY_GAP_SECONDS = 60.0
NEVER_READY_EXCEEDED = -1.0  # first_ready_time when initial_delay_seconds ran out


class ReplicaStatus(str, enum.Enum):
    PENDING = "PENDING"
    PROVISIONING = "PROVISIONING"
    STARTING = "STARTING"
    READY = "READY"
    NOT_READY = "NOT_READY"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    FAILED = "FAILED"
    FAILED_INITIAL_DELAY = "FAILED_INITIAL_DELAY"
    FAILED_PROBING = "FAILED_PROBING"
    FAILED_PROVISION = "FAILED_PROVISION"
    FAILED_CLEANUP = "FAILED_CLEANUP"
    PREEMPTED = "PREEMPTED"
    UNKNOWN = "UNKNOWN"


S = ReplicaStatus
FAILED_STATUSES = frozenset(
    {
        S.FAILED,
        S.FAILED_CLEANUP,
        S.FAILED_INITIAL_DELAY,
        S.FAILED_PROBING,
        S.FAILED_PROVISION,
        S.UNKNOWN,
    }
)
TERMINAL_STATUSES = FAILED_STATUSES | {S.SHUTTING_DOWN, S.PREEMPTED}
# which replicas go first when scaling down: the least useful
SCALE_DOWN_ORDER = (S.PENDING, S.PROVISIONING, S.STARTING, S.NOT_READY, S.READY)


class Step(str, enum.Enum):
    """Progress of a launch or a teardown."""

    SCHEDULED = "SCHEDULED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"


@dataclass(frozen=True)
class ReplicaFacts:
    replica_id: int
    version: int = 1
    is_spot: bool = False
    launch: Step = Step.SCHEDULED
    down: Step | None = None
    user_app_failed: bool = False
    ready_now: bool = False
    first_ready_time: float | None = None  # None never ready; -1 initial delay ran out
    first_not_ready_time: float | None = None  # first failed probe while starting
    failing_since: float | None = None  # first failed probe after having been ready
    probing_failed: bool = False
    is_scale_down: bool = False
    preempted: bool = False
    purged: bool = False
    # the launch failed for a reason another try cannot fix (the task or config is wrong)
    launch_fatal: bool = False

    @property
    def ever_ready(self) -> bool:
        return self.first_ready_time is not None and self.first_ready_time >= 0

    def status(self) -> ReplicaStatus:
        if self.down is not None:
            return self._teardown_status()
        if self.launch is Step.SCHEDULED:
            return S.PENDING
        if self.launch is Step.RUNNING:
            return S.PROVISIONING
        if self.launch is Step.FAILED:
            return S.FAILED_PROVISION
        if self.launch is Step.INTERRUPTED:
            return S.SHUTTING_DOWN
        if self.user_app_failed:
            return S.FAILED
        if self.first_ready_time == NEVER_READY_EXCEEDED:
            return S.FAILED_INITIAL_DELAY
        if self.probing_failed:
            return S.FAILED_PROBING
        if self.ready_now:
            return S.READY
        return S.STARTING if self.first_ready_time is None else S.NOT_READY

    def _teardown_status(self) -> ReplicaStatus:
        if self.down is Step.FAILED:
            return S.FAILED_CLEANUP
        if self.preempted:
            return S.PREEMPTED
        if self.down is not Step.SUCCEEDED or self.is_scale_down or self.purged:
            return S.SHUTTING_DOWN
        # a finished teardown of a failed replica: the record stays, showing why
        if self.user_app_failed:
            return S.FAILED
        if self.launch is Step.FAILED:
            return S.FAILED_PROVISION
        if self.first_ready_time == NEVER_READY_EXCEEDED:
            return S.FAILED_INITIAL_DELAY
        if self.probing_failed:
            return S.FAILED_PROBING
        return S.UNKNOWN

    # -- transitions ----------------------------------------------------------------------

    def launching(self) -> ReplicaFacts:
        return replace(self, launch=Step.RUNNING)

    def launched(self, ok: bool, *, fatal: bool = False) -> ReplicaFacts:
        return replace(
            self, launch=Step.SUCCEEDED if ok else Step.FAILED, launch_fatal=not ok and fatal
        )

    def app_failed(self) -> ReplicaFacts:
        return replace(self, user_app_failed=True, ready_now=False)

    def tearing_down(self, *, scale_down: bool = False, preempted: bool = False) -> ReplicaFacts:
        launch = Step.INTERRUPTED if self.launch in (Step.SCHEDULED, Step.RUNNING) else self.launch
        return replace(
            self,
            launch=launch,
            down=Step.RUNNING,
            ready_now=False,
            is_scale_down=self.is_scale_down or scale_down,
            preempted=self.preempted or preempted,
        )

    def torn_down(self, ok: bool) -> ReplicaFacts:
        return replace(self, down=Step.SUCCEEDED if ok else Step.FAILED)

    def probed(
        self,
        ok: bool,
        now: float,
        initial_delay_seconds: float,
        failure_window_seconds: float = FAILURE_WINDOW_SECONDS,
    ) -> ReplicaFacts:
        """One readiness-probe result (SkyPilot `_probe_all_replicas`): success is HTTP 200.

        Before the first success the grace period runs from the first *failed* probe;
        after it, one failure is NOT_READY and `failure_window_seconds` of failures in a row
        is FAILED_PROBING. Any success clears the failure clock."""
        if ok:
            first = self.first_ready_time if self.ever_ready else now
            return replace(self, ready_now=True, first_ready_time=first, failing_since=None)
        if not self.ever_ready:
            since = self.first_not_ready_time if self.first_not_ready_time is not None else now
            exceeded = now - since > initial_delay_seconds
            return replace(
                self,
                ready_now=False,
                first_not_ready_time=since,
                first_ready_time=NEVER_READY_EXCEEDED if exceeded else self.first_ready_time,
            )
        since = self.failing_since if self.failing_since is not None else now
        return replace(
            self,
            ready_now=False,
            failing_since=since,
            probing_failed=now - since >= failure_window_seconds,
        )

    def needs_teardown(self) -> bool:
        """A live replica whose status says it must go (failed app, probe verdicts)."""
        return self.down is None and self.status() in {
            S.FAILED,
            S.FAILED_INITIAL_DELAY,
            S.FAILED_PROBING,
            S.FAILED_PROVISION,
        }

    def probed_now(self) -> bool:
        """SkyPilot probes launched replicas with no teardown, app failure or preemption."""
        return (
            self.launch is Step.SUCCEEDED
            and self.down is None
            and not self.user_app_failed
            and not self.preempted
            and not self.purged
        )

    def unrecoverable(self) -> bool:
        """The failures that halt a version that was never READY (crash-loop protection):
        no probe passed within the initial delay, or the app exited, before any READY; or
        its launch failed in a way every replacement would (SkyPilot replaces those, which
        here relaunched one replica per controller round, 142 in 90 s)."""
        return not self.ever_ready and (
            self.user_app_failed
            or self.first_ready_time == NEVER_READY_EXCEEDED
            or self.launch_fatal
        )


def launch_retry_gap(
    failed_tries: int, first_gap: float = LAUNCH_RETRY_GAP_SECONDS
) -> float | None:
    """Seconds to wait before the next try of a launch that has failed `failed_tries` times,
    or None when it has had its tries (the replica is then FAILED_PROVISION)."""
    if failed_tries >= LAUNCH_TRIES:
        return None
    return first_gap * 2 ** (failed_tries - 1)


def kept_after_teardown(
    facts: ReplicaFacts, latest_version: int, rolled_back: Collection[int] = ()
) -> bool:
    """A finished teardown removes the record unless it shows a failure of the latest
    version worth seeing (SkyPilot `_handle_sky_down_finish`), or of a version rolled back:
    why an update was undone stays listed."""
    if facts.is_scale_down or facts.preempted or facts.purged:
        return False
    if facts.version != latest_version and facts.version not in rolled_back:
        return False
    return facts.status() in FAILED_STATUSES


def routable(statuses: Mapping[int, ReplicaStatus]) -> set[int]:
    """The replicas the load balancer may send requests to: the READY ones; when none is
    READY, the once-READY ones that only missed their latest probes (NOT_READY). Failing open
    like this (as AWS ALB and Envoy's panic mode do) beats a certain 503: a replica that
    missed one probe under load usually still answers, and one that does not is retried on
    another by the LB before any byte reaches the client."""
    ready = {rid for rid, s in statuses.items() if s is S.READY}
    return ready or {rid for rid, s in statuses.items() if s is S.NOT_READY}


def routed(
    statuses: Mapping[int, ReplicaStatus], versions: Mapping[int, int], active: Collection[int]
) -> set[int]:
    """The replicas published to the load balancer: `routable` among the replicas of the
    versions it routes to (updates.active_versions). Those are the versions with a READY
    replica, so when every replica only missed its latest probes there are none: then the
    fail-open holds over every version (before, nothing was published and every request got
    a 503 until a probe passed again, which a loaded machine turned into failed requests
    during a rolling update)."""
    if not active:
        return routable(statuses)
    return routable({rid: s for rid, s in statuses.items() if versions[rid] in active})
