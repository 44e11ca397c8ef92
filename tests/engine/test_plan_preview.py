"""`skyform plan --preview` through the real Pulumi CLI and Kubernetes provider, against the
test cluster (tests/kubecluster/): the engine's own steps per resource, what apply would do,
and why a preview is absent when the CLI, the provider or the API server is not there."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from kubecluster.engine import engine_env

pytestmark = pytest.mark.engine

POD, SECRET, SERVICE = (f"kubernetes:core/v1:{k}" for k in ("Pod", "Secret", "Service"))
# what skyform's program makes for 2 nodes, in the preview's order (type, then name)
RESOURCES = [
    (POD, "node-0"),
    (POD, "node-1"),
    (SECRET, "ssh-keys"),
    (SERVICE, "ssh-0"),
    (SERVICE, "ssh-1"),
]
TASK = """name: {name}
num_nodes: 2
resources:
  infra: k8s
  cpus: 1
{extra}run: echo hi from $SKYFORM_NODE_RANK
"""


@pytest.fixture
def k8s(engine_bin_dir, kube_cluster, tmp_path, monkeypatch, skyform_home):
    """skyform on this machine with the real engine on PATH (offline: no update check, no
    plugin download) and a kubeconfig whose one context is the test cluster."""
    env = engine_env(engine_bin_dir, tmp_path / "pulumi-home", "")
    del env["PULUMI_BACKEND_URL"]  # skyform's own: file://$SKYFORM_HOME/pulumi
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig(tmp_path / "kubeconfig")))
    return tmp_path


def task(where: Path, name: str, extra: str = "") -> Path:
    path = where / f"{name}.yaml"
    path.write_text(TASK.format(name=name, extra=extra))
    return path


def previewed(cli, *args) -> dict:
    """The one cluster's engine preview of `plan ARGS --preview --json`."""
    result = cli("plan", *args, "--preview", "--json")
    assert result.exit_code == 0, result.output
    (preview,) = json.loads(result.stdout)["engine_preview"]
    return preview


def steps(preview: dict) -> list[tuple[str, str, str]]:
    return [(s["op"], s["type"], s["name"]) for s in preview["steps"]]


def changed(preview: dict, name: str) -> dict[str, tuple]:
    (found,) = [s for s in preview["steps"] if s["name"] == name]
    return {p["path"]: (p["kind"], p["old"], p["new"], p["replaces"]) for p in found["properties"]}


def test_a_new_two_node_task_lists_what_the_engine_would_create_and_writes_nothing(
    cli, k8s, kube_cluster, skyform_home
):
    path = task(k8s, "pv-new")
    preview = previewed(cli, path)
    assert (preview["status"], preview["action"], preview["reason"]) == ("previewed", "create", "")
    assert steps(preview) == [("create", kind, name) for kind, name in RESOURCES]
    text = cli("plan", path, "--preview")
    assert (
        '  # cluster "pv-new" (kubernetes/skyform-test): 5 to create, 0 to update, '
        "0 to replace, 0 to delete\n"
        "    + kubernetes:core/v1:Pod node-0\n"
        "    + kubernetes:core/v1:Pod node-1\n"
        "    + kubernetes:core/v1:Secret ssh-keys\n"
        "    + kubernetes:core/v1:Service ssh-0\n"
        "    + kubernetes:core/v1:Service ssh-1\n"
    ) in text.stdout
    # A preview, not an update: no object in the API, no stack, no key, no passphrase.
    pods = kube_cluster.rest.get("/api/v1/namespaces/default/pods")["items"]
    assert [p for p in pods if p["metadata"]["name"].startswith("pv-new")] == []
    written = sorted(str(p.relative_to(skyform_home)) for p in skyform_home.rglob("*"))
    assert written == ["kubernetes", "kubernetes/nodes.json"]  # the capacity plan read


def test_after_apply_a_change_shows_each_resources_update_or_replacement(
    cli, k8s, kube_cluster, skyform_home
):
    plan = k8s / "plan.json"
    assert cli("plan", task(k8s, "pv"), "-o", plan).exit_code == 0
    applied = cli("apply", plan)
    assert applied.exit_code == 0, applied.output
    try:
        # Nothing changed: apply leaves the stack alone, and the preview says so.
        same = previewed(cli, task(k8s, "pv"))
        assert (same["status"], same["reason"]) == (
            "not-run",
            "no changes: apply leaves its stack as it is",
        )

        # A label: every resource is updated in place (and takes the new plan's digest).
        labelled = previewed(cli, task(k8s, "pv", "  labels: {team: ml}\n"))
        assert labelled["status"] == "previewed" and labelled["action"] == "update"
        assert [op for op, _, _ in steps(labelled)] == ["update"] * 5
        for _, name in RESOURCES:
            props = changed(labelled, name)
            assert props["metadata.labels.team"] == ("add", None, '"ml"', False)
            kind, old, new, _ = props["metadata.labels.skyform/plan"]
            assert kind == "update" and old.startswith('"sha256_') and old != new

        # A port: the pods cannot change in place (replaced), the services take the port.
        ported = previewed(cli, task(k8s, "pv", "  ports: 8080\n"))
        assert steps(ported) == [
            ("replace" if kind == POD else "update", kind, name) for kind, name in RESOURCES
        ]
        assert changed(ported, "node-0")["spec.containers[0].ports[1]"] == ("add", None, None, True)
        assert changed(ported, "ssh-0")["spec.ports[1]"][0] == "add"
        # Provider 4.25.0 previews a replacement by a server-side dry run of the new pod,
        # which meets the old one (same name; `up` deletes it first) and is refused: the
        # engine's preview stops there, with the API server's words (about the pod whose
        # dry run the engine sent first: the two go out at once).
        assert ported["status"] == "incomplete"
        assert re.search(
            r'Pod "pv-[01]" is invalid: spec: Forbidden: pod updates may not change',
            ported["reason"],
        ), ported["reason"]

        # Without skyform's key (apply would make a new one), the Secret holding it is
        # replaced; its data is shown as [secret], never as the key.
        keys = skyform_home / "keys"
        public_key = (keys / "skyform-key.pub").read_text().split()[1]
        shutil.move(keys, k8s / "keys-aside")
        try:
            labels = task(k8s, "pv", "  labels: {team: ml}\n")
            rekeyed = cli("plan", labels, "--preview", "--json")
            text = cli("plan", labels, "--preview")
        finally:
            shutil.move(k8s / "keys-aside", keys)
        secret = changed(json.loads(rekeyed.stdout)["engine_preview"][0], "ssh-keys")
        assert secret["data.authorized_keys"] == ("update", "[secret]", "[secret]", True)
        assert "  -/+ kubernetes:core/v1:Secret ssh-keys\n" in text.stdout
        assert "~ data.authorized_keys = [secret]  # forces replacement\n" in text.stdout
        assert public_key not in rekeyed.stdout + text.stdout

        destroy = previewed(cli, task(k8s, "pv"), "--destroy")
        assert destroy["action"] == "delete" and destroy["status"] == "previewed"
        assert steps(destroy) == [("delete", kind, name) for kind, name in RESOURCES]
    finally:
        assert cli("down", "-y", "pv").exit_code == 0
    assert kube_cluster.agent.errors == []


def test_a_missing_cli_or_provider_says_why_there_is_no_preview(
    cli, k8s, engine_bin_dir, monkeypatch
):
    path = task(k8s, "pv-bare")
    base = os.environ["PATH"].split(os.pathsep, 1)[1]  # PATH without the engine's bin dir
    cli_only = k8s / "cli-only"
    cli_only.mkdir()
    (cli_only / "pulumi").symlink_to(engine_bin_dir / "pulumi")

    monkeypatch.setenv("PATH", f"{cli_only}{os.pathsep}{base}")
    no_provider = previewed(cli, path)
    assert no_provider["status"] == "unavailable" and no_provider["steps"] == []
    assert no_provider["reason"] == (
        "cannot preview cluster pv-bare: the Pulumi provider plugin for kubernetes is not "
        "installed (no resource plugin 'pulumi-resource-kubernetes' found in the workspace at "
        "version v4.25.0 or on your $PATH)"
    )

    monkeypatch.setenv("PATH", base)
    no_cli = cli("plan", path, "--preview", "--detailed-exitcode")
    assert no_cli.exit_code == 2, no_cli.output  # planning goes on: the plan has changes
    assert (
        '  # cluster "pv-bare" (kubernetes/skyform-test): no engine preview: cannot preview '
        "cluster pv-bare: the Pulumi CLI is not installed (no `pulumi` on PATH)\n"
    ) in no_cli.stdout


def test_an_api_server_refusing_the_token_says_why_there_is_no_preview(
    cli, k8s, kube_cluster, monkeypatch
):
    path = task(k8s, "pv-token")
    assert cli("plan", path).exit_code == 0  # capacity read and cached with a good token
    wrong = kube_cluster.kubeconfig(k8s / "wrong-token", token="not-the-token")
    monkeypatch.setenv("KUBECONFIG", str(wrong))
    # The plan rests on the cached capacity; the provider would preview from the program
    # alone without a word, so the context is asked first.
    preview = previewed(cli, path)
    assert (preview["status"], preview["steps"]) == ("unavailable", [])
    assert preview["reason"].startswith(
        "context skyform-test cannot be used now (the API server refused to list nodes "
        "(HTTP 401 Unauthorized)"
    )
