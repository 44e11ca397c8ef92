"""What skyform runs: unsupported clouds are an error only when nothing else is left."""

from __future__ import annotations

import pytest

from skyform.errors import UnsupportedError
from skyform.spec import check_supported, load_task_text
from skyform.spec.inputs import TaskInputs


def check(text: str) -> list[str]:
    return check_supported(load_task_text(text, path_label="t.yaml", inputs=TaskInputs(environ={})))


def test_supported_task_has_no_warnings():
    assert check("resources:\n  infra: aws\nrun: echo\n") == []
    assert check("resources:\n  infra: local\nrun: echo\n") == []


def test_only_unsupported_clouds_is_an_error_naming_cloud_place_and_supported_set():
    with pytest.raises(UnsupportedError) as caught:
        check("name: t\nresources:\n  infra: azure\nrun: echo\n")
    err = caught.value
    assert err.message == "task 't' can only run on azure, which skyform does not support"
    assert err.location == "t.yaml:2:1"
    assert "aws, gcp, kubernetes, ssh, local" in err.hint
    assert err.exit_code == 1


def test_some_unsupported_alternatives_are_a_warning():
    warnings = check(
        "name: t\nresources:\n  any_of:\n    - infra: lambda\n    - infra: aws\nrun: echo\n"
    )
    assert warnings == [
        "t.yaml:2: task 't': alternatives on lambda are skipped "
        "(skyform runs on aws, gcp, kubernetes, ssh, local)"
    ]


def test_service_pool_volumes_config_are_warnings():
    warnings = check(
        "name: s\nservice:\n  replicas: 2\n  ports: 8080\npool:\n  workers: 2\n"
        "volumes:\n  /data: v\n"
        "config:\n  kubernetes: {}\nrun: echo\n"
    )
    assert len(warnings) == 4
    assert "service: is served by `skyform serve up t.yaml`" in warnings[0]
    assert "review it first with `skyform serve plan t.yaml`" in warnings[0]
    assert "runs as one plain job" in warnings[0]
    assert all(w.startswith("t.yaml:1: task 's': ") for w in warnings)


def test_compat_only_keys_are_reported():
    warnings = check(
        "resources:\n  accelerator_args: {tpu_vm: true}\n  priority: 5\n"
        "event_callback: echo\nrun: echo\n"
    )
    assert any("resources.accelerator_args is accepted but not used" in w for w in warnings)
    assert any("resources.priority is accepted but not used" in w for w in warnings)
    assert any("event_callback is accepted but not used" in w for w in warnings)


def test_an_unnamed_task_is_named_after_its_file_in_what_skyform_skips():
    with pytest.raises(UnsupportedError) as caught:
        check("resources:\n  infra: azure\nrun: echo\n")
    assert caught.value.message == "task 't' can only run on azure, which skyform does not support"
    warnings = check("resources:\n  any_of:\n    - infra: lambda\n    - infra: aws\nrun: echo\n")
    assert warnings[0].startswith("t.yaml:1: task 't': alternatives on lambda are skipped")
