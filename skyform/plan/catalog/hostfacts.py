"""What `skyform check` measured on ssh hosts: vCPUs, memory, GPUs, architecture and the
container runtime (docker or podman) a task's `image_id: docker:...` would run in.

`check` logs in to every pool host and runs PROBE_COMMAND; the answers are cached in
`$SKYFORM_HOME/ssh_hosts.json` (0600) with the time the values were first measured (a probe
that finds the same values keeps that time, so plans keep their bytes). The catalog fills in
what config.yaml leaves out (`cpus`, `memory`, `accelerators`; the architecture is never declared)
from that cache, so a host that declares nothing still matches `cpus: 4+`. The values used
are part of the on-prem digest (a plan made with them is stale once they change) and of the
plan itself (`host_probes`). The cache is untrusted input: a broken file or entry is ignored.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from skyform.paths import write_atomic

CACHE_NAME = "ssh_hosts.json"
CACHE_VERSION = 1

# The container runtime a task's container would run in (exec/container.py): docker when its
# daemon answers (as the login user or through passwordless sudo), else podman when installed
# (it needs no daemon; `podman info` would set up a rootless user's storage just to look);
# `runtime=` when neither.
RUNTIME_PROBE = (
    'echo "runtime=$(if command -v docker >/dev/null 2>&1 && { docker info >/dev/null 2>&1 '
    "|| sudo -n docker info >/dev/null 2>&1; }; then echo docker; "
    'elif command -v podman >/dev/null 2>&1; then echo podman; fi)"'
)
# One `key=value` per line; GPUs one line each (name, memory in MiB) when nvidia-smi exists.
PROBE_COMMAND = (
    'echo "cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"; '
    "echo \"mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)\"; "
    'echo "arch=$(uname -m)"; '
    "if command -v nvidia-smi >/dev/null 2>&1; then "
    "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>/dev/null "
    "| sed 's/^/gpu=/'; fi; " + RUNTIME_PROBE
)
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}
VENDOR_WORDS = re.compile(r"\b(NVIDIA|Tesla|GeForce|Quadro)\b", re.IGNORECASE)


@dataclass(frozen=True)
class HostFacts:
    cpus: float | None = None
    memory: float | None = None  # GiB
    accelerator: str | None = None
    accelerator_count: float = 0.0
    arch: str | None = None
    probed_at: str = ""  # ISO 8601, UTC
    # "docker" / "podman"; "" when the probe found neither answering; None: never probed
    container_runtime: str | None = None

    def describe(self) -> str:
        parts = [
            f"{self.cpus:g} vCPUs" if self.cpus is not None else "vCPUs unknown",
            f"{self.memory:g} GiB" if self.memory is not None else "memory unknown",
            self.arch or "arch unknown",
            f"{self.accelerator}:{self.accelerator_count:g}" if self.accelerator else "no GPU",
        ]
        if self.container_runtime is not None:
            parts.append(f"container runtime: {self.container_runtime or 'none'}")
        return ", ".join(parts)


def gpu_name(product: str, memory_mib: float | None) -> str:
    """`NVIDIA A100-SXM4-80GB` → `A100-80GB`, `Tesla T4` → `T4`, `NVIDIA L4` → `L4`."""
    words = VENDOR_WORDS.sub(" ", product).split()
    if not words:
        return product.strip()
    model = words[0].split("-")[0].upper()
    if model in ("RTX", "GTX") and len(words) > 1:
        model = f"{model}{words[1].upper()}"
    if model == "A100" and memory_mib and memory_mib > 60 * 1024:
        return "A100-80GB"
    return model


def parse_probe(output: str, probed_at: str) -> HostFacts:
    """The facts in PROBE_COMMAND's output; a value that does not parse is left unknown."""
    values: dict[str, str] = {}
    gpus: list[tuple[str, float | None]] = []
    for line in output.splitlines():
        key, _, value = line.strip().partition("=")
        if key == "gpu":
            name, _, mib = value.partition(",")
            gpus.append((name.strip(), _number(mib)))
        elif key:
            values[key] = value.strip()
    cpus = _number(values.get("cpus"))
    kib = _number(values.get("mem_kib"))
    accelerator, count = None, 0.0
    if gpus and len({g[0] for g in gpus}) == 1:  # a node offers one GPU type
        accelerator, count = gpu_name(*gpus[0]), float(len(gpus))
    return HostFacts(
        cpus=cpus,
        memory=round(kib / 2**20, 1) if kib else None,
        accelerator=accelerator,
        accelerator_count=count,
        arch=ARCHES.get(values.get("arch", "").lower()),
        probed_at=probed_at,
        container_runtime=runtime_named(values.get("runtime")),
    )


def runtime_named(value: object) -> str | None:
    """A runtime the probe may name (untrusted: anything else counts as never probed)."""
    if value is None:
        return None
    text = str(value).strip()
    return text if text in RUNTIMES else None


RUNTIMES = ("docker", "podman", "")


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def cache_path() -> Path:
    from skyform.config import home

    return home() / CACHE_NAME


def _facts(entry: object) -> HostFacts | None:
    if not isinstance(entry, dict):
        return None
    try:
        facts = HostFacts(
            cpus=_number(str(entry["cpus"])) if entry.get("cpus") is not None else None,
            memory=_number(str(entry["memory"])) if entry.get("memory") is not None else None,
            accelerator=str(entry["accelerator"]) if entry.get("accelerator") else None,
            accelerator_count=float(entry.get("accelerator_count") or 0.0),
            arch=ARCHES.get(str(entry.get("arch") or "")),
            probed_at=str(entry.get("probed_at") or ""),
            container_runtime=runtime_named(entry.get("container_runtime")),
        )
    except (TypeError, ValueError):
        return None
    ok = math.isfinite(facts.accelerator_count) and facts.accelerator_count >= 0
    return facts if ok else None


def read_facts(path: Path | None = None) -> dict[str, HostFacts]:
    """host id -> facts; {} when there is no cache or it cannot be read."""
    path = path or cache_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    hosts = data.get("hosts") if isinstance(data, dict) else None
    if not isinstance(hosts, dict):
        return {}
    found = {}
    for host, entry in hosts.items():
        facts = _facts(entry)
        if isinstance(host, str) and facts is not None:
            found[host] = facts
    return found


def _keep_time(old: HostFacts | None, new: HostFacts) -> HostFacts:
    """A probe that measured what the cache already holds keeps the time those values were
    first seen: plans record it, and the same inputs must give the same plan bytes."""
    if old is not None and replace(old, probed_at="") == replace(new, probed_at=""):
        return old
    return new


def write_facts(updates: dict[str, HostFacts], path: Path | None = None) -> None:
    """Merge `updates` into the cache (temp file + rename, mode 0600)."""
    from skyform.config import ensure_dir

    path = path or cache_path()
    known = read_facts(path)
    merged = {**known, **{host: _keep_time(known.get(host), f) for host, f in updates.items()}}
    body = {
        "version": CACHE_VERSION,
        "hosts": {host: asdict(facts) for host, facts in sorted(merged.items())},
    }
    ensure_dir(path.parent)
    write_atomic(path, json.dumps(body, indent=2, sort_keys=True) + "\n", mode=0o600)
