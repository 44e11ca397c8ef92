"""The test provider's cloud: what exists and what the provider was asked, in one directory.

Provider processes come and go (the engine starts one per provider resource and operation),
so the state lives in files, read and written under an exclusive `flock`:

- `resources.json`: the live resources by type and id — logical name, URN, inputs, outputs and,
  for instances, their state in the outputs (`instanceState`, `currentStatus`);
- `calls.jsonl`: every RPC the provider served, in order, with what it received (inputs as
  the engine sent them: camelCase keys, numbers as floats, secrets in their envelope).

The test reads both through `Cloud` and acts "out of band" through it too (terminate an
instance as a spot interruption would).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # an output not known during a preview

# Set by the test for the provider processes (through the engine's environment).
ENV_DIR = "SKYFORM_TEST_CLOUD_DIR"


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_VALUE


def reveal(value: Any) -> Any:
    """`value` with every secret envelope opened (what a cloud API would receive)."""
    if is_secret(value):
        return reveal(value.get("value"))
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    return value


def logical_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def key(type_: str, id_: str) -> str:
    """Where a resource lives in resources.json: ids are unique per type only (an AWS
    InstanceState's id is its instance's)."""
    return f"{type_} {id_}"


class Cloud:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.root / ".lock"
        self._resources = self.root / "resources.json"
        self._calls = self.root / "calls.jsonl"
        self._refusals = self.root / "refusals.json"

    @classmethod
    def from_env(cls) -> Cloud:
        root = os.environ.get(ENV_DIR)
        if not root:
            raise RuntimeError(f"{ENV_DIR} is not set: the test provider has no cloud")
        return cls(Path(root))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> dict[str, dict]:
        try:
            return json.loads(self._resources.read_text())
        except FileNotFoundError:
            return {}

    def _save(self, resources: dict[str, dict]) -> None:
        tmp = self._resources.with_suffix(".tmp")
        tmp.write_text(json.dumps(resources, indent=1, sort_keys=True))
        tmp.replace(self._resources)

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, dict]]:
        """The live resources by `key(type, id)`, written back when the block ends."""
        with self._locked():
            resources = self._load()
            yield resources
            self._save(resources)

    # -- what the provider records --------------------------------------------------------

    def record(self, call: dict) -> None:
        line = json.dumps(call, sort_keys=True) + "\n"
        with self._locked(), self._calls.open("a") as out:
            out.write(line)

    # -- what tests read ---------------------------------------------------------------------

    def calls(self, method: str | None = None, type_: str | None = None) -> list[dict]:
        with self._locked():
            try:
                lines = self._calls.read_text().splitlines()
            except FileNotFoundError:
                return []
        found = [json.loads(line) for line in lines]
        return [
            c
            for c in found
            if (method is None or c["method"] == method)
            and (type_ is None or c.get("type") == type_)
        ]

    def created(self, type_: str) -> dict[str, dict]:
        """The inputs of each `type_` resource the provider created, by logical name (the
        last creation of a name wins: a replacement)."""
        return {
            logical_name(c["urn"]): c["inputs"]
            for c in self.calls("Create", type_)
            if not c.get("preview")
        }

    def resources(self, type_: str | None = None) -> list[dict]:
        with self._locked():
            live = self._load()
        return [r for r in live.values() if type_ is None or r["type"] == type_]

    # -- out of band ---------------------------------------------------------------------------

    def terminate(self, type_: str, name: str, stack: str | None = None) -> str:
        """End an instance behind the engine's back (a spot interruption, a console delete):
        it is gone from the cloud, as a terminated EC2 instance or a deleted VM is for the
        real providers (their Read reports it gone). `stack` picks among stacks that each
        have a resource of that name. Returns its id."""
        with self.edit() as live:
            (found,) = [
                r
                for r in live.values()
                if r["type"] == type_
                and r["name"] == name
                and (stack is None or r["urn"].startswith(f"urn:pulumi:{stack}::"))
            ]
            del live[key(type_, found["id"])]
        self.record({"method": "OutOfBand", "op": "terminate", "type": type_, "id": found["id"]})
        return found["id"]

    def refuse(self, type_: str, message: str | None) -> None:
        """Make every creation of `type_` fail with the cloud's `message` (None: stop)."""
        with self._locked():
            refusals = json.loads(self._refusals.read_text()) if self._refusals.exists() else {}
            if message is None:
                refusals.pop(type_, None)
            else:
                refusals[type_] = message
            self._refusals.write_text(json.dumps(refusals))

    def refusal(self, type_: str) -> str | None:
        with self._locked():
            if not self._refusals.exists():
                return None
            return json.loads(self._refusals.read_text()).get(type_)
