"""`skyform check`'s Kubernetes row: the kubeconfig's contexts and what planned ones have."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.stacks.health import InfraStatus, missing_sdk_hint


def check_kubernetes(env: Mapping[str, str], user_home: Path, config: Config) -> InfraStatus:
    """The kubeconfig's contexts, and what the ones skyform plans on have now: their nodes are
    read again (like `sky check`), which also refreshes the capacity cache `plan` uses."""
    from skyform.plan.catalog import load_catalog
    from skyform.plan.catalog.load import kubernetes_capacity

    offers = load_catalog(config).kubernetes
    offers.capacity = capacity = kubernetes_capacity(config, env)
    kubeconfig = capacity.kubeconfig()
    if not kubeconfig.contexts:
        return InfraStatus(
            "kubernetes",
            False,
            kubeconfig.missing(),
            "point KUBECONFIG at a kubeconfig, or create ~/.kube/config",
        )
    selection = capacity.select(None)
    planned = offers.planned(None, refresh=True)
    items = []
    for name in sorted(kubeconfig.contexts):
        ctx = planned.get(name)
        if ctx is None:
            items.append(f"{name}: not planned on (see kubernetes.allowed_contexts)")
        else:
            items.append(f"{name}: {ctx.summary()}")
            items += [f"  {note}" for note in ctx.notes]
    usable = [name for name, ctx in sorted(planned.items()) if ctx.usable]
    detail = (
        f"{len(kubeconfig.contexts)} context(s), current: {kubeconfig.current or 'none'}; "
        f"planning on: {', '.join(usable) or 'none'}"
    )
    problems = list(selection.notes)
    if any(not ctx.usable for ctx in planned.values()):
        problems.append(
            "plans leave out a context whose nodes cannot be read: fix its kubeconfig entry or "
            "credentials (`kubectl --context NAME get nodes` must work), or leave it out of "
            "kubernetes.allowed_contexts"
        )
    hint = "; ".join(problems) or missing_sdk_hint("kubernetes")
    return InfraStatus("kubernetes", bool(usable), detail, hint, items)
