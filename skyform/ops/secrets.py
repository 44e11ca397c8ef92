"""Secret values for applying a saved plan, which holds only their names.

The task file is read again (with `--secret` given to apply, or from the environment) and
each secret the plan names must have a value; only then are they handed to the executor.
A plan records no digest of a value (anyone holding the plan could test guesses against
it), so a rotated secret is simply the value used by the next apply.
"""

from __future__ import annotations

from pathlib import Path

from skyform.errors import SpecError
from skyform.ops.taskfile import load_as_planned
from skyform.plan.model import Plan


def resolve_secrets(
    plan: Plan,
    task_file: Path,
    data: bytes,
    *,
    secret_overrides: list[str],
    environ: dict[str, str],
) -> dict[str, dict[str, str]]:
    """{task label: {secret name: value}} for every task of the plan that has secrets;
    `data`: the task file's bytes as the freshness check read them."""
    needed = {t.task: t.job.secrets for t in plan.tasks if t.job.secrets}
    if not needed:
        return {}
    # Give every env the value the plan recorded, so nulls resolve as they did at plan time.
    env_overrides: dict[str, str] = {}
    for t in plan.tasks:
        for key, value in t.job.envs.items():
            env_overrides.setdefault(key, value)
    dag = load_as_planned(
        plan,
        task_file,
        data,
        env_overrides,
        secret_overrides=secret_overrides,
        environ=environ,
    )
    labels = {t.label(i): t for i, t in enumerate(dag.tasks)}
    resolved: dict[str, dict[str, str]] = {}
    for label, secret_names in needed.items():
        task = labels.get(label)
        values = task.secret_values() if task is not None else {}
        for name in secret_names:
            if name not in values:
                raise SpecError(
                    f"secret {name} of task {label!r} has no value",
                    f"Pass it to apply: --secret {name}=VALUE",
                )
        resolved[label] = {name: values[name] for name in secret_names}
    return resolved
