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


def two_region_pool(
    home: Path,
    nodes,
    *,
    hosts=(0, 1, 2, 3),
    max_rounds: int = 2,
    check_interval: float = 1,
    lost_after: int = 2,
) -> None:
    """config.yaml with pool `lab`: hosts 0-1 in region east (zone east-a, $0.10/h), 2-3 in
    west (west-a, $0.20/h), all spot; fast recovery settings for tests and benchmarks."""
    entries = []
    for i in hosts:
        h, east = nodes.handle(i), i < 2
        entries.append(
            {
                "host": h.host,
                "port": h.port,
                "user": h.user,
                "identity_file": h.identity_file,
                "cpus": 2,
                "memory": 4,
                "hourly_price": 0.1 if east else 0.2,
                "labels": {
                    "region": "east" if east else "west",
                    "zone": "east-a" if east else "west-a",
                    "spot": True,
                },
            }
        )
    config = {
        "ssh_pools": {"lab": {"hosts": entries}},
        "recovery": {
            "check_interval": check_interval,
            "lost_after": lost_after,
            "max_rounds": max_rounds,
        },
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))
