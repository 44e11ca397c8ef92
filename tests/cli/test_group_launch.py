"""A job group under plain `launch` / `apply`: SkyPilot's `sky launch` refuses a multi-task
file ("only supported by `sky jobs launch`"); skyform refuses a job group the same way, at the
header's `execution` line, before anything is planned or created."""

from __future__ import annotations

GROUP = """\
name: trio
execution: parallel
primary_tasks: [client]
---
name: server
resources: {infra: local}
run: sleep 60
---
name: client
resources: {infra: local}
run: echo done
"""


def test_launch_of_a_job_group_points_to_jobs_launch(cli, skyform_home, tmp_path):
    path = tmp_path / "group.yaml"
    path.write_text(GROUP)
    for verb in ("launch", "apply"):
        result = cli(verb, path, "-y")
        assert result.exit_code == 1
        assert f"{path}:2:1" in result.stderr  # the header's `execution` key
        assert f"runs only as a managed job, not with `{verb}`" in result.stderr
        assert f"skyform jobs launch {path}" in result.stderr


def test_apply_of_a_saved_group_plan_points_to_jobs_launch(cli, skyform_home, tmp_path):
    path = tmp_path / "group.yaml"
    path.write_text(GROUP)
    assert cli("plan", path, "-o", tmp_path / "plan.json").exit_code == 0
    result = cli("apply", tmp_path / "plan.json", "-y")
    assert result.exit_code == 1
    assert "is a job group (execution: parallel): it runs only as a managed job" in result.stderr
    assert "skyform jobs launch" in result.stderr


def test_the_plan_of_a_group_shows_the_names_its_tasks_reach_each_other_by(
    cli, skyform_home, tmp_path
):
    path = tmp_path / "group.yaml"
    path.write_text(GROUP.replace("name: server\n", "name: server\nnum_nodes: 2\n"))
    text = cli("plan", path).stdout
    assert "# reached by the group's other tasks as server-0.trio, server-1.trio\n" in text
    assert "# reached by the group's other tasks as client-0.trio\n" in text
    markdown = cli("plan", path, "--markdown").stdout
    assert "- reached by the group's other tasks as `server-0.trio, server-1.trio`" in markdown
    plain = tmp_path / "plain.yaml"
    plain.write_text(GROUP.replace("execution: parallel\nprimary_tasks: [client]\n", ""))
    assert "reached by" not in cli("plan", plain).stdout  # a pipeline has no names
