"""envs and secrets: YAML values, --env / --env-file / --secret overrides, substitution.

Precedence is SkyPilot's: `--env` over `--env-file` over the YAML (`--secret` over YAML
for secrets); overrides apply to every task of a pipeline. `$VAR` / `${VAR}` are
substituted from envs+secrets in file_mounts, workdir, service and volumes only (setup
and run get them exported instead); unknown names stay literal. skyform also accepts
`${VAR:-default}`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path as FsPath
from typing import Any

from skyform.errors import SpecError
from skyform.inputfile import read_input_file
from skyform.jobvalues import ENV_NAME
from skyform.spec.errors import Where, describe
from skyform.spec.yamlpos import Path

MAX_VARIABLES = 10_000
_REFERENCE = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
MAX_ENV_FILE_BYTES = 1024 * 1024


def parse_overrides(
    items: Iterable[str], *, flag: str, environ: Mapping[str, str]
) -> list[tuple[str, str]]:
    """`K=V` pairs; a bare `K` takes its value from the environment of this process."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not ENV_NAME.fullmatch(name):
            raise SpecError(
                f"{flag} {name!r}: not a valid variable name",  # never echo the value
                "Names are letters, digits and '_' and do not start with a digit: "
                f"{flag} NAME=VALUE.",
                field=flag,
            )
        if not sep:
            if name not in environ:
                raise SpecError(
                    f"{flag} {name}: {name} is not set in this shell's environment",
                    f"Export it first, or pass the value: {flag} {name}=VALUE.",
                    field=flag,
                )
            value = environ[name]
        pairs.append((name, value))
    return pairs


def read_env_file(path: FsPath) -> list[tuple[str, str]]:
    """A dotenv file read as SkyPilot's `--env-file` reads it (python-dotenv's
    `dotenv_values`): `KEY=VALUE`, `export KEY=VALUE`, `#` comments, single quotes literal,
    double quotes with escapes (`\\n`, `\\\\`, `\\"`) and line breaks, `${VAR}` expanded,
    CRLF line ends. A line that is not a binding is an error naming its line, not skipped."""
    import io

    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    label = str(path)

    def error(message: str, hint: str | None) -> SpecError:
        return SpecError(
            f"cannot read env file: {message}", hint or "Check the --env-file path.", path=label
        )

    data = read_input_file(path, MAX_ENV_FILE_BYTES, what="an env file", error=error)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SpecError("env file is not UTF-8 text", path=label) from None
    for binding in parse_stream(io.StringIO(text)):
        line = binding.original.line
        if binding.error:
            raise SpecError(
                "expected KEY=VALUE",
                "Each line of an env file is KEY=VALUE (optionally prefixed by 'export'); "
                "quote values with spaces or '#'.",
                path=label,
                line=line,
                column=1,
            )
        if binding.key is not None and not ENV_NAME.fullmatch(binding.key):
            raise SpecError(
                f"{binding.key!r} is not a valid variable name",
                "Names are letters, digits and '_' and do not start with a digit.",
                path=label,
                line=line,
                column=1,
            )
        if binding.key is not None and binding.value is None:
            raise SpecError(
                f"{binding.key} has no value (no '=')",
                f"Write {binding.key}=VALUE, or {binding.key}= for an empty value.",
                path=label,
                line=line,
                column=1,
            )
        if binding.value is not None and "\x00" in binding.value:
            raise SpecError(
                f"the value of {binding.key} contains a NUL byte",
                "Environment values cannot hold NUL bytes; remove it.",
                path=label,
                line=line,
            )
    values = dotenv_values(stream=io.StringIO(text), interpolate=True)
    return [(k, v) for k, v in values.items() if v is not None]


def yaml_variables(raw: Any, where: Where, key: str) -> dict[str, str | None]:
    """`envs:` / `secrets:` from YAML; numbers and booleans become strings like SkyPilot's."""
    if raw is None:
        return {}
    if isinstance(raw, list):
        where.fail(
            (key,),
            f"{key} as a list (managed secret references) is not supported",
            "Give values inline: 'secrets: {NAME: value}', or pass --secret NAME.",
            unsupported=True,
        )
    if not isinstance(raw, dict):
        where.fail((key,), f"{key} must be a mapping NAME: value, got {describe(raw)}")
    if len(raw) > MAX_VARIABLES:
        where.fail((key,), f"more than {MAX_VARIABLES} variables in {key}")
    out: dict[str, str | None] = {}
    for name, value in raw.items():
        path: Path = (key, name)
        if name.startswith("secrets:"):
            where.fail(
                path,
                "managed secret references ('secrets:NAME') are not supported",
                "Give the value inline or with --secret NAME=VALUE.",
                at_key=True,
                unsupported=True,
            )
        if not ENV_NAME.fullmatch(name):
            where.fail(
                path,
                f"'{name}' is not a valid variable name",
                "Names are letters, digits and '_' and do not start with a digit.",
                at_key=True,
            )
        if value is None or isinstance(value, str):
            out[name] = value
        elif isinstance(value, bool | int | float):
            out[name] = str(value)
        else:
            where.fail(path, f"value of {name} must be a string, got {describe(value)}")
    return out


SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def looks_like_secret(name: str) -> bool:
    """A name one of whose `_`-separated words is, or ends with, KEY, TOKEN, SECRET or
    PASSWORD: HF_TOKEN, WANDB_API_KEY, OPENAI_APIKEY, DB_PASSWORD — not MAX_TOKENS or
    TOKENIZERS_PARALLELISM, which configure a program and are no secret."""
    return any(word.endswith(SECRET_WORDS) for word in name.upper().split("_"))


def secret_looking_envs(
    envs: dict[str, str], secrets: Iterable[str], in_file: Iterable[str], where: Where
) -> Iterator[str]:
    """Warnings for envs that look like secrets and have a value (`in_file`: the names the
    task file's `envs:` has; the others came from --env): an env's value is written into
    the plan (and the PR comment that shows it); a secret's never is."""
    declared, written = set(secrets), set(in_file)
    for name, value in envs.items():
        if value and name not in declared and looks_like_secret(name):
            what = (
                f"{where.label}:{where.line(('envs', name))}: envs.{name}"
                if name in written
                else f"--env {name}"
            )
            instead = (
                "Declare it under `secrets:` instead"
                if name in written
                else f"Pass it with --secret {name}=... instead"
            )
            yield (
                f"{what} looks like a secret: its value is written into the plan and the "
                f"pull-request comment that shows it. {instead} (a plan holds secret names "
                "only; apply takes the value from --secret or the environment)."
            )


def require_values(
    values: dict[str, str | None], where: Where, key: str, flag: str
) -> dict[str, str]:
    for name, value in values.items():
        if value is None:
            kind = "secret" if key == "secrets" else "environment variable"
            where.fail(
                (key, name),
                f"{kind} '{name}' has no value",
                f"Pass it with {flag} {name}=VALUE (or {flag} {name} to take it from your "
                f'shell); to make it empty, write {name}: "" in the task file.',
                at_key=True,
            )
    return {k: v for k, v in values.items() if v is not None}


def substitute(value: Any, variables: Mapping[str, str]) -> Any:
    """Replace `$VAR`, `${VAR}`, `${VAR:-default}` in every string (keys included)."""
    if isinstance(value, str):
        return _REFERENCE.sub(lambda m: _replacement(m, variables), value)
    if isinstance(value, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    return value


def references(value: Any) -> set[str]:
    """Variable names referenced anywhere in `value`."""
    found: set[str] = set()
    if isinstance(value, str):
        for match in _REFERENCE.finditer(value):
            found.add(match.group("braced") or match.group("bare"))
    elif isinstance(value, dict):
        for k, v in value.items():
            found |= references(k) | references(v)
    elif isinstance(value, list):
        for v in value:
            found |= references(v)
    return found


def _replacement(match: re.Match[str], variables: Mapping[str, str]) -> str:
    name = match.group("braced") or match.group("bare")
    default = match.group("default")
    if default is not None:
        current = variables.get(name)
        return current if current else default
    return variables.get(name, match.group(0))
