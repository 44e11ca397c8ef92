"""Services an older skyform recorded as JSON files, moved into the state store once.

Before services lived in the store, `$SKYFORM_HOME/serve/<name>/` held service.json (the
record, with its replicas), versions/<N>.json and plans/<N>.json. The first time a command
of this version opens the store, each such service is imported (its owner: this user and
home) and its JSON files removed; the folder stays, with the logs and the load balancer's
files. Running it again finds nothing left to do; a service half imported before (a crash
between the insert and the removal) is finished. A torn file is skipped with a warning
(`paths.add_notice`: the CLI prints it) and left where it is.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from skyform.paths import add_notice
from skyform.serve import revisions, state, versions
from skyform.state.services import Services

M = TypeVar("M", bound=BaseModel)


def import_json_records(services: Services) -> list[str]:
    """Import every service found as JSON under this SKYFORM_HOME; returns their names."""
    root = state.root()
    if not root.is_dir():
        return []
    done = []
    for folder in sorted(p for p in root.iterdir() if (p / "service.json").is_file()):
        if _import_one(services, folder):
            done.append(folder.name)
    return done


def _import_one(services: Services, folder: Path) -> bool:
    from skyform.state.sqlcore import whoami

    record_file = folder / "service.json"
    record = _read(record_file, state.ServiceRecord)
    if record is None:
        return False
    name = record.name
    if name != folder.name:
        add_notice(f"{record_file} names service {name!r}, not {folder.name!r}: left as it is")
        return False
    found = services.get(name)
    if found is not None and not (found.owner == whoami() and found.home == state.this_home()):
        add_notice(
            f"{record_file} was not imported into the state store: service {name!r} there "
            f"belongs to {found.owner} (SKYFORM_HOME {found.home}); the file is left as it is"
        )
        return False
    texts, replicas = state.columns_of(record)
    versions_found = _all(folder / "versions", versions.VersionRecord)
    plans_found = _all(folder / "plans", revisions.ServiceRevision)
    if found is None:
        services.create(
            name,
            owner=whoami(),
            host=state.this_host(),
            home=state.this_home(),
            status=record.status,
            record=texts,
        )
    services.put(name, status=record.status, endpoint=record.endpoint, record=texts,
                 replicas=replicas)  # fmt: skip
    for path, version in versions_found:
        services.put_version(name, version.number, version.model_dump_json())
        path.unlink(missing_ok=True)
    for path, revision in plans_found:
        services.add_revision(
            name, revision.revision, revision.created_at, revision.kind, revision.model_dump_json()
        )
        path.unlink(missing_ok=True)
    for sub in ("versions", "plans"):
        with contextlib.suppress(OSError):
            (folder / sub).rmdir()  # only when empty: a torn file stays
    record_file.unlink(missing_ok=True)
    return True


def _read(path: Path, model: type[M]) -> M | None:
    try:
        return model.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError, ValidationError) as exc:
        add_notice(f"{path} could not be read ({type(exc).__name__}): skipped, left as it is")
        return None


def _all(folder: Path, model: type[M]) -> list[tuple[Path, M]]:
    if not folder.is_dir():
        return []
    found: list[tuple[Path, M]] = []
    for path in sorted(folder.glob("*.json")):
        item = _read(path, model)
        if item is not None:
            found.append((path, item))
    return found
