"""skyform's own SSH key pair for the nodes it creates on clouds.

Generated once (Ed25519) as SKYFORM_HOME/keys/skyform-key (0600, OpenSSH format) and
skyform-key.pub, then reused for every cluster: the Pulumi engine puts the public key on the
nodes (an AWS key pair, GCP `ssh-keys` metadata, a Kubernetes Secret) and the exec layer
connects with the private one (`NodeHandle.identity_file`). The local and ssh engines do not
need it. Light to import: `cryptography` is loaded only when a key has to be made.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from skyform.config import ensure_dir, ensure_home, home
from skyform.digests import sha256_hex
from skyform.errors import StackError
from skyform.paths import write_atomic

KEY_NAME = "skyform-key"
KEY_COMMENT = "skyform"


@dataclass(frozen=True)
class SSHKeyPair:
    private_path: Path
    public_path: Path
    public_key: str  # one line: "ssh-ed25519 AAAA... skyform"

    @property
    def fingerprint(self) -> str:
        """`SHA256:...` as `ssh-keygen -lf` prints it."""
        digest = hashlib.sha256(_blob(self.public_key)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    @property
    def short_id(self) -> str:
        """12 hex characters that name the key on clouds (AWS key pair names)."""
        return key_id(self.public_key)


def key_id(public_key: str) -> str:
    """A public key's short id (`SSHKeyPair.short_id`)."""
    return sha256_hex(_blob(public_key))[:12]


def keys_dir() -> Path:
    return home() / "keys"


def key_paths() -> tuple[Path, Path]:
    private = keys_dir() / KEY_NAME
    return private, private.with_name(KEY_NAME + ".pub")


def load_key_pair() -> SSHKeyPair | None:
    """The existing key pair, or None when skyform has not made one yet."""
    private, public = key_paths()
    if not private.exists():
        return None
    if not public.exists():  # the .pub was deleted: derive it again from the private key
        _write_new(public, _public_from_private(private.read_bytes()))
    if private.stat().st_mode & 0o077:
        os.chmod(private, 0o600)  # ssh refuses private keys that others can read
    text = public.read_text().strip()
    if not text.startswith("ssh-ed25519 ") or len(text.split()) < 2:
        raise StackError(
            f"{public} is not an OpenSSH Ed25519 public key",
            f"Delete {private} and {public}; skyform makes a new pair on the next apply "
            "(nodes created with the old key then need to be recreated).",
        )
    return SSHKeyPair(private, public, text)


def ensure_key_pair() -> SSHKeyPair:
    """Load skyform's key pair, generating it on first use. Safe against concurrent callers."""
    existing = load_key_pair()
    if existing is not None:
        return existing
    private, public = key_paths()
    ensure_home()  # 0700, like every directory skyform makes under it
    ensure_dir(keys_dir())
    _write_new(private, _generate())  # loses quietly if another process made one first
    # The .pub always comes from the private key on disk, whichever process wrote it.
    _write_new(public, _public_from_private(private.read_bytes()), replace=True)
    pair = load_key_pair()
    assert pair is not None
    return pair


def preview_public_key() -> str:
    """The public key a preview puts on the nodes: skyform's own, or — before skyform has
    made one — a key made in memory and never written, as the next apply makes a key of its
    own (a preview writes nothing under SKYFORM_HOME)."""
    existing = load_key_pair()
    if existing is not None:
        return existing.public_key
    return _public_from_private(_generate()).decode().strip()


def _blob(public_key: str) -> bytes:
    return base64.b64decode(public_key.split()[1])


def _generate() -> bytes:
    """A new Ed25519 private key in OpenSSH format."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )


def _public_from_private(private_bytes: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_ssh_private_key(private_bytes, password=None)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return public + f" {KEY_COMMENT}\n".encode()


def _write_new(path: Path, data: bytes, *, replace: bool = False) -> bool:
    """Write 0600 via a temp file; without `replace`, never overwrite (False if `path` exists:
    the first writer wins)."""
    return write_atomic(path, data, 0o600, exclusive=not replace)
