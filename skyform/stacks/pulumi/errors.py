"""The one adapter from Pulumi and cloud failures to skyform's errors.

Automation API errors are recognised by class name (only `workspace.py` imports
`pulumi.automation`) and by the text the CLI printed, which carries the cloud's own error:
- missing CLI (FileNotFoundError) or a too old one            -> StackError + install hint
- ConcurrentUpdateError (the stack is locked)                  -> LockedError (skyform's lock
                                                                  error) naming the holders
- the stack's passphrase is not the one given                  -> StackError + which one to use
- no capacity (InsufficientInstanceCapacity,
  ZONE_RESOURCE_POOL_EXHAUSTED, unschedulable pods ...)        -> CapacityError (exit 4; recovery
                                                                  re-plans elsewhere)
- an account quota (VcpuLimitExceeded, QUOTA_EXCEEDED ...)     -> QuotaError (exit 4 too; a
                                                                  managed job does not wait on it)
- missing or invalid credentials (per cloud)                   -> InfraUnusable + that cloud's hint
- the cloud's provider plugin not installed                    -> InfraUnusable + how to install it
- the cloud's API not answering (per cloud: a Kubernetes API
  server down or not reachable from here)                      -> StackError + that cloud's hint
- anything else during `up`                                    -> StackError naming the
                                                                  resources that exist now
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from skyform.errors import (
    CapacityError,
    InfraUnusable,
    LockedError,
    QuotaError,
    SkyformError,
    StackError,
)
from skyform.infra import PULUMI
from skyform.stacks.pulumi.cloud import PulumiCloud, pulumi_cloud
from skyform.stacks.pulumi.interrupted import lock_holders

INSTALL_HINT = (
    "Install the Pulumi CLI: curl -fsSL https://get.pulumi.com | sh "
    "(then open a new shell, or add ~/.pulumi/bin to PATH). `skyform check` shows what it finds."
)
MIN_CLI = "3.181.0"  # inline programs for refresh and destroy need it

CAPACITY_PATTERNS = (
    "InsufficientInstanceCapacity",
    "InsufficientHostCapacity",
    "InsufficientCapacity",
    "There is no Spot capacity available",
    "capacity-not-available",
    "capacity-oversubscribed",
    "SpotMaxPriceTooLow",
    "is not supported in your requested Availability Zone",
    "ZONE_RESOURCE_POOL_EXHAUSTED",
    "does not have enough resources available to fulfill the request",
    "Insufficient nvidia.com/gpu",
    "Insufficient cpu",
    "Insufficient memory",
    "nodes are available",
    "Unschedulable",
)
# the account's limits: waiting does not lift them (someone raises the quota)
QUOTA_PATTERNS = (
    "MaxSpotInstanceCountExceeded",
    "VcpuLimitExceeded",
    "QUOTA_EXCEEDED",
    "Quota '",
)
_MISSING_PLUGIN = re.compile(
    r"no resource plugin '(?:pulumi-resource-)?(?P<name>[\w.-]+)' found in the workspace"
    r"(?: at version v?(?P<version>[\w.+-]+))?[^\n]*"
)
_LOCKED = re.compile(
    r"the stack is currently locked by \d+ lock\(s\)|Another update is currently in progress"
)
_ERROR_LINE = re.compile(r"error:\s*(.+)", re.IGNORECASE)
# The engine's own lines after a resource failed: not the cause, which a resource's line gives.
_NOISE = (
    "update failed",
    "preview failed",
    "destroy failed",
    "refresh failed",
    "Resource monitor has terminated",
)
PASSPHRASE_HINT = (
    "Use the passphrase the stack was made with: set SKYFORM_PASSPHRASE to the one the team "
    "shares, or unset it on the machine that made the stack (skyform then reads "
    "SKYFORM_HOME/secrets/pulumi-passphrase)."
)
# In the team's state database every stack takes the team's passphrase (backend.py).
TEAM_PASSPHRASE_HINT = (
    "Set SKYFORM_PASSPHRASE to the team's passphrase (the one the cluster's creator used), "
    "then run this again."
)


@dataclass(frozen=True)
class Operation:
    """What was being done when Pulumi failed (for messages and hints)."""

    verb: str  # preview | up | refresh | destroy
    cluster: str
    stack: str  # <project>/<cluster>
    cloud: str
    backend_url: str
    placement: str = ""  # e.g. "2x g5.xlarge (spot) in aws/us-east-1/use1-az4"
    work_dir: str = "."  # the stack's Pulumi project directory
    team: bool = False  # the backend is the team's state database


def _doing(op: Operation) -> str:
    return "bring up" if op.verb == "up" else op.verb


def error_lines(text: str, limit: int = 3) -> list[str]:
    """The cloud's own error messages out of the CLI's output, most specific first."""
    found: list[str] = []
    for line in text.splitlines():
        match = _ERROR_LINE.search(line)
        if not match:
            continue
        message = match.group(1).strip()
        if message and not message.startswith(_NOISE) and message not in found:
            found.append(message[:400])
    return found[:limit]


def _summary(text: str) -> str:
    lines = error_lines(text)
    if lines:
        return "; ".join(lines)
    tail = [line.strip() for line in text.splitlines() if line.strip()]
    return tail[-1][:400] if tail else "no output"


def _partial(op: Operation, existing: Sequence[str] | None) -> tuple[str, str]:
    if op.verb != "up":
        return "", ""
    if existing is None:
        return "; what the stack holds now could not be read", (
            f" Apply again once the cause is fixed, or remove what exists with "
            f"`skyform down {op.cluster}`."
        )
    if not existing:
        return "; nothing was created", ""
    return (
        f"; these resources exist now: {', '.join(existing)}",
        f" Fix the cause and apply again (Pulumi converges on what exists), or remove them "
        f"with `skyform down {op.cluster}`.",
    )


def _access_error(cloud: PulumiCloud, op: Operation, text: str) -> StackError | None:
    """The cloud refusing the credentials, or its API not answering, with the provider's own
    reason where it gives one (a Kubernetes API server: the error line says only that the
    cluster is unreachable; the warning before it says why)."""
    reason = cloud.reason.search(text) if cloud.reason is not None else None
    why = reason.group(0).strip() if reason is not None else _summary(text)
    if any(pattern in text for pattern in cloud.credential_patterns):
        return InfraUnusable(
            f"{op.cloud} credentials are missing or not valid: {why}", cloud.credential_hint
        )
    if any(pattern in text for pattern in cloud.unreachable_patterns):
        return StackError(
            f"cannot {_doing(op)} cluster {op.cluster}: {why}", cloud.unreachable_hint
        )
    return None


def translate(
    exc: BaseException, op: Operation, existing: Sequence[str] | None = ()
) -> SkyformError | None:
    """The skyform error for a failure, or None when it is not Pulumi's (a bug: re-raise).

    A failed `up` whose stack is known to hold nothing says `nothing_made` (the cluster's
    record is then not kept)."""
    if isinstance(exc, SkyformError):
        return exc
    kind = type(exc).__name__
    if isinstance(exc, FileNotFoundError) and "pulumi" in str(exc):
        return InfraUnusable(
            f"cannot {_doing(op)} cluster {op.cluster}: the Pulumi CLI is not installed "
            "(no `pulumi` on PATH)",
            INSTALL_HINT,
            nothing_made=True,
        )
    if kind == "InvalidVersionError":
        return InfraUnusable(
            f"the installed Pulumi CLI is too old for skyform ({exc}); skyform needs {MIN_CLI}+",
            INSTALL_HINT,
            nothing_made=True,
        )
    error = _translate_cli(exc, op, existing)
    busy = kind == "ConcurrentUpdateError"  # someone else's update may be creating things
    known_empty = existing is not None and not existing
    if isinstance(error, StackError) and op.verb == "up" and known_empty and not busy:
        error.nothing_made = True
    return error


def engine_lock_error(op: Operation, text: str) -> LockedError:
    """Another Pulumi update holds the stack (the engine's own lock: a teammate's apply, a
    `pulumi up` by hand, or a run killed on another machine); skyform's lock error, with
    the engine's words and its holders. A holder of this machine that is gone never gets
    here: workspace.py releases its lock (interrupted.py)."""
    locked = _LOCKED.search(text)
    words = locked.group(0) if locked else _summary(text)
    holders = lock_holders(text)
    if holders:
        words += ": " + ", ".join(map(str, holders))
    release = (
        f"cd {shlex.quote(op.work_dir)} && PULUMI_BACKEND_URL={shlex.quote(op.backend_url)} "
        f"pulumi cancel --stack {op.cluster} --yes"
    )
    return LockedError(
        f"stack {op.stack} (cluster {op.cluster}) is locked by another Pulumi update ({words})",
        "Wait for it to finish, then run this again. If no pulumi process works on it any "
        f"more (one was killed on another machine), release the lock: {release}",
    )


def _translate_cli(
    exc: BaseException, op: Operation, existing: Sequence[str] | None
) -> SkyformError | None:
    kind = type(exc).__name__
    text = str(exc)
    if kind == "ConcurrentUpdateError":
        return engine_lock_error(op, text)
    if not type(exc).__module__.startswith("pulumi.automation"):
        return None  # not the CLI failing: a bug, let it surface
    if "incorrect passphrase" in text:  # the engine reads nothing of the stack without it
        return StackError(
            f"cannot {op.verb} stack {op.stack}: it is encrypted with another passphrase "
            f"({_summary(text)})",
            TEAM_PASSPHRASE_HINT if op.team else PASSPHRASE_HINT,
            nothing_made=True,
        )
    suffix, hint_tail = _partial(op, existing)
    where = f"cluster {op.cluster}" + (f" ({op.placement})" if op.placement else "")
    if any(pattern in text for pattern in CAPACITY_PATTERNS):
        return CapacityError(
            f"no capacity for {where}: {_summary(text)}{suffix}",
            "The cloud could not provide these nodes now. Plan again for another zone, region "
            "or instance type (or on-demand instead of spot); managed jobs re-plan by "
            "themselves." + hint_tail,
        )
    if any(pattern in text for pattern in QUOTA_PATTERNS):
        return QuotaError(
            f"the {op.cloud} account's quota refuses {where}: {_summary(text)}{suffix}",
            "Ask for a higher quota in the cloud's console, or plan again for another region "
            "or instance type." + hint_tail,
        )
    if op.cloud in PULUMI:
        refused = _access_error(pulumi_cloud(op.cloud), op, text)
        if refused is not None:
            return refused
    plugin = _MISSING_PLUGIN.search(text)
    if plugin is not None:
        name, version = plugin.group("name"), plugin.group("version") or ""
        return InfraUnusable(
            f"cannot {_doing(op)} cluster {op.cluster}: the Pulumi provider plugin for {name} "
            f"is not installed ({plugin.group(0)})",
            f"Install it: pulumi plugin install resource {name} {version}".rstrip()
            + " (the Pulumi CLI downloads it by itself when it can reach the internet and "
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION is not set), then run this again.",
        )
    if "no matching EC2 Subnet found" in text:
        return StackError(
            f"cluster {op.cluster}: the AWS account has no default subnet in the planned zone "
            f"({op.placement or op.cluster})",
            "Create one with `aws ec2 create-default-subnet --availability-zone <zone name>` "
            "(or `aws ec2 create-default-vpc`), or plan again for another zone.",
        )
    if kind == "InlineSourceRuntimeError":
        return StackError(
            f"skyform's Pulumi program for cluster {op.cluster} failed: {_summary(text)}",
            "This is a skyform bug if the inputs were valid; SKYFORM_DEBUG=1 shows the details.",
        )
    return StackError(
        f"pulumi {op.verb} of stack {op.stack} failed: {_summary(text)}{suffix}",
        ("Run again with SKYFORM_DEBUG=1 for Pulumi's full output." + hint_tail).strip(),
    )
