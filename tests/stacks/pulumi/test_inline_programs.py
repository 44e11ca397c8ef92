"""Stacks provisioned side by side in one process (a service's replicas, launched together):
their programs declare resources one at a time. The provider SDKs load their submodules
lazily, and Python's lazy loader is not thread-safe before 3.12: through the real engine, a
second replica's program met `pulumi_aws.ec2` half loaded ("has no attribute 'KeyPair'")."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from skyform.stacks.pulumi import engine


def test_programs_run_at_once_declare_their_resources_one_at_a_time(monkeypatch):
    lock = threading.Lock()
    declaring: list[str] = []
    overlaps: list[list[str]] = []

    def register(cluster: dict) -> None:
        with lock:
            declaring.append(cluster["name"])
            if len(declaring) > 1:
                overlaps.append(list(declaring))
        time.sleep(0.2)  # a first lazy import of the provider SDK takes about a second
        with lock:
            declaring.remove(cluster["name"])

    monkeypatch.setattr(engine, "program_module", lambda cloud: SimpleNamespace(register=register))
    programs = [engine.program_for("aws", {"name": name}) for name in ("web-1", "web-2")]
    threads = [threading.Thread(target=program) for program in programs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
