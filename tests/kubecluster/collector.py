"""The garbage collector's part of a deletion, for the test cluster. The pulumi-kubernetes
provider deletes with propagationPolicy Foreground, so the API server puts the finalizer
`foregroundDeletion` on the object and keeps it until kube-controller-manager's garbage
collector has deleted the object's dependents and lifted it. No controller manager runs
here: this does both, for the kinds skyform's stacks hold."""

from __future__ import annotations

import contextlib

from kubecluster.rest import ApiError, Rest

KINDS = ("pods", "services", "secrets", "configmaps", "endpoints")
GC_FINALIZERS = ("foregroundDeletion", "orphan")


def collect(rest: Rest, objects: dict[str, list[dict]]) -> list[str]:
    """Finish the deletions waiting on the garbage collector; returns what it released."""
    dependents: dict[str, list[tuple[str, dict]]] = {}
    for kind, items in objects.items():
        for obj in items:
            for ref in obj["metadata"].get("ownerReferences") or []:
                dependents.setdefault(ref["uid"], []).append((kind, obj))
    released = []
    for kind, items in objects.items():
        for obj in items:
            meta = obj["metadata"]
            waiting = [f for f in meta.get("finalizers") or [] if f in GC_FINALIZERS]
            if not meta.get("deletionTimestamp") or not waiting:
                continue
            path = f"/api/v1/namespaces/{meta['namespace']}/{kind}/{meta['name']}"
            children = dependents.get(meta["uid"], [])
            if "foregroundDeletion" in waiting and children:
                for child_kind, child in children:  # the next round lifts the finalizer
                    child_meta = child["metadata"]
                    with contextlib.suppress(ApiError):
                        rest.delete(
                            f"/api/v1/namespaces/{child_meta['namespace']}/{child_kind}/"
                            f"{child_meta['name']}"
                        )
                continue
            kept = [f for f in meta.get("finalizers") or [] if f not in GC_FINALIZERS]
            patch = {"metadata": {"finalizers": kept or None}}
            with contextlib.suppress(ApiError):  # gone meanwhile
                rest.merge_patch(path, patch)
                released.append(f"{kind}/{meta['name']}")
    return released
