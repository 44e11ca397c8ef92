"""The controller's update manager: `serve update` hands it a new version through the state
store (control.py: a request it polls and answers, its secrets sealed); it relabels or
replaces replicas (rolling or blue-green, updates.py), retires outdated ones, and rolls back
a version that never becomes READY (beyond SkyPilot, #4312). `serve down --replica-id` and
`serve down` reach it the same way, from any home sharing the store.
"""

from __future__ import annotations

import time
from dataclasses import replace

from skyform.errors import SkyformError
from skyform.serve import control, state, versions
from skyform.serve.adoption import Adoption
from skyform.serve.autoscaler import window_qps
from skyform.serve.controller_base import ControllerBase, interval, load_version, log
from skyform.serve.lb.requestlog import read_counts
from skyform.serve.replicas import FAILED_STATUSES, ReplicaStatus, Step
from skyform.serve.updates import Rollout, outdated_to_terminate, rollback_reason

LAUNCH_BUDGET_SECONDS = 1200.0  # on top of initial_delay_seconds, before a rollback
PROVISION_FAILURES_BEFORE_ROLLBACK = 3


def service_qps(name: str) -> float:
    """The service's requests per second over the autoscaler's window, from its LB's log."""
    return window_qps(read_counts(state.service_dir(name) / "requests.log"), time.time())


class Rollouts(Adoption, ControllerBase):
    request_key: str = ""  # control.make_key's, made when the controller starts

    def answer_requests(self) -> None:
        """Answer the requests waiting in the store (control.py), oldest first."""
        services = state.store()
        for request in services.pending(self.name):
            services.answer(request.id, self._answer(request.op, request.payload))

    def _answer(self, op: str, payload: dict[str, object]) -> dict[str, object]:
        try:
            if op == "update":
                secrets = control.opened_secrets(self.name, payload, self.request_key)
                target = payload.get("target")
                number = int(str(payload["version"]))
                note = self.apply_update(
                    number, secrets, None if target is None else int(str(target))
                )
            elif op == "terminate":
                rid = int(str(payload["replica_id"]))
                note = self.down_replica(rid, bool(payload.get("purge")))
            elif op == "down":
                log.info("serve down asked by a request: shutting down")
                self.stopping = True
                note = ""
            else:
                raise SkyformError(f"unknown control request {op!r}")
            return {"ok": True, "note": note}
        except SkyformError as exc:
            return {"ok": False, "error": exc.message, "hint": exc.hint}
        except (ValueError, KeyError, TypeError) as exc:
            return {"ok": False, "error": f"bad control request: {exc!r}"}

    def _qps(self) -> float:
        return service_qps(self.name)

    def apply_update(self, number: int, secrets: dict[str, str], target: int | None = None) -> str:
        """Roll out version `number`; `target`: the autoscaler target the update's plan
        showed (None: computed from the live traffic, as SkyPilot does)."""
        if self.stopping:
            raise SkyformError(f"service {self.name!r} is shutting down")
        if number <= self.record.version:
            raise SkyformError(f"version {number} is not newer than {self.record.version}")
        saved = versions.load(self.name, number)
        if saved is None:
            raise SkyformError(f"version {number} of {self.name!r} was not saved")
        new = load_version(self.name, saved, secrets or self.latest.inputs.secrets)
        old = self.latest
        notes = []
        if (new.spec.tls is None) != (old.spec.tls is None) or new.spec.tls != old.spec.tls:
            notes.append("tls changes are ignored by a running load balancer")
        if new.spec.load_balancing_policy != old.spec.load_balancing_policy:
            notes.append("load_balancing_policy changes are ignored (the LB keeps its policy)")
        self.versions[number] = new
        self.seal_secrets()
        relabelled = []
        if new.digest == old.digest and new.reuse_blocker is None:
            for rid, replica in sorted(self.replicas.items()):
                if replica.facts.version == old.record.number and not _gone(replica.facts):
                    replica.facts = replace(replica.facts, version=number)
                    relabelled.append(rid)
                    if replica.facts.status() is ReplicaStatus.READY:
                        self.ready_versions.add(number)
        serving = old.record.number if old.record.number in self.ready_versions else None
        if serving is None and self.rollout is not None:
            serving = self.rollout.previous
        budget = new.spec.readiness_probe.initial_delay_seconds + LAUNCH_BUDGET_SECONDS
        self.rollout = Rollout(
            number, serving, time.time(), interval("SKYFORM_SERVE_ROLLOUT_BUDGET", budget)
        )
        self.record = self.record.model_copy(update={"version": number, "reason": ""})
        self.autoscaler.updated(new.spec.replica_policy, self._qps(), target)
        how = (
            f"relabelled replicas {', '.join(map(str, relabelled))} in place"
            if relabelled
            else f"new replicas ({new.reuse_blocker or 'the task changed'})"
        )
        self.save_revision("update", f"update to version {number} ({saved.mode}): {how}")
        for note in notes:
            log.warning("%s", note)
        return "; ".join(notes)

    def down_replica(self, rid: int, purge: bool) -> str:
        """`serve down NAME --replica-id N` (SkyPilot's terminate_replica): a live replica is
        drained and torn down as a scale-down, then replaced at once if the service is below
        its target; a failed record stays unless `purge`. The revision says who asked."""
        replica = self.replicas.get(rid)
        if self.stopping:
            raise SkyformError(f"service {self.name!r} is shutting down")
        if replica is None:
            known = ", ".join(map(str, sorted(self.replicas))) or "none"
            raise SkyformError(f"it has no replica {rid}", f"Its replicas: {known}.")
        status = replica.facts.status()
        if status in (ReplicaStatus.SHUTTING_DOWN, ReplicaStatus.PREEMPTED):
            raise SkyformError(f"replica {rid} is already {status.value}", "Nothing to do.")
        failed = status in FAILED_STATUSES
        if failed and not purge:
            raise SkyformError(
                f"replica {rid} is {status.value}: its record stays to show why",
                f"Remove it with: skyform serve down {self.name} --replica-id {rid} --purge",
            )
        why = f"replica {rid} ({status.value}) terminated by serve down --replica-id {rid}"
        replica.reason = "terminated by serve down --replica-id"
        if failed and replica.facts.down is Step.SUCCEEDED:
            self.forget(rid)  # its cluster is gone already: only the record goes
        else:
            # a teardown that failed before (FAILED_CLEANUP) is tried again
            replica.facts = replace(replica.facts, down=None, purged=purge)
            self.teardown_replica(rid, scale_down=True)
        self.save_revision("down", why, terminated=[rid])
        self.decide_soon = True  # a replacement at once if the service is below its target
        return ""

    def retire_outdated(self) -> None:
        outdated = outdated_to_terminate(
            self.views(),
            self.record.version,
            self.autoscaler.final_target,
            self.mode,
            self.min_replicas_of,
        )
        if outdated:
            for rid in outdated:
                self.teardown_replica(rid, scale_down=True)
            self.save_revision(
                "update",
                f"version {self.record.version} ({self.mode}): retire outdated replicas "
                f"{', '.join(map(str, outdated))}",
                terminated=outdated,
            )

    def check_rollback(self, now: float) -> None:
        rollout = self.rollout
        if rollout is None or rollout.version != self.record.version:
            return
        if rollout.version in self.ready_versions:
            self.rollout = None  # it served: later failures are replaced as usual
            return
        reason = rollback_reason(self.views(), rollout, now, ever_ready=False)
        failed_launches = sum(
            1
            for r in self.replicas.values()
            if r.facts.version == rollout.version
            and r.facts.status() is ReplicaStatus.FAILED_PROVISION
        )
        fatal = any(
            r.facts.version == rollout.version and r.facts.launch_fatal
            for r in self.replicas.values()
        )  # its task or config cannot launch: more tries would fail alike
        if reason is None and (failed_launches >= PROVISION_FAILURES_BEFORE_ROLLBACK or fatal):
            reason = (
                f"version {rollout.version} never became READY: {failed_launches} replicas "
                f"failed to launch; rolled back to version {rollout.previous}"
            )
        if reason is None or rollout.previous is None:
            return
        log.warning("%s", reason)
        back = self.versions[rollout.previous]
        self.rollout = None
        rolled = [*self.record.rolled_back, rollout.version]
        self.record = self.record.model_copy(
            update={"version": rollout.previous, "reason": reason, "rolled_back": rolled}
        )
        self.autoscaler.updated(back.spec.replica_policy, self._qps())
        doomed = [
            rid
            for rid, r in self.replicas.items()
            if r.facts.version == rollout.version and r.facts.down is None
        ]
        for rid in doomed:
            # a failed one goes as a failure: its record (and log) stay to show why
            failed = self.replicas[rid].facts.needs_teardown()
            self.teardown_replica(rid, scale_down=not failed)
        self.save_revision("rollback", reason, terminated=doomed)


def _gone(facts: object) -> bool:
    status = facts.status()  # type: ignore[attr-defined]
    return bool(status.value.startswith("FAILED") or status is ReplicaStatus.SHUTTING_DOWN)
