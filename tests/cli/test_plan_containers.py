"""`image_id: docker:IMAGE` at plan time: the plan shows the container per cluster; `local`,
and ssh pools whose hosts have no container runtime (or were never probed for one), are
refused with where and what to do; nothing is written."""

from __future__ import annotations

import re

import yaml

from skyform.plan.catalog.hostfacts import HostFacts, write_facts

IMAGE = "ghcr.io/acme/train:2.1"


def _task(tmp_path, infra: str):
    path = tmp_path / "boxed.yaml"
    path.write_text(
        f"name: boxed\nresources:\n  infra: {infra}\n  image_id: docker:{IMAGE}\nrun: nvidia-smi\n"
    )
    return path


def _pool(home, runtimes: list[str | None]) -> None:
    """Pool `lab` of declared hosts; runtimes[i]: what `check` found on host i (None:
    never probed)."""
    hosts = [{"host": f"10.0.0.{i + 1}", "cpus": 4, "memory": 16} for i in range(len(runtimes))]
    (home / "config.yaml").write_text(yaml.safe_dump({"ssh_pools": {"lab": {"hosts": hosts}}}))
    probed = {
        f"ssh/lab/10.0.0.{i + 1}:22": HostFacts(container_runtime=rt, probed_at="2026-12-01T10:00Z")
        for i, rt in enumerate(runtimes)
        if rt is not None
    }
    if probed:
        write_facts(probed, home / "ssh_hosts.json")


def test_aws_plan_shows_the_container_and_boots_a_machine_image(cli, tmp_path):
    result = cli("plan", _task(tmp_path, "aws"), "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.output
    assert re.search(rf'\+ container +\= "{IMAGE}"', result.stdout), result.stdout
    markdown = cli("show", tmp_path / "p.json", "--markdown").stdout
    assert f"- `boxed`: `{IMAGE}`" in markdown


def test_local_refuses_a_container(cli, tmp_path):
    result = cli("plan", _task(tmp_path, "local"), "-o", tmp_path / "p.json")
    assert result.exit_code == 1, result.output
    assert "boxed.yaml:2" in result.stderr  # the task's resources
    assert "runs no container on the local machine" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "p.json").exists()


def test_an_image_name_that_is_an_option_is_refused(cli, tmp_path):
    task = tmp_path / "opt.yaml"
    task.write_text("resources:\n  infra: aws\n  image_id: 'docker:--privileged'\nrun: id\n")
    result = cli("plan", task)
    assert result.exit_code == 1, result.output
    assert "`image_id: docker:--privileged` is not an image name" in result.stderr


def test_ssh_pool_needs_a_runtime_on_every_host(cli, tmp_path, skyform_home):
    task = _task(tmp_path, "ssh/lab")
    _pool(skyform_home, [None, None])
    never = cli("plan", task)
    assert never.exit_code == 1, never.output
    assert "`skyform check` has not probed ssh/lab/10.0.0.1:22" in never.stderr
    assert "install docker or podman" in never.stderr.lower()

    _pool(skyform_home, ["podman", ""])
    partial = cli("plan", task)
    assert partial.exit_code == 1, partial.output
    assert "no docker or podman answers on ssh/lab/10.0.0.2:22" in partial.stderr
    assert "10.0.0.1" not in partial.stderr  # that host has one

    _pool(skyform_home, ["podman", "docker"])
    ok = cli("plan", task)
    assert ok.exit_code == 0, ok.output
    assert re.search(rf'\+ container +\= "{IMAGE}"', ok.stdout), ok.stdout
