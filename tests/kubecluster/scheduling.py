"""Where a pending pod may go, as kube-scheduler's filters decide it for what skyform's pods
ask: node selector, required node affinity, taints and tolerations, and requests (CPU,
memory, extended resources such as nvidia.com/gpu) against allocatable minus the requests of
the pods already on the node. Objects are raw API dicts (camelCase)."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from kubernetes.utils import parse_quantity


def pod_requests(pod: dict) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for container in pod["spec"].get("containers", []):
        resources = container.get("resources") or {}
        # A resource with a limit and no request requests its limit (API defaulting).
        asked = dict(resources.get("limits") or {}, **(resources.get("requests") or {}))
        for name, quantity in asked.items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(quantity)
    return total


def _selector_matches(pod: dict, labels: dict) -> bool:
    wanted = pod["spec"].get("nodeSelector") or {}
    return all(labels.get(key) == value for key, value in wanted.items())


def _expression_matches(expr: dict, labels: dict) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"node affinity operator {op} is not supported by the test scheduler")


def _affinity_matches(pod: dict, labels: dict) -> bool:
    affinity = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not affinity:
        return True
    return any(  # terms are ORed, expressions within a term ANDed
        all(_expression_matches(e, labels) for e in term.get("matchExpressions") or [])
        for term in affinity.get("nodeSelectorTerms") or []
    )


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint["key"]:
                return True
        elif toleration.get("key") == taint["key"] and toleration.get("value") == taint.get(
            "value"
        ):
            return True
    return False


def why_not(pod: dict, node: dict, used: dict[str, Decimal]) -> str | None:
    """None when `pod` fits `node`; else the scheduler's reason, as its event words it."""
    labels = node["metadata"].get("labels") or {}
    if node["spec"].get("unschedulable"):
        return "node(s) were unschedulable"
    if not (_selector_matches(pod, labels) and _affinity_matches(pod, labels)):
        return "node(s) didn't match Pod's node affinity/selector"
    tolerations = pod["spec"].get("tolerations") or []
    for taint in node["spec"].get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
            taint, tolerations
        ):
            return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
    allocatable = node["status"].get("allocatable") or {}
    for name, amount in pod_requests(pod).items():
        free = parse_quantity(allocatable.get(name, "0")) - used.get(name, Decimal(0))
        if amount > free:
            return f"Insufficient {name}"
    return None


def choose_node(
    pod: dict, nodes: list[dict], used: dict[str, dict[str, Decimal]]
) -> tuple[str | None, str]:
    """(node name, "") for the fitting node with the most free CPU, else (None, message)."""
    reasons: Counter[str] = Counter()
    best: tuple[Decimal, str] | None = None
    for node in nodes:
        name = node["metadata"]["name"]
        reason = why_not(pod, node, used.get(name, {}))
        if reason:
            reasons[reason] += 1
            continue
        cpu = parse_quantity((node["status"].get("allocatable") or {}).get("cpu", "0"))
        free = cpu - used.get(name, {}).get("cpu", Decimal(0))
        if best is None or free > best[0]:
            best = (free, name)
    if best is not None:
        return best[1], ""
    detail = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return None, f"0/{len(nodes)} nodes are available: {detail}."
