"""The `skyform` console script. `--help` and `--version` are answered from text saved
ahead of time (skyform/cli/root_help.py) before typer, the verbs or any model is imported:
they are typed far more often than anything else and Typer alone costs ~40 ms to import.
`status` on a fresh machine and `show PLAN` are answered without Typer (cli/fastpath.py);
everything else goes to the Typer app in skyform.cli.main."""

from __future__ import annotations

import sys

HELP_FLAGS = ("--help", "-h")
# Click renders help at min(terminal columns, 80) - 2; the saved text is the 80-column one.
HELP_COLUMNS = 80


def main() -> None:
    text = saved_output(sys.argv[1:])
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        raise SystemExit(0)
    from skyform.cli.fastpath import answer

    code = answer(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    from skyform.cli.main import run

    run()


def saved_output(args: list[str]) -> str | None:
    """What Typer would print for `args`, when it is saved text; else None."""
    if args == ["--version"]:
        from skyform import __version__

        return f"skyform {__version__}\n"
    if len(args) == 1 and args[0] in HELP_FLAGS:
        import shutil

        if shutil.get_terminal_size().columns >= HELP_COLUMNS:
            from skyform.cli.root_help import ROOT_HELP

            return ROOT_HELP
    return None
