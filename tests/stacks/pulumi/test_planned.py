"""A preview's engine events -> the resource steps `plan --preview` lists (as the SDK parses
the CLI's event log; the shapes are those the real engine and Kubernetes provider 4.25.0
wrote on the test cluster, tests/engine/)."""

from __future__ import annotations

from pulumi.automation.events import EngineEvent

from skyform.stacks.pulumi.planned import PlannedSteps, property_path

PREFIX = "urn:pulumi:pv::skyform::"
STACK = PREFIX + "pulumi:pulumi:Stack::skyform-pv"
PROVIDER = PREFIX + "pulumi:providers:kubernetes::kubernetes"
SECRET_URN = PREFIX + "kubernetes:core/v1:Secret::ssh-keys"
POD = PREFIX + "kubernetes:core/v1:Pod::node-0"
SERVICE = PREFIX + "kubernetes:core/v1:Service::ssh-0"
# how the engine writes a secret value in its events: a signature, never the value
MASKED = {
    "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
    "ciphertext": "[secret]",
}


def pre(op: str, urn: str, **meta) -> EngineEvent:
    type_ = urn.split("::")[2]
    body = {"metadata": {"op": op, "urn": urn, "type": type_, "provider": "", **meta}}
    return EngineEvent.from_json({"sequence": 1, "timestamp": 1, "resourcePreEvent": body})


def diagnostic(severity: str, message: str, urn: str = "") -> EngineEvent:
    body = {"severity": severity, "message": message, "color": "never", "urn": urn}
    return EngineEvent.from_json({"sequence": 1, "timestamp": 1, "diagnosticEvent": body})


def state(inputs: dict, outputs: dict | None = None) -> dict:
    return {"type": "", "urn": "", "inputs": inputs, "outputs": outputs or inputs}


def collect(*events: EngineEvent) -> PlannedSteps:
    steps = PlannedSteps()
    for event in events:
        steps(event)
    return steps


def test_a_new_stack_lists_every_resource_to_create_sorted_without_stack_or_provider():
    found = collect(
        pre("create", STACK),
        pre("create", PROVIDER),
        pre("create", SERVICE),
        pre("create", SECRET_URN),
        pre("create", POD),
    ).preview()
    assert [(s.op, s.type, s.name) for s in found.steps] == [
        ("create", "kubernetes:core/v1:Pod", "node-0"),
        ("create", "kubernetes:core/v1:Secret", "ssh-keys"),
        ("create", "kubernetes:core/v1:Service", "ssh-0"),
    ]
    assert found.steps[0].urn == POD and found.steps[0].properties == []
    assert found.unchanged == 0 and found.failure == ""


def test_an_update_names_each_changed_property_with_its_values():
    old = state({"metadata": {"labels": {"skyform/plan": "sha256_aaa", "app": "x"}}})
    new = state({"metadata": {"labels": {"skyform/plan": "sha256_bbb", "team": "ml"}}})
    found = collect(
        pre("same", STACK),
        pre(
            "update",
            SERVICE,
            old=old,
            new=new,
            detailedDiff={
                "metadata.labels.skyform/plan": {"diffKind": "update", "inputDiff": False},
                "metadata.labels.team": {"diffKind": "add", "inputDiff": False},
                'metadata.labels["app"]': {"diffKind": "delete", "inputDiff": False},
                "spec.ports[2]": {"diffKind": "add", "inputDiff": False},
            },
        ),
        pre("same", POD),
    ).preview()
    (step,) = found.steps
    assert step.op == "update" and found.unchanged == 1
    assert [(p.path, p.kind, p.old, p.new) for p in step.properties] == [
        ("metadata.labels.skyform/plan", "update", '"sha256_aaa"', '"sha256_bbb"'),
        ("metadata.labels.team", "add", None, '"ml"'),
        ('metadata.labels["app"]', "delete", '"x"', None),
        ("spec.ports[2]", "add", None, None),  # no such value in the state: named only
    ]


def test_a_replacement_is_one_step_with_what_forces_it_and_secrets_stay_secret():
    secret_state = state({"data": MASKED, "metadata": {"labels": {}}})
    pod_state = state({"spec": {"containers": [{"command": ["/bin/sh", "-c", "x" * 200]}]}})
    found = collect(
        pre("delete-replaced", SECRET_URN),
        pre(
            "replace",
            SECRET_URN,
            old=secret_state,
            new=secret_state,
            keys=["data.authorized_keys"],
            detailedDiff={"data.authorized_keys": {"diffKind": "update-replace"}},
        ),
        pre("create-replacement", SECRET_URN, keys=["data.authorized_keys"]),
        pre("replace", POD, old=pod_state, new=pod_state),
        pre("create-replacement", POD, old=pod_state, new=pod_state, keys=["spec.containers"]),
    ).preview()
    pod, secret = found.steps
    assert (pod.op, secret.op) == ("replace", "replace")
    (data,) = secret.properties
    assert (data.path, data.kind, data.replaces, data.old, data.new) == (
        "data.authorized_keys",
        "update",
        True,
        "[secret]",
        "[secret]",
    )
    (containers,) = pod.properties  # a list: named, its value not shown
    assert (containers.path, containers.replaces, containers.old) == ("spec.containers", True, None)


def test_long_and_unknown_values_are_named_not_shown():
    old = state({"spec": {"image": "ubuntu:22.04", "script": "x" * 100}})
    new = state({"spec": {"image": "04da6b54-80e4-46f7-96ec-b56ff0331ba9", "script": "y" * 100}})
    (step,) = (
        collect(
            pre(
                "update",
                POD,
                old=old,
                new=new,
                diffs=["spec"],
                detailedDiff={
                    "spec.image": {"diffKind": "update"},
                    "spec.script": {"diffKind": "update"},
                },
            )
        )
        .preview()
        .steps
    )
    assert [(p.path, p.old, p.new) for p in step.properties] == [
        ("spec.image", '"ubuntu:22.04"', "(known after apply)"),
        ("spec.script", None, None),
    ]


def test_top_level_diffs_stand_in_when_the_engine_gives_no_detailed_diff():
    (step,) = collect(pre("update", SERVICE, diffs=["metadata", "spec"])).preview().steps
    assert [(p.path, p.kind) for p in step.properties] == [
        ("metadata", "update"),
        ("spec", "update"),
    ]


def test_a_failed_preview_keeps_its_steps_and_each_engine_error_once():
    steps = collect(
        pre("create", SECRET_URN),
        diagnostic("warning", "using pulumi-resource-kubernetes from $PATH"),
        diagnostic("error", 'Preview failed: Pod "pv-0" is invalid', POD),
        diagnostic("error", 'Preview failed:  Pod "pv-0"\n is invalid', POD),
        diagnostic("error", "preview failed"),
    )
    assert steps.errors == ['Preview failed: Pod "pv-0" is invalid']
    assert not steps.empty
    assert steps.preview(failure="; ".join(steps.errors)).failure == steps.errors[0]


def test_property_paths_in_the_engines_syntax():
    assert property_path('metadata.labels["skyform/plan"]') == [
        "metadata",
        "labels",
        "skyform/plan",
    ]
    assert property_path("metadata.labels.skyform/plan") == ["metadata", "labels", "skyform/plan"]
    assert property_path("spec.containers[0].ports[1]") == ["spec", "containers", 0, "ports", 1]
    assert property_path('data["a\\"b"]') == ["data", 'a"b']
    assert property_path("spec.containers[*].image") is None
    assert property_path('spec["unterminated') is None
