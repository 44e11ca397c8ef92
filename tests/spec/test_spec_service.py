"""`service:` (SkyServe): SkyPilot's defaults, normal form, and one located error per
invalid form (file:line:col, field, message), at load time — so `plan`, `validate`,
`launch` and `serve plan` all refuse it before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from helpers import CORPUS_FILES, corpus_checkout, needs_corpus

from skyform.errors import SpecError
from skyform.spec import load_task, load_task_text
from skyform.spec.inputs import TaskInputs
from skyform.spec.service_models import ServiceSpec

R = "resources:\n  ports: 8080\n"
RS = "resources:\n  ports: 8080\n  use_spot: true\n"


class Case(NamedTuple):
    name: str
    text: str
    line: int
    column: int
    field: str
    message: str


INVALID = [
    Case(
        "not_mapping",
        "service: 3\n" + R,
        1,
        10,
        "service",
        "expected a mapping, got integer 3",
    ),
    Case(
        "unknown_key",
        "service:\n  replica: 2\n" + R,
        2,
        3,
        "service.replica",
        "unknown key 'replica'",
    ),
    Case(
        "probe_number",
        "service:\n  readiness_probe: 5\n" + R,
        2,
        20,
        "service.readiness_probe",
        "readiness_probe must be a path or a mapping, got integer 5",
    ),
    Case(
        "probe_str_no_slash",
        "service:\n  readiness_probe: health\n" + R,
        2,
        20,
        "service.readiness_probe",
        "readiness probe path must start with '/', got 'health'",
    ),
    Case(
        "probe_no_path",
        "service:\n  readiness_probe:\n    timeout_seconds: 3\n" + R,
        3,
        5,
        "service.readiness_probe",
        "missing required key 'path'",
    ),
    Case(
        "probe_path_no_slash",
        "service:\n  readiness_probe:\n    path: v1/models\n" + R,
        3,
        11,
        "service.readiness_probe.path",
        "readiness probe path must start with '/', got 'v1/models'",
    ),
    Case(
        "probe_unknown_key",
        "service:\n  readiness_probe:\n    path: /\n    initial_delay: 5\n" + R,
        4,
        5,
        "service.readiness_probe.initial_delay",
        "unknown key 'initial_delay'",
    ),
    Case(
        "probe_delay_string",
        "service:\n  readiness_probe:\n    path: /\n    initial_delay_seconds: soon\n" + R,
        4,
        28,
        "service.readiness_probe.initial_delay_seconds",
        "expected a number, got string 'soon'",
    ),
    Case(
        "probe_delay_negative",
        "service:\n  readiness_probe:\n    path: /\n    initial_delay_seconds: -1\n" + R,
        4,
        28,
        "service.readiness_probe.initial_delay_seconds",
        "initial_delay_seconds must be at least 0.0, got -1",
    ),
    Case(
        "probe_timeout_zero",
        "service:\n  readiness_probe:\n    path: /\n    timeout_seconds: 0\n" + R,
        4,
        22,
        "service.readiness_probe.timeout_seconds",
        "timeout_seconds must be greater than 0.0, got 0",
    ),
    Case(
        "probe_post_bad_json",
        "service:\n  readiness_probe:\n    path: /\n    post_data: '{model: x'\n" + R,
        4,
        16,
        "service.readiness_probe.post_data",
        "post_data is not valid JSON",
    ),
    Case(
        "probe_post_number",
        "service:\n  readiness_probe:\n    path: /\n    post_data: 5\n" + R,
        4,
        16,
        "service.readiness_probe.post_data",
        "post_data must be a mapping or a JSON string, got integer 5",
    ),
    Case(
        "probe_headers_list",
        "service:\n  readiness_probe:\n    path: /\n    headers: [a]\n" + R,
        4,
        14,
        "service.readiness_probe.headers",
        "expected a mapping, got a list",
    ),
    Case(
        "probe_header_number",
        "service:\n  readiness_probe:\n    path: /\n    headers:\n      X-Id: 5\n" + R,
        5,
        13,
        "service.readiness_probe.headers['X-Id']",
        "expected a string, got integer 5",
    ),
    Case(
        "replicas_and_policy",
        "service:\n  replicas: 2\n  replica_policy:\n    min_replicas: 1\n" + R,
        2,
        3,
        "service.replicas",
        "give either 'replicas' or 'replica_policy', not both",
    ),
    Case(
        "replicas_negative",
        "service:\n  replicas: -1\n" + R,
        2,
        13,
        "service.replicas",
        "replicas must be at least 0, got -1",
    ),
    Case(
        "replicas_string",
        "service:\n  replicas: two\n" + R,
        2,
        13,
        "service.replicas",
        "expected an integer, got string 'two'",
    ),
    Case(
        "replicas_bool",
        "service:\n  replicas: true\n" + R,
        2,
        13,
        "service.replicas",
        "expected an integer, got true",
    ),
    Case(
        "replicas_and_workers",
        "service:\n  replicas: 2\n  workers: 2\n" + R,
        3,
        3,
        "service.workers",
        "give either 'replicas' or 'workers', not both",
    ),
    Case(
        "policy_no_min",
        "service:\n  replica_policy:\n    max_replicas: 3\n" + R,
        3,
        5,
        "service.replica_policy",
        "missing required key 'min_replicas'",
    ),
    Case(
        "policy_min_negative",
        "service:\n  replica_policy:\n    min_replicas: -2\n" + R,
        3,
        19,
        "service.replica_policy.min_replicas",
        "min_replicas must be at least 0, got -2",
    ),
    Case(
        "policy_max_below_min",
        (
            "service:\n  replica_policy:\n    min_replicas: 3\n    max_replicas: 2\n"
            "    target_qps_per_replica: 1\n"
        )
        + R,
        4,
        19,
        "service.replica_policy.max_replicas",
        "max_replicas (2) is less than min_replicas (3)",
    ),
    Case(
        "policy_qps_without_max",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    target_qps_per_replica: 2\n") + R,
        4,
        29,
        "service.replica_policy.target_qps_per_replica",
        "target_qps_per_replica autoscales, so max_replicas must be set",
    ),
    Case(
        "policy_range_without_qps",
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n" + R,
        4,
        19,
        "service.replica_policy.max_replicas",
        "autoscaling between min_replicas and max_replicas needs target_qps_per_replica",
    ),
    Case(
        "policy_qps_zero",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica: 0\n"
        )
        + R,
        5,
        29,
        "service.replica_policy.target_qps_per_replica",
        "target_qps_per_replica must be greater than 0, got 0",
    ),
    Case(
        "policy_qps_string",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica: fast\n"
        )
        + R,
        5,
        29,
        "service.replica_policy.target_qps_per_replica",
        (
            "target_qps_per_replica must be a number or a mapping accelerator -> "
            "number, got string 'fast'"
        ),
    ),
    Case(
        "policy_qps_bad_key",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica:\n      a100: 2\n"
            "  load_balancing_policy: instance_aware_least_load\n"
        )
        + R,
        6,
        7,
        "service.replica_policy.target_qps_per_replica.a100",
        "invalid accelerator key 'a100' in target_qps_per_replica",
    ),
    Case(
        "policy_qps_map_wrong_lb",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica:\n      A100: 2\n"
        )
        + R,
        6,
        7,
        "service.replica_policy.target_qps_per_replica",
        (
            "a per-accelerator target_qps_per_replica needs load_balancing_policy: "
            "instance_aware_least_load"
        ),
    ),
    Case(
        "lb_instance_aware_scalar_qps",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica: 2\n"
            "  load_balancing_policy: instance_aware_least_load\n"
        )
        + R,
        6,
        26,
        "service.load_balancing_policy",
        "instance_aware_least_load needs target_qps_per_replica per accelerator",
    ),
    Case(
        "policy_unknown_key",
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replica: 3\n" + R,
        4,
        5,
        "service.replica_policy.max_replica",
        "unknown key 'max_replica'",
    ),
    Case(
        "policy_overprovision_negative",
        "service:\n  replica_policy:\n    min_replicas: 1\n    num_overprovision: -1\n" + R,
        4,
        24,
        "service.replica_policy.num_overprovision",
        "num_overprovision must be at least 0, got -1",
    ),
    Case(
        "policy_upscale_delay_string",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    upscale_delay_seconds: 5m\n") + R,
        4,
        28,
        "service.replica_policy.upscale_delay_seconds",
        "expected a number, got string '5m'",
    ),
    Case(
        "policy_downscale_delay_negative",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    downscale_delay_seconds: -5\n") + R,
        4,
        30,
        "service.replica_policy.downscale_delay_seconds",
        "downscale_delay_seconds must be at least 0.0, got -5",
    ),
    Case(
        "base_fallback_without_spot",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n"
            "    base_ondemand_fallback_replicas: 1\n"
        )
        + R,
        4,
        5,
        "service.replica_policy.base_ondemand_fallback_replicas",
        "base_ondemand_fallback_replicas needs spot replicas",
    ),
    Case(
        "dynamic_fallback_without_spot",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    dynamic_ondemand_fallback: true\n")
        + R,
        4,
        5,
        "service.replica_policy.dynamic_ondemand_fallback",
        "dynamic_ondemand_fallback needs spot replicas",
    ),
    Case(
        "dynamic_fallback_not_bool",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n"
            "    dynamic_ondemand_fallback: yes please\n"
        )
        + RS,
        4,
        32,
        "service.replica_policy.dynamic_ondemand_fallback",
        "expected true or false, got string 'yes please'",
    ),
    Case(
        "spot_placer_unknown",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    spot_placer: dynamic_fallbak\n")
        + RS,
        4,
        18,
        "service.replica_policy.spot_placer",
        "unknown spot_placer 'dynamic_fallbak'",
    ),
    Case(
        "spot_placer_without_spot",
        ("service:\n  replica_policy:\n    min_replicas: 1\n    spot_placer: dynamic_fallback\n")
        + R,
        4,
        5,
        "service.replica_policy.spot_placer",
        "spot_placer needs spot replicas",
    ),
    Case(
        "spot_placer_shapes_differ",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n"
            "    spot_placer: dynamic_fallback\nresources:\n  ports: 8080\n"
            "  use_spot: true\n  any_of:\n    - cpus: 2\n    - cpus: 4\n"
        ),
        4,
        5,
        "service.replica_policy.spot_placer",
        (
            "with a spot_placer, resource alternatives may differ only in infra "
            "(cloud, region, zone)"
        ),
    ),
    Case(
        "ports_out_of_range",
        "service:\n  ports: 70000\n" + R,
        2,
        10,
        "service.ports",
        "ports must be at most 65535, got 70000",
    ),
    Case(
        "ports_string",
        "service:\n  ports: http\n" + R,
        2,
        10,
        "service.ports",
        "expected an integer, got string 'http'",
    ),
    Case(
        "ports_not_opened",
        "service:\n  ports: 9000\n" + R,
        2,
        10,
        "service.ports",
        "service port 9000 is not opened by resources.ports",
    ),
    Case(
        "no_port",
        "service:\n  replicas: 1\nresources:\n  cpus: 1\n",
        1,
        1,
        "service",
        "the service has no port",
    ),
    Case(
        "two_ports",
        "service:\n  replicas: 1\nresources:\n  ports: [8080, 8081]\n",
        3,
        1,
        "resources",
        ("resources open more than one port (8080-8081), so the service port is ambiguous"),
    ),
    Case(
        "any_of_ports_differ",
        ("service:\n  replicas: 1\nresources:\n  any_of:\n    - ports: 8080\n    - ports: 9090\n"),
        3,
        1,
        "resources",
        ("resources open more than one port (8080; 9090), so the service port is ambiguous"),
    ),
    Case(
        "lb_unknown",
        "service:\n  load_balancing_policy: random\n" + R,
        2,
        26,
        "service.load_balancing_policy",
        "unknown load_balancing_policy 'random'",
    ),
    Case(
        "lb_upper_case",
        "service:\n  load_balancing_policy: ROUND_ROBIN\n" + R,
        2,
        26,
        "service.load_balancing_policy",
        "load_balancing_policy is lower case, got 'ROUND_ROBIN'",
    ),
    Case(
        "tls_missing_certfile",
        "service:\n  tls:\n    keyfile: k.pem\n" + R,
        3,
        5,
        "service.tls",
        "missing required key 'certfile'",
    ),
    Case(
        "tls_unknown_key",
        "service:\n  tls:\n    keyfile: k.pem\n    certfile: c.pem\n    ca: x\n" + R,
        5,
        5,
        "service.tls.ca",
        "unknown key 'ca'",
    ),
    Case(
        "tls_keyfile_missing",
        "service:\n  tls:\n    keyfile: no-such-key.pem\n    certfile: c.pem\n" + R,
        3,
        14,
        "service.tls.keyfile",
        "TLS keyfile 'no-such-key.pem' is not a file",
    ),
    Case(
        "tls_string",
        "service:\n  tls: k.pem\n" + R,
        2,
        8,
        "service.tls",
        "expected a mapping, got string 'k.pem'",
    ),
    Case(
        "spot_mixed",
        (
            "service:\n  replicas: 1\nresources:\n  ports: 8080\n  any_of:\n"
            "    - use_spot: true\n    - use_spot: false\n"
        ),
        3,
        1,
        "resources",
        "a service's resources must be all spot or all on-demand",
    ),
    Case(
        "job_recovery",
        ("service:\n  replicas: 1\nresources:\n  ports: 8080\n  job_recovery: EAGER_NEXT_REGION\n"),
        5,
        3,
        "resources.job_recovery",
        "job_recovery does not apply to a service",
    ),
    Case(
        "pool_inside_service",
        "service:\n  pool:\n    workers: 2\n" + R,
        2,
        3,
        "service.pool",
        "'pool' inside service: is for job pools",
    ),
    Case(
        "policy_qps_map_value_string",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica:\n      A100: lots\n"
            "  load_balancing_policy: instance_aware_least_load\n"
        )
        + R,
        6,
        13,
        "service.replica_policy.target_qps_per_replica.A100",
        "target_qps_per_replica must be a number, got string 'lots'",
    ),
    Case(
        "policy_qps_empty_map",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica: {}\n"
            "  load_balancing_policy: instance_aware_least_load\n"
        )
        + R,
        5,
        29,
        "service.replica_policy.target_qps_per_replica",
        "target_qps_per_replica is an empty mapping",
    ),
    Case(
        "policy_qps_bool",
        (
            "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
            "    target_qps_per_replica: true\n"
        )
        + R,
        5,
        29,
        "service.replica_policy.target_qps_per_replica",
        ("target_qps_per_replica must be a number or a mapping accelerator -> number, got true"),
    ),
    Case(
        "policy_not_mapping",
        "service:\n  replica_policy: 3\n" + R,
        2,
        19,
        "service.replica_policy",
        "expected a mapping, got integer 3",
    ),
]


def service(text: str) -> ServiceSpec:
    spec = load_task_text(
        text + "run: echo\n", path_label="svc.yaml", inputs=TaskInputs(environ={})
    ).tasks[0]
    assert spec.service is not None
    return spec.service


def test_the_table_covers_at_least_30_forms():
    assert len({c.name for c in INVALID}) == len(INVALID) >= 30


@pytest.mark.parametrize("case", INVALID, ids=[c.name for c in INVALID])
def test_invalid_service_is_a_located_error(case: Case):
    with pytest.raises(SpecError) as caught:
        service(case.text)
    err = caught.value
    assert (err.path, err.line, err.column) == ("svc.yaml", case.line, case.column)
    assert err.field == case.field
    assert case.message in err.message


@pytest.mark.parametrize("name", ["probe_path_no_slash", "lb_upper_case", "no_port"])
def test_validate_and_plan_refuse_it_with_the_location(cli, tmp_path: Path, name: str):
    case = next(c for c in INVALID if c.name == name)
    path = tmp_path / "svc.yaml"
    path.write_text(case.text + "run: echo\n")
    for verb in ("validate", "plan"):
        result = cli(verb, path)
        assert result.exit_code == 1
        assert f"{path}:{case.line}:{case.column}" in result.stderr
        assert case.message in result.stderr
        assert "Traceback" not in result.output


def test_defaults_are_skypilots():
    spec = service("service:\n  readiness_probe: /health\n" + R)
    probe, policy = spec.readiness_probe, spec.replica_policy
    assert (probe.path, probe.initial_delay_seconds, probe.timeout_seconds) == ("/health", 1200, 15)
    assert probe.method == "GET" and probe.headers == {}
    assert (policy.min_replicas, policy.upper, policy.autoscales) == (1, 1, False)
    assert (policy.upscale_delay_seconds, policy.downscale_delay_seconds) == (300, 1200)
    assert spec.load_balancing_policy == "least_load"
    assert spec.ports == 8080 and spec.scheme == "http"
    assert policy.describe() == "Fixed 1 replica"
    assert policy.spot_policy() == "No spot policy"


def test_probe_defaults_to_root_when_omitted():
    # SkyPilot's docs call it required, its code defaults it to '/': we follow the code
    assert service("service:\n  replicas: 2\n" + R).readiness_probe.path == "/"


def test_string_probe_and_its_mapping_form_are_one_service():
    short = service("service:\n  readiness_probe: /v1/models\n  replicas: 2\n" + R)
    long = service(
        "service:\n  readiness_probe:\n    path: /v1/models\n"
        "  replica_policy:\n    min_replicas: 2\n" + R
    )
    assert short == long


def test_post_data_as_json_string_is_a_post_with_that_body():
    probe = service(
        "service:\n  readiness_probe:\n    path: /v1/completions\n"
        '    post_data: \'{"model": "m", "max_tokens": 1}\'\n'
        "    headers:\n      Authorization: Bearer x\n" + R
    ).readiness_probe
    assert probe.method == "POST"
    assert probe.post_data == {"model": "m", "max_tokens": 1}
    assert probe.headers == {"Authorization": "Bearer x"}


def test_autoscaling_policy_with_spot_fallback(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the TLS files, relative to the current directory
    (tmp_path / "k.pem").write_text("key")
    (tmp_path / "c.pem").write_text("cert")
    spec = service(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 4\n"
        "    target_qps_per_replica: 2.5\n    upscale_delay_seconds: 60\n"
        "    base_ondemand_fallback_replicas: 1\n    dynamic_ondemand_fallback: true\n"
        "    spot_placer: dynamic_fallback\n    num_overprovision: 1\n"
        "  tls:\n    keyfile: k.pem\n    certfile: c.pem\n" + RS
    )
    policy = spec.replica_policy
    assert policy.autoscales and policy.upper == 4 and policy.upscale_delay_seconds == 60
    assert policy.uses_ondemand_fallback
    assert policy.describe() == (
        "Autoscaling from 1 to 4 replicas with 1 overprovisioned (target QPS per replica: 2.5)"
    )
    assert policy.spot_policy() == "SpotHedge with dynamic on-demand fallback"
    assert spec.scheme == "https"


def test_port_comes_from_resources_when_service_has_none():
    assert service("service:\n  replicas: 1\nresources:\n  ports: 9000\n").ports == 9000
    # inside a range resources open
    assert service("service:\n  ports: 8005\nresources:\n  ports: 8000-8010\n").ports == 8005


def test_instance_aware_policy_takes_a_per_accelerator_target():
    spec = service(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
        "    target_qps_per_replica:\n      A100: 10\n      L4:1: 2\n"
        "  load_balancing_policy: instance_aware_least_load\n" + R
    )
    assert spec.replica_policy.target_qps_per_replica == {"A100": 10.0, "L4:1": 2.0}


@needs_corpus
def test_every_skypilot_service_example_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    names = [p for p in CORPUS_FILES if "\nservice:" in p.read_text()]
    (tmp_path / "tasks").mkdir()
    monkeypatch.chdir(tmp_path / "tasks")  # the checkout's root, where its paths start
    assert len(names) >= 15
    env = ["TLS_KEYFILE_ENV_VAR=k.pem", "TLS_CERTFILE_ENV_VAR=c.pem"]
    for name in ("k.pem", "c.pem"):  # the files https__service's variables name
        (tmp_path / "tasks" / name).write_text("pem")
    for path in names:
        copy = corpus_checkout(path, tmp_path)
        dag = load_task(copy, TaskInputs(envs=tuple(env), secrets=("HF_TOKEN=x",), environ={}))
        assert any(t.service is not None for t in dag.tasks), path.name
