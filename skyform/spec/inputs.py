"""What the command line adds to a task file: `--env`, `--env-file`, `--secret` and the
resource flags — one typed value, built once in cli/ and handed down to the loader.

`resolve_inputs` is the one place they turn into `(name, value)` pairs: env files first,
then `--env` (so `--env` wins), a bare `NAME` taking its value from `environ`.
`pinned()` freezes them for a process that has no shell (the managed-job controller):
every value resolved now, nothing read from an environment or a file later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from skyform.errors import SpecError
from skyform.jobvalues import is_env_name
from skyform.spec.envs import parse_overrides, read_env_file
from skyform.spec.overrides import ResourceOverrides
from skyform.spec.task import Overrides


@dataclass(frozen=True)
class TaskInputs:
    """`envs` / `secrets` are `K=V` or bare `K` (from `environ`); `environ` None means this
    process's environment at load time."""

    envs: tuple[str, ...] = ()
    env_files: tuple[Path, ...] = ()
    secrets: tuple[str, ...] = ()
    resources: ResourceOverrides | None = None
    environ: Mapping[str, str] | None = None
    # `plan`: a declared secret may be left without a value (a plan records names only);
    # apply and everything that runs a job need every value
    secrets_by_name: bool = False
    # apply of a saved plan: every secret the task file declares takes its value from this
    # environment when set (as `--secret NAME` would; `--secret NAME=VALUE` still wins)
    secret_environ: Mapping[str, str] | None = None
    # where relative paths start (None: the current directory): pinned for a process that
    # runs elsewhere, and recorded in a plan for apply's reading of the task file
    base_dir: str | None = None

    @classmethod
    def given(
        cls,
        *,
        envs: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        resources: ResourceOverrides | None = None,
        base_dir: str | None = None,
    ) -> TaskInputs:
        """Values already known (recorded in a plan or a version): no environment read."""
        return cls(
            envs=tuple(f"{k}={v}" for k, v in (envs or {}).items()),
            secrets=tuple(f"{k}={v}" for k, v in (secrets or {}).items()),
            resources=resources,
            environ={},
            base_dir=base_dir,
        )

    def pinned(self) -> TaskInputs:
        """The same inputs with every value resolved now (raises as loading would)."""
        resolved = resolve_inputs(self)
        return TaskInputs(
            envs=tuple(f"{k}={v}" for k, v in resolved.envs),
            secrets=tuple(f"{k}={v}" for k, v in resolved.secrets),
            resources=self.resources,
            environ={},
            base_dir=self.base_dir or str(Path.cwd()),
        )


NO_INPUTS = TaskInputs()


def resolve_inputs(inputs: TaskInputs) -> Overrides:
    """The envs and secrets the flags give, in increasing precedence. A bare name not set,
    a bad name or a NUL byte in a value is a SpecError naming the flag."""
    environ = os.environ if inputs.environ is None else inputs.environ
    envs: list[tuple[str, str]] = []
    for env_file in inputs.env_files:
        envs += read_env_file(Path(env_file))
    envs += parse_overrides(inputs.envs, flag="--env", environ=environ)
    _without_nul(envs, "--env")
    secrets = parse_overrides(inputs.secrets, flag="--secret", environ=environ)
    _without_nul(secrets, "--secret")
    given = {name for name, _ in secrets}
    from_environ = [
        (name, value)
        for name, value in sorted((inputs.secret_environ or {}).items())
        if name not in given and is_env_name(name)
    ]
    return Overrides(
        envs=tuple(envs),
        secrets=tuple(secrets),
        secrets_by_name=inputs.secrets_by_name,
        declared_from=tuple(from_environ),
    )


def _without_nul(pairs: list[tuple[str, str]], flag: str) -> None:
    """The OS ends environment strings at NUL: such a value cannot reach a job intact."""
    for name, value in pairs:
        if "\x00" in value:
            raise SpecError(
                f"{flag} {name}: the value contains a NUL byte",  # never echo the value
                "Environment values cannot hold NUL bytes; remove it.",
                field=flag,
            )
