"""What the endpoints controller and kube-proxy do, for the test cluster: an Endpoints object
per Service with a selector (the pulumi-kubernetes provider waits for its ready addresses
before a Service counts as created), and the Services' node ports opened in every pod's
network namespace (nodeports.py)."""

from __future__ import annotations

import contextlib
import threading

from kubecluster.nodeports import Forwarder, listen_in_netns
from kubecluster.rest import ApiError, Rest


def selects(service: dict, pod: dict) -> bool:
    selector = service["spec"].get("selector") or {}
    labels = pod["metadata"].get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _target_port(port: dict, pod: dict) -> int | None:
    target = port.get("targetPort", port["port"])
    if isinstance(target, int):
        return target
    for container in pod["spec"].get("containers", []):
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None


def is_ready(pod: dict) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def endpoints_for(service: dict, pods: list[dict]) -> dict:
    """The Endpoints object the endpoints controller would keep for `service`."""
    meta = service["metadata"]
    members = [
        p
        for p in pods
        if p["metadata"]["namespace"] == meta["namespace"]
        and selects(service, p)
        and (p.get("status") or {}).get("podIP")
        and not p["metadata"].get("deletionTimestamp")
    ]
    subsets = []
    if members:
        ready, not_ready = [], []
        for pod in sorted(members, key=lambda p: p["metadata"]["name"]):
            address = {
                "ip": pod["status"]["podIP"],
                "nodeName": pod["spec"].get("nodeName"),
                "targetRef": {
                    "kind": "Pod",
                    "namespace": pod["metadata"]["namespace"],
                    "name": pod["metadata"]["name"],
                    "uid": pod["metadata"]["uid"],
                },
            }
            (ready if is_ready(pod) else not_ready).append(address)
        ports = []
        for port in service["spec"].get("ports") or []:
            number = _target_port(port, members[0])
            if number is not None:
                entry = {"port": number, "protocol": port.get("protocol", "TCP")}
                if port.get("name"):
                    entry["name"] = port["name"]
                ports.append(entry)
        subset: dict = {"ports": ports}
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subsets.append(subset)
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": meta.get("labels") or {},
        },
        "subsets": subsets,
    }


def sync_endpoints(rest: Rest, services: list[dict], pods: list[dict], current: list[dict]):
    have = {(e["metadata"]["namespace"], e["metadata"]["name"]): e for e in current}
    wanted = set()
    for service in services:
        if not service["spec"].get("selector"):
            continue  # Endpoints of a Service without selector are its owner's
        desired = endpoints_for(service, pods)
        ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
        wanted.add((ns, name))
        path = f"/api/v1/namespaces/{ns}/endpoints"
        existing = have.get((ns, name))
        if existing is None:
            with contextlib.suppress(ApiError):  # created meanwhile: next round replaces it
                rest.post(path, desired)
        elif (existing.get("subsets") or []) != desired["subsets"] or (
            existing["metadata"].get("labels") or {}
        ) != desired["metadata"]["labels"]:
            desired["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            with contextlib.suppress(ApiError):
                rest.put(f"{path}/{name}", desired)
    for ns, name in have:
        if (ns, name) not in wanted and (ns, name) != ("default", "kubernetes"):
            with contextlib.suppress(ApiError):
                rest.delete(f"/api/v1/namespaces/{ns}/endpoints/{name}")


class NodePorts:
    """Keeps a forwarder per (pod namespace, node port) for every NodePort Service."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._forwarders: dict[tuple[str, int], Forwarder] = {}
        # node port -> (ready endpoint addresses, target port by pod address)
        self._routes: dict[int, list[tuple[str, int]]] = {}
        self._netns_address: dict[str, str] = {}
        self.errors: list[str] = []

    def _target(self, netns: str, node_port: int) -> tuple[str, int] | None:
        with self._lock:
            routes = list(self._routes.get(node_port, []))
            local = self._netns_address.get(netns)
        for address in routes:
            if address[0] == local:
                return address
        return routes[0] if routes else None

    def sync(self, services: list[dict], pods: list[dict], netns_of: dict[str, str]) -> None:
        """`netns_of`: pod address -> its network namespace, for the pods that run."""
        routes: dict[int, list[tuple[str, int]]] = {}
        for service in services:
            if service["spec"].get("type") not in ("NodePort", "LoadBalancer"):
                continue
            members = [
                p
                for p in pods
                if p["metadata"]["namespace"] == service["metadata"]["namespace"]
                and selects(service, p)
                and is_ready(p)
                and not p["metadata"].get("deletionTimestamp")
            ]
            for port in service["spec"].get("ports") or []:
                if not port.get("nodePort"):
                    continue
                targets = routes.setdefault(int(port["nodePort"]), [])
                for pod in members:
                    number = _target_port(port, pod)
                    if number is not None:
                        targets.append((pod["status"]["podIP"], number))
        with self._lock:
            self._routes = routes
            self._netns_address = {ns: address for address, ns in netns_of.items()}
        wanted = {(ns, node_port) for ns in netns_of.values() for node_port in routes}
        for key in set(self._forwarders) - wanted:
            self._forwarders.pop(key).close()
        for netns, node_port in wanted - set(self._forwarders):
            try:
                listener = listen_in_netns(netns, node_port)
            except OSError as exc:
                self.errors.append(f"node port {node_port} in {netns}: {exc}")
                continue
            self._forwarders[(netns, node_port)] = Forwarder(
                listener, lambda n=netns, p=node_port: self._target(n, p)
            )

    def close_netns(self, netns: str) -> None:
        """A pod is removed: its node ports close, and the connections they relay end while
        its network is still there to carry the FIN (a real node outlives its pod and
        resets them when the pod's process dies: the peer never waits on a silent one)."""
        for key in [k for k in self._forwarders if k[0] == netns]:
            forwarder = self._forwarders.pop(key)
            forwarder.close()
            forwarder.end_relays()

    def close(self) -> None:
        for forwarder in self._forwarders.values():
            forwarder.close()
        self._forwarders.clear()
