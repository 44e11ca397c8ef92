"""`skyform stop` / `start` on aws and gcp: the cluster's own Pulumi program with the
instances' power state, run under Pulumi's mock runtime (what the engine would send)."""

from __future__ import annotations

import pytest
from pulumi_harness import run_program
from pulumi_specs import AWS_M5, GCP_N2, spec

from skyform.config import Config
from skyform.errors import SkyformError, StackError
from skyform.ops.stopstart import refuse_unstoppable
from skyform.stacks.pulumi import workspace
from skyform.stacks.pulumi.engine import PulumiEngine
from skyform.state.models import ClusterRecord, ClusterStatus, NodeHandle

STATE = "aws:ec2transitgateway/instanceState:InstanceState"
AWS_INSTANCE = "aws:ec2/instance:Instance"
GCP_INSTANCE = "gcp:compute/instance:Instance"


@pytest.fixture
def recorded(monkeypatch):
    """workspace.up runs the program under the mock runtime instead of a real stack."""
    runs = []

    def up(settings, op, program, sink):
        run = run_program(program, stack=op.cluster)
        runs.append((op, run))
        return run.outputs

    monkeypatch.setattr(workspace, "up", up)
    return runs


def _handle(cluster_spec):
    from skyform.state.models import ClusterHandle

    node = NodeHandle(rank=0, host="54.0.0.1", ip="172.31.0.1", node_id="i-0")
    return ClusterHandle(
        name=cluster_spec.name,
        engine="pulumi",
        infra=cluster_spec.offer.infra,
        offer=cluster_spec.offer,
        nodes=[node],
        stack="skyform/" + cluster_spec.name,
    )


def test_aws_stop_and_start_set_each_instance_state_keeping_the_instances(recorded):
    engine = PulumiEngine(cloud="aws", config=Config())
    c = spec(AWS_M5, nodes=2)
    engine.stop(c, _handle(c))
    op, run = recorded[-1]
    assert op.verb == "stop"
    # The mock runtime registers resources in whatever order their inputs resolve.
    states = sorted(run.of_type(STATE), key=lambda s: s.name)
    assert [(s.name, s.inputs["state"]) for s in states] == [
        ("node-0-state", "stopped"),
        ("node-1-state", "stopped"),
    ]
    assert [s.inputs["instanceId"] for s in states] == ["i-" + "0" * 17, "i-" + "0" * 16 + "1"]
    assert len(run.of_type(AWS_INSTANCE)) == 2  # the instances (and their EBS disks) stay
    handle = engine.start(c, _handle(c))
    _, run = recorded[-1]
    assert {s.inputs["state"] for s in run.of_type(STATE)} == {"running"}
    # Each instance is read again once started: its new public address is the node's (the
    # instance resource's own outputs keep the address it had before the stop).
    reads = sorted(a["instanceId"] for t, a in run.calls if t == "aws:ec2/getInstance:getInstance")
    assert reads == ["i-" + "0" * 17, "i-" + "0" * 16 + "1"]
    assert [(n.host, n.ip) for n in handle.nodes] == [
        ("3.0.0.1", "172.31.0.1"),
        ("3.0.0.2", "172.31.0.2"),
    ]


def test_aws_without_power_registers_no_instance_state(recorded):
    from pulumi_harness import program
    from pulumi_specs import context

    from skyform.stacks.pulumi.inputs import program_inputs

    run = run_program(program("aws", program_inputs(spec(AWS_M5), context())))
    assert run.of_type(STATE) == []


def test_gcp_stop_is_desired_status_terminated(recorded, monkeypatch):
    monkeypatch.setenv("GOOGLE_PROJECT", "my-project")
    engine = PulumiEngine(cloud="gcp", config=Config(), catalog=None)
    c = spec(GCP_N2)
    engine.stop(c, _handle(c))
    (vm,) = recorded[-1][1].of_type(GCP_INSTANCE)
    assert vm.inputs["desiredStatus"] == "TERMINATED"
    assert vm.inputs["allowStoppingForUpdate"] is True
    engine.start(c, _handle(c))
    (vm,) = recorded[-1][1].of_type(GCP_INSTANCE)
    assert vm.inputs["desiredStatus"] == "RUNNING"


def test_kubernetes_engine_refuses_to_stop():
    pytest.importorskip("pulumi_kubernetes")
    from pulumi_specs import K8S_CPU as K8S

    engine = PulumiEngine(cloud="kubernetes", config=Config())
    with pytest.raises(StackError, match="cannot be stopped"):
        engine.stop(spec(K8S), _handle(spec(K8S)))


def test_aws_spot_is_refused_offering_autodown():
    spot = spec(AWS_M5.model_copy(update={"spot": True}))
    record = ClusterRecord(
        name="c1", status=ClusterStatus.UP, spec=spot, hourly_price=0.1, handle=_handle(spot)
    )
    with pytest.raises(SkyformError) as caught:
        refuse_unstoppable(record)
    assert "AWS cannot stop spot instances" in caught.value.message
    assert "skyform autostop c1 -i 10 --down" in (caught.value.hint or "")
    gcp_spot = spec(GCP_N2.model_copy(update={"spot": True}))
    refuse_unstoppable(record.model_copy(update={"spec": gcp_spot}))  # GCP stops spot VMs
