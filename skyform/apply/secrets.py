"""Secret values for applying a saved plan, which holds only their sha256.

The task file is read again (with `--secret` given to apply, or from the environment), each
value is checked against the hash the plan recorded, and only then handed to the executor.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from skyform.errors import SpecError, StalePlanError
from skyform.plan.model import Plan


def _sha(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


def resolve_secrets(
    plan: Plan,
    task_file: Path,
    task_data: bytes,
    *,
    secret_overrides: list[str],
    environ: dict[str, str],
) -> dict[str, dict[str, str]]:
    """{task label: {secret name: value}} for every task of the plan that has secrets, from
    `task_data`: the task file's bytes as the freshness check read them."""
    needed = {t.task: t.job.secret_digests for t in plan.tasks if t.job.secret_digests}
    if not needed:
        return {}
    from skyform.spec import load_task_text
    from skyform.spec.loader import decode_task

    # Give every env the value the plan recorded, so nulls resolve as they did at plan time.
    env_overrides: dict[str, str] = {}
    for t in plan.tasks:
        for key, value in t.job.envs.items():
            env_overrides.setdefault(key, value)
    # A secret not given on the command line is read from the environment (like `--secret K`).
    names = {name for digests in needed.values() for name in digests}
    given = {o.split("=", 1)[0] for o in secret_overrides}
    implicit = [name for name in sorted(names - given) if name in environ]
    try:
        dag = load_task_text(
            decode_task(task_data, str(task_file)),
            path_label=str(task_file),
            env_overrides=[f"{k}={v}" for k, v in sorted(env_overrides.items())],
            secret_overrides=[*secret_overrides, *implicit],
            environ=environ,
        )
    except SpecError as err:
        if "no value" in err.message:
            err.hint = (
                (err.hint or "") + " Pass it to apply as --secret NAME=VALUE, or export "
                "it in the environment; the plan holds only its hash."
            )
        raise
    labels = {t.label(i): t for i, t in enumerate(dag.tasks)}
    resolved: dict[str, dict[str, str]] = {}
    for label, digests in needed.items():
        task = labels.get(label)
        values = task.secret_values() if task is not None else {}
        for name, digest in digests.items():
            if name not in values:
                raise SpecError(
                    f"secret {name} of task {label!r} has no value",
                    f"Pass it to apply: --secret {name}=VALUE",
                )
            if _sha(values[name]) != digest:
                raise StalePlanError(
                    f"secret {name} of task {label!r} differs from the one the plan was made with",
                    "Pass the same value, or make a new plan with the new one.",
                )
        resolved[label] = {name: values[name] for name in digests}
    return resolved
