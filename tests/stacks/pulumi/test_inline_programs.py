"""Stacks provisioned side by side in one process (a service's replicas, launched together):
their programs declare resources one at a time. The provider SDKs load their submodules
lazily, and Python's lazy loader is not thread-safe before 3.12: through the real engine, a
second replica's program met `pulumi_aws.ec2` half loaded ("has no attribute 'KeyPair'")."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

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


# Run in a fresh interpreter (nothing of the SDK loaded yet, as in a new controller): the
# program as the engine runs it, under the mock runtime; what the SDK loaded after the
# program returned, i.e. outside the lock, while serializing its resources or their outputs.
LOADED_LATE = """
import sys
sys.path[:0] = {paths!r}
from pulumi_harness import run_program
from pulumi_specs import {offer}, context, spec
from skyform.stacks.pulumi import engine
from skyform.stacks.pulumi.inputs import program_inputs

program = engine.program_for(
    {cloud!r}, program_inputs(spec({offer}, nodes=2, ports=["8080"]), context())
)
declared = {{}}

def run():
    program()
    declared["modules"] = {{n for n, m in sys.modules.items() if type(m).__name__ != "_LazyModule"}}

run_program(run)
loaded = {{n for n, m in sys.modules.items() if type(m).__name__ != "_LazyModule"}}
print(sorted(n for n in loaded - declared["modules"] if n.startswith("pulumi_")))
"""


@pytest.mark.parametrize(
    ("cloud", "offer"), [("aws", "AWS_M5"), ("gcp", "GCP_N2"), ("kubernetes", "K8S_CPU")]
)
def test_a_program_leaves_nothing_of_its_sdk_to_load_after_it_returns(cloud, offer):
    """The lock covers what a program runs, not the SDK's serialization of its resources
    afterwards: a submodule first loaded then (Kubernetes: `metadata` dicts typed as
    `meta.v1.ObjectMetaArgs`, resolved when the Pod is serialized) was half loaded by the
    other replica's stack ("module 'pulumi_kubernetes.meta.v1' has no attribute
    'ObjectMetaArgs'": a failed launch, tried again 60 s later)."""
    here = Path(__file__).parent
    code = LOADED_LATE.format(paths=[str(here), str(here.parent.parent)], cloud=cloud, offer=offer)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
