"""Where a task may run: `infra: cloud[/region[/zone]]`, `k8s[/context]`, `ssh[/pool]`, `local`.

Semantics follow SkyPilot's infra strings: `*` is a wildcard in any position
(`*/us-east-1` = any cloud in region us-east-1), cloud names are case-insensitive, and
everything after `k8s/` (or `ssh/`) is the context (pool) name, slashes included.
"""

from __future__ import annotations

from typing import NamedTuple

from skyform import infra as table
from skyform.spec.errors import BadValue, did_you_mean

SUPPORTED_CLOUDS = table.NAMES

# Every cloud SkyPilot knows; they parse, but only SUPPORTED_CLOUDS run.
SKYPILOT_CLOUDS = (
    "aws",
    "azure",
    "gcp",
    "ibm",
    "lambda",
    "scp",
    "oci",
    "kubernetes",
    "runpod",
    "vast",
    "vsphere",
    "cudo",
    "fluidstack",
    "paperspace",
    "primeintellect",
    "do",
    "nebius",
    "ssh",
    "slurm",
    "hyperbolic",
    "seeweb",
    "shadeform",
    "yotta",
)
KNOWN_CLOUDS = (*SKYPILOT_CLOUDS, "local")
_ALIASES = {"k8s": "kubernetes"}
_CONTEXT_CLOUDS = table.CONTEXT_SCOPED


class Infra(NamedTuple):
    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    context: str | None = None


def canonical_cloud(name: str) -> str:
    """Lower-case cloud id (`K8s` -> `kubernetes`); raises BadValue for unknown names."""
    lowered = name.strip().lower()
    lowered = _ALIASES.get(lowered, lowered)
    if lowered not in KNOWN_CLOUDS:
        guess = did_you_mean(lowered, [*KNOWN_CLOUDS, *_ALIASES])
        hint = f"Did you mean '{_ALIASES.get(guess, guess)}'? " if guess else ""
        raise BadValue(
            f"unknown cloud '{name}'",
            f"{hint}skyform runs on: {', '.join(SUPPORTED_CLOUDS)} "
            "(other SkyPilot clouds parse but do not run).",
        )
    return lowered


def _wild(part: str | None) -> str | None:
    return None if part in (None, "", "*") else part


def parse_infra(text: str) -> Infra:
    """Parse an infra string; raises BadValue with a hint on malformed input."""
    stripped = text.strip().strip("/")
    if not stripped:
        raise BadValue(
            "infra is empty", "Write e.g. 'aws', 'aws/us-east-1', 'k8s', 'ssh/mypool' or 'local'."
        )
    parts = [p.strip() for p in stripped.split("/")]
    if "" in parts:
        raise BadValue(
            f"infra '{text}' has an empty part ('//')",
            "Use '*' for 'any': e.g. 'gcp/*/us-central1-a'.",
        )
    cloud = None if parts[0] == "*" else canonical_cloud(parts[0])
    rest = parts[1:]
    if cloud in _CONTEXT_CLOUDS:
        context = "/".join(rest) if rest else None
        return Infra(cloud=cloud, context=_wild(context))
    if cloud == "local":
        if rest:
            raise BadValue(f"infra '{text}': 'local' takes no region or zone", "Write 'local'.")
        return Infra(cloud="local")
    if len(rest) > 2:
        raise BadValue(
            f"infra '{text}' has too many parts",
            "Expected 'cloud', 'cloud/region' or 'cloud/region/zone'.",
        )
    region = _wild(rest[0]) if rest else None
    zone = _wild(rest[1]) if len(rest) > 1 else None
    return Infra(cloud=cloud, region=region, zone=zone)


def legacy_infra(cloud: str | None, region: str | None, zone: str | None) -> Infra:
    """The old `cloud:` / `region:` / `zone:` keys; for k8s and ssh the region is the context."""
    name = canonical_cloud(cloud) if cloud is not None else None
    if name in _CONTEXT_CLOUDS:
        if zone is not None:
            raise BadValue(f"'{name}' has no zones", "Remove 'zone'.")
        context = region.removeprefix("ssh-") if name == "ssh" and region else region
        return Infra(cloud=name, context=_wild(context))
    if name == "local" and (region or zone):
        raise BadValue("'local' takes no region or zone", "Remove 'region' and 'zone'.")
    return Infra(cloud=name, region=_wild(region), zone=_wild(zone))


def infer_location(uri: str) -> str | None:
    """Cloud holding a bucket URI: s3:// -> aws, gs:// -> gcp; None when unknown."""
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    return {"s3": "aws", "gs": "gcp", "gcs": "gcp"}.get(scheme)


def format_location(infra: Infra) -> str:
    parts = [infra.cloud or "*", infra.region or "*", infra.zone or "*"]
    while len(parts) > 1 and parts[-1] == "*":
        parts.pop()
    return "/".join(parts)
