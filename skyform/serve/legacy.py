"""Services an older skyform recorded as JSON files, moved into the state store once.

Before services lived in the store, `$SKYFORM_HOME/serve/<name>/` held service.json (the
record, with its replicas), versions/<N>.json and plans/<N>.json. The first time a command
of this version opens the store (state.store), each such service is imported (its owner:
this user and home) and its JSON files removed; the folder stays, with the logs and the load
balancer's files. Running it again finds nothing left to do; a service half imported before
(a crash between the insert and the removal) is finished. A torn file is skipped with a
warning (`paths.add_notice`: the CLI prints it) and left where it is.

The JSON moves as it is (the store's readers read it leniently, as they read the files);
only what the rows are keyed by is checked here, so this module needs none of the models.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from skyform.paths import add_notice
from skyform.state.revisions import Revisions, service_owner
from skyform.state.services import Services


def import_json_records(
    services: Services, root: Path, *, owner: str, host: str, home: str
) -> list[str]:
    """Import every service found as JSON under `root` (SKYFORM_HOME/serve); returns their
    names."""
    if not root.is_dir():
        return []
    done = []
    for folder in sorted(p for p in root.iterdir() if (p / "service.json").is_file()):
        if _import_one(services, folder, owner=owner, host=host, home=home):
            done.append(folder.name)
    return done


def _import_one(services: Services, folder: Path, *, owner: str, host: str, home: str) -> bool:
    record_file = folder / "service.json"
    record = _read(record_file, {"name": str, "task_path": str})
    if record is None:
        return False
    name = record["name"]
    if name != folder.name:
        add_notice(f"{record_file} names service {name!r}, not {folder.name!r}: left as it is")
        return False
    found = services.get(name)
    if found is not None and not (found.owner == owner and found.home == home):
        add_notice(
            f"{record_file} was not imported into the state store: service {name!r} there "
            f"belongs to {found.owner} (SKYFORM_HOME {found.home}); the file is left as it is"
        )
        return False
    replicas = [
        r
        for r in record.pop("replicas", None) or []
        if isinstance(r, dict)
        and type(r.get("replica_id")) is int
        and isinstance(r.get("status"), str)
    ]
    given = record.get("status")
    status = given if isinstance(given, str) else "CONTROLLER_INIT"
    given = record.get("endpoint")
    endpoint = given if isinstance(given, str) else None
    text = json.dumps(record)
    versions = _all(folder / "versions", {"number": int})
    plans = _all(folder / "plans", {"revision": int, "created_at": float, "kind": str})
    if found is None:
        services.create(name, owner=owner, host=host, home=home, status=status, record=text)
    services.put(
        name,
        status=status,
        endpoint=endpoint,
        record=text,
        replicas=[(r["replica_id"], r["status"], json.dumps(r)) for r in replicas],
    )
    for path, version in versions:
        services.put_version(name, version["number"], json.dumps(version))
        path.unlink(missing_ok=True)
    kept = Revisions(services.db)
    for path, plan in plans:
        reason = plan.get("reason")
        kept.restore(
            service_owner(name),
            plan["revision"],
            created_at=float(plan["created_at"]),
            kind=plan["kind"],
            reason=reason if isinstance(reason, str) else "",
            body=json.dumps(plan).encode(),  # with its row's fields: readers take the row's
        )
        path.unlink(missing_ok=True)
    for sub in ("versions", "plans"):
        with contextlib.suppress(OSError):
            (folder / sub).rmdir()  # only when empty: a torn file stays
    record_file.unlink(missing_ok=True)
    return True


def _read(path: Path, keys: dict[str, type]) -> dict[str, Any] | None:
    """The file's JSON object, when it holds `keys` with values of their types."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        add_notice(f"{path} could not be read ({type(exc).__name__}): skipped, left as it is")
        return None
    if not isinstance(data, dict) or not all(_fits(data.get(k), t) for k, t in keys.items()):
        add_notice(f"{path} is not a record skyform wrote: skipped, left as it is")
        return None
    return data


def _fits(value: object, kind: type) -> bool:
    if kind is float:
        return type(value) in (int, float)
    return type(value) is kind


def _all(folder: Path, keys: dict[str, type]) -> list[tuple[Path, dict[str, Any]]]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        item = _read(path, keys)
        if item is not None:
            found.append((path, item))
    return found
