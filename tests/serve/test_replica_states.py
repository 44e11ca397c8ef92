"""The 13 replica statuses as SkyPilot derives them, and the probe timing that moves them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from skyform.serve.replicas import (
    FAILED_STATUSES,
    TERMINAL_STATUSES,
    ReplicaFacts,
    ReplicaStatus,
    Step,
    kept_after_teardown,
)

S = ReplicaStatus
NEW = ReplicaFacts(replica_id=1)
UP = NEW.launching().launched(True)
READY = UP.probed(True, 100.0, 1200)


def test_thirteen_statuses_and_their_sets():
    assert len(ReplicaStatus) == 13
    assert {
        S.FAILED,
        S.FAILED_CLEANUP,
        S.FAILED_INITIAL_DELAY,
        S.FAILED_PROBING,
        S.FAILED_PROVISION,
        S.UNKNOWN,
    } == FAILED_STATUSES
    assert FAILED_STATUSES | {S.SHUTTING_DOWN, S.PREEMPTED} == TERMINAL_STATUSES


@pytest.mark.parametrize(
    ("facts", "status"),
    [
        (NEW, S.PENDING),
        (NEW.launching(), S.PROVISIONING),
        (NEW.launching().launched(False), S.FAILED_PROVISION),
        (UP, S.STARTING),
        (READY, S.READY),
        (READY.probed(False, 110, 1200), S.NOT_READY),
        (READY.probed(False, 110, 1200).probed(False, 290, 1200), S.FAILED_PROBING),
        (UP.probed(False, 10, 60).probed(False, 71, 60), S.FAILED_INITIAL_DELAY),
        (READY.app_failed(), S.FAILED),
        (READY.tearing_down(scale_down=True), S.SHUTTING_DOWN),
        (NEW.launching().tearing_down(scale_down=True), S.SHUTTING_DOWN),
        (replace(READY, is_spot=True).tearing_down(preempted=True), S.PREEMPTED),
        (READY.tearing_down().torn_down(False), S.FAILED_CLEANUP),
        (READY.app_failed().tearing_down(), S.SHUTTING_DOWN),
        (READY.app_failed().tearing_down().torn_down(True), S.FAILED),
        (NEW.launching().launched(False).tearing_down().torn_down(True), S.FAILED_PROVISION),
        (
            UP.probed(False, 0, 5).probed(False, 6, 5).tearing_down().torn_down(True),
            S.FAILED_INITIAL_DELAY,
        ),
        (
            READY.probed(False, 110, 1200).probed(False, 300, 1200).tearing_down().torn_down(True),
            S.FAILED_PROBING,
        ),
        (READY.tearing_down().torn_down(True), S.UNKNOWN),
    ],
)
def test_status_of_facts(facts: ReplicaFacts, status: ReplicaStatus):
    assert facts.status() is status


def test_initial_delay_runs_from_the_first_failed_probe_not_the_launch():
    facts = UP.probed(False, 1000.0, 60)  # launched long ago, first probe fails now
    assert facts.first_not_ready_time == 1000.0
    assert facts.probed(False, 1060.0, 60).status() is S.STARTING  # exactly 60 s: not over
    assert facts.probed(False, 1060.5, 60).status() is S.FAILED_INITIAL_DELAY
    # one success within the delay and it is READY, with its first-ready time kept
    ready = facts.probed(True, 1050.0, 60)
    assert ready.status() is S.READY and ready.first_ready_time == 1050.0
    assert ready.probed(True, 1070, 60).first_ready_time == 1050.0


def test_a_success_clears_the_failure_clock_of_a_ready_replica():
    flapping = READY.probed(False, 110, 1200).probed(False, 280, 1200)  # 170 s of failures
    assert flapping.status() is S.NOT_READY
    healed = flapping.probed(True, 285, 1200)
    assert healed.status() is S.READY and healed.failing_since is None
    again = healed.probed(False, 300, 1200).probed(False, 470, 1200)
    assert again.status() is S.NOT_READY  # the 180 s window starts over
    assert again.probed(False, 480, 1200).status() is S.FAILED_PROBING


def test_which_replicas_are_probed_and_which_must_go():
    assert not NEW.probed_now() and UP.probed_now() and READY.probed_now()
    assert not READY.app_failed().probed_now()
    assert not READY.tearing_down(scale_down=True).probed_now()
    assert READY.app_failed().needs_teardown()
    assert NEW.launching().launched(False).needs_teardown()
    assert not READY.probed(False, 110, 1200).needs_teardown()


def test_unrecoverable_only_before_the_first_ready():
    assert UP.app_failed().unrecoverable()
    assert UP.probed(False, 0, 5).probed(False, 6, 5).unrecoverable()
    assert not READY.app_failed().unrecoverable()
    assert not NEW.launching().launched(False).unrecoverable()  # capacity: replaced
    # a task or config no launch can use: every replacement would fail alike, in a loop
    assert NEW.launching().launched(False, fatal=True).unrecoverable()
    assert not NEW.launching().launched(True, fatal=True).launch_fatal


def test_kept_after_teardown_only_for_failures_of_the_latest_version():
    failed = READY.app_failed().tearing_down().torn_down(True)
    assert kept_after_teardown(failed, latest_version=1)
    assert not kept_after_teardown(failed, latest_version=2)
    assert not kept_after_teardown(READY.tearing_down(scale_down=True).torn_down(True), 1)
    preempted = replace(READY, is_spot=True).tearing_down(preempted=True).torn_down(True)
    assert not kept_after_teardown(preempted, 1)
    assert NEW.launching().tearing_down().launch is Step.INTERRUPTED


def test_a_failure_of_a_version_rolled_back_stays_listed():
    failed = replace(READY, version=2).app_failed().tearing_down().torn_down(True)
    assert kept_after_teardown(failed, latest_version=1, rolled_back=[2])
    assert not kept_after_teardown(failed, latest_version=1, rolled_back=[3])


def test_the_lb_fails_open_to_not_ready_replicas_only_when_none_is_ready():
    from skyform.serve.replicas import routable

    assert routable({1: S.READY, 2: S.NOT_READY, 3: S.STARTING}) == {1}
    assert routable({1: S.NOT_READY, 2: S.PREEMPTED, 3: S.STARTING}) == {1}
    assert routable({2: S.PREEMPTED, 3: S.STARTING, 4: S.SHUTTING_DOWN}) == set()


def test_replicas_that_only_missed_their_latest_probes_keep_getting_traffic():
    """The set the controller publishes to the load balancer (controller._publish)."""
    from skyform.serve.replicas import routed

    versions = {1: 1, 3: 2, 4: 2}
    # the end of a rolling update on a loaded machine: both new replicas missed a probe and
    # the old one is going: no version has a READY replica, so none is "active"; the LB
    # still gets the new ones (it got nothing, and answered 503, before)
    missed = {1: S.SHUTTING_DOWN, 3: S.NOT_READY, 4: S.NOT_READY}
    assert routed(missed, versions, active=[]) == {3, 4}
    # otherwise: the READY replicas of the versions routed to, as before
    assert routed({1: S.READY, 3: S.READY, 4: S.NOT_READY}, versions, active=[1, 2]) == {1, 3}
    assert routed({1: S.READY, 3: S.READY}, versions, active=[1]) == {1}  # blue-green, not yet
    assert routed({1: S.SHUTTING_DOWN, 3: S.STARTING}, versions, active=[]) == set()


def test_a_failed_launch_is_tried_three_times_60s_then_120s_apart():
    from skyform.serve.replicas import launch_retry_gap

    assert [launch_retry_gap(n) for n in (1, 2, 3)] == [60.0, 120.0, None]
