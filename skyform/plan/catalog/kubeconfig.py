"""Which Kubernetes contexts skyform may plan on: the kubeconfig and `allowed_contexts`.

Files: KUBECONFIG (os.pathsep-separated, as kubectl reads it), else ~/.kube/config. They are
merged as kubectl merges them: the first file that defines a context wins, and
`current-context` comes from the first file that sets one.

Contexts, as SkyPilot picks them: `kubernetes.allowed_contexts` in config.yaml — a list, or
`all` (every context except SkyPilot's `ssh-*` node-pool contexts) — else the current context
only. A context a task names (`infra: k8s/NAME`) is planned on when the kubeconfig has it,
unless allowed_contexts is a list without it. Only names and endpoints are read here; the
credentials are the Kubernetes client's business (k8s_fetch.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyform.digests import sha256_hex

ALL = "all"
SSH_POOL_PREFIX = "ssh-"  # SkyPilot's `sky ssh up` contexts: not Kubernetes clusters to plan on
DEFAULT_PATH = "~/.kube/config"


@dataclass(frozen=True)
class KubeContext:
    name: str
    cluster: str
    server: str | None
    user: str
    namespace: str | None

    def identity(self) -> str:
        """What the cached capacity belongs to: a context renamed, or pointed at another
        cluster or user, is not mistaken for the one that was discovered."""
        parts = repr((self.name, self.cluster, self.server, self.user, self.namespace))
        return sha256_hex(parts)[:16]


@dataclass(frozen=True)
class Kubeconfig:
    paths: tuple[Path, ...]  # every file looked at
    from_env: bool  # KUBECONFIG was set
    contexts: dict[str, KubeContext] = field(default_factory=dict)
    current: str | None = None
    problems: tuple[str, ...] = ()  # files that exist but could not be read

    @property
    def config_file(self) -> str:
        """The existing files, joined as KUBECONFIG joins them (for the client)."""
        return os.pathsep.join(str(p) for p in self.paths if p.is_file())

    def missing(self) -> str:
        """Why there is no context at all, in words."""
        if self.problems:
            return "the kubeconfig could not be read: " + "; ".join(self.problems)
        existing = [p for p in self.paths if p.is_file()]
        if not existing:
            if self.from_env:
                shown = ", ".join(str(p) for p in self.paths)
                return f"no kubeconfig: KUBECONFIG names {shown}, which does not exist"
            return f"no kubeconfig: KUBECONFIG is not set and {DEFAULT_PATH} does not exist"
        return f"the kubeconfig ({', '.join(str(p) for p in existing)}) has no contexts"


def read_kubeconfig(env: Mapping[str, str]) -> Kubeconfig:
    import yaml  # only when a task can run on Kubernetes

    listed = [Path(p).expanduser() for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    home = Path(env.get("HOME") or Path.home())
    paths = tuple(listed) or (home / ".kube" / "config",)
    contexts: dict[str, KubeContext] = {}
    clusters: dict[str, dict] = {}
    current = None
    problems = []
    raw_contexts: list[dict] = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{path}: {str(exc).splitlines()[0]}")
            continue
        if not isinstance(doc, dict):
            problems.append(f"{path}: not a kubeconfig (expected a mapping)")
            continue
        current = current or _text(doc.get("current-context"))
        for entry in _named(doc.get("clusters")):
            clusters.setdefault(entry["name"], entry.get("cluster") or {})
        raw_contexts += _named(doc.get("contexts"))
    for entry in raw_contexts:
        body: dict = entry["context"] if isinstance(entry.get("context"), dict) else {}
        cluster = _text(body.get("cluster")) or ""
        server = clusters.get(cluster, {}).get("server") if cluster in clusters else None
        contexts.setdefault(
            entry["name"],
            KubeContext(
                name=entry["name"],
                cluster=cluster,
                server=_text(server),
                user=_text(body.get("user")) or "",
                namespace=_text(body.get("namespace")),
            ),
        )
    return Kubeconfig(paths, bool(listed), contexts, current, tuple(problems))


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _named(entries: Any) -> list[dict]:
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and _text(e.get("name"))]


@dataclass(frozen=True)
class Selection:
    """The contexts one scope entry plans on, and why others (or all) are not considered."""

    contexts: tuple[str, ...]
    notes: tuple[str, ...]


def select_contexts(
    kubeconfig: Kubeconfig, allowed: Sequence[str] | str | None, named: str | None
) -> Selection:
    """The contexts a request plans on: `named` (from `infra: k8s/NAME`), else the allowed
    ones (see the module docstring)."""
    if not kubeconfig.contexts:
        return Selection((), (kubeconfig.missing(),))
    known = kubeconfig.contexts
    if named is not None:
        if named not in known:
            return Selection(
                (), (f"context {named} is not in the kubeconfig (it has: {', '.join(known)})",)
            )
        if isinstance(allowed, list | tuple) and named not in allowed:
            return Selection(
                (), (f"context {named} is not in kubernetes.allowed_contexts (config.yaml)",)
            )
        return Selection((named,), ())
    if allowed == ALL:
        return Selection(tuple(sorted(c for c in known if not c.startswith(SSH_POOL_PREFIX))), ())
    if isinstance(allowed, list | tuple):
        chosen = tuple(sorted({c for c in allowed if c in known}))
        notes = tuple(
            f"context {c} in kubernetes.allowed_contexts is not in the kubeconfig"
            for c in sorted(set(allowed) - set(known))
        ) or (() if chosen else ("kubernetes.allowed_contexts (config.yaml) is empty",))
        return Selection(chosen, notes)
    if kubeconfig.current is None or kubeconfig.current not in known:
        why = (
            "the kubeconfig has no current context"
            if kubeconfig.current is None
            else f"the current context {kubeconfig.current} is not defined in the kubeconfig"
        )
        return Selection(
            (),
            (
                f"{why}: run `kubectl config use-context NAME`, name one (infra: k8s/NAME) or "
                "list them in kubernetes.allowed_contexts (config.yaml)",
            ),
        )
    return Selection((kubeconfig.current,), ())
