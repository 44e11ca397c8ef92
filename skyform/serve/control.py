"""Requests to a service's controller through the state store, from any home sharing it.

`serve update`, `serve down --replica-id` and `serve down` write a row in service_requests
(op, payload); the controller polls its service's rows every REQUEST_POLL_SECONDS and writes
the answer, which the asking command waits for. Nothing needs the controller's machine: a
home on another machine asks the same way.

Secrets never enter the store in clear. An update's `--secret` values are sealed
(teamkeys: scrypt + AES-256-GCM) with the controller's own key when the asking home is the
controller's (`request.key` in the service's 0700 folder, made by the controller, 0600),
else with SKYFORM_PASSPHRASE, which the controller must have been started with too. From
another home without a passphrase such an update is refused, saying so.
"""

from __future__ import annotations

import secrets as random_secrets
import time
from pathlib import Path

from skyform.errors import SkyformError
from skyform.paths import write_atomic
from skyform.serve import state
from skyform.state.teamkeys import PASSPHRASE_ENV, passphrase, seal, unseal

REQUEST_POLL_SECONDS = 0.5  # how often the controller looks for requests
ANSWER_POLL_SECONDS = 0.1
KEY_FILE = "request.key"
OWN_KEY, PASSPHRASE = "controller key", "passphrase"


def key_path(name: str) -> Path:
    return state.service_dir(name) / KEY_FILE


def make_key(name: str) -> str:
    """The controller's own sealing key, made at its start (a new one each start)."""
    key = random_secrets.token_urlsafe(32)
    write_atomic(key_path(name), key, mode=0o600)
    return key


def _own_key(name: str) -> str | None:
    try:
        return key_path(name).read_text().strip() or None
    except OSError:
        return None


def sealed_secrets(name: str, secrets: dict[str, str]) -> dict[str, object]:
    """The payload fields carrying `secrets` sealed (nothing when there are none)."""
    if not secrets:
        return {}
    import json

    data = json.dumps(secrets, sort_keys=True).encode()
    row = state.row_of(name)
    own = _own_key(name) if row is not None and state.runs_here(row) else None
    if own is not None:
        return {"secrets_sealed": seal(own, data), "sealed_with": OWN_KEY}
    team = passphrase()
    if team is None:
        where = f"SKYFORM_HOME {row.home} on {row.host}" if row is not None else "another home"
        raise SkyformError(
            f"service {name!r}'s controller runs from {where}, and this update has secrets: "
            "they can reach it only sealed with the team's passphrase",
            f"Set {PASSPHRASE_ENV} (the one the controller was started with) and retry, or "
            "run the update from the controller's home.",
        )
    return {"secrets_sealed": seal(team, data), "sealed_with": PASSPHRASE}


def opened_secrets(name: str, payload: dict[str, object], own_key: str) -> dict[str, str]:
    """The controller opens a request's secrets (an empty dict when it has none)."""
    import json

    token = payload.get("secrets_sealed")
    if not isinstance(token, str):
        return {}
    secret = own_key if payload.get("sealed_with") == OWN_KEY else passphrase()
    if secret is None:
        raise SkyformError(
            f"the update's secrets are sealed with {PASSPHRASE_ENV}, and the controller "
            "of this service was started without it",
            "Run the update from the controller's home, or start the service with "
            f"{PASSPHRASE_ENV} set.",
        )
    what = f"the secrets of an update of service {name!r}"
    opened = json.loads(unseal(secret, token, what=what, damaged_hint="Retry the update."))
    return {str(k): str(v) for k, v in opened.items()} if isinstance(opened, dict) else {}


def ask(name: str, op: str, payload: dict[str, object], timeout: float) -> dict[str, object]:
    """One request to the service's controller, and its answer ({"ok": False, ...} when
    it gave none within `timeout` seconds; the request is then withdrawn)."""
    from skyform.state.sqlcore import whoami

    services = state.store()
    request_id = services.ask(name, op, payload, whoami())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = services.answer_of(request_id)
        if answer is not None:
            services.forget_request(request_id)
            return answer
        if services.get(name) is None:
            return {"ok": False, "error": "the service is gone"}
        time.sleep(ANSWER_POLL_SECONDS)
    services.forget_request(request_id)
    return {"ok": False, "error": f"the controller did not answer within {timeout:g} s"}
