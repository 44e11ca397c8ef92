"""`plan` / `apply` on Kubernetes, as a SkyPilot user runs them: only real capacity is planned on,
the plan says why Kubernetes was not considered, and apply refuses a plan whose capacity moved.

The clusters are tests/kubeapi.py: a real HTTP server on loopback serving recorded
`/api/v1/nodes` answers, reached through a kubeconfig that points at it.
"""

from __future__ import annotations

import json
import os

from helpers import heavy_modules, modules_loaded_by
from kubeapi import recorded

ANY_OF = """name: train
resources:
  any_of:
    - {infra: k8s, accelerators: A100-80GB:8}
    - {infra: aws, accelerators: A100-80GB:8}
run: python train.py
"""
K8S_ONLY = """name: train
resources:
  infra: k8s
  accelerators: A100-80GB:8
run: python train.py
"""


def task(tmp_path, text: str = ANY_OF):
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path


def no_kubeconfig(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))


def test_without_a_kubeconfig_no_imaginary_free_pod_wins(cli, tmp_path, monkeypatch):
    no_kubeconfig(monkeypatch, tmp_path)
    out = tmp_path / "plan.json"
    result = cli("plan", task(tmp_path), "-o", out)
    assert result.exit_code == 0
    plan = json.loads(out.read_text())
    (placed,) = plan["tasks"]
    assert placed["offer"]["cloud"] == "aws"
    assert placed["offer"]["instance_type"] == "p4de.24xlarge"
    assert plan["kubernetes"]["not_considered"] == [
        "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist"
    ]
    assert (
        "Kubernetes was not considered: no kubeconfig: KUBECONFIG is not set and "
        "~/.kube/config does not exist" in result.stdout
    )


def test_a_kubernetes_only_task_without_a_kubeconfig_has_no_offer_and_says_why(
    cli, tmp_path, monkeypatch
):
    no_kubeconfig(monkeypatch, tmp_path)
    result = cli("plan", task(tmp_path, K8S_ONLY))
    assert result.exit_code == 4
    assert "no offer matches A100-80GB:8, kubernetes" in result.stderr
    assert "Kubernetes was not considered: no kubeconfig" in result.stderr


def test_a_task_is_placed_on_the_context_whose_nodes_hold_it(cli, tmp_path, kubeconfig):
    kubeconfig({"lab": "gfd"}, current="lab")
    out = tmp_path / "plan.json"
    assert cli("plan", task(tmp_path), "-o", out).exit_code == 0
    plan = json.loads(out.read_text())
    offer = plan["tasks"][0]["offer"]
    assert (offer["cloud"], offer["context"], offer["region"]) == ("kubernetes", "lab", "lab")
    assert (offer["instance_type"], offer["capacity"]) == ("32CPU--128GB--8xA100-80GB", 2)
    k8s = plan["kubernetes"]
    assert (k8s["scope"], [c["name"] for c in k8s["contexts"]]) == (["kubernetes"], ["lab"])
    assert k8s["digest"].startswith("sha256:") and k8s["not_considered"] == []


def test_the_plan_says_why_no_context_fits_and_the_markdown_too(cli, tmp_path, kubeconfig):
    kubeconfig({"eks": "eks"}, current="eks")
    result = cli("plan", task(tmp_path), "--markdown")
    assert result.exit_code == 0
    assert "| `train` | create | aws/" in result.stdout
    assert (
        "- Kubernetes, not considered: no context fits a pod (A100-80GB:8, 32 CPU, 128 GiB): "
        "eks: no node has A100-80GB (GPUs: A10G:1, V100:4)" in result.stdout
    )


def test_apply_refuses_a_plan_whose_kubernetes_capacity_changed(
    cli, tmp_path, kubeconfig, kube_api
):
    kubeconfig({"lab": "gfd"}, current="lab")
    out = tmp_path / "plan.json"
    assert cli("plan", task(tmp_path), "-o", out).exit_code == 0
    one_dgx = recorded("gfd")
    one_dgx["items"] = [n for n in one_dgx["items"] if n["metadata"]["name"] != "dgx-2"]
    kube_api.serve("gfd", one_dgx)  # within the cache TTL: apply reads the API again anyway
    result = cli("apply", out, "-y")
    assert result.exit_code == 3
    assert (
        "is stale: the Kubernetes capacity changed since the plan was made: context lab had 5 "
        in (result.stderr)
    )
    assert "now 4 nodes" in result.stderr


def test_apply_refuses_a_plan_made_before_a_context_existed(cli, tmp_path, monkeypatch, kubeconfig):
    no_kubeconfig(monkeypatch, tmp_path)
    out = tmp_path / "plan.json"
    assert cli("plan", task(tmp_path), "-o", out).exit_code == 0  # on aws: no kubeconfig
    kubeconfig({"lab": "gfd"}, current="lab")
    result = cli("apply", out, "-y")
    assert result.exit_code == 3
    assert "context lab is now planned on (5 nodes: " in result.stderr


def test_a_plan_is_fresh_while_the_capacity_is_unchanged(tmp_path, kubeconfig):
    from skyform.lifecycle.freshness import kubernetes_reasons
    from skyform.ops.plan import plan_task
    from skyform.plan.catalog import load_catalog

    kubeconfig({"lab": "gfd", "eks": "eks"}, current="lab")
    plan = plan_task(task(tmp_path), out=tmp_path / "plan.json").plan
    assert plan.kubernetes is not None
    assert kubernetes_reasons(plan.kubernetes, load_catalog()) == []
    again = plan_task(task(tmp_path), out=tmp_path / "plan.json").plan
    assert again == plan  # same inputs, same plan (the capacity digest included)


def test_a_plan_that_cannot_use_kubernetes_records_nothing_about_it(cli, tmp_path, kubeconfig):
    kubeconfig({"lab": "gfd"}, current="lab")
    out = tmp_path / "plan.json"
    hello = task(tmp_path, "name: hello\nresources: {infra: local}\nrun: echo hi\n")
    assert cli("plan", hello, "-o", out).exit_code == 0
    assert json.loads(out.read_text())["kubernetes"] is None


def test_planning_from_the_cache_does_not_import_the_kubernetes_client(
    tmp_path, kubeconfig, kube_api, skyform_home
):
    kubeconfig({"lab": "gfd"}, current="lab")
    env = {"KUBECONFIG": os.environ["KUBECONFIG"], "SKYFORM_HOME": str(skyform_home)}
    path = str(task(tmp_path, K8S_ONLY))
    first = modules_loaded_by(["plan", path], env)
    assert "kubernetes" in heavy_modules(first)  # nothing cached yet: the API is read
    assert kube_api.node_requests("gfd") == 1
    cached = modules_loaded_by(["plan", path], env)
    assert not heavy_modules(cached)
    assert kube_api.node_requests("gfd") == 1


def test_more_nodes_than_the_context_holds_is_no_offer_and_says_how_many_fit(
    cli, tmp_path, kubeconfig
):
    kubeconfig({"lab": "gfd"}, current="lab")
    result = cli("plan", task(tmp_path, K8S_ONLY.replace("resources:", "num_nodes: 3\nresources:")))
    assert result.exit_code == 4
    assert (
        "num_nodes: 2 (the pods its nodes hold): A100-80GB:8 kubernetes 32CPU--128GB--8xA100-80GB "
        "(lab) $0.00/h" in result.stderr
    )
