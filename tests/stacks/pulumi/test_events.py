"""Engine events -> one line per resource operation (as the SDK parses the CLI's event log)."""

from __future__ import annotations

from pulumi.automation.events import EngineEvent

from skyform.stacks.pulumi.events import EventLines

STACK = "urn:pulumi:c1::skyform::pulumi:pulumi:Stack::skyform-c1"
NODE = "urn:pulumi:c1::skyform::aws:ec2/instance:Instance::node-0"
KEY = "urn:pulumi:c1::skyform::aws:ec2/keyPair:KeyPair::ssh-key"
PROVIDER = "urn:pulumi:c1::skyform::pulumi:providers:aws::aws"


def event(t: int, **body) -> EngineEvent:
    return EngineEvent.from_json({"sequence": t, "timestamp": t, **body})


def step(kind: str, t: int, op: str, urn: str, planning: bool = False, **extra) -> EngineEvent:
    type_ = urn.split("::")[2]
    meta = {"op": op, "urn": urn, "type": type_}
    return event(t, **{kind: {"metadata": meta, "planning": planning, **extra}})


def feed(events) -> tuple[list[str], EventLines]:
    lines: list[str] = []
    sink = EventLines(lines.append)
    for e in events:
        sink(e)
    return lines, sink


def test_one_line_per_finished_operation_with_its_duration():
    lines, _ = feed(
        [
            step("resourcePreEvent", 100, "create", STACK),
            step("resourcePreEvent", 101, "create", PROVIDER),
            step("resOutputsEvent", 101, "create", PROVIDER),
            step("resourcePreEvent", 102, "create", KEY),
            step("resourcePreEvent", 102, "create", NODE),
            step("resOutputsEvent", 103, "create", KEY),
            step("resOutputsEvent", 143, "create", NODE),
            step("resourcePreEvent", 144, "same", NODE),
            step("resOutputsEvent", 144, "same", NODE),
            step("resOutputsEvent", 145, "create", STACK),
            event(146, cancelEvent={}),
        ]
    )
    assert lines == [
        "created ssh-key (aws:ec2/keyPair:KeyPair) in 1s",
        "created node-0 (aws:ec2/instance:Instance) in 41s",
    ]


def test_failures_and_error_diagnostics_are_reported_once():
    diag = {
        "message": "  creating EC2 Instance:\n InsufficientInstanceCapacity  ",
        "severity": "error",
    }
    lines, sink = feed(
        [
            step("resourcePreEvent", 10, "create", NODE),
            step("resOpFailedEvent", 15, "create", NODE, status=1, steps=1),
            event(15, diagnosticEvent=diag),
            event(16, diagnosticEvent=diag),
            event(16, diagnosticEvent={"message": "just info", "severity": "info"}),
        ]
    )
    assert lines == [
        "failed to create node-0 (aws:ec2/instance:Instance) in 5s",
        "error: creating EC2 Instance: InsufficientInstanceCapacity",
    ]
    assert sink.errors == ["creating EC2 Instance: InsufficientInstanceCapacity"]


def test_preview_steps_are_collected_as_planned_changes_not_printed():
    lines, sink = feed(
        [
            step("resourcePreEvent", 1, "create", NODE, planning=True),
            step("resourcePreEvent", 1, "replace", KEY, planning=True),
            step("resourcePreEvent", 1, "same", STACK, planning=True),
            step("resOutputsEvent", 1, "create", NODE, planning=True),
        ]
    )
    assert lines == []
    assert sink.planned == [
        "+ create node-0 (aws:ec2/instance:Instance)",
        "-/+ replace ssh-key (aws:ec2/keyPair:KeyPair)",
    ]


def test_deletes_and_replacements_read_naturally():
    lines, _ = feed(
        [
            step("resOutputsEvent", 5, "delete", NODE),
            step("resOutputsEvent", 5, "create-replacement", KEY),
            step("resOutputsEvent", 5, "refresh", NODE),
        ]
    )
    assert lines == [
        "deleted node-0 (aws:ec2/instance:Instance)",
        "created replacement ssh-key (aws:ec2/keyPair:KeyPair)",
        "refreshed node-0 (aws:ec2/instance:Instance)",
    ]


def test_warnings_are_passed_on_once_but_not_the_plugin_found_on_path():
    """The real CLI's diagnostics on every operation with a provider on PATH (a build of
    this project's, or one installed by hand): the first is routine, the second says the
    SDK asked for another version than the plugin's (a real mismatch)."""
    on_path = (
        "using pulumi-resource-kubernetes from $PATH at "
        "/root/.cache/skyform-engine/engine-91780721c7f912c2/bin/pulumi-resource-kubernetes\n"
    )
    mismatch = (
        "resource plugin kubernetes is expected to have version >=4.34.2, but has 4.25.0; the "
        "wrong version may be on your path, or this may be a bug in the plugin\n"
    )
    lines, sink = feed(
        [
            event(1, diagnosticEvent={"message": on_path, "severity": "warning"}),
            event(2, diagnosticEvent={"message": on_path, "severity": "warning"}),
            event(3, diagnosticEvent={"message": mismatch, "severity": "warning"}),
            event(4, diagnosticEvent={"message": mismatch, "severity": "warning"}),
            event(
                5, diagnosticEvent={"message": "Waiting for Pod to be ready\n", "severity": "info"}
            ),
        ]
    )
    assert lines == [f"warning: {mismatch.strip()}"]
    assert sink.warnings == [mismatch.strip()] and sink.errors == []


def test_a_long_warning_is_cut_and_says_so():
    long = "Attempting to deploy or update resources with 2 pending operations " + "x " * 300
    lines, _ = feed([event(1, diagnosticEvent={"message": long, "severity": "warning"})])
    assert len(lines) == 1 and lines[0].startswith("warning: Attempting to deploy")
    assert lines[0].endswith("…") and len(lines[0]) == len("warning: ") + 301
