"""Load-balancing policies as pure functions of the replicas and their in-flight counts."""

from __future__ import annotations

from collections import Counter

from skyform.serve.lb.policies import Target, make_policy

A, B, C = (Target(f"http://10.0.0.{i}:8080", i) for i in (1, 2, 3))


def picks(name: str, inflight: dict[str, int], n: int, **kw) -> Counter[int]:
    policy = make_policy(name, **kw)
    return Counter(policy.select([A, B, C], inflight).replica_id for _ in range(n))


def test_round_robin_cycles_whatever_the_load():
    assert picks("round_robin", {A.url: 50}, 9) == {1: 3, 2: 3, 3: 3}


def test_least_load_takes_the_idlest_and_shares_ties():
    assert picks("least_load", {A.url: 2, B.url: 1, C.url: 1}, 10) == {2: 5, 3: 5}
    assert picks("least_load", {A.url: 0, B.url: 1, C.url: 1}, 4) == {1: 4}


def test_instance_aware_divides_load_by_capacity():
    # A runs an A100 (10 qps), B and C an L4 (2 qps): 4 in flight on A is less loaded than 1 on L4
    policy = make_policy("instance_aware_least_load", {"A100": 10.0, "L4": 2.0})
    a, b = Target(A.url, 1, accelerator="A100:1"), Target(B.url, 2, accelerator="L4")
    assert policy.select([a, b], {A.url: 4, B.url: 1}).replica_id == 1
    assert policy.select([a, b], {A.url: 6, B.url: 1}).replica_id == 2
    # an unknown accelerator takes the smallest capacity (SkyPilot's matching rule)
    c = Target(C.url, 3, accelerator="H100")
    assert policy.select([a, c], {A.url: 3, C.url: 1}).replica_id == 1


def test_excluded_replicas_are_skipped_and_none_left_is_none():
    policy = make_policy("least_load")
    assert policy.select([A, B], {}, exclude={A.url}).replica_id == 2
    assert policy.select([A, B], {}, exclude={A.url, B.url}) is None
    assert policy.select([], {}) is None
