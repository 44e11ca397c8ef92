"""`skyform serve plan`: the load balancer, each replica's placement (spread by the spot
placer, fallback replicas marked) and the hourly cost at min and max replicas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyform.errors import SpecError
from skyform.serve.plan import Offering, plan_service
from skyform.spec import load_task_text
from skyform.spec.inputs import TaskInputs

PLACER = """\
name: spot-svc
service:
  readiness_probe: /health
  replica_policy:
    min_replicas: 2
    max_replicas: 4
    target_qps_per_replica: 5
    base_ondemand_fallback_replicas: 1
    spot_placer: dynamic_fallback
resources:
  cpus: 2
  ports: 8080
  use_spot: true
  any_of:
    - infra: gcp/us-central1/us-central1-a
    - infra: gcp/us-central1/us-central1-b
    - infra: gcp/us-east1/us-east1-b
run: python3 -m http.server 8080
"""


def offers(*items: tuple[str, float], spot: bool = True) -> list[Offering]:
    return [
        Offering(infra=i, instance_type="m", spot=spot, num_nodes=1, hourly_cost=p)
        for i, p in items
    ]


SPOT = offers(("z/a", 0.10), ("z/b", 0.20), ("z/c", 0.30))
ONDEMAND = offers(("z/a", 1.0), spot=False)


def plan_of(service: str, spot: bool = True):
    text = f"service:\n{service}resources:\n  ports: 80\n  use_spot: {str(spot).lower()}\nrun: x\n"
    task = load_task_text(text, path_label="s.yaml", inputs=TaskInputs(environ={})).tasks[0]
    return plan_service(
        task, "svc", "s.yaml", lambda r: SPOT if r.alternatives()[0].use_spot else ONDEMAND
    )


def test_spot_placer_spreads_replicas_over_the_cheapest_zones():
    plan = plan_of(
        "  replica_policy:\n    min_replicas: 2\n    max_replicas: 4\n"
        "    target_qps_per_replica: 1\n    spot_placer: dynamic_fallback\n"
    )
    assert [(s.infra, s.runs) for s in plan.replicas] == [
        ("z/a", "at min"),
        ("z/b", "at min"),
        ("z/c", "when scaled up"),
        ("z/a", "when scaled up"),
    ]
    assert (plan.hourly_cost_at_min, plan.hourly_cost_at_max) == (0.3, 0.7)
    assert plan.hourly_cost_worst_case is None


def test_without_a_placer_every_replica_takes_the_cheapest_place():
    plan = plan_of("  replicas: 3\n")
    assert {s.infra for s in plan.replicas} == {"z/a"} and len(plan.replicas) == 3
    assert plan.autoscaling == "Fixed 3 replicas"


def test_dynamic_fallback_replicas_are_marked_and_priced_as_the_worst_case():
    plan = plan_of(
        "  replica_policy:\n    min_replicas: 1\n    max_replicas: 2\n"
        "    target_qps_per_replica: 1\n    base_ondemand_fallback_replicas: 1\n"
        "    dynamic_ondemand_fallback: true\n"
    )
    roles = [(s.role, s.runs, s.spot) for s in plan.replicas]
    assert roles == [
        ("on-demand", "at min", False),
        ("spot", "when scaled up", True),
        ("on-demand fallback", "while spot is not READY", False),
    ]
    assert plan.hourly_cost_at_min == 1.0  # min 1 = the base on-demand replica
    assert plan.hourly_cost_at_max == 1.1
    assert plan.hourly_cost_worst_case == 2.0


def test_scale_to_zero_costs_nothing_at_min_and_overprovision_counts_at_max():
    plan = plan_of(
        "  replica_policy:\n    min_replicas: 0\n    max_replicas: 2\n"
        "    target_qps_per_replica: 1\n    num_overprovision: 1\n",
        spot=False,
    )
    assert (plan.min_replicas, plan.max_replicas) == (0, 3)
    assert plan.hourly_cost_at_min == 0 and plan.hourly_cost_at_max == 3.0


def test_a_task_without_service_is_an_error():
    task = load_task_text("run: x\n", path_label="j.yaml", inputs=TaskInputs(environ={})).tasks[0]
    with pytest.raises(SpecError) as caught:
        plan_service(task, "svc", "j.yaml", lambda r: SPOT)
    assert caught.value.message == "the task has no service: section"


@pytest.fixture
def placer_file(tmp_path: Path) -> Path:
    path = tmp_path / "spot-svc.yaml"
    path.write_text(PLACER)
    return path


def test_cli_text_shows_lb_replicas_and_costs(cli, placer_file: Path):
    result = cli("serve", "plan", placer_file)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("Service spot-svc\n")
    assert "Spot policy      SpotHedge" in out
    assert "Load balancer    this machine (the local controller)" in out
    rows = [line.split() for line in out.splitlines() if line[:3].strip().isdigit()]
    assert [(r[1], r[-4]) for r in rows] == [
        ("on-demand", "gcp/us-central1/us-central1-a"),
        ("spot", "gcp/us-central1/us-central1-a"),
        ("spot", "gcp/us-central1/us-central1-b"),
        ("spot", "gcp/us-east1/us-east1-b"),
    ]
    assert "Hourly cost at min (2 replicas): $" in out
    assert "Hourly cost at max (4 replicas): $" in out


def test_cli_markdown_and_json(cli, placer_file: Path):
    markdown = cli("serve", "plan", placer_file, "--markdown")
    assert markdown.exit_code == 0
    assert "### Service `spot-svc`" in markdown.stdout
    assert "| 3 | spot | when scaled up | gcp/us-central1/us-central1-b |" in markdown.stdout
    data = json.loads(cli("serve", "plan", placer_file, "--json", "-n", "web").stdout)
    assert data["service"] == "web"
    assert [s["role"] for s in data["replicas"]] == ["on-demand", "spot", "spot", "spot"]
    assert data["hourly_cost_at_max"] > data["hourly_cost_at_min"] > 0


def test_cli_refuses_a_bad_service_name(cli, placer_file: Path):
    result = cli("serve", "plan", placer_file, "-n", "9lives")
    assert result.exit_code == 1
    assert "invalid service name '9lives'" in result.stderr


def test_serve_update_of_an_unknown_service_or_with_a_bad_mode_changes_nothing(
    cli, placer_file: Path
):
    result = cli("serve", "update", "web", placer_file, "--mode", "blue_green")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "Error: no service named 'web'",
        "Hint: Services: none. See `skyform serve status`.",
    ]
    result = cli("serve", "update", "web", placer_file, "--mode", "canary")
    assert result.exit_code == 1
    assert "--mode 'canary' is not one of: rolling, blue_green" in result.stderr
