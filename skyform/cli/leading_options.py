"""Verbs whose last argument is a command (`exec C CMD ARGS...`): skyform's options are read
wherever they stand before the command, as SkyPilot's click reads them; the words from the
command's first one on are the command's (`exec C python train.py --lr 1`).

Such a verb lets unknown options through to the command, so before the command starts an
unknown option would silently become shell text (`exec C --no-follow 'cat x'` ran
`--no-follow cat x` on every node). Here it is a usage error instead, with the way to mean it
(`--`). A flag never becomes shell text by accident.
"""

from __future__ import annotations

from typing import NoReturn

# Typer vendors click (typer._click): its parser raises these, and cli/main.py reports them
from typer._click.core import Command, Context, Parameter
from typer._click.exceptions import NoSuchOption
from typer.core import TyperCommand


class CommandAfterOptions(TyperCommand):
    """A TyperCommand whose `positionals_before_command` arguments (the cluster) come first,
    then the command; an unknown `-x` before the command is refused."""

    positionals_before_command = 1

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        refuse_unknown_leading(self, ctx, args, self.positionals_before_command)
        return super().parse_args(ctx, args)


def _options(command: Command, ctx: Context) -> dict[str, Parameter]:
    known: dict[str, Parameter] = {}
    for param in command.get_params(ctx):
        if param.param_type_name == "option":
            for name in (*param.opts, *param.secondary_opts):
                known[name] = param
    return known


def _takes_value(option: Parameter) -> bool:
    return not (getattr(option, "is_flag", False) or getattr(option, "count", False))


def refuse_unknown_leading(
    command: Command, ctx: Context, args: list[str], positionals: int
) -> None:
    """Walk `args` as click will, up to the command's first word (or `--`): every option met
    must be one of the verb's (its value skipped), else NoSuchOption."""
    known = _options(command, ctx)
    seen = 0
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return
        if not word.startswith("-") or word == "-":
            seen += 1
            if seen > positionals:
                return  # the command starts here: the rest is its own
            i += 1
            continue
        if word.startswith("--"):
            name, has_value = word.split("=", 1)[0], "=" in word
            option = known.get(name)
            if option is None:
                _refuse(ctx, word, name)
            i += 2 if option is not None and _takes_value(option) and not has_value else 1
            continue
        option = known.get(word[:2])
        if option is None:
            _refuse(ctx, word, word[:2])
        if _takes_value(option):  # `-n 2` or `-n2`
            i += 2 if len(word) == 2 else 1
            continue
        for letter in word[2:]:  # `-dy`: every letter a known flag
            if known.get(f"-{letter}") is None:
                _refuse(ctx, word, f"-{letter}")
        i += 1


def _refuse(ctx: Context, word: str, name: str) -> NoReturn:
    verb = ctx.info_name or "exec"
    raise NoSuchOption(
        name,
        message=(
            f"No such option: {name} (before the command, options are skyform's; "
            f"if {word} is part of the command, put -- before the command: "
            f"skyform {verb} CLUSTER -- {word} ...)"
        ),
        ctx=ctx,
    )
