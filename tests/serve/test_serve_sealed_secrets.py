"""Which services a controller service adopts when their tasks name secrets: only where the
values `serve up` was given can be opened (sealed into the store with SKYFORM_PASSPHRASE,
and the passphrase set there); otherwise the service is left to the controller that holds
them in memory, said once. A service without secrets is adopted anywhere."""

from __future__ import annotations

import time

import pytest

from skyform.serve import sealed, state, versions
from skyform.serve.adoptable import ServicesKind
from skyform.state.db import open_state

TASK = "name: {name}\nservice:\n  replicas: 1\nresources: {{infra: local, ports: 8080}}\n"


def _service(name: str, secrets: bool) -> None:
    state.create_record(
        state.ServiceRecord(name=name, task_path=f"/{name}.yaml", created_at=time.time())
    )
    state.make_dir(name)
    text = TASK.format(name=name) + ("secrets:\n  TOKEN: null\n" if secrets else "")
    versions.save(name, versions.VersionRecord(number=1, task_path=f"/{name}.yaml", task_text=text))


def _offered(kind: ServicesKind, said: list[str]) -> list[str]:
    with open_state() as db:
        return [work.lease for work in kind.candidates(db, said.append)]


def test_a_service_with_secrets_is_adopted_only_where_they_can_be_opened(
    monkeypatch: pytest.MonkeyPatch,
):
    _service("plain", secrets=False)
    _service("keyed", secrets=True)
    kind, said = ServicesKind(), []
    assert _offered(kind, said) == ["service/plain"]
    assert _offered(kind, said) == ["service/plain"]  # said once
    assert said == [
        "service keyed: its secrets are not in the store (it was put up without "
        "SKYFORM_PASSPHRASE): left to the controller that started it"
    ]

    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team secret")
    with open_state() as db:
        assert sealed.seal_versions(db, "keyed", {1: {"TOKEN": "s3cret"}})
        assert sealed.open_versions(db, "keyed") == {1: {"TOKEN": "s3cret"}}
        row = db.execute("SELECT ciphertext FROM secrets WHERE name='service/keyed'").fetchone()
        assert "s3cret" not in row["ciphertext"]
    assert _offered(ServicesKind(), []) == ["service/keyed", "service/plain"]

    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    said = []
    assert _offered(ServicesKind(), said) == ["service/plain"]
    assert said == [
        "service keyed: its secrets are sealed in the store and SKYFORM_PASSPHRASE is not set "
        "here: left to the controller that started it"
    ]
