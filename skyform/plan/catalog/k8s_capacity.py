"""Kubernetes capacity as planning sees it: the contexts in reach and their nodes, cached.

Cache: SKYFORM_HOME/kubernetes/nodes.json (0600), one entry per context: the context's
identity (kubeconfig.KubeContext.identity), `fetched_at` (unix time), and either the node
records (k8s_nodes.node_record) or the error that stopped the read. `plan` reuses an entry
for `kubernetes.capacity_ttl` seconds (300 by default) and a failed read for at most
FAILURE_TTL seconds, so a context that is down does not slow every plan, nor stays hidden for
long once it is back. `skyform check` and `apply` re-read (refresh), so apply compares the plan
with what the cluster has now. The file is untrusted input: anything unreadable in it is
ignored and read again from the API.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyform.digests import sha256_hex
from skyform.paths import ensure_dir, write_atomic

if TYPE_CHECKING:  # read only once a plan asks for Kubernetes (most never do)
    from skyform.plan.catalog.k8s_nodes import GpuNaming, NodeType
    from skyform.plan.catalog.kubeconfig import Kubeconfig, Selection

CACHE_FILE = Path("kubernetes") / "nodes.json"
CACHE_VERSION = 1
FAILURE_TTL = 30.0
MAX_PARALLEL = 8


@dataclass(frozen=True)
class ContextCapacity:
    """What one context offers pods (its node types), or why it could not be read."""

    context: str
    fetched_at: float | None
    types: tuple[NodeType, ...] = ()
    left_out: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.error is None

    def digest(self) -> str:
        if self.error is not None:
            return sha256_hex(b"unreachable")
        from skyform.plan.catalog.k8s_nodes import capacity_digest

        return capacity_digest(self.types)

    def summary(self) -> str:
        if self.error is not None:
            return f"not usable: {self.error}"
        from skyform.plan.catalog.k8s_nodes import describe_types

        return describe_types(self.types, self.left_out)


@dataclass(frozen=True)
class KubernetesSnapshot:
    """The Kubernetes side of a plan's provenance: which contexts its tasks could use, what
    they had, and why Kubernetes (or a context) was not considered."""

    scope: tuple[str, ...]
    contexts: tuple[ContextCapacity, ...]
    notes: tuple[str, ...]

    @property
    def digest(self) -> str:
        pairs = sorted((c.context, c.digest()) for c in self.contexts)
        return sha256_hex(repr(pairs))


class KubernetesCapacity:
    """The kubeconfig's contexts and their capacity, read lazily and at most once per process
    (a refresh re-reads a context once more)."""

    def __init__(
        self,
        *,
        allowed: Sequence[str] | str | None,
        ttl: float,
        timeout: float,
        env: Mapping[str, str],
        cache_path: Path,
    ) -> None:
        self.allowed = allowed
        self.ttl = ttl
        self.timeout = timeout
        self._env = dict(env)
        self.cache_path = cache_path
        self._kubeconfig: Kubeconfig | None = None
        self._records: dict[str, tuple[float | None, list | None, str | None, bool]] = {}
        self._interpreted: dict[str, ContextCapacity] = {}

    def kubeconfig(self) -> Kubeconfig:
        if self._kubeconfig is None:
            from skyform.plan.catalog.kubeconfig import read_kubeconfig

            self._kubeconfig = read_kubeconfig(self._env)
        return self._kubeconfig

    def select(self, named: str | None) -> Selection:
        from skyform.plan.catalog.kubeconfig import select_contexts

        return select_contexts(self.kubeconfig(), self.allowed, named)

    def contexts(
        self, names: Iterable[str], naming: GpuNaming, *, refresh: bool = False
    ) -> dict[str, ContextCapacity]:
        """Capacity per context (read in parallel where the cache does not answer)."""
        from skyform.plan.catalog.k8s_nodes import node_types

        wanted = list(dict.fromkeys(names))
        self._load(wanted, refresh)
        found = {}
        for name in wanted:
            if name not in self._interpreted:
                fetched_at, records, error, _ = self._records[name]
                if error is not None or records is None:
                    found_one = ContextCapacity(name, fetched_at, error=error or "no nodes read")
                else:
                    types, left_out, notes = node_types(records, naming)
                    found_one = ContextCapacity(name, fetched_at, types, left_out, tuple(notes))
                self._interpreted[name] = found_one
            found[name] = self._interpreted[name]
        return found

    # --- reading: memo, cache file, API ----------------------------------------------------

    def _load(self, names: list[str], refresh: bool) -> None:
        todo = [n for n in names if n not in self._records or (refresh and not self._records[n][3])]
        if not todo:
            return
        cached = {} if refresh else self._read_cache()
        now = time.time()
        kubeconfig = self.kubeconfig()
        fetch = []
        for name in todo:
            entry = cached.get(name)
            identity = kubeconfig.contexts[name].identity() if name in kubeconfig.contexts else ""
            if entry is not None and self._still_good(entry, identity, now):
                self._records[name] = (entry["fetched_at"], entry["nodes"], entry["error"], False)
            else:
                fetch.append((name, identity))
        if not fetch:
            return
        from concurrent.futures import ThreadPoolExecutor  # only when a context is asked

        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(fetch))) as pool:
            results = list(pool.map(lambda item: self._fetch(item[0]), fetch))
        for (name, _), (records, error) in zip(fetch, results, strict=True):
            self._records[name] = (now, records, error, True)
            self._interpreted.pop(name, None)
        self._write_cache(
            {
                name: {"identity": identity, "fetched_at": now, "nodes": rec, "error": err}
                for (name, identity), (rec, err) in zip(fetch, results, strict=True)
            }
        )

    def _fetch(self, name: str) -> tuple[list | None, str | None]:
        from skyform.plan.catalog.k8s_fetch import KubeUnavailable, fetch_nodes

        try:
            return fetch_nodes(self.kubeconfig().config_file, name, self.timeout), None
        except KubeUnavailable as exc:
            return None, str(exc)

    def _still_good(self, entry: dict, identity: str, now: float) -> bool:
        ttl = self.ttl if entry["error"] is None else min(self.ttl, FAILURE_TTL)
        return entry["identity"] == identity and 0 <= now - entry["fetched_at"] <= ttl

    def _read_cache(self) -> dict[str, dict]:
        try:
            raw = json.loads(self.cache_path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict) or raw.get("version") != CACHE_VERSION:
            return {}
        entries = raw.get("contexts")
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if _valid_entry(v)}

    def _write_cache(self, updates: dict[str, dict]) -> None:
        entries = self._read_cache()
        entries.update(updates)
        data = json.dumps({"version": CACHE_VERSION, "contexts": entries}, sort_keys=True)
        path = self.cache_path
        try:
            ensure_dir(path.parent)
            write_atomic(path, data, mode=0o600)
        except OSError:
            pass  # a cache that cannot be written only costs the next plan an API call


def _valid_entry(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    if not isinstance(entry.get("identity"), str):
        return False
    if not isinstance(entry.get("fetched_at"), int | float):
        return False
    nodes, error = entry.get("nodes"), entry.get("error")
    if error is not None:
        return isinstance(error, str) and nodes is None
    return isinstance(nodes, list) and all(_valid_node(n) for n in nodes)


def _valid_node(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    numbers = all(isinstance(node.get(k), int | float) for k in ("cpus", "memory_gib", "gpus"))
    labels = node.get("labels")
    taints = node.get("taints")
    return (
        numbers
        and isinstance(labels, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
        and isinstance(taints, list)
        and all(isinstance(t, str) for t in taints)
    )
