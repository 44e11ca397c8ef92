"""SkyPilot's resource flags laid over a task file, as `sky launch` applies them."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyform.errors import SpecError
from skyform.spec import load_task, task_digest
from skyform.spec.inputs import TaskInputs
from skyform.spec.overrides import ResourceOverrides


def _task(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return path


def _requests(tmp_path: Path, text: str, **flags):
    dag = load_task(_task(tmp_path, text), TaskInputs(resources=ResourceOverrides(**flags)))
    return dag, [r for group in dag.tasks[0].resources.groups for r in group]


ANY_OF = """\
name: t
resources:
  cpus: 4+
  any_of:
    - {infra: aws/us-east-1, accelerators: V100:1}
    - {infra: gcp, accelerators: T4:1, use_spot: true}
run: echo
"""


def test_gpus_replace_the_accelerators_of_every_alternative(tmp_path):
    _, requests = _requests(tmp_path, ANY_OF, gpus="A100:2")
    assert {(r.accelerator, r.accelerator_count) for r in requests} == {("A100", 2.0)}
    assert {r.cloud for r in requests} == {"aws", "gcp"}  # what the flag does not name stays


def test_none_removes_a_field(tmp_path):
    _, requests = _requests(tmp_path, ANY_OF, gpus="none")
    assert {r.accelerator for r in requests} == {None}


def test_infra_replaces_the_whole_location_everywhere(tmp_path):
    _, requests = _requests(tmp_path, ANY_OF, infra="gcp/us-central1")
    assert {(r.cloud, r.region, r.zone) for r in requests} == {("gcp", "us-central1", None)}


def test_region_replaces_only_the_region(tmp_path):
    text = "resources: {infra: aws/us-east-1/us-east-1a, cpus: 2+}\nrun: echo\n"
    _, (request,) = _requests(tmp_path, text, region="us-west-2", zone="none")
    assert (request.cloud, request.region, request.zone) == ("aws", "us-west-2", None)


def test_every_resource_flag_reaches_the_request(tmp_path):
    text = "resources: {use_spot: true, cpus: 2}\nrun: echo\n"
    _, (r,) = _requests(
        tmp_path,
        text,
        use_spot=False,
        cpus="8+",
        memory="32",
        disk_size=300,
        image_id="ami-123",
        instance_type="m6i.2xlarge",
        ports=("8080,9000-9001", "22"),
        infra="aws",
    )
    assert r.use_spot is False
    assert (str(r.cpus), str(r.memory)) == ("8+", "32")
    assert (r.disk_size, r.image_id, r.instance_type) == (300, "ami-123", "m6i.2xlarge")
    assert r.ports == ("22", "8080", "9000-9001")


def test_flags_give_the_task_the_same_resources_as_writing_them_in_the_file(tmp_path):
    flagged, _ = _requests(tmp_path, ANY_OF, gpus="L4:1", infra="aws", use_spot=True)
    written = load_task(
        _task(
            tmp_path,
            "name: t\nresources: {cpus: 4+, infra: aws, accelerators: L4:1, use_spot: true}\n"
            "run: echo\n",
        )
    )
    assert flagged.tasks[0].resources == written.tasks[0].resources
    assert task_digest(flagged) == task_digest(written)
    assert flagged.overrides == {"gpus": "L4:1", "infra": "aws", "use-spot": "true"}


def test_num_nodes_and_workdir(tmp_path):
    (tmp_path / "src").mkdir()
    over = ResourceOverrides(num_nodes=3, workdir="src").resolved(tmp_path)
    dag = load_task(_task(tmp_path, "workdir: .\nrun: echo\n"), TaskInputs(resources=over))
    assert (dag.tasks[0].num_nodes, dag.tasks[0].workdir) == (3, str(tmp_path / "src"))
    assert dag.overrides == {"num-nodes": "3", "workdir": "src"}  # relative to the task folder


def test_recorded_flags_read_back_the_same(tmp_path):
    over = ResourceOverrides(gpus="A100:8", use_spot=False, ports=("80", "443"), num_nodes=2)
    recorded = over.recorded(tmp_path)
    assert ResourceOverrides.from_recorded(recorded, tmp_path).recorded(tmp_path) == recorded


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"cpus": "lots"}, "--cpus 'lots'"),
        ({"gpus": "A100:x"}, "--gpus 'A100:x'"),
        ({"infra": "awz"}, "--infra 'awz': unknown cloud 'awz'"),
        ({"infra": "aws", "region": "us-east-1"}, "--infra cannot be combined with --cloud"),
        ({"ports": ("none", "80")}, 'cannot give both "none" and other ports'),
        ({"workdir": "/no/such/dir"}, "--workdir /no/such/dir: not a directory"),
    ],
)
def test_a_bad_flag_is_named_in_the_error(tmp_path, flags, message):
    with pytest.raises(SpecError) as err:
        load_task(_task(tmp_path, "run: echo\n"), TaskInputs(resources=ResourceOverrides(**flags)))
    assert message in err.value.message


def test_a_pipeline_refuses_flags(tmp_path):
    text = "name: p\n---\nname: a\nrun: echo\n---\nname: b\nrun: echo\n"
    with pytest.raises(SpecError) as err:
        load_task(_task(tmp_path, text), TaskInputs(resources=ResourceOverrides(gpus="A100")))
    assert "--gpus A100: resource flags apply to one task" in err.value.message
    assert "a pipeline of 2 tasks" in err.value.message
