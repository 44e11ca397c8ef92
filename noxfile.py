"""Developer sessions: `nox -s tests`, `nox -s lint` (CI runs the README's test command)."""

import nox

nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.5")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
