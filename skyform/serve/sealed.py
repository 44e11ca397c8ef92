"""A service's secrets in the state store, so that a controller adopting the service (its
own controller was killed) can launch replicas again.

The `--secret` values of `serve up` / `serve update` reach the controller in memory only
(versions.py saves none). With SKYFORM_PASSPHRASE set, the controller seals them per version
(teamkeys.seal: scrypt + AES-256-GCM) into the store's `secrets` table as
`service/<name>`, as managed jobs seal their inputs (ops/managed/sealed.py). The rule an
adopting controller follows: a service whose versions name no secrets is adopted anywhere; one
whose versions name secrets is adopted only where the sealed values are in the store and the
passphrase is set; otherwise it is left to the controller that has them (`cannot_open` says
why). The row goes with the service.
"""

from __future__ import annotations

import json
import time

import yaml

from skyform.serve import state, versions
from skyform.state.db import StateDB
from skyform.state.teamkeys import PASSPHRASE_ENV, passphrase, put_sealed, seal, unseal


def _row(name: str) -> str:
    return f"service/{name}"


def _needed(name: str) -> list[int]:
    """The service's live versions whose task names secrets."""
    record = state.read_record(name)
    if record is None:
        return []
    found = []
    for number in sorted({record.version, *record.active_versions}):
        saved = versions.load(name, number)
        if saved is None:
            continue
        try:
            task = yaml.safe_load(saved.task_text)
        except yaml.YAMLError:
            continue  # its controller reports the task itself
        if isinstance(task, dict) and task.get("secrets"):
            found.append(number)
    return found


def _stored(db: StateDB, name: str) -> str | None:
    row = db.execute("SELECT ciphertext FROM secrets WHERE name=?", (_row(name),)).fetchone()
    return row["ciphertext"] if row else None


def cannot_open(db: StateDB, name: str) -> str | None:
    """Why a controller here cannot launch the service's replicas (None: it can)."""
    if not _needed(name):
        return None
    if _stored(db, name) is None:
        return f"its secrets are not in the store (it was put up without {PASSPHRASE_ENV})"
    if passphrase() is None:
        return f"its secrets are sealed in the store and {PASSPHRASE_ENV} is not set here"
    return None


def seal_versions(db: StateDB, name: str, by_version: dict[int, dict[str, str]]) -> bool:
    """Seal the secrets of the service's versions; False when there is no passphrase."""
    secret = passphrase()
    if secret is None:
        return False
    data = json.dumps({str(k): v for k, v in by_version.items()}, sort_keys=True).encode()
    with db.transaction() as conn:
        put_sealed(conn, _row(name), seal(secret, data), time.time())
    return True


def open_versions(db: StateDB, name: str) -> dict[int, dict[str, str]]:
    """The sealed secrets of the service's versions ({} when none are stored or there is
    no passphrase here)."""
    token, secret = _stored(db, name), passphrase()
    if token is None or secret is None:
        return {}
    what = f"service {name}'s secrets"
    data = unseal(secret, token, what=what, damaged_hint="Take the service down and up again.")
    return {int(k): dict(v) for k, v in json.loads(data).items()}


def forget(db: StateDB, name: str) -> None:
    with db.transaction() as conn:
        conn.execute("DELETE FROM secrets WHERE name=?", (_row(name),))
