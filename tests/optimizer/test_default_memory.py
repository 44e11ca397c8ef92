"""`cpus: N` without memory means at least 4 GiB per vCPU on AWS/GCP, as in SkyPilot
(`memory_gb_or_ratio = '4x'` when memory is None on its default-instance path)."""

from __future__ import annotations

from skyform.config import Config
from skyform.plan.catalog import load_catalog
from skyform.plan.optimizer import optimize
from skyform.spec import load_task_text


def _choose(text: str):
    dag = load_task_text(text)
    (task,) = optimize(dag, load_catalog(Config())).tasks
    return task.candidate.offer


def test_cpus_alone_gets_four_gib_per_vcpu():
    offer = _choose("resources: {cpus: 4+}\nrun: echo\n")
    assert offer.vcpus >= 4 and offer.memory_gib >= 4 * offer.vcpus
    assert offer.instance_type == "e2-standard-4"


def test_explicit_memory_lifts_the_default_ratio():
    offer = _choose("resources: {cpus: 4+, memory: 4+}\nrun: echo\n")
    assert offer.instance_type == "e2-highcpu-4" and offer.memory_gib == 4


def test_accelerator_requests_get_no_memory_default():
    offer = _choose("resources: {accelerators: T4}\nrun: echo\n")
    assert offer.accelerator == "T4"
