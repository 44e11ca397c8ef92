"""load_task(path) -> Dag: read, compose with positions, validate, normalize."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from skyform.errors import SpecError
from skyform.inputfile import STDIN_HINT, STDIN_REFUSED, is_stdin, read_input_file
from skyform.spec.dag import MAX_TASKS, Dag, build_edges
from skyform.spec.errors import Where, describe, unknown_keys_error
from skyform.spec.group import GROUP_KEYS, check_group, group_fields
from skyform.spec.inputs import NO_INPUTS, TaskInputs, resolve_inputs
from skyform.spec.localpaths import task_dir_of
from skyform.spec.models import Execution
from skyform.spec.overrides import ResourceOverrides, apply_overrides
from skyform.spec.task import parse_task
from skyform.spec.yamlpos import MAX_FILE_BYTES, Document, compose_documents

HEADER_KEYS = frozenset({"name", "execution"}) | GROUP_KEYS
EXECUTIONS: tuple[Execution, ...] = ("serial", "parallel")


def load_task(
    path: str | os.PathLike[str], inputs: TaskInputs = NO_INPUTS, *, refuse_group: str | None = None
) -> Dag:
    """Load a SkyPilot-style task file (one task or a pipeline). Raises SpecError."""
    label = os.fspath(path)
    text = decode_task(read_task_bytes(label), label)
    return load_task_text(
        text,
        path_label=label,
        inputs=inputs,
        refuse_group=refuse_group,
    )


def read_task_bytes(path: str | os.PathLike[str], *, regular_only: bool = False) -> bytes:
    """A task file's bytes, read once (capped; pipes, devices and stdin handled).
    `regular_only`: the path came from a plan, not from the user (see read_input_file)."""
    label = os.fspath(path)

    def error(message: str, hint: str | None) -> SpecError:
        return SpecError(message, hint, path=label)

    return read_input_file(
        label, MAX_FILE_BYTES, what="a task file", error=error, regular_only=regular_only
    )


def refuse_stdin(path: str | os.PathLike[str]) -> None:
    """For verbs that act before reading the task (launch, jobs launch, exec): the same
    refusal read_task_bytes gives, before anything is created."""
    label = os.fspath(path)
    if is_stdin(label):
        raise SpecError(STDIN_REFUSED.format(what="a task file"), STDIN_HINT, path=label)


def decode_task(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not UTF-8 text (bad byte at offset {exc.start})",
            "Save the task file as UTF-8.",
            path=label,
        ) from None


def _raise_unknown(wheres: list[Where]) -> None:
    found = [err for w in wheres for err in w.unknown]
    if found:
        raise unknown_keys_error(found)


def load_task_text(
    text: str,
    *,
    path_label: str = "<task>",
    inputs: TaskInputs = NO_INPUTS,
    refuse_group: str | None = None,
) -> Dag:
    """Same as load_task, from a string (`path_label` names it in messages; relative paths
    start at `inputs.base_dir`, else the current directory). `refuse_group` names a verb
    that cannot run a job group (`launch`): a group header is then a located error pointing
    to `jobs launch`."""
    overrides = resolve_inputs(inputs)
    resource_overrides = inputs.resources
    docs = compose_documents(text, path_label)
    if not docs:
        raise SpecError(
            "the file has no task in it", "A task needs at least a 'run:' command.", path=path_label
        )
    name, execution, header, docs = _split_header(docs, path_label)
    if refuse_group and header is not None and execution == "parallel":
        refuse_job_group(header, refuse_group, path_label)
    if len(docs) > MAX_TASKS:
        raise SpecError(f"more than {MAX_TASKS} tasks in one file", path=path_label)
    recorded: dict[str, str] = {}
    if resource_overrides:
        task_dir = task_dir_of(path_label)
        docs = [_overridden(docs, resource_overrides, task_dir, path_label)]
        recorded = resource_overrides.recorded(task_dir)
    notes: list[str] = []
    base = Path(inputs.base_dir) if inputs.base_dir is not None else None
    wheres = [Where(path_label, doc, base=base) for doc in docs]
    try:
        tasks = [
            parse_task(doc.value, w, overrides, notes.append)
            for doc, w in zip(docs, wheres, strict=True)
        ]
    except SpecError:
        _raise_unknown(wheres)  # every unknown key at once, before what they may have caused
        raise
    _raise_unknown(wheres)
    edges = build_edges(tasks, execution, wheres, header)
    primaries: list[str] = []
    delay = 0.0
    if header is not None and execution == "parallel":
        primaries, delay = group_fields(header.doc.value, header, execution)
        check_group(tasks, primaries, wheres, header)
    elif header is not None:
        group_fields(header.doc.value, header, execution)  # only reports misplaced keys
    if name is None and len(tasks) == 1:
        name = tasks[0].name
    if len(tasks) == 1 and tasks[0].name is None and path_label != "<task>":
        source = tasks[0].source.model_copy(update={"file_name": Path(path_label).stem})
        tasks = [tasks[0].model_copy(update={"source": source})]
    return Dag(
        name=name,
        execution=execution,
        primary_tasks=primaries,
        termination_delay=delay,
        tasks=tasks,
        edges=edges,
        warnings=tuple(dict.fromkeys(notes)),
        overrides=recorded,
        relative_to=str(base or Path.cwd()) if _resolved(wheres, resource_overrides) else None,
    )


def _resolved(wheres: list[Where], flags: ResourceOverrides | None) -> bool:
    """Whether the task has paths made absolute from the base: relative ones in the file, or
    `--workdir` (named from the current directory, as `sky launch --workdir` reads it)."""
    return any(w.resolved for w in wheres) or (flags is not None and flags.workdir is not None)


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


def refuse_job_group(header: Where, verb: str, label: str) -> None:
    """SkyPilot's `sky launch` refuses a multi-task file ("only supported by `sky jobs
    launch`"); a job group needs the managed-job controller (barrier, names, primaries)."""
    header.fail(
        ("execution",),
        f"a job group (execution: parallel) runs only as a managed job, not with `{verb}`",
        f"Run it with: skyform jobs launch {shlex.quote(label)}",
    )


def _split_header(
    docs: list[Document], label: str
) -> tuple[str | None, Execution, Where | None, list[Document]]:
    first = docs[0].value
    keys = set(first) if isinstance(first, dict) else set()
    is_header = (
        "name" in keys
        and keys <= HEADER_KEYS
        and (len(docs) > 1 or bool(keys & {"execution", *GROUP_KEYS}))
    )
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
