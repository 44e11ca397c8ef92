"""SkyPilot's resource flags (`--gpus`, `--infra`, `--cpus` ...) laid over a task's YAML.

As in SkyPilot's CLI, a flag replaces the field in `resources` and in every `any_of` /
`ordered` entry (so the flag wins everywhere), `none` removes the field, `--infra` replaces
the whole location (cloud, region and zone) while the older `--cloud/--region/--zone` replace
their part only, and `--num-nodes` / `--workdir` replace the task's own fields. Overrides
apply to one task: a pipeline refuses them (SkyPilot ignores them there with a warning; a
flag that silently does nothing would end up in a reviewed plan).

The values are checked here, before they reach the task, so an error names the flag rather
than a line of the file. A plan records them (`ResourceOverrides.recorded`), so `plan
--check` and a managed job's recovery plan with exactly the same flags.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from skyform.errors import SpecError
from skyform.spec.accelerators import AccelProblem, parse_accelerators
from skyform.spec.errors import BadValue
from skyform.spec.infra import legacy_infra, parse_infra
from skyform.spec.values import (
    parse_cpus,
    parse_disk_size,
    parse_memory,
    parse_minutes,
    parse_ports,
    wait_for,
)

RESET = ("none", "*")  # SkyPilot: "Passing 'none' resets the config."
LOCATION = ("cloud", "region", "zone")
ENTRY_KEYS = ("any_of", "ordered")


@dataclass(frozen=True)
class ResourceOverrides:
    """The flags as typed (None: not given). `workdir` is absolute (see `resolved`)."""

    gpus: str | None = None
    infra: str | None = None
    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    num_nodes: int | None = None
    use_spot: bool | None = None
    cpus: str | None = None
    memory: str | None = None
    disk_size: int | None = None
    image_id: str | None = None
    workdir: str | None = None
    ports: tuple[str, ...] = ()
    # `launch`/`apply TASK`/`plan` only: SkyPilot's -i/--idle-minutes-to-autostop, --down
    idle_minutes_to_autostop: int | None = None
    down: bool | None = None
    wait_for: str | None = None

    @property
    def given(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) not in (None, ())
        }

    def __bool__(self) -> bool:
        return bool(self.given)

    def resolved(self, cwd: Path) -> ResourceOverrides:
        """`--workdir` is relative to where the command runs; keep it absolute from here on."""
        if self.workdir is None:
            return self
        return replace(self, workdir=str((cwd / Path(self.workdir).expanduser()).resolve()))

    def recorded(self, task_dir: Path) -> dict[str, str]:
        """The flags as a plan records them: `{flag: value}`, the workdir relative to the
        task file's folder, so the same command plans the same bytes on any checkout."""
        out: dict[str, str] = {}
        for name, value in self.given.items():
            if name == "workdir":
                value = Path(os.path.relpath(value, task_dir)).as_posix()
            elif name in ("use_spot", "down"):
                value = "true" if value else "false"
            elif name == "ports":
                value = ",".join(value)
            out[flag_name(name)] = str(value)
        return dict(sorted(out.items()))

    @classmethod
    def from_recorded(cls, recorded: Mapping[str, str], task_dir: Path) -> ResourceOverrides:
        """The inverse of `recorded` (a managed job re-plans from what its plan says)."""
        values: dict[str, Any] = {}
        for flag, text in recorded.items():
            name = flag.replace("-", "_")
            if name == "workdir":
                values[name] = str((task_dir / text).resolve())
            elif name in ("use_spot", "down"):
                values[name] = text == "true"
            elif name == "ports":
                values[name] = tuple(text.split(","))
            elif name in ("num_nodes", "disk_size", "idle_minutes_to_autostop"):
                values[name] = int(text)
            else:
                values[name] = text
        return cls(**values)


def flag_name(field: str) -> str:
    return field.replace("_", "-")


def words(recorded: Mapping[str, str]) -> list[str]:
    """`--gpus A100:1 --use-spot` as a shell would take them (for messages and hints)."""
    out: list[str] = []
    for flag, value in recorded.items():
        if flag == "use-spot":
            out.append("--use-spot" if value == "true" else "--no-use-spot")
        elif flag == "down":
            out += ["--down"] if value == "true" else []
        else:
            out += [f"--{flag}", value]
    return out


def _reset(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in RESET


def _checked(flag: str, value: Any, parse: Callable[[Any], Any]) -> None:
    if _reset(value):
        return
    try:
        parse(value)
    except (BadValue, AccelProblem) as exc:
        raise SpecError(f"--{flag} {value!r}: {exc}", exc.hint) from None


def _check(over: ResourceOverrides) -> None:
    if over.infra is not None and any(getattr(over, k) is not None for k in LOCATION):
        raise SpecError(
            "--infra cannot be combined with --cloud, --region or --zone",
            "Write the whole location in --infra, e.g. --infra aws/us-east-1.",
        )
    if over.gpus is not None:
        _checked("gpus", over.gpus, lambda v: parse_accelerators(v, ("--gpus",)))
    if over.infra is not None:
        _checked("infra", over.infra, parse_infra)
    if over.cloud is not None:
        _checked("cloud", over.cloud, lambda v: legacy_infra(v, None, None))
    for flag, value, parse in (
        ("cpus", over.cpus, parse_cpus),
        ("memory", over.memory, parse_memory),
        ("disk-size", over.disk_size, parse_disk_size),
    ):
        if value is not None:
            _checked(flag, value, parse)
    if over.num_nodes is not None and over.num_nodes < 1:
        raise SpecError(f"--num-nodes {over.num_nodes}: a task needs at least 1 node")
    if over.ports:
        if any(_reset(p) for p in over.ports) and len(over.ports) > 1:
            raise SpecError('--ports: cannot give both "none" and other ports')
        if not _reset(over.ports[0]):
            _checked("ports", list(_port_items(over.ports)), parse_ports)
    if over.idle_minutes_to_autostop is not None and over.idle_minutes_to_autostop < 0:
        raise SpecError(
            f"--idle-minutes-to-autostop {over.idle_minutes_to_autostop}: must be 0 or more",
            "Pass the idle minutes after which the cluster stops (with --down: is torn down).",
        )
    if over.wait_for is not None:
        _checked("wait-for", over.wait_for, wait_for)
    if over.workdir is not None and not Path(over.workdir).is_dir():
        raise SpecError(
            f"--workdir {over.workdir}: not a directory",
            "Pass the folder to sync to the nodes (relative to where you run skyform).",
        )


def _port_items(ports: tuple[str, ...]) -> list[str]:
    """`--ports 8080,9090 --ports 8000-8010` -> ['8080', '9090', '8000-8010']."""
    return [p.strip() for item in ports for p in item.split(",") if p.strip()]


def _set(level: dict[str, Any], key: str, value: Any) -> None:
    if value is None or _reset(value):
        level.pop(key, None)
    else:
        level[key] = value


def _as_legacy(level: dict[str, Any]) -> None:
    """`infra: aws/us-east-1` -> `cloud: aws, region: us-east-1`, so one part can be replaced."""
    if not isinstance(level.get("infra"), str):
        return
    try:
        infra = parse_infra(level["infra"])
    except BadValue:
        return  # the loader reports the file's own malformed infra, with its line
    del level["infra"]
    for key, value in (
        ("cloud", infra.cloud),
        ("region", infra.region or infra.context),
        ("zone", infra.zone),
    ):
        _set(level, key, value)


def _resource_values(over: ResourceOverrides) -> dict[str, Any]:
    """Override value per resources key (None: remove the key)."""
    values: dict[str, Any] = {}
    if over.gpus is not None:
        values["accelerators"] = over.gpus
    for key in ("instance_type", "cpus", "memory", "image_id"):
        if getattr(over, key) is not None:
            values[key] = getattr(over, key)
    if over.use_spot is not None:
        values["use_spot"] = over.use_spot
    if over.disk_size is not None:
        values["disk_size"] = over.disk_size
    if over.ports:
        values["ports"] = None if _reset(over.ports[0]) else _port_items(over.ports)
    return values


def _override_resources(raw: Any, over: ResourceOverrides) -> dict[str, Any]:
    top = dict(raw) if isinstance(raw, dict) else {}
    entries = {
        key: [dict(e) if isinstance(e, dict) else e for e in top[key]]
        for key in ENTRY_KEYS
        if isinstance(top.get(key), list)
    }
    levels = [top] + [e for group in entries.values() for e in group if isinstance(e, dict)]
    values = _resource_values(over)
    if "accelerators" in values:
        for level in levels:
            level.pop("gpus", None)  # the alias of accelerators
    location = {k: getattr(over, k) for k in LOCATION if getattr(over, k) is not None}
    for level in levels:
        if over.infra is not None:
            for key in ("infra", *LOCATION):
                level.pop(key, None)
        elif location:
            _as_legacy(level)
        for key in values:
            level.pop(key, None)
        if level is not top:
            for key in location:
                level.pop(key, None)
    for key, value in values.items():
        _set(top, key, value)
    if over.infra is not None:
        _set(top, "infra", over.infra)
    for key, value in location.items():
        _set(top, key, value)
    top.update(entries)
    return top


def _file_minutes(value: Any) -> int:
    """The minutes of a non-mapping `autostop:` in the file (5 for true, absent or bad: a
    bad value is the file's own error, reported with its line when the flags are left out)."""
    if isinstance(value, bool) or value is None:
        return 5
    try:
        return parse_minutes(value)
    except BadValue:
        return 5


def _override_autostop(raw: Any, over: ResourceOverrides) -> dict[str, Any]:
    """SkyPilot's -i/--down/--wait-for over `resources.autostop`: `-i N` sets the minutes,
    `--down` alone tears down 1 minute after the last job (0, bumped to 1), `--wait-for`
    alone keeps the file's timer (5 minutes if it has none). The file's hook stays."""
    top = dict(raw) if isinstance(raw, dict) else {}
    for key in ENTRY_KEYS:  # the flag wins everywhere, as for the resource flags
        if isinstance(top.get(key), list):
            top[key] = [
                {k: v for k, v in e.items() if k != "autostop"} if isinstance(e, dict) else e
                for e in top[key]
            ]
    current = top.get("autostop")
    setting: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    if over.idle_minutes_to_autostop is not None:
        setting["idle_minutes"] = over.idle_minutes_to_autostop
    elif over.down and "idle_minutes" not in setting:
        setting["idle_minutes"] = 0
    elif "idle_minutes" not in setting and not isinstance(current, dict):
        setting["idle_minutes"] = _file_minutes(current)
    if over.idle_minutes_to_autostop is not None or over.down is not None:
        setting["down"] = bool(over.down)
    if over.wait_for is not None:
        setting["wait_for"] = over.wait_for
    top["autostop"] = setting
    return top


def apply_overrides(
    raw: dict[str, Any], over: ResourceOverrides, *, task_dir: Path
) -> dict[str, Any]:
    """A copy of one task's raw YAML mapping with the flags laid over it."""
    _check(over)
    task = dict(raw)
    if any(getattr(over, k) is not None for k in ("gpus", "infra", *LOCATION)) or (
        _resource_values(over)
    ):
        task["resources"] = _override_resources(task.get("resources"), over)
    if over.idle_minutes_to_autostop is not None or over.down or over.wait_for is not None:
        task["resources"] = _override_autostop(task.get("resources"), over)
    if over.num_nodes is not None:
        task["num_nodes"] = over.num_nodes
    if over.workdir is not None:
        task["workdir"] = over.workdir  # absolute: the current directory is no task's folder
    return task
