"""PulumiEngine through the Automation API against a recording stand-in `pulumi` on PATH.

The stand-in answers like the CLI (see standin/pulumi_standin.py); these tests check the
command sequence skyform drives, what reaches the CLI's environment, how results and engine
events come back, and how failures are reported.
"""

from __future__ import annotations

import pytest
from pulumi_specs import AWS_M5, GCP_N2, catalog, spec

from skyform.config import Config
from skyform.errors import CapacityError, LockedError, StackError
from skyform.stacks.pulumi.engine import PulumiEngine
from skyform.stacks.registry import engine_for
from skyform.state.db import open_state

INSTANCE = "aws:ec2/instance:Instance"
KEYPAIR = {"type": "aws:ec2/keyPair:KeyPair", "name": "ssh-key", "outputs": {}}
FIREWALL = {"type": "aws:ec2/securityGroup:SecurityGroup", "name": "firewall", "outputs": {}}


def node(rank: int, state: str = "running") -> dict:
    return {"type": INSTANCE, "name": f"node-{rank}", "outputs": {"instanceState": state}}


def up_scenario(n: int = 2, **extra) -> dict:
    return {
        "resources": [KEYPAIR, FIREWALL] + [node(r) for r in range(n)],
        "outputs": {
            "nodes": [
                {"rank": r, "id": f"i-{r}", "public_ip": f"54.0.0.{r}",
                 "private_ip": f"172.31.0.{r}", "port": 22}
                for r in range(n)
            ],
            "ssh_user": "ubuntu",
        },
        **extra,
    }  # fmt: skip


def engine(cloud: str = "aws") -> PulumiEngine:
    return PulumiEngine(cloud=cloud, config=Config(), catalog=catalog())


UP = ["up", "--yes", "--skip-preview", "--color", "never", "--exec-kind", "auto.inline"]
OUTPUTS = [["stack", "output", "--json"], ["stack", "output", "--json", "--show-secrets"]]
HISTORY = ["stack", "history", "--json", "--show-secrets", "--page-size", "1", "--page", "1"]


def test_first_up_creates_the_stack_then_returns_the_clusters_handle(standin, skyform_home):
    standin.scenario(**up_scenario(2))
    lines: list[str] = []
    handle = engine().up(spec(AWS_M5, nodes=2), on_event=lines.append)

    assert standin.commands() == [
        ["version"],
        ["stack", "select"],
        ["stack", "init", "c1", "--secrets-provider", "passphrase"],
        UP,
        *OUTPUTS,
        HISTORY,
    ]
    calls = standin.calls()
    up_call = calls[3]
    assert up_call["argv"][-2:] == ["--stack", "c1"]
    assert any(a.startswith("--client=127.0.0.1:") for a in up_call["argv"])  # inline program
    work_dir = skyform_home / "pulumi-work" / "skyform" / "c1"
    # Every call but the SDK's initial `pulumi version` runs in the cluster's work dir.
    assert {c["cwd"] for c in calls[1:]} == {str(work_dir)}
    assert "name: skyform" in (work_dir / "Pulumi.yaml").read_text()

    assert [(n.rank, n.host, n.ip, n.user) for n in handle.nodes] == [
        (0, "54.0.0.0", "172.31.0.0", "ubuntu"),
        (1, "54.0.0.1", "172.31.0.1", "ubuntu"),
    ]
    assert handle.stack == "skyform/c1" and handle.engine == "pulumi"
    assert handle.nodes[0].identity_file == str(skyform_home / "keys" / "skyform-key")
    assert lines == [
        "created ssh-key (aws:ec2/keyPair:KeyPair) in 1s",
        "created firewall (aws:ec2/securityGroup:SecurityGroup) in 1s",
        "created node-0 (aws:ec2/instance:Instance) in 1s",
        "created node-1 (aws:ec2/instance:Instance) in 1s",
    ]


def test_the_cli_gets_the_local_backend_and_the_passphrase_which_is_never_shown(
    standin, skyform_home
):
    standin.scenario(**up_scenario(1))
    lines: list[str] = []
    handle = engine().up(spec(AWS_M5), on_event=lines.append)
    passphrase = (skyform_home / "secrets" / "pulumi-passphrase").read_text().strip()
    version, *calls = standin.calls()
    assert "PULUMI_CONFIG_PASSPHRASE" not in version["env"]  # the SDK's bare version probe
    for call in calls:
        assert call["env"]["PULUMI_BACKEND_URL"] == (skyform_home / "pulumi").as_uri()
        assert call["env"]["PULUMI_CONFIG_PASSPHRASE"] == passphrase
    assert passphrase not in " ".join(lines) + handle.model_dump_json()
    standin.scenario(fail={"up": {"stderr": "error: boom"}})
    with pytest.raises(StackError) as err:
        engine().up(spec(AWS_M5))
    assert passphrase not in f"{err.value} {err.value.hint}"


def test_an_existing_stack_is_selected_not_created_again(standin):
    standin.scenario(**up_scenario(1))
    engine().up(spec(AWS_M5))
    first = len(standin.calls())
    engine().up(spec(AWS_M5))
    again = standin.commands()[first:]
    assert again[:3] == [["version"], ["stack", "select"], UP]
    assert list(standin.stacks()) == ["c1"]


def test_preview_reports_pulumis_change_summary(standin):
    standin.scenario(**up_scenario(2))
    preview = engine().preview(spec(AWS_M5, nodes=2))
    assert preview.cluster == "c1" and preview.engine == "pulumi"
    assert preview.changes == {"create": 4}
    assert preview.detail == [
        "+ create ssh-key (aws:ec2/keyPair:KeyPair)",
        "+ create firewall (aws:ec2/securityGroup:SecurityGroup)",
        "+ create node-0 (aws:ec2/instance:Instance)",
        "+ create node-1 (aws:ec2/instance:Instance)",
    ]
    assert ["preview", "--color", "never", "--exec-kind", "auto.inline"] in standin.commands()
    engine().up(spec(AWS_M5, nodes=2))
    assert engine().preview(spec(AWS_M5, nodes=2)).changes == {"same": 4}


def test_older_clis_stream_events_through_a_log_file(standin):
    standin.scenario(version="3.190.0", **up_scenario(1))  # before 3.206: file, not gRPC
    lines: list[str] = []
    engine().up(spec(AWS_M5), on_event=lines.append)
    up_call = next(c for c in standin.calls() if c["argv"][0] == "up")
    log_target = up_call["argv"][up_call["argv"].index("--event-log") + 1]
    assert not log_target.startswith("tcp://")
    assert "created node-0 (aws:ec2/instance:Instance) in 1s" in lines


def test_refresh_marks_a_preempted_spot_node_not_alive(standin):
    standin.scenario(**up_scenario(2))
    handle = engine().up(spec(AWS_M5, nodes=2))
    # The provider drops terminated spot instances from the state on refresh.
    standin.scenario(**up_scenario(2, refresh=[KEYPAIR, FIREWALL, node(0)]))
    state = engine().refresh(handle)
    assert state.exists and not state.all_alive
    assert [(n.node_id, n.alive, n.detail) for n in state.nodes] == [
        ("i-0", True, "running"),
        ("i-1", False, "preempted: the spot instance is gone"),
    ]
    refresh = ["refresh", "--skip-preview", "--yes", "--color", "never", "--exec-kind"]
    assert any(c[: len(refresh)] == refresh for c in standin.commands())
    assert ["stack", "export", "--show-secrets"] in standin.commands()


def test_refresh_and_destroy_without_a_stack(standin):
    standin.scenario(**up_scenario(1))
    handle = engine().up(spec(AWS_M5))
    standin.state.unlink()  # the stack is gone from the backend
    state = engine().refresh(handle)
    assert not state.exists and not state.nodes[0].alive
    lines: list[str] = []
    engine().destroy(handle, on_event=lines.append)
    assert lines == ["stack skyform/c1 does not exist: nothing to destroy"]


def test_destroy_deletes_the_resources_then_the_stack_and_its_work_dir(standin, skyform_home):
    standin.scenario(**up_scenario(1))
    handle = engine().up(spec(AWS_M5))
    lines: list[str] = []
    engine().destroy(handle, on_event=lines.append)
    commands = standin.commands()
    destroy = ["destroy", "--skip-preview", "--yes", "--color", "never", "--exec-kind"]
    assert any(c[: len(destroy)] == destroy for c in commands)
    assert commands[-1] == ["stack", "rm", "--yes", "c1"]
    assert standin.stacks() == {}
    assert not (skyform_home / "pulumi-work" / "skyform" / "c1").exists()
    assert lines[-1] == "removed stack skyform/c1"
    assert "deleted node-0 (aws:ec2/instance:Instance) in 1s" in lines


def test_a_concurrent_update_is_reported_with_the_way_out(standin):
    locked = (
        "error: the stack is currently locked by 1 lock(s). Either wait for the other "
        "process(es) to end or delete the lock file with `pulumi cancel`."
    )
    standin.scenario(fail={"up": {"stderr": locked}})
    with pytest.raises(LockedError) as err:
        engine().up(spec(AWS_M5))
    assert err.value.message == (
        "stack skyform/c1 (cluster c1) is locked by another Pulumi update (the stack is "
        "currently locked by 1 lock(s))"
    )
    assert "pulumi cancel --stack c1 --yes" in err.value.hint


def test_a_failure_mid_up_says_what_exists_and_how_to_converge(standin):
    diagnostics = (
        "Diagnostics:\n  aws:ec2:Instance (node-0):\n    error: creating EC2 Instance: "
        "InvalidParameterValue: Invalid availability zone\n\n"
        "  pulumi:pulumi:Stack (skyform-c1):\n    error: update failed\n"
    )
    standin.scenario(fail={"up": {"stdout": diagnostics, "created": [KEYPAIR, FIREWALL]}})
    with pytest.raises(StackError) as err:
        engine().up(spec(AWS_M5))
    assert err.value.message == (
        "pulumi up of stack skyform/c1 failed: creating EC2 Instance: InvalidParameterValue: "
        "Invalid availability zone; these resources exist now: ssh-key "
        "(aws:ec2/keyPair:KeyPair), firewall (aws:ec2/securityGroup:SecurityGroup)"
    )
    assert "skyform down c1" in err.value.hint
    assert standin.commands()[-1] == ["stack", "export", "--show-secrets"]


def test_no_capacity_is_a_capacity_error(standin):
    message = (
        "error: creating EC2 Instance: InsufficientInstanceCapacity: We currently do not "
        "have sufficient m5.2xlarge capacity in the Availability Zone you requested"
    )
    standin.scenario(fail={"up": {"stdout": message}})
    with pytest.raises(CapacityError) as err:
        engine().up(spec(AWS_M5, nodes=2))
    assert err.value.exit_code == 4
    assert err.value.message.startswith(
        "no capacity for cluster c1 (2x m5.2xlarge (spot) in aws/us-west-2/usw2-az1): "
        "creating EC2 Instance: InsufficientInstanceCapacity"
    )


def test_without_the_cli_the_user_is_told_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no pulumi anywhere
    with pytest.raises(StackError) as err:
        engine().up(spec(AWS_M5))
    assert "the Pulumi CLI is not installed" in err.value.message
    assert "curl -fsSL https://get.pulumi.com | sh" in err.value.hint


def test_a_cli_too_old_for_inline_refresh_is_reported(standin):
    standin.scenario(version="3.150.0", **up_scenario(1))
    handle = engine().up(spec(AWS_M5))  # up works with any 3.x
    with pytest.raises(StackError, match="too old") as err:
        engine().refresh(handle)
    assert "get.pulumi.com" in err.value.hint


def test_gcp_needs_a_project_before_anything_runs(standin, monkeypatch, tmp_path):
    for var in (
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_PROJECT",
        "GCLOUD_PROJECT",
        "CLOUDSDK_CORE_PROJECT",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    with pytest.raises(StackError, match="no GCP project") as err:
        engine("gcp").up(spec(GCP_N2))
    assert "gcloud config set project" in err.value.hint
    assert standin.calls() == []


def test_gcp_project_comes_from_the_active_gcloud_configuration(standin, monkeypatch, tmp_path):
    for var in (
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_PROJECT",
        "GCLOUD_PROJECT",
        "CLOUDSDK_CORE_PROJECT",
    ):
        monkeypatch.delenv(var, raising=False)
    gcloud = tmp_path / "gcloud"
    (gcloud / "configurations").mkdir(parents=True)
    (gcloud / "active_config").write_text("work\n")
    (gcloud / "configurations" / "config_work").write_text("[core]\nproject = ml-prod\n")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(gcloud))
    assert engine("gcp").program_inputs(spec(GCP_N2))["project"] == "ml-prod"


def test_a_missing_provider_sdk_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pulumi_gcp" else real(name, *a),
    )
    with pytest.raises(StackError, match="SDK for gcp is not installed") as err:
        PulumiEngine(cloud="gcp", config=Config())
    assert err.value.hint == "Install the extra: pip install 'skyform[gcp]'"


def test_engine_for_builds_the_pulumi_engine_for_cloud_infra(skyform_home):
    with open_state(skyform_home / "state.db") as db:
        for cloud in ("aws", "gcp", "kubernetes"):
            built = engine_for(cloud, config=Config(), state=db)
            assert isinstance(built, PulumiEngine) and built.cloud == cloud


def test_refresh_and_destroy_follow_the_project_the_stack_was_made_in(standin, skyform_home):
    from skyform.config import PulumiSettings

    standin.scenario(**up_scenario(1))
    handle = engine().up(spec(AWS_M5))
    renamed = PulumiEngine(cloud="aws", config=Config(pulumi=PulumiSettings(project="other")))
    renamed.refresh(handle)
    refresh_call = next(c for c in standin.calls() if c["argv"][0] == "refresh")
    assert refresh_call["cwd"] == str(skyform_home / "pulumi-work" / "skyform" / "c1")


def test_team_mode_stacks_live_in_the_state_database_under_the_team_passphrase(
    standin, monkeypatch
):
    """State URL on PostgreSQL: the CLI gets Pulumi's postgres:// DIY backend on the same
    database and SKYFORM_PASSPHRASE; a concurrent-update hint never shows the password."""
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", "postgresql://ci:pw-123@db.lab:5432/skyform")
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team passphrase")
    standin.scenario(**up_scenario(1))
    engine().up(spec(AWS_M5))
    _, *calls = standin.calls()
    for call in calls:
        backend = "postgres://ci:pw-123@db.lab:5432/skyform?sslmode=prefer"
        assert call["env"]["PULUMI_BACKEND_URL"] == backend
        assert call["env"]["PULUMI_CONFIG_PASSPHRASE"] == "team passphrase"
    standin.scenario(fail={"up": {"stderr": "error: the stack is currently locked by 1 lock(s)"}})
    with pytest.raises(LockedError) as err:
        engine().up(spec(AWS_M5))
    shown = "PULUMI_BACKEND_URL='postgres://ci:***@db.lab:5432/skyform?sslmode=prefer'"
    assert shown in (err.value.hint or "")
    assert "pw-123" not in f"{err.value} {err.value.hint}"
