"""Helpers for end-to-end tests (importable as `e2ekit`)."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_pool(home: Path, nodes, indexes, *, name: str = "lab", labels=None) -> None:
    """config.yaml with an ssh pool of the given session nodes (labels per index)."""
    hosts = []
    for i in indexes:
        h = nodes.handle(i)
        entry = {
            "host": h.host,
            "port": h.port,
            "user": h.user,
            "identity_file": h.identity_file,
            "cpus": 2,
            "memory": 4,
        }
        if labels and i in labels:
            entry["labels"] = labels[i]
        hosts.append(entry)
    config = {"ssh_pools": {name: {"hosts": hosts}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def task_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path
