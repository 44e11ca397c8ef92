"""`skyform cost PLAN` (estimate), `skyform cost diff OLD NEW`, `skyform cost reprice PLAN`.

`skyform cost PLAN.json` is short for `skyform cost estimate PLAN.json`: a first argument that
is not a subcommand name goes to `estimate` (name a plan file `./diff` to estimate it).
"""

from __future__ import annotations

from pathlib import Path

import typer
from typer.core import TyperGroup

from skyform.cli import options
from skyform.cli.groups import verb_group


class _EstimateByDefault(TyperGroup):
    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["estimate", *args]
        return super().parse_args(ctx, args)


cost_app, register = verb_group(
    "cost",
    "Cost of saved plans: `skyform cost PLAN.json` (estimate), `cost diff`, `cost reprice`.",
    cls=_EstimateByDefault,
)

CATALOG = typer.Option(
    None,
    "--catalog",
    metavar="DIR",
    help="Price against this catalog directory (SkyPilot v8 layout) instead of the one in use.",
)


def _formats(json_out: bool, markdown: bool, csv_out: bool = False) -> None:
    from skyform.errors import SkyformError

    if sum((json_out, markdown, csv_out)) > 1:
        raise SkyformError("--json, --markdown and --csv are exclusive: pick one output format")


@cost_app.command("estimate")
def estimate(
    plan_file: Path = typer.Argument(..., help="A plan written by `skyform plan -o`."),
    json_out: bool = options.JSON,
    markdown: bool = typer.Option(
        False, "--markdown", help="The whole PR comment: the plan, then its cost."
    ),
    csv_out: bool = typer.Option(False, "--csv", help="One CSV row per cluster, then TOTAL."),
    catalog_dir: Path | None = CATALOG,
) -> None:
    """Per cluster: offer, nodes, $/h, hours, estimated total, egress, spot saving; totals."""
    from skyform.cli.render.cost import emit, render_cost, render_cost_csv
    from skyform.cli.render.cost_markdown import cost_comment
    from skyform.ops import cost as costs

    _formats(json_out, markdown, csv_out)
    plan, cost = costs.estimate(plan_file, catalog_dir)
    text = cost_comment(plan, cost) if markdown else render_cost_csv(cost) if csv_out else None
    emit(cost, render_cost, as_json=json_out, text=text)


@cost_app.command("diff")
def diff(
    old_file: Path = typer.Argument(..., help="The earlier plan (e.g. from the base branch)."),
    new_file: Path = typer.Argument(..., help="The later plan (or a managed-job revision)."),
    json_out: bool = options.JSON,
    markdown: bool = options.MARKDOWN,
) -> None:
    """What changed in placement and cost between two saved plans, per cluster and in total."""
    from skyform.cli.render.cost import emit
    from skyform.cli.render.cost_diff import render_diff
    from skyform.cli.render.cost_markdown import render_diff_markdown
    from skyform.ops import cost as costs

    _formats(json_out, markdown)
    cmp = costs.diff(old_file, new_file)
    emit(cmp, render_diff, as_json=json_out, text=render_diff_markdown(cmp) if markdown else None)


@cost_app.command("reprice")
def reprice(
    plan_file: Path = typer.Argument(..., help="A plan written by `skyform plan -o`."),
    json_out: bool = options.JSON,
    markdown: bool = options.MARKDOWN,
    catalog_dir: Path | None = CATALOG,
) -> None:
    """The plan's offers priced against the current catalog: drift, and offers now gone."""
    from skyform.cli.render.cost import emit
    from skyform.cli.render.cost_markdown import render_reprice_markdown
    from skyform.cli.render.cost_reprice import render_reprice
    from skyform.ops import cost as costs

    _formats(json_out, markdown)
    result = costs.reprice(plan_file, catalog_dir)
    text = render_reprice_markdown(result) if markdown else None
    emit(result, render_reprice, as_json=json_out, text=text)
