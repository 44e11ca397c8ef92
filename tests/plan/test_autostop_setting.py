"""Autostop in the plan: every form of `resources.autostop`, skyform's `stop_after` /
`down_after`, SkyPilot's -i/--down/--wait-for, refusals where the infra can only be torn
down, and a changed setting as an in-place update."""

from __future__ import annotations

import json

import pytest

from skyform.errors import PlanError, SpecError
from skyform.plan.autostop import check_stoppable, setting_for
from skyform.plan.diff import CurrentCluster, diff_cluster
from skyform.plan.model import Action, AutostopSetting, ClusterSpec, PlacedOffer
from skyform.spec import load_task_text
from skyform.spec.inputs import TaskInputs

LOCAL = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=0
)


def setting(resources: str, skyform: str = "") -> AutostopSetting | None:
    text = f"resources:\n{resources}\n{skyform}run: echo\n"
    task = load_task_text(text, path_label="t.yaml", inputs=TaskInputs(environ={})).tasks[0]
    return setting_for(task.resources.groups[0][0].autostop, task.skyform)


@pytest.mark.parametrize(
    ("value", "short"),
    [
        ("true", "5m"),  # SkyPilot's docs (the CLI default); its code gives 1: we say 5
        ("false", None),
        ("10", "10m"),
        ("'2h'", "120m"),
        ("1d", "1440m"),
        ("{idle_minutes: 0, down: true}", "1m (down)"),  # 0 fires before the job: 1
        ("{down: true}", "5m (down)"),
        ("{idle_minutes: 3, wait_for: jobs}", "3m"),
    ],
)
def test_every_yaml_form(value, short):
    found = setting(f"  autostop: {value}")
    assert (found.short if found else None) == short


def test_mapping_keeps_wait_for_and_hook():
    found = setting(
        "  autostop: {idle_minutes: 2, wait_for: none, hook: 'echo bye', hook_timeout: 9}"
    )
    assert found is not None
    assert (found.wait_for, found.hook, found.hook_timeout) == ("none", "echo bye", 9)
    assert found.text.startswith("2m, wait_for none, hook ")


def test_separate_stop_and_down_timers():
    found = setting("  infra: ssh/lab", "skyform: {stop_after: 30m, down_after: 7d}\n")
    assert found == AutostopSetting(stop_after=30, down_after=10080)
    assert found.short == "30m (down 7d)"
    # skyform's timers win over the SkyPilot field, part by part
    both = setting("  autostop: {idle_minutes: 10, wait_for: jobs}", "skyform: {down_after: 1h}\n")
    assert (both.stop_after, both.down_after, both.wait_for) == (10, 60, "jobs")


def test_down_after_must_outlast_stop_after():
    with pytest.raises(SpecError) as caught:
        load_task_text(
            "skyform:\n  stop_after: 2h\n  down_after: 1h\nrun: echo\n", path_label="t.yaml"
        )
    assert caught.value.location.startswith("t.yaml:3:")
    assert "down_after (60 min)" in caught.value.message


def test_bad_duration_names_file_line_and_column():
    with pytest.raises(SpecError) as caught:
        load_task_text("resources:\n  autostop: soon\nrun: echo\n", path_label="t.yaml")
    assert caught.value.location == "t.yaml:2:13"
    assert "autostop 'soon' is not a duration" in caught.value.message


def test_local_kubernetes_and_aws_spot_refuse_a_stop_but_take_a_down():
    stop, down = AutostopSetting(stop_after=5), AutostopSetting(down_after=5)
    aws_spot = LOCAL.model_copy(update={"cloud": "aws", "region": "us-east-1", "spot": True})
    for offer, words in ((LOCAL, "nothing to stop"), (aws_spot, "AWS cannot stop spot")):
        with pytest.raises(PlanError) as caught:
            check_stoppable("c", stop, offer)
        assert words in caught.value.message
        assert "down: true" in (caught.value.hint or "")
        check_stoppable("c", down, offer)  # autodown is fine everywhere
    gcp_spot = aws_spot.model_copy(update={"cloud": "gcp"})
    check_stoppable("c", stop, gcp_spot)  # GCP stops spot VMs (as in SkyPilot)


def _spec(autostop: AutostopSetting | None) -> ClusterSpec:
    return ClusterSpec(name="c", offer=LOCAL, num_nodes=1, autostop=autostop)


def test_changed_setting_is_an_in_place_update():
    before = _spec(AutostopSetting(down_after=10))
    change = diff_cluster(_spec(AutostopSetting(down_after=3)), CurrentCluster(spec=before))
    assert change.action is Action.UPDATE
    assert [(a.path, a.before, a.after, a.forces_replacement) for a in change.attributes] == [
        ("autostop", "10m (down)", "3m (down)", False)
    ]
    off = diff_cluster(_spec(None), CurrentCluster(spec=before))
    assert off.action is Action.UPDATE and off.attributes[0].after is None


def test_plans_without_autostop_keep_their_bytes():
    assert "autostop" not in json.dumps(_spec(None).model_dump(mode="json"))
    assert _spec(AutostopSetting(stop_after=1)).model_dump(mode="json")["autostop"]


TASK = "resources:\n  infra: local\nrun: echo hi\n"


def test_flags_set_autostop_and_are_recorded(cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(TASK)
    out = tmp_path / "p.json"
    shown = cli("plan", task, "--down", "-o", out)
    assert shown.exit_code == 0, shown.output
    assert '+ autostop       = "1m (down)"' in shown.stdout
    plan = json.loads(out.read_text())
    assert plan["task"]["overrides"] == {"down": "true"}
    assert plan["changes"][0]["after"]["autostop"]["down_after"] == 1
    shown = cli("plan", task, "-i", "7", "--down", "--wait-for", "jobs")
    assert '+ autostop       = "7m (down), wait_for jobs"' in shown.stdout


def test_a_stop_on_local_is_refused_at_plan_time(cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(TASK)
    refused = cli("plan", task, "-i", "10")
    assert refused.exit_code == 1
    assert f"{task}:1:1: cluster 't' on local" in refused.output  # file:line:col of resources
    assert "nothing to stop, only to tear down" in refused.output
    assert "Traceback" not in refused.output


def test_a_bad_wait_for_flag_is_refused(cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text(TASK)
    refused = cli("plan", task, "--down", "--wait-for", "ssh")
    assert refused.exit_code == 1
    assert "--wait-for 'ssh'" in refused.output and "jobs_and_ssh, jobs, none" in refused.output
