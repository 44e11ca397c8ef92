"""The job-group fields of a multi-document header, as SkyPilot reads them.

SkyPilot's Job Groups (docs.skypilot.co/en/latest/examples/job-groups.html): the first
document of a multi-document file is a header `name` + `execution: parallel`; the tasks after
it run together as one managed job. `primary_tasks` names the tasks whose end ends the group
(default: every task); the others (servers the primaries call) are stopped
`termination_delay` after the primaries end. skyform reads the delay as seconds, or a number
with an s/m/h suffix ("30s", "2m").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skyform.spec.errors import Where, describe, did_you_mean
from skyform.spec.models import TaskSpec

GROUP_KEYS = frozenset({"primary_tasks", "termination_delay"})
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}


def group_fields(
    header: Mapping[str, Any], where: Where, execution: str
) -> tuple[list[str], float]:
    """primary_tasks (as written) and termination_delay in seconds; located errors."""
    present = GROUP_KEYS & set(header)
    if present and execution != "parallel":
        key = sorted(present)[0]
        where.fail(
            (key,),
            f"{key} needs 'execution: parallel' in the header",
            "A job group runs its tasks together: add 'execution: parallel'.",
        )
    raw = header.get("primary_tasks", [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or (not raw and "primary_tasks" in header):
        where.fail(
            ("primary_tasks",),
            f"primary_tasks must be a non-empty list of task names, got {describe(raw)}",
        )
    for i, name in enumerate(raw):
        if not isinstance(name, str) or not name:
            where.fail(
                ("primary_tasks", i), f"a primary task must be a task name, got {describe(name)}"
            )
        if name in raw[:i]:
            where.fail(("primary_tasks", i), f"primary task '{name}' is listed twice")
    delay = _delay(header.get("termination_delay", 0), where)
    if "termination_delay" in header and not raw:
        where.fail(
            ("termination_delay",),
            "termination_delay without primary_tasks has nothing to wait for",
            "Name the tasks whose end ends the group in primary_tasks.",
        )
    return list(raw), delay


def _delay(raw: Any, where: Where) -> float:
    if isinstance(raw, bool):
        where.fail(
            ("termination_delay",), f"termination_delay must be seconds, got {describe(raw)}"
        )
    if isinstance(raw, int | float):
        seconds = float(raw)
    elif isinstance(raw, str) and (m := _DELAY.match(raw)):
        seconds = float(m.group(1)) * _UNIT[m.group(2)]
    else:
        where.fail(
            ("termination_delay",),
            f"termination_delay must be seconds, got {describe(raw)}",
            "Write a number of seconds, or a number with s, m or h: 30, '30s', '2m'.",
        )
    if seconds < 0 or seconds > 86400:
        where.fail(("termination_delay",), "termination_delay must be between 0 and 24h")
    return seconds


def check_group(
    tasks: list[TaskSpec], primaries: list[str], wheres: list[Where], header: Where
) -> None:
    """Tasks of a group reach each other by name: every task is named, names are unique and
    usable as host names, and every primary task is one of them."""
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.name is None:
            wheres[i].fail(
                (),
                f"task #{i + 1} of a job group has no name",
                "Tasks of a job group reach each other as <task>-<rank>.<group>: name each.",
            )
        if task.name in seen:
            wheres[i].fail(
                ("name",),
                f"task name '{task.name}' is used twice (first as task #{seen[task.name] + 1})",
                "Names must be unique in a job group.",
            )
        seen[task.name] = i
    for j, name in enumerate(primaries):
        if name not in seen:
            guess = did_you_mean(name, seen)
            hint = f"Did you mean '{guess}'? " if guess else ""
            header.fail(
                ("primary_tasks", j),
                f"primary_tasks names an unknown task '{name}'",
                f"{hint}Tasks in this group: {', '.join(seen)}.",
            )
