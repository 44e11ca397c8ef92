"""A service replica's cluster is an ordinary plan applied as a Pulumi stack: under the mock
runtime, its program opens the service port (AWS security group, GCP firewall rule,
Kubernetes NodePort) even when resources name no ports, and the handle says where the load
balancer reaches it (a pod's node port on Kubernetes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi_harness import program, run_program
from pulumi_specs import context

from skyform.ops.plan import plan_task
from skyform.serve.replica_launch import ReplicaInputs, write_replica_task
from skyform.spec.inputs import TaskInputs
from skyform.stacks.pulumi.inputs import program_inputs
from skyform.stacks.pulumi.outputs import handle_from_outputs

SERVICE = """\
name: web
service:
  readiness_probe: /health
  replicas: 2
  ports: 8080
resources:
  infra: {infra}
  cpus: 2
run: python -m http.server 8080
"""


def replica_cluster(tmp_path: Path, infra: str):
    task = tmp_path / "web.yaml"
    task.write_text(SERVICE.format(infra=infra))
    inputs = ReplicaInputs(service="web", task_file=task, folder=tmp_path)
    path, cluster = write_replica_task(inputs, 2, None)
    plan = plan_task(path, cluster=cluster, inputs=TaskInputs(environ={})).plan
    change = plan.change_for(cluster)
    assert change is not None and change.after is not None
    return change.after


@pytest.mark.parametrize("infra", ["aws/us-east-1", "gcp/us-central1"])
def test_the_replicas_program_opens_the_service_port(skyform_home, tmp_path, infra):
    spec = replica_cluster(tmp_path, infra)
    assert spec.name == "web-2" and spec.ports == ["8080"]
    cloud = infra.split("/")[0]
    got = run_program(program(cloud, program_inputs(spec, context())))
    if cloud == "aws":
        ingress = got.named("firewall").inputs["ingress"]
        assert {"cidrBlocks": ["0.0.0.0/0"], "fromPort": 8080.0, "protocol": "tcp",
                "toPort": 8080.0} in ingress  # fmt: skip
    else:
        allows = [r.inputs.get("allows") for r in got.of_type("gcp:compute/firewall:Firewall")]
        assert [{"protocol": "tcp", "ports": ["22", "8080"]}] in allows


def test_a_kubernetes_replica_is_reached_at_its_pods_node_port(skyform_home, tmp_path):
    from pulumi_specs import K8S_CPU, spec

    cluster = spec(K8S_CPU, name="web-2", ports=["8080"])
    got = run_program(program("kubernetes", program_inputs(cluster, context())))
    (node,) = got.outputs["nodes"]
    assert node["node_ports"] == {"8080": 30023}  # the node port of ssh-0's second port
    handle = handle_from_outputs(cluster, got.outputs, identity_file="k", stack="web-2")
    assert handle.head.host == "192.168.1.1"
    assert handle.head.reached_at(8080) == 30023 and handle.head.reached_at(22) == 22
