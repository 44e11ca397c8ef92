"""The `skyform plan ...` command that makes a plan again as it was made: its task file,
objective, cluster name, destroy and resource flags, and its output path. Stale-plan hints
(apply, `plan --check`) give it, so a plan made with `--gpus A100 -c dev` is not re-made
without them."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.plan.naming import cluster_names

if TYPE_CHECKING:  # a Plan, or the strict reader's view of one (plan/planview.py)
    from skyform.plan.model import Plan


def replan_command(plan: Plan, plan_path: Path, task_file: Path, cluster: str | None = None) -> str:
    """`cluster`: the -c given now; None reads it off the plan (a one-task plan whose
    cluster is not the name the task file gives)."""
    words = ["skyform", "plan", shell_path(task_file)]
    if plan.objective != "cost":
        words += ["--minimize", plan.objective]
    cluster = cluster or _named_on_the_command_line(plan)
    if cluster:
        words += ["-c", cluster]
    if plan.destroy:
        words.append("--destroy")
    words += _flag_words(plan, task_file)
    words += ["-o", shell_path(plan_path)]
    return shlex.join(words)


def _named_on_the_command_line(plan: Plan) -> str | None:
    if len(plan.tasks) != 1:
        return None
    default = cluster_names([plan.task.name], None, plan.task.path, None)[0].name
    given = plan.tasks[0].cluster
    return given if given != default else None


def _flag_words(plan: Plan, task_file: Path) -> list[str]:
    """The plan's resource flags, its workdir made relative to here again."""
    from skyform.spec.overrides import words

    recorded = dict(plan.task.overrides)
    if "workdir" in recorded:
        recorded["workdir"] = shell_path(Path(task_file).resolve().parent / recorded["workdir"])
    return words(recorded)


def shell_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
