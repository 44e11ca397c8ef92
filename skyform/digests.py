"""The one content digest: sha256 of bytes or text (UTF-8). A leaf every layer may import.

`sha256(...)` is the tagged form plans and state record ("sha256:<hex>"); `sha256_hex` the
bare hex, for names and node-side markers."""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def sha256(data: bytes | str) -> str:
    return "sha256:" + sha256_hex(data)
