"""Keys a team shares through its state store, encrypted at rest with SKYFORM_PASSPHRASE.

In team mode (a PostgreSQL store) the creator of a cluster shares what a teammate needs to
reach its nodes: each node's SSH private key (sealed: scrypt-derived key, AES-256-GCM, as
Pulumi's passphrase provider does it) and the nodes' host keys (public: stored plainly, so
every teammate trusts the same keys). A teammate who reads the cluster gets the key written
under their SKYFORM_HOME/keys/team (0600) and the host keys merged into their known_hosts.
Without the passphrase, or with a different one, the error says so; nothing is written.
The embedded SQLite store holds no keys: they stay in their files, as before.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from skyform.digests import sha256_hex
from skyform.errors import StateError
from skyform.paths import ensure_dir, home, write_atomic
from skyform.state.models import ClusterRecord
from skyform.state.sqlcore import Conn

PASSPHRASE_ENV = "SKYFORM_PASSPHRASE"
SCRYPT = {"n": 2**15, "r": 8, "p": 1}
_SET_IT = (
    f"Set {PASSPHRASE_ENV} to the team's passphrase (the one the cluster's creator used), "
    "then run this again."
)


def passphrase() -> str | None:
    return os.environ.get(PASSPHRASE_ENV) or None


def _key(secret: str, salt: bytes) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, **SCRYPT).derive(secret.encode())


def seal(secret: str, data: bytes) -> str:
    return Sealer(secret).seal(data)


def unseal(
    secret: str, token: str, *, what: str, damaged_hint: str = "Apply the cluster again."
) -> bytes:
    return Sealer(secret, salt=b"").unseal(token, what=what, damaged_hint=damaged_hint)


class Sealer:
    """Seals and opens with one passphrase, deriving each salt's key once: scrypt costs
    ~0.1 s, too much per chunk of a managed job's output. Tokens are those of `seal`; one
    Sealer's tokens share its salt, each with a nonce of its own (AES-GCM's 96 random bits)."""

    def __init__(self, secret: str, *, salt: bytes | None = None) -> None:
        self.secret = secret
        self.salt = os.urandom(16) if salt is None else salt
        self._keys: dict[bytes, bytes] = {}

    def _key_for(self, salt: bytes) -> bytes:
        if salt not in self._keys:
            self._keys[salt] = _key(self.secret, salt)
        return self._keys[salt]

    def seal(self, data: bytes) -> str:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        sealed = AESGCM(self._key_for(self.salt)).encrypt(nonce, data, b"skyform")
        return "v1:" + ":".join(base64.b64encode(x).decode() for x in (self.salt, nonce, sealed))

    def unseal(
        self, token: str, *, what: str, damaged_hint: str = "Apply the cluster again."
    ) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            version, *parts = token.split(":")
            salt, nonce, sealed = (base64.b64decode(p) for p in parts)
            assert version == "v1"
            return AESGCM(self._key_for(salt)).decrypt(nonce, sealed, b"skyform")
        except InvalidTag:
            raise StateError(
                f"cannot decrypt {what} with this {PASSPHRASE_ENV}: it is not the passphrase "
                "it was encrypted with",
                _SET_IT,
            ) from None
        except (ValueError, AssertionError):
            raise StateError(f"the stored {what} is damaged", damaged_hint) from None


def put_sealed(conn: Conn, name: str, token: str, now: float) -> None:
    """Store (or replace) the sealed value `name` in the `secrets` table."""
    conn.execute(
        "INSERT INTO secrets (name, ciphertext, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET ciphertext=excluded.ciphertext, "
        "updated_at=excluded.updated_at",
        (name, token, now),
    )


def _secret_name(cluster: str, path: str) -> str:
    return f"identity/{cluster}/{path}"


def _host_pattern(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def _known_hosts() -> Path:
    return home() / "known_hosts"


def share(conn: Conn, record: ClusterRecord, now: float) -> None:
    """Store the keys of `record`'s nodes that exist on this machine (the creator's)."""
    nodes = record.handle.nodes if record.handle else []
    secret = passphrase()
    for path in sorted({n.identity_file for n in nodes if n.identity_file}):
        file = Path(path).expanduser()
        if secret is None or not file.is_file():
            continue
        put_sealed(conn, _secret_name(record.name, path), seal(secret, file.read_bytes()), now)
    wanted = {_host_pattern(n.host, n.port): n for n in nodes}
    for line in _lines(_known_hosts()):
        parts = line.split()
        if len(parts) >= 3 and parts[0] in wanted:
            node = wanted[parts[0]]
            conn.execute(
                "INSERT INTO known_hosts (host, port, key_type, key) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(host, port, key_type) DO UPDATE SET key=excluded.key",
                (node.host, node.port, parts[1], parts[2]),
            )


def adopt(conn: Conn, record: ClusterRecord) -> ClusterRecord:
    """`record` with every node key that is missing here fetched from the store."""
    if record.handle is None:
        return record
    _merge_known_hosts(conn, record)
    replaced: dict[str, str] = {}
    for node in record.handle.nodes:
        path = node.identity_file
        if not path or path in replaced or Path(path).expanduser().exists():
            continue
        replaced[path] = str(_fetch(conn, record.name, path))
    if not replaced:
        return record
    nodes = [
        n.model_copy(update={"identity_file": replaced.get(n.identity_file or "", n.identity_file)})
        for n in record.handle.nodes
    ]
    handle = record.handle.model_copy(update={"nodes": nodes})
    return record.model_copy(update={"handle": handle})


def _fetch(conn: Conn, cluster: str, path: str) -> Path:
    what = f"cluster {cluster!r}'s SSH key"
    row = conn.execute(
        "SELECT ciphertext FROM secrets WHERE name=?", (_secret_name(cluster, path),)
    ).fetchone()
    if row is None:
        raise StateError(
            f"{what} ({path}) is not on this machine and was not shared through the state "
            f"store (its creator had no {PASSPHRASE_ENV} set)",
            f"Ask them to set {PASSPHRASE_ENV} and apply the cluster again, or copy the key.",
        )
    secret = passphrase()
    if secret is None:
        raise StateError(f"{what} is in the team's state store, encrypted", _SET_IT)
    data = unseal(secret, row["ciphertext"], what=what)
    digest = sha256_hex(f"{cluster}\0{path}")[:16]
    target = ensure_dir(ensure_dir(home() / "keys") / "team") / f"{cluster}-{digest}"
    _write_private(target, data)
    return target


def _merge_known_hosts(conn: Conn, record: ClusterRecord) -> None:
    nodes = record.handle.nodes if record.handle else []
    path = _known_hosts()
    lines = _lines(path)
    known = {tuple(line.split()[:2]) for line in lines if len(line.split()) >= 3}
    added = []
    for node in nodes:
        rows = conn.execute(
            "SELECT key_type, key FROM known_hosts WHERE host=? AND port=?", (node.host, node.port)
        ).fetchall()
        pattern = _host_pattern(node.host, node.port)
        for row in rows:
            if (pattern, row["key_type"]) not in known:
                added.append(f"{pattern} {row['key_type']} {row['key']}")
                known.add((pattern, row["key_type"]))
    if added:
        _write_private(path, "".join(f"{ln}\n" for ln in [*lines, *added]).encode())


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _write_private(path: Path, data: bytes) -> None:
    ensure_dir(path.parent)
    write_atomic(path, data, mode=0o600)
