"""The ssh host probe cache: plans record the probe they used, so a probe that measured the
same values again must not change what a plan records (same inputs, same plan bytes)."""

from __future__ import annotations

from skyform.plan.catalog.hostfacts import HostFacts, read_facts, write_facts


def test_a_repeated_probe_with_the_same_values_keeps_the_first_time(tmp_path):
    path = tmp_path / "ssh_hosts.json"
    first = HostFacts(cpus=8, memory=32, probed_at="2026-12-01T10:00:00Z")
    write_facts({"ssh/lab/a:22": first}, path)
    write_facts(
        {"ssh/lab/a:22": HostFacts(cpus=8, memory=32, probed_at="2026-12-01T11:00:00Z")}, path
    )
    assert read_facts(path)["ssh/lab/a:22"].probed_at == "2026-12-01T10:00:00Z"


def test_a_probe_with_other_values_replaces_the_entry_and_its_time(tmp_path):
    path = tmp_path / "ssh_hosts.json"
    write_facts({"ssh/lab/a:22": HostFacts(cpus=8, memory=32, probed_at="2026-12-01T10:00Z")}, path)
    write_facts(
        {"ssh/lab/a:22": HostFacts(cpus=16, memory=32, probed_at="2026-12-01T11:00Z")}, path
    )
    facts = read_facts(path)["ssh/lab/a:22"]
    assert (facts.cpus, facts.probed_at) == (16, "2026-12-01T11:00Z")
