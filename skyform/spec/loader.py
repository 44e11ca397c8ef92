"""load_task(path) -> Dag: read, compose with positions, validate, normalize."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from skyform.errors import SpecError
from skyform.spec.dag import MAX_TASKS, Dag, build_edges
from skyform.spec.envs import parse_overrides, read_env_file
from skyform.spec.errors import Where, describe
from skyform.spec.models import Execution
from skyform.spec.overrides import ResourceOverrides, apply_overrides
from skyform.spec.task import Overrides, parse_task
from skyform.spec.yamlpos import MAX_FILE_BYTES, Document, compose_documents

HEADER_KEYS = ({"name"}, {"name", "execution"})
EXECUTIONS: tuple[Execution, ...] = ("serial", "parallel")


def load_task(
    path: str | os.PathLike[str],
    *,
    env_overrides: Sequence[str] = (),
    env_files: Sequence[str | os.PathLike[str]] = (),
    secret_overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    resource_overrides: ResourceOverrides | None = None,
) -> Dag:
    """Load a SkyPilot-style task file (one task or a pipeline). Raises SpecError."""
    label = os.fspath(path)
    file = Path(label)
    try:
        size = file.stat().st_size
        if file.is_dir():
            raise SpecError("is a directory, not a task file", "Pass a .yaml file.", path=label)
        if size > MAX_FILE_BYTES:
            raise SpecError(
                f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
                "A task file holds configuration, not data; move data to file_mounts.",
                path=label,
            )
        data = file.read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file", "Check the path to the task YAML.", path=label) from None
    except OSError as exc:
        raise SpecError(f"cannot read the file: {exc.strerror or exc}", path=label) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not UTF-8 text (bad byte at offset {exc.start})",
            "Save the task file as UTF-8.",
            path=label,
        ) from None
    return load_task_text(
        text,
        path_label=label,
        env_overrides=env_overrides,
        env_files=env_files,
        secret_overrides=secret_overrides,
        environ=environ,
        resource_overrides=resource_overrides,
    )


def load_task_text(
    text: str,
    *,
    path_label: str = "<task>",
    env_overrides: Sequence[str] = (),
    env_files: Sequence[str | os.PathLike[str]] = (),
    secret_overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    resource_overrides: ResourceOverrides | None = None,
) -> Dag:
    """Same as load_task, from a string (`path_label` names it in messages; its folder is
    where a relative workdir starts)."""
    env = os.environ if environ is None else environ
    overrides = Overrides(
        envs=tuple(_env_pairs(env_files, env_overrides, env)),
        secrets=tuple(parse_overrides(secret_overrides, flag="--secret", environ=env)),
    )
    docs = compose_documents(text, path_label)
    if not docs:
        raise SpecError(
            "the file has no task in it", "A task needs at least a 'run:' command.", path=path_label
        )
    name, execution, header, docs = _split_header(docs, path_label)
    if len(docs) > MAX_TASKS:
        raise SpecError(f"more than {MAX_TASKS} tasks in one file", path=path_label)
    recorded: dict[str, str] = {}
    if resource_overrides:
        task_dir = Path.cwd() if path_label == "<task>" else Path(path_label).resolve().parent
        docs = [_overridden(docs, resource_overrides, task_dir, path_label)]
        recorded = resource_overrides.recorded(task_dir)
    notes: list[str] = []
    wheres = [Where(path_label, doc) for doc in docs]
    tasks = [
        parse_task(doc.value, w, overrides, notes.append)
        for doc, w in zip(docs, wheres, strict=True)
    ]
    edges = build_edges(tasks, execution, wheres, header)
    if name is None and len(tasks) == 1:
        name = tasks[0].name
    return Dag(
        name=name,
        execution=execution,
        tasks=tasks,
        edges=edges,
        warnings=tuple(dict.fromkeys(notes)),
        overrides=recorded,
    )


def _overridden(
    docs: list[Document], overrides: ResourceOverrides, task_dir: Path, label: str
) -> Document:
    from skyform.spec.overrides import words

    if len(docs) != 1:
        flags = " ".join(words(overrides.recorded(task_dir)))
        raise SpecError(
            f"{flags}: resource flags apply to one task, and this file is a pipeline of "
            f"{len(docs)} tasks",
            "Write the resources into each task of the file instead.",
            path=label,
        )
    doc = docs[0]
    if not isinstance(doc.value, dict):
        return doc  # parse_task reports what the document is
    value = apply_overrides(doc.value, overrides, task_dir=task_dir)
    return Document(value=value, positions=doc.positions, line=doc.line)


def _env_pairs(
    env_files: Iterable[str | os.PathLike[str]],
    env_overrides: Iterable[str],
    env: Mapping[str, str],
) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for env_file in env_files:
        pairs += read_env_file(Path(env_file))
    pairs += parse_overrides(env_overrides, flag="--env", environ=env)
    return pairs


def _split_header(
    docs: list[Document], label: str
) -> tuple[str | None, Execution, Where | None, list[Document]]:
    first = docs[0].value
    keys = set(first) if isinstance(first, dict) else set()
    is_header = keys in HEADER_KEYS and (len(docs) > 1 or "execution" in keys)
    if not is_header:
        return None, "serial", None, docs
    where = Where(label, docs[0])
    if len(docs) == 1:
        where.fail(
            (),
            "a pipeline header (name/execution) must be followed by tasks",
            "Add tasks after '---', or remove 'execution' to make this a single task.",
        )
    name = first["name"]
    if not isinstance(name, str):
        where.fail(("name",), f"pipeline name must be a string, got {describe(name)}")
    raw = first.get("execution", "serial")
    execution = raw.lower() if isinstance(raw, str) else raw
    if execution not in EXECUTIONS:
        where.fail(
            ("execution",),
            f"unknown execution '{raw}'",
            "Use 'serial' (one after another) or 'parallel' (side by side).",
        )
    return name, execution, where, docs[1:]
