"""How many of SkyPilot's example task files `skyform plan` places here, and why the rest do not.

    .venv/bin/python bench/compat_plan.py ../shared/compat/skypilot-examples [-v] [--json]

Each file is planned as a SkyPilot user runs it from their checkout of the SkyPilot repo: the
file sits in `tasks/`, the current directory is the checkout's root, and the local folders
the file names (workdir, file-mount sources; relative paths from the current directory, as
SkyPilot resolves them, and `~` in a fresh HOME) exist there. A variable the file leaves null
is given a placeholder (as `--env`/`--secret` would), and the file planned again. Nothing is
read from the network or the cloud accounts: every plan is made in a fresh SKYFORM_HOME on the
bundled catalog.

Outcomes (one per file):
- plans                      `skyform plan` produced a plan
- skypilot-refuses           SkyPilot refuses the file too (an empty bucket name), so it is
                             not counted among the files SkyPilot accepts
- relative-path              fails only because skyform resolves a relative workdir or mount
                             source from the task file's folder, not from the current
                             directory as SkyPilot does (its own item, issue 28)
- unsupported                a precise "skyform does not support ..." (an infra it does not
                             target, ...)
- no-offer                   nothing in the bundled catalog fits (exit 4)
- error                      any other located error, with its message
- crash                      an exception that is not skyform's error: a bug
Exit status 1 if anything crashed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import yaml

MAX_FILLS = 10
ORDER = ("plans", "skypilot-refuses", "relative-path", "unsupported", "no-offer", "error", "crash")


def local_sources(text: str) -> list[str]:
    """The workdir, plain file-mount sources and a service's TLS files a file names (not
    buckets), with the variables of its `envs:` left in (`$NAME`, `${NAME}`)."""
    found: list[str] = []
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("workdir"), str):
            found.append(doc["workdir"])
        found += tls_files(doc)
        for mount in (doc.get("file_mounts") or {}).values():
            source = mount.get("source") if isinstance(mount, dict) else mount
            for one in source if isinstance(source, list) else [source]:
                if isinstance(one, str) and "://" not in one:
                    found.append(one)
    return found


def tls_files(doc: dict) -> list[str]:
    service = doc.get("service")
    tls = service.get("tls") if isinstance(service, dict) else None
    if not isinstance(tls, dict):
        return []
    return [str(v) for k, v in sorted(tls.items()) if k in ("keyfile", "certfile")]


def declared_envs(text: str) -> dict[str, str | None]:
    envs: dict[str, str | None] = {}
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and isinstance(doc.get("envs"), dict):
            envs.update({str(k): None if v is None else str(v) for k, v in doc["envs"].items()})
    return envs


def checkout(path: Path, root: Path) -> tuple[Path, list[str]]:
    """`root` as the user's SkyPilot checkout: the task file in root/tasks, its folders made
    relative to root (the current directory) and under root/home for `~`. A variable left
    null that names a mount source is given (as `--env NAME=PATH`) a file made for it."""
    text = path.read_text()
    copy = root / "tasks" / path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text)
    envs, given = declared_envs(text), []
    files = {f for doc in yaml.safe_load_all(text) if isinstance(doc, dict) for f in tls_files(doc)}
    for raw in local_sources(text):
        for name in re.findall(r"\$\{?(\w+)\}?", raw):
            if name in envs and envs[name] is None:
                made = root / "given" / name
                made.parent.mkdir(exist_ok=True)
                made.write_text("given with --env\n")
                envs[name] = str(made)
                given.append(f"{name}={made}")
        name = string.Template(raw).safe_substitute({k: v for k, v in envs.items() if v})
        target = Path(name).expanduser() if name.startswith("~") else root / name
        if "$" in name or target.exists():  # root's, not the folder this bench runs from
            continue
        if raw in files:  # a service's TLS key or certificate
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("pem\n")
        else:
            target.mkdir(parents=True, exist_ok=True)
    return copy, given


def plan_once(copy: Path, envs: list[str], secrets: list[str]) -> tuple[str, str] | None:
    """(outcome, detail), or None when a variable was filled and the plan must run again."""
    from skyform.errors import NoOffersError, SkyformError, SpecError, UnsupportedError
    from skyform.ops.plan import plan_task
    from skyform.spec.inputs import TaskInputs

    inputs = TaskInputs(envs=tuple(envs), secrets=tuple(secrets), secrets_by_name=True)
    try:
        plan_task(copy, inputs=inputs)
    except UnsupportedError as err:
        return "unsupported", err.message
    except NoOffersError as err:
        why = err.message.split(": ", 1)[-1]
        if why.endswith(", kubernetes"):
            why += " (no Kubernetes context here: KUBECONFIG is empty)"
        return "no-offer", why
    except SpecError as err:
        missing = re.search(r"(environment variable|secret) '(\w+)' has no value", err.message)
        if missing:
            kind = envs if missing.group(1) != "secret" else secrets
            kind.append(f"{missing.group(2)}=placeholder")
            return None
        return _spec_outcome(copy, err)
    except SkyformError as err:
        return "error", err.message
    except Exception:
        return "crash", traceback.format_exc(limit=4)
    return "plans", ""


def _spec_outcome(copy: Path, err) -> tuple[str, str]:
    text = f"{err.field or ''}: {err.message}"
    if re.search(r"bucket name|name.*(empty|required)", err.message, re.IGNORECASE) and (
        (err.field or "").startswith("file_mounts")
    ):
        return "skypilot-refuses", text
    wanted = re.search(r"'([^']+)' (does not exist|not found)|no such (file|folder)", err.message)
    if (err.field or "").startswith(("workdir", "file_mounts")) and wanted:
        name = wanted.group(1) or ""
        # present from the current directory (where SkyPilot resolves it), absent beside
        # the task file (where skyform looked)
        if name and not name.startswith(("/", "~")) and (Path.cwd() / name).exists():
            return "relative-path", text
    return "error", text


def classify(path: Path) -> tuple[str, str]:
    root = Path(tempfile.mkdtemp(prefix="compat-plan-"))
    os.environ["HOME"] = str(root / "home")
    os.environ["SKYFORM_HOME"] = str(root / "skyform-home")
    (root / "home").mkdir()
    (root / "skyform-home").mkdir(mode=0o700)
    here = Path.cwd()
    try:
        copy, envs = checkout(path, root)
        os.chdir(root)
        secrets: list[str] = []
        for _ in range(MAX_FILLS):
            outcome = plan_once(copy, envs, secrets)
            if outcome is not None:
                return outcome
        return "error", "too many variables left null"
    finally:
        os.chdir(here)
        shutil.rmtree(root, ignore_errors=True)


def isolate() -> None:
    """No cloud account, kubeconfig or team store of this machine is read."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "CLOUDSDK_", "SKYFORM_")) or name == "KUBECONFIG":
            del os.environ[name]
    os.environ["KUBECONFIG"] = os.devnull


def main(argv: list[str]) -> int:
    paths = [a for a in argv if not a.startswith("-")]
    if not paths:
        sys.stderr.write(__doc__ or "")
        return 1
    isolate()
    folder = Path(paths[0]).resolve()
    files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
    results = {p.name: classify(p) for p in files}
    tally = Counter(kind for kind, _ in results.values())
    if "--json" in argv:
        sys.stdout.write(json.dumps({"tally": tally, "files": results}, indent=1) + "\n")
        return 1 if tally["crash"] else 0
    for name, (kind, detail) in results.items():
        if kind != "plans" or "-v" in argv:
            sys.stdout.write(f"{kind:<17} {name}  {detail.strip()}\n")
    accepted = len(files) - tally["skypilot-refuses"]
    sys.stdout.write(
        f"\n{len(files)} files; SkyPilot accepts {accepted}; skyform plans {tally['plans']} "
        f"of those here.\n" + ", ".join(f"{kind} {tally[kind]}" for kind in ORDER) + "\n"
    )
    return 1 if tally["crash"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
