"""Verbs the console script answers before Typer is imported (~50 ms of Typer and the verbs'
click commands, half of a fresh machine's `status`): `status` with no state yet, `show` of
a saved plan and `plan` of a task file. Each fast path takes only the plain spellings of its
verb and answers only when it can do so exactly as the Typer app would; otherwise it
returns None having printed nothing, and the app runs as usual (so every usage error and
every refused plan is reported by the one code that reports them, skyform.cli.main)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from skyform.plan.model import Plan

# every flag of `status` (cli/commands/status.py); with no state, none changes what it prints
STATUS_FLAGS = frozenset(
    {"--json", "--all-users", "-a", "-u", "--verbose", "-v", "--refresh", "-r"}
)
SHOW_FLAGS = frozenset({"--json", "--markdown"})
# the flags of `plan` the fast path takes (with -o/--out PATH); any other goes to Typer
PLAN_FLAGS = frozenset({"--json", "--markdown", "--detailed-exitcode", "--destroy"})
OUT_FLAGS = ("-o", "--out")


def answer(args: list[str]) -> int | None:
    """The exit code, when a fast path answered `args`; None: nothing was printed."""
    verb = {"status": _status, "show": _show, "plan": _plan}.get(args[0]) if args else None
    if verb is None:
        return None
    try:
        return verb(args[1:])
    except KeyboardInterrupt:  # as the app says it
        from skyform.cli.outcome import report
        from skyform.errors import Interrupted

        report(Interrupted("Interrupted."))
        return Interrupted.exit_code


def _status(rest: list[str]) -> int | None:
    # cluster names (no dash) are accepted as the app accepts them; other dashes go to Typer
    if any(a.startswith("-") and a not in STATUS_FLAGS for a in rest):
        return None
    from skyform.ops.clusters import has_state

    try:
        if has_state():
            return None
    except Exception:  # a bad state URL, an unreadable home: the app reports it
        return None
    from skyform.cli.render.empty import render_no_clusters

    render_no_clusters(as_json="--json" in rest)
    return 0


def _show(rest: list[str]) -> int | None:
    flags = [a for a in rest if a.startswith("-")]
    paths = [a for a in rest if not a.startswith("-")]
    if len(paths) != 1 or not set(flags) <= SHOW_FLAGS or len(set(flags)) != len(flags):
        return None
    json_out, markdown = "--json" in flags, "--markdown" in flags
    if json_out and markdown:
        return None
    from pathlib import Path

    plan_file = Path(paths[0])
    if plan_file.suffix in (".yaml", ".yml"):  # the app says to plan it first
        return None
    # the strict reader without pydantic: None for anything the app must say (plan/planview.py)
    from skyform.plan.planview import read_view

    read = read_view(plan_file)
    if read is None:
        return None
    view, data = read
    from skyform.cli.outcome import guarded

    if json_out:  # the file is the canonical dump of its plan: what the app prints
        from skyform.cli.render.visible import json_visible

        return guarded(lambda: _write(json_visible(data.decode())))
    from skyform.cli.render.plan_output import emit_plan

    plan = cast("Plan", view)  # a view draws as its model does (the mixins of plan/parts.py)
    return guarded(lambda: emit_plan(plan, markdown=markdown))


def _plan(rest: list[str]) -> int | None:
    """`plan TASK [-o PLAN] [--json | --markdown] [--detailed-exitcode] [--destroy]`, each
    at most once, as the Typer command would run it (cli/plan_run.py)."""
    paths: list[str] = []
    flags: set[str] = set()
    out: str | None = None
    words = iter(rest)
    for word in words:
        if word in OUT_FLAGS:
            value = next(words, None)
            if out is not None or value is None or value.startswith("-"):
                return None
            out = value
        elif word.startswith("-"):
            if word not in PLAN_FLAGS or word in flags:
                return None
            flags.add(word)
        else:
            paths.append(word)
    if len(paths) != 1 or {"--json", "--markdown"} <= flags:
        return None
    from pathlib import Path

    from skyform.cli.startup import skip_pydantic_plugins

    skip_pydantic_plugins()  # before any model is built, as the app does
    from skyform.cli.outcome import guarded
    from skyform.cli.plain_options import task_inputs
    from skyform.cli.plan_run import run_plan

    return guarded(
        lambda: run_plan(
            Path(paths[0]),
            out=out,
            objective="cost",
            cluster=None,
            destroy="--destroy" in flags,
            detailed_exitcode="--detailed-exitcode" in flags,
            inputs=task_inputs([], [], []),  # no resource flag: the app's overrides are None
            json_out="--json" in flags,
            markdown="--markdown" in flags,
            check=None,
            max_hourly_cost=None,
            max_total_cost=None,
        )
    )


def _write(text: str) -> None:
    sys.stdout.write(text)
