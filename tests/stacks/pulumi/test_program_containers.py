"""`image_id: docker:IMAGE` on AWS and GCP under the mock runtime: the VM boots the default
machine image (not the container's name as an AMI), and its init provides a docker runtime
and pulls the image; the init script itself, run by bash against stand-in commands."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pulumi_harness import program, run_program
from pulumi_specs import AWS_G5, AWS_M5, GCP_N1_V100, GCP_N2, catalog, context, spec

from skyform.stacks.pulumi.inputs import program_inputs

IMAGE = "ghcr.io/acme/train:2.1"


def run(cluster_spec):
    return run_program(program(cluster_spec.offer.cloud, program_inputs(cluster_spec, context())))


def test_aws_node_boots_the_default_ami_and_its_user_data_sets_up_docker():
    got = run(spec(AWS_M5, image_id=f"docker:{IMAGE}"))
    node = got.named("node-0")
    assert node.inputs["ami"] == catalog().image_for(
        "aws", "us-west-2", "skypilot:custom-cpu-ubuntu"
    )
    init = node.inputs["userData"]
    assert f"docker pull {IMAGE}" in init
    assert "usermod -aG docker ubuntu" in init  # the SSH user runs docker without sudo
    assert "systemctl enable --now docker" in init
    assert "userData" not in run(spec(AWS_M5)).named("node-0").inputs  # no container: none


def test_gcp_vm_gets_the_init_as_its_startup_script():
    got = run(spec(GCP_N2, image_id=f"docker:{IMAGE}"))
    vm = got.named("node-0")
    assert vm.inputs["bootDisk"]["initializeParams"]["image"] == catalog().image_for(
        "gcp", None, "skypilot:custom-cpu-ubuntu-2204"
    )
    script = vm.inputs["metadata"]["startup-script"]
    assert f"docker pull {IMAGE}" in script and "usermod -aG docker skyform" in script
    assert "startup-script" not in run(spec(GCP_N2)).named("node-0").inputs["metadata"]


def _init_script(image: str, offer=AWS_M5) -> str:
    inputs = program_inputs(spec(offer, image_id=f"docker:{image}"), context())
    return inputs["init_script"]


def _stand_in(path: Path, log: Path, extra: str = "") -> None:
    path.write_text(f'#!/bin/bash\necho "{path.name} $*" >> {log}\n{extra}')
    path.chmod(0o755)


def _run_init(tmp_path: Path, script: str, *, have_docker: bool, more=()) -> list[str]:
    """Run the init with stand-ins for apt-get, systemctl, usermod, sleep and docker (and
    `more`) that log their arguments (installing docker.io makes the docker stand-in, and
    nvidia-container-toolkit nvidia-ctk); returns the log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir(parents=True)
    for tool in ("systemctl", "usermod", "sleep", *more):
        _stand_in(bin_dir / tool, log)
    made = {"docker.io": "docker", "nvidia-container-toolkit": "nvidia-ctk"}
    installs = "".join(
        f'[ "${{@: -1}}" = {package} ] && cp {bin_dir}/usermod {bin_dir}/{tool} && '
        f"sed -i 's/usermod/{tool}/' {bin_dir}/{tool}\n"
        for package, tool in made.items()
    )
    _stand_in(bin_dir / "apt-get", log, installs + "exit 0\n")
    if have_docker:
        _stand_in(bin_dir / "docker", log)
    subprocess.run(
        ["/bin/bash", "-c", script],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)},
        check=True,
        timeout=30,
        cwd=tmp_path,
    )
    return log.read_text().splitlines() if log.exists() else []


def test_init_installs_docker_only_where_the_image_lacks_it(tmp_path):
    calls = _run_init(tmp_path / "bare", _init_script(IMAGE), have_docker=False)
    assert calls[0] == "apt-get update -q"
    assert calls[1] == "apt-get install -y -q docker.io"
    assert calls[2:] == [
        "systemctl enable --now docker",
        "usermod -aG docker ubuntu",
        f"docker pull {IMAGE}",
    ]
    ready = _run_init(tmp_path / "ready", _init_script(IMAGE), have_docker=True)
    assert not any(c.startswith("apt-get") for c in ready)  # SkyPilot's images have docker
    assert ready[-1] == f"docker pull {IMAGE}"


def test_an_image_name_never_becomes_shell_text(tmp_path):
    hostile = "x; touch PWNED #"
    calls = _run_init(tmp_path, _init_script(hostile), have_docker=True)
    assert calls[-1] == f"docker pull {hostile}"  # one argument, as given
    assert not os.path.exists(tmp_path / "PWNED")


def test_a_gpu_node_gets_nvidia_container_toolkit_for_docker_gpus():
    aws = run(spec(AWS_G5, image_id=f"docker:{IMAGE}")).named("node-0").inputs["userData"]
    gcp = run(spec(GCP_N1_V100, image_id=f"docker:{IMAGE}")).named("node-0").inputs["metadata"]
    for init in (aws, gcp["startup-script"]):
        assert "install nvidia-container-toolkit" in init
        assert "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker" in init
    assert "nvidia" not in _init_script(IMAGE)  # no GPU: none of it


def test_gpu_init_installs_the_toolkit_where_the_image_lacks_it(tmp_path):
    tools = ("curl", "gpg", "tee")
    calls = _run_init(tmp_path, _init_script(IMAGE, AWS_G5), have_docker=True, more=tools)
    keyring = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
    repo = "https://nvidia.github.io/libnvidia-container"
    assert sorted(calls[:4]) == [  # (pipes: in any order) NVIDIA's signed apt repository
        f"curl -fsSL {repo}/gpgkey",
        f"curl -fsSL {repo}/stable/deb/nvidia-container-toolkit.list",
        f"gpg --batch --yes --dearmor -o {keyring}",
        "tee /etc/apt/sources.list.d/nvidia-container-toolkit.list",
    ]
    assert calls[4:] == [
        "apt-get update -q",
        "apt-get install -y -q nvidia-container-toolkit",
        "nvidia-ctk runtime configure --runtime=docker",  # docker's nvidia runtime: --gpus
        "systemctl restart docker",
        "systemctl enable --now docker",
        "usermod -aG docker ubuntu",
        f"docker pull {IMAGE}",
    ]
