"""One YAML document -> TaskSpec (everything except the pipeline around it)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from skyform.spec.accelerators import canonical_name
from skyform.spec.envs import (
    references,
    require_values,
    secret_looking_envs,
    substitute,
    yaml_variables,
)
from skyform.spec.errors import BadValue, Where, describe
from skyform.spec.infra import format_location, infer_location, parse_infra
from skyform.spec.localpaths import (
    absolute,
    check_env_value,
    check_mount_destination,
    check_mount_source,
    check_workdir,
)
from skyform.spec.models import FileMount, GitWorkdir, SkyformExt, SourceRef, TaskSpec
from skyform.spec.raw import IGNORED_TASK_KEYS, RawSkyform, RawTask, RawWorkdirGit
from skyform.spec.resources import parse_resources
from skyform.spec.service import parse_service
from skyform.spec.storage import is_bucket_uri, storage_mount, uri_mount
from skyform.spec.values import parse_minutes

MAX_NUM_NODES = 4096
MAX_DATA_GB = 10_000_000  # 10 PB
MAX_HOURS = 100_000
SUBSTITUTED = ("workdir", "file_mounts", "service", "volumes")  # where $VAR is replaced
TASK_NAME = re.compile(r"[a-zA-Z0-9]+(?:[._-]{1,2}[a-zA-Z0-9]+)*")


@dataclass(frozen=True)
class Overrides:
    """Command-line values, in increasing precedence (env files first, then --env)."""

    envs: tuple[tuple[str, str], ...] = ()
    secrets: tuple[tuple[str, str], ...] = ()
    secrets_by_name: bool = False  # a declared secret may stay without a value (`plan`)
    # values for the secrets a task declares, only those (apply's environment)
    declared_from: tuple[tuple[str, str], ...] = ()


def parse_task(
    raw: Any, where: Where, overrides: Overrides, note: Callable[[str], None]
) -> TaskSpec:
    if not isinstance(raw, dict):
        where.fail((), f"expected a mapping of task fields, got {describe(raw)}")
    spec = where.validate(RawTask, raw, ())
    if spec.name is not None and not TASK_NAME.fullmatch(spec.name):
        where.fail(
            ("name",),
            f"invalid task name '{spec.name}'",
            "Use letters, digits and single '.', '-' or '_' (at most two in a row) between them.",
        )
    num_nodes = 1 if spec.num_nodes is None else spec.num_nodes
    if not 1 <= num_nodes <= MAX_NUM_NODES:
        where.fail(
            ("num_nodes",), f"num_nodes must be between 1 and {MAX_NUM_NODES}, got {num_nodes}"
        )
    for key in IGNORED_TASK_KEYS:
        if raw.get(key) is not None:
            note(f"{where.label}:{where.line((key,))}: {key} is accepted but not used by skyform")
    if raw.get("managed_secrets"):
        where.fail(
            ("managed_secrets",),
            "managed secrets are not supported",
            "Give secret values inline or with --secret NAME=VALUE.",
            unsupported=True,
        )

    envs = yaml_variables(raw.get("envs"), where, "envs")
    secrets = yaml_variables(raw.get("secrets"), where, "secrets")
    for key, values in (("envs", envs), ("secrets", secrets)):
        for name, value in values.items():
            if value is not None:
                check_env_value(name, value, (key, name), where)
    in_file = list(envs)
    envs.update(overrides.envs)
    secrets.update((k, v) for k, v in overrides.declared_from if k in secrets)
    secrets.update(overrides.secrets)
    env_values = require_values(envs, where, "envs", "--env")
    if overrides.secrets_by_name:
        unset = [name for name, value in secrets.items() if value is None]
        _refuse_unset_in_paths(unset, raw, where)
    else:
        require_values(secrets, where, "secrets", "--secret")
    secret_values = {k: v for k, v in secrets.items() if v is not None}
    variables = {**env_values, **secret_values}
    for warning in secret_looking_envs(env_values, secrets, in_file, where):
        note(warning)

    substituted = {key: substitute(raw.get(key), variables) for key in SUBSTITUTED}
    for key in substituted:
        leaked = sorted(references(raw.get(key)) & set(secret_values))
        if leaked:
            note(
                f"{where.label}:{where.line((key,))}: secret {', '.join(leaked)} is substituted "
                f"into {key}, so its value appears wherever {key} is shown"
            )
    resources = parse_resources(raw.get("resources"), where, note)
    return TaskSpec(
        name=spec.name,
        workdir=_workdir(substituted["workdir"], raw.get("workdir"), where),
        num_nodes=num_nodes,
        resources=resources,
        envs=env_values,
        secrets={k: None if v is None else SecretStr(v) for k, v in secrets.items()},
        file_mounts=_file_mounts(raw.get("file_mounts"), variables, where),
        setup=spec.setup,
        run=spec.run,
        inputs=_data(spec.inputs, "inputs", where),
        outputs=_data(spec.outputs, "outputs", where),
        config=spec.config,
        service=parse_service(substituted["service"], where, resources),
        pool=spec.pool,
        volumes=substituted["volumes"],
        skyform=_skyform(raw.get("skyform"), spec.inputs, where),
        source=_source(where),
    )


def _refuse_unset_in_paths(unset: list[str], raw: dict, where: Where) -> None:
    """A secret substituted into a path is needed to plan (the path is resolved, checked
    and recorded with `${NAME}` in place of the value); elsewhere its name is enough."""
    for key in SUBSTITUTED:
        used = sorted(references(raw.get(key)) & set(unset))
        if used:
            where.fail(
                ("secrets", used[0]),
                f"secret '{used[0]}' has no value, and {key} uses it: planning needs it",
                f"Pass it with --secret {used[0]}=VALUE (or --secret {used[0]} to take it "
                "from your shell); the plan records ${" + used[0] + "}, never the value.",
                at_key=True,
            )


def _source(where: Where) -> SourceRef:
    pos = where.doc.positions.get(("resources",))
    return SourceRef(
        path=where.label,
        line=where.doc.line,
        resources_line=pos.key_line if pos else None,
        resources_column=pos.key_column if pos else None,
    )


def _workdir(value: Any, raw: Any, where: Where) -> str | GitWorkdir | None:
    if value is None:
        return value
    if isinstance(value, str):
        check_workdir(value, raw, where)
        return absolute(value, where)
    if isinstance(value, dict):
        git = where.validate(RawWorkdirGit, value, ("workdir",))
        return GitWorkdir(url=git.url, ref=git.ref)
    where.fail(
        ("workdir",),
        f"workdir must be a directory path or {{url, ref}}, got {describe(value)}",
        "Write e.g. 'workdir: .' or 'workdir: {url: https://github.com/org/repo, ref: main}'.",
    )


def _file_mounts(raw: Any, variables: dict[str, str], where: Where) -> dict[str, FileMount]:
    if not raw:
        return {}
    mounts: dict[str, FileMount] = {}
    for key, value in raw.items():
        path = ("file_mounts", key)
        dst, src = substitute(key, variables), substitute(value, variables)
        check_mount_destination(dst, path, where)
        if dst in mounts:
            where.fail(
                path, f"two file mounts resolve to the same destination '{dst}'", at_key=True
            )
        if isinstance(src, str):
            if not src.strip():
                where.fail(path, "file mount source is empty")
            if is_bucket_uri(src):
                mounts[dst] = uri_mount(src, path, where)
            else:
                check_mount_source(src, value, path, where)
                mounts[dst] = FileMount(source=absolute(src, where))
        elif isinstance(src, dict):
            mounts[dst] = storage_mount(src, path, where)
        else:
            where.fail(
                path,
                f"file mount source must be a path, a bucket URI or a mapping, got {describe(src)}",
                "Write e.g. '/data: s3://bucket/path' or '/data: {source: ./data, mode: COPY}'.",
            )
    return _one_store_per_bucket(mounts)


def _one_store_per_bucket(mounts: dict[str, FileMount]) -> dict[str, FileMount]:
    """A mount that names a bucket without a store uses the store another mount of the task
    gives that bucket: it is the same bucket (SkyPilot's storage_demo mounts one bucket twice,
    COPY with `store: s3` and MOUNT without), not a second one in the placement's cloud."""
    pinned = {m.bucket.name: m.bucket.store for m in mounts.values() if m.bucket and m.bucket.store}
    out = dict(mounts)
    for dst, mount in mounts.items():
        bucket = mount.bucket
        if bucket is not None and bucket.store is None and bucket.name in pinned:
            store = pinned[bucket.name]
            out[dst] = mount.model_copy(
                update={"store": store, "bucket": bucket.model_copy(update={"store": store})}
            )
    return out


def _data(value: dict[str, float] | None, key: str, where: Where) -> dict[str, float]:
    if not value:
        return {}
    if len(value) > 1:
        where.fail((key,), f"{key} takes one entry {{path_or_uri: size_GB}}, got {len(value)}")
    for name, size in value.items():
        if not (math.isfinite(size) and 0 <= size <= MAX_DATA_GB):
            where.fail(
                (key, name), f"{key} size must be between 0 and {MAX_DATA_GB} GB, got {size:.12g}"
            )
    return {name: float(size) for name, size in value.items()}


def _timer(value: Any, path: tuple, where: Where) -> int | None:
    if value is None:
        return None
    try:
        return max(1, parse_minutes(value))  # 0 would fire before the job is submitted
    except BadValue as exc:
        raise where.problem(path, exc) from None


ARCHES = ("x86_64", "arm64", "any")
ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "aarch64": "arm64"}


def _skyform(raw: Any, inputs: dict[str, float] | None, where: Where) -> SkyformExt:
    path = ("skyform",)
    if isinstance(raw, dict) and isinstance(raw.get("depends_on"), str):
        raw = {**raw, "depends_on": [raw["depends_on"]]}
    spec = where.validate(RawSkyform, raw or {}, path)
    location = None
    if spec.inputs_location is not None:
        try:
            infra = parse_infra(spec.inputs_location)
        except BadValue as exc:
            raise where.problem((*path, "inputs_location"), exc) from None
        if infra.cloud is None:
            where.fail(
                (*path, "inputs_location"),
                "inputs_location must name a cloud, e.g. 'aws/us-east-1'",
            )
        location = format_location(infra)
    elif inputs:
        location = infer_location(next(iter(inputs)))
    checkpoint = spec.checkpoint_dir
    if checkpoint is not None and not checkpoint.startswith("/"):
        where.fail(
            (*path, "checkpoint_dir"),
            f"checkpoint_dir must be an absolute path on the nodes, got {checkpoint!r}",
            "Point it at storage that outlives a node: a file_mounts destination backed by a "
            "bucket, or a shared filesystem such as NFS.",
        )
    arch = spec.arch
    if arch is not None:
        arch = ARCH_ALIASES.get(arch.lower(), arch.lower())
        if arch not in ARCHES:
            where.fail(
                (*path, "arch"),
                f"arch must be one of {', '.join(ARCHES)}, got {spec.arch!r}",
                "Write e.g. 'arch: arm64' to run on Graviton/Axion machines.",
            )
    timers = {
        key: _timer(getattr(spec, key), (*path, key), where) for key in ("stop_after", "down_after")
    }
    stop, down = timers["stop_after"], timers["down_after"]
    if stop is not None and down is not None and down <= stop:
        where.fail(
            (*path, "down_after"),
            f"down_after ({down} min) must be longer than stop_after ({stop} min)",
            "down_after counts from the same last activity as stop_after: e.g. "
            "'stop_after: 30m' and 'down_after: 7d' stop after 30 idle minutes and tear "
            "the stopped cluster down a week after its last job.",
        )
    return SkyformExt(
        stop_after=stop,
        down_after=down,
        estimated_hours=_hours(spec.estimated_hours, (*path, "estimated_hours"), where),
        depends_on=tuple(spec.depends_on or ()),
        inputs_location=location,
        checkpoint_dir=checkpoint,
        arch=arch,
    )


def _hours(value: Any, path: tuple, where: Where) -> float | dict[str, float] | None:
    hint = "Write e.g. 'estimated_hours: 3' or 'estimated_hours: {A100: 2, V100: 5, default: 4}'."

    def one(number: Any, at: tuple) -> float:
        if isinstance(number, bool) or not isinstance(number, int | float):
            where.fail(at, f"estimated hours must be a number, got {describe(number)}", hint)
        if not (math.isfinite(number) and 0 < number <= MAX_HOURS):
            where.fail(at, f"estimated hours must be greater than 0 and at most {MAX_HOURS}", hint)
        return float(number)

    if value is None:
        return None
    if isinstance(value, dict):
        if not value:
            where.fail(path, "estimated_hours is empty", hint)
        return {
            ("default" if k.lower() == "default" else canonical_name(k)): one(v, (*path, k))
            for k, v in value.items()
        }
    return one(value, path)
