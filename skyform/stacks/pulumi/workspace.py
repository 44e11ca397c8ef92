"""The Automation API: the only module that imports `pulumi.automation`.

One stack per cluster in a LocalWorkspace whose directory is the cluster's work dir, with the
passphrase secrets provider and the backend from `backend.PulumiBackend` (both reach the CLI
through its environment). Every failure goes through `errors.translate`; a failed `up`
first lists what the stack holds, so the message can say which resources exist. What a
killed run left (its lock, its pending creates) is settled first (interrupted.py).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pulumi.automation as auto

from skyform.paths import ensure_dir
from skyform.stacks.preview import EnginePreview
from skyform.stacks.pulumi.backend import PulumiBackend, local_backend_dir, stack_state_file
from skyform.stacks.pulumi.cloud import pulumi_cloud
from skyform.stacks.pulumi.errors import Operation, translate
from skyform.stacks.pulumi.events import EventLines, resource_name
from skyform.stacks.pulumi.interrupted import adopt_pending_creates, lock_holders, stale
from skyform.stacks.pulumi.planned import PlannedSteps

Program = Callable[[], None]
Sink = Callable[[str], None]
COLOR = "never"  # plain text: the error adapter reads it


def _no_program() -> None:
    # refresh and destroy never run the program (no --run-program); if a CLI ever did, fail
    # rather than let an empty program delete the cluster.
    raise RuntimeError("skyform's refresh and destroy must not run the cluster's program")


@contextmanager
def _translated(op: Operation, stack: auto.Stack | None = None) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        existing = _existing(stack) if stack is not None and op.verb == "up" else []
        mapped = translate(exc, op, existing)
        if mapped is None:
            raise
        raise mapped from exc


def _existing(stack: auto.Stack) -> list[str] | None:
    """What a stack holds now, as "name (type)"; None when it cannot be read (a failed up
    then keeps the cluster's record: something may exist)."""
    try:
        resources = deployment_resources(stack)
    except Exception:  # the stack may be locked or unreadable right after a failure
        return None
    return [
        f"{resource_name(r.get('urn', ''))} ({r.get('type')})"
        for r in resources
        if not str(r.get("type", "")).startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))
    ]


def _unlocked(stack: auto.Stack, sink: Sink, action: Callable[[], Any]) -> Any:
    """Run `action`; when the stack is locked by Pulumi runs of this machine that are gone
    (killed), release their lock and run it again, once. A live holder's lock is reported."""
    try:
        return action()
    except auto.ConcurrentUpdateError as exc:
        holders = lock_holders(str(exc))
        if not stale(holders):
            raise
        stack.cancel()
        sink(f"released the lock of {', '.join(map(str, holders))}, which is gone")
        return action()


def _adopt_pending(stack: auto.Stack, op: Operation, sink: Sink) -> bool:
    """Record in the stack what an interrupted run had begun to make, where the cloud can
    name it (interrupted.py); whether anything was."""
    object_id = pulumi_cloud(op.cloud).object_id
    if object_id is None:
        return False
    exported = stack.export_stack()
    deployment = exported.deployment
    if not isinstance(deployment, dict) or not deployment.get("pending_operations"):
        return False
    adopted = adopt_pending_creates(deployment, object_id)
    if adopted:
        stack.import_stack(exported)
        sink(f"recorded what an interrupted run had begun to make: {', '.join(adopted)}")
    return bool(adopted)


def deployment_resources(stack: auto.Stack) -> list[dict]:
    deployment = stack.export_stack().deployment or {}
    return [r for r in deployment.get("resources") or [] if isinstance(r, dict)]


def _options(settings: PulumiBackend, cluster: str) -> auto.LocalWorkspaceOptions:
    return auto.LocalWorkspaceOptions(
        work_dir=str(ensure_dir(settings.work_dir(cluster))),
        env_vars=settings.cli_env(),
        secrets_provider="passphrase",
        project_settings=auto.ProjectSettings(name=settings.project, runtime="python"),
    )


def open_stack(
    settings: PulumiBackend, op: Operation, program: Program | None, *, create: bool
) -> auto.Stack | None:
    """The cluster's stack (created on demand with `create`); None if it does not exist."""
    name = settings.stack_name(op.cluster)
    with _translated(op):
        try:
            if create:
                return auto.create_or_select_stack(
                    name,
                    project_name=settings.project,
                    program=program,
                    opts=_options(settings, op.cluster),
                )
            return auto.select_stack(
                name,
                project_name=settings.project,
                program=program or _no_program,
                opts=_options(settings, op.cluster),
            )
        except auto.StackNotFoundError:
            return None


def preview(
    settings: PulumiBackend, op: Operation, program: Program, sink: Sink
) -> tuple[dict[str, int], list[str]]:
    stack = open_stack(settings, op, program, create=True)
    assert stack is not None
    lines = EventLines(sink)
    with _translated(op, stack):
        result = stack.preview(on_event=lines, color=COLOR)
    changes = {str(getattr(k, "value", k)): int(v) for k, v in result.change_summary.items()}
    return changes, lines.planned


# -- previews for `plan --preview`: they write nothing to the cluster's stack or work dir ----


def stack_exists(settings: PulumiBackend, op: Operation) -> bool:
    """Whether the cluster's stack is in the backend: a local backend's file is looked for,
    another backend is asked from a scratch work dir."""
    if local_backend_dir(settings.backend_url) is not None:
        return stack_state_file(settings, op.cluster) is not None
    name = settings.stack_name(op.cluster)
    env = {"PULUMI_BACKEND_URL": settings.backend_url, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    with tempfile.TemporaryDirectory(prefix="skyform-preview-") as scratch, _translated(op):
        listing = auto.LocalWorkspace(
            work_dir=scratch,
            env_vars=env,
            project_settings=auto.ProjectSettings(name=settings.project, runtime="python"),
        )
        return any(s.name.rsplit("/", 1)[-1] == name for s in listing.list_stacks())


def preview_planned(
    settings: PulumiBackend, op: Operation, program: Program, *, fresh: bool
) -> EnginePreview:
    """The engine's preview of `up`, step by step. `fresh`: of a stack that holds nothing
    yet (a new cluster, or one apply replaces: it destroys the stack first), previewed in a
    scratch backend that is removed afterwards."""
    if not fresh:
        existing = open_stack(settings, op, program, create=False)
        if existing is not None:
            steps = PlannedSteps()
            return _previewed(lambda: existing.preview(on_event=steps, color=COLOR), steps, op)
    with tempfile.TemporaryDirectory(prefix="skyform-preview-") as scratch:
        root = Path(scratch)
        (root / "state").mkdir()
        (root / "work").mkdir()
        options = auto.LocalWorkspaceOptions(
            work_dir=str(root / "work"),
            env_vars={
                "PULUMI_BACKEND_URL": (root / "state").as_uri(),
                "PULUMI_CONFIG_PASSPHRASE": secrets.token_urlsafe(16),
                "PULUMI_SKIP_UPDATE_CHECK": "true",
            },
            secrets_provider="passphrase",
            project_settings=auto.ProjectSettings(name=settings.project, runtime="python"),
        )
        with _translated(op):
            stack = auto.create_stack(
                settings.stack_name(op.cluster),
                project_name=settings.project,
                program=program,
                opts=options,
            )
        steps = PlannedSteps()
        return _previewed(lambda: stack.preview(on_event=steps, color=COLOR), steps, op)


def preview_destroy_planned(settings: PulumiBackend, op: Operation) -> EnginePreview:
    """The engine's preview of `destroy`; nothing to delete when there is no stack."""
    existing = open_stack(settings, op, None, create=False)
    if existing is None:
        return EnginePreview()
    steps = PlannedSteps()
    return _previewed(lambda: existing.preview_destroy(on_event=steps, color=COLOR), steps, op)


def _previewed(run: Callable[[], object], steps: PlannedSteps, op: Operation) -> EnginePreview:
    """The steps of a preview; when the engine fails after planning some, those steps and
    its error messages; when it fails before, skyform's error carrying the engine's text."""
    try:
        run()
    except Exception as exc:
        mapped = translate(exc, op)
        if mapped is None:
            raise
        if steps.empty:
            raise mapped from exc
        return steps.preview(failure="; ".join(steps.errors) or mapped.message)
    return steps.preview()


def up(settings: PulumiBackend, op: Operation, program: Program, sink: Sink) -> dict:
    stack = open_stack(settings, op, program, create=True)
    assert stack is not None

    def run() -> auto.UpResult:
        if _adopt_pending(stack, op, sink):
            stack.refresh(color=COLOR)  # read back what exists of it; drop what never was
        return stack.up(on_event=EventLines(sink), color=COLOR)

    with _translated(op, stack):
        result = _unlocked(stack, sink, run)
    return {key: output.value for key, output in result.outputs.items()}


def refresh(settings: PulumiBackend, op: Operation, sink: Sink) -> list[dict] | None:
    """The stack's resources after a refresh; None when the stack does not exist."""
    stack = open_stack(settings, op, None, create=False)
    if stack is None:
        return None

    def run() -> None:
        _adopt_pending(stack, op, sink)
        stack.refresh(on_event=EventLines(sink), color=COLOR)

    with _translated(op, stack):
        _unlocked(stack, sink, run)
        return deployment_resources(stack)


def destroy(settings: PulumiBackend, op: Operation, sink: Sink) -> bool:
    """Destroy every resource, then remove the stack; False when there was no stack."""
    stack = open_stack(settings, op, None, create=False)
    if stack is None:
        shutil.rmtree(settings.work_dir(op.cluster), ignore_errors=True)
        return False

    def run() -> None:
        _adopt_pending(stack, op, sink)
        stack.destroy(on_event=EventLines(sink), color=COLOR)

    with _translated(op, stack):
        _unlocked(stack, sink, run)
        stack.workspace.remove_stack(stack.name)
    shutil.rmtree(settings.work_dir(op.cluster), ignore_errors=True)
    return True
