"""Accelerator names: canonical spelling, aliases, close matches, and GCP's N1 attach rules."""

from __future__ import annotations

from collections.abc import Iterable

# Spellings people use that are not the catalog's names (keys upper-case).
ALIASES: dict[str, str] = {
    "A100-40GB": "A100",
    "A100-40G": "A100",
    "A100-80G": "A100-80GB",
    "H100-80GB": "H100",
    "H100-80G": "H100",
    "H200-141GB": "H200",
    "V100-16GB": "V100",
    "V100-32G": "V100-32GB",
    "TESLA-T4": "T4",
    "TESLA-V100": "V100",
    "TESLA-P100": "P100",
    "TESLA-P4": "P4",
    "L40-S": "L40S",
}

# GCP attaches these GPUs to N1 machines. For each GPU count: (max vCPUs, max memory GiB) of the
# N1 host, from GCP's "GPU machine types" documentation (cloud.google.com/compute/docs/gpus).
N1_ATTACH_CAPS: dict[str, dict[float, tuple[float, float]]] = {
    "V100": {1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
    "T4": {1: (48, 312), 2: (48, 312), 4: (96, 624)},
    "P4": {1: (24, 156), 2: (48, 312), 4: (96, 624)},
    "P100": {1: (16, 104), 2: (32, 208), 4: (96, 624)},
}
# Zones where GCP documents a smaller cap for a (GPU, count).
N1_ZONE_CAPS: dict[tuple[str, float, str], tuple[float, float]] = {
    ("P100", 4, "us-east1-c"): (64, 208),
    ("P100", 4, "europe-west1-b"): (64, 208),
    ("P100", 4, "europe-west1-d"): (64, 208),
}
N1_HOST_FAMILIES = ("n1-standard-", "n1-highmem-", "n1-highcpu-")

# `skyform gpus` shows an attachable GPU on the N1 host SkyPilot's `show-gpus` would pick: the
# cheapest N1 machine with at least this many vCPUs per GPU count and 4 GiB of memory per vCPU.
N1_DISPLAY_VCPUS: dict[str, dict[float, float]] = {
    "V100": {1: 8, 2: 16, 4: 32, 8: 64},
    "T4": {1: 4, 2: 8, 4: 48},
    "P100": {1: 8, 2: 16, 4: 32},
    "P4": {1: 8, 2: 16, 4: 32},
}
N1_DISPLAY_MEMORY_PER_VCPU = 4.0


def n1_caps(accelerator: str, count: float, zone: str) -> tuple[float, float] | None:
    """(max vCPUs, max GiB) of an N1 host for `count` × `accelerator` in `zone`; None if GCP
    cannot attach that many."""
    caps = N1_ATTACH_CAPS.get(accelerator, {}).get(count)
    if caps is None:
        return None
    return N1_ZONE_CAPS.get((accelerator, count, zone), caps)


class AcceleratorNames:
    """Case-insensitive lookup of canonical names, with aliases and "did you mean" matches."""

    def __init__(self, names: Iterable[str], extra_aliases: dict[str, str] | None = None) -> None:
        self._canonical: dict[str, str] = {}
        self._aliases = {**ALIASES, **(extra_aliases or {})}
        self.extend(names)

    def extend(self, names: Iterable[str]) -> None:
        """Add names (a cloud table parsed later brings its own, e.g. TPU slice sizes)."""
        for name in sorted(set(names)):
            self._canonical.setdefault(name.upper(), name)
        for alias, target in self._aliases.items():
            canonical = self._canonical.get(target.upper())
            if canonical is not None:
                self._canonical.setdefault(alias.upper(), canonical)

    def canonical(self, name: str) -> str | None:
        return self._canonical.get(name.strip().upper())

    def names(self) -> list[str]:
        return sorted(set(self._canonical.values()))

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        """Close matches for an unknown name, most similar first (prefix relations count)."""
        import difflib  # only error messages need it

        key = name.strip().upper()
        if not key:
            return []
        scores: dict[str, float] = {}
        for upper, canonical in self._canonical.items():
            ratio = difflib.SequenceMatcher(None, key, upper).ratio()
            if upper.startswith(key) or key.startswith(upper):
                ratio += 0.5
            if ratio >= 0.6:
                scores[canonical] = max(scores.get(canonical, 0.0), ratio)
        # TPU slice sizes (tpu-v5p-8 ... -12288) would flood the list: rank them after GPUs.
        ranked = sorted(scores, key=lambda n: (n.startswith("tpu-"), -scores[n], len(n), n))
        return ranked[:limit]
