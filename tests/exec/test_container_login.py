"""A private registry's login (SkyPilot's SKYPILOT_DOCKER_* values) reaches the node's real
podman with the password on stdin only: not on a command line, not in the error."""

from __future__ import annotations

import containerkit
import pytest
from execkit import local_nodes

from skyform.errors import ExecError
from skyform.exec.connect import open_runner
from skyform.exec.container import (
    ContainerRequest,
    ensure_container,
    registry_login,
    start_command,
)

PASSWORD = "pw-4f9c2e-never-shown"


def test_login_goes_to_the_registry_with_the_password_on_stdin_only(tmp_path):
    why = containerkit.missing()
    if why:
        pytest.skip(why)
    envs = {"SKYPILOT_DOCKER_USERNAME": "me", "SKYPILOT_DOCKER_SERVER": "127.0.0.1:9"}
    login = registry_login(envs, {"SKYPILOT_DOCKER_PASSWORD": PASSWORD})
    request = ContainerRequest("c1", "acme/train:2", login=login)
    assert request.full_image == "127.0.0.1:9/acme/train:2"  # the server in front (SkyPilot)
    assert PASSWORD not in start_command(request) and PASSWORD not in repr(request)
    runner = open_runner(local_nodes(tmp_path, 1)[0])
    with pytest.raises(ExecError) as raised:
        ensure_container(runner, request, wait=1)
    message = f"{raised.value.message} {raised.value.hint}"
    assert "login to 127.0.0.1:9 failed" in message  # podman tried it: nothing listens there
    assert PASSWORD not in message
