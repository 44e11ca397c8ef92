"""Small things a SkyPilot user noticed (issue 28), as the CLI says them."""

from __future__ import annotations

TASK = "name: e\nresources: {infra: local}\nrun: echo hi\n"


def test_cost_of_a_task_file_says_it_is_a_task_file_and_how_to_price_it(cli, tmp_path):
    task = tmp_path / "e.yaml"
    task.write_text(TASK)
    for args in (("cost", task), ("cost", "estimate", task)):
        result = cli(*args)
        assert result.exit_code == 1, args
        assert f"Error: {task} is a task file, not a saved plan" in result.stderr
        assert "truncated" not in result.stderr
        assert f"skyform plan {task} -o plan.json" in result.stderr


POOL = """\
ssh_pools:
  lab:
    hosts:
      - {host: 127.0.0.1, port: 1, user: u, identity_file: /dev/null, cpus: 2, memory: 4}
      - host: 127.0.0.2
        port: 1
        user: u
        identity_file: /dev/null
        cpus: 4
        memory: 8
        labels: {region: west, zone: west-a}
"""


def test_an_ssh_pool_without_regions_reads_as_written(cli, tmp_path, skyform_home):
    (skyform_home / "config.yaml").write_text(POOL)
    for cpus, infra in ((2, "ssh/lab"), (4, "ssh/lab/west/west-a")):
        task = tmp_path / f"s{cpus}.yaml"
        task.write_text(f"name: s\nresources: {{infra: ssh/lab, cpus: {cpus}}}\nrun: echo\n")
        result = cli("plan", task)
        assert result.exit_code == 0, result.output
        assert f'+ infra          = "{infra}"' in result.stdout
        assert "ssh/lab/lab" not in result.stdout


def test_a_stale_plans_hint_makes_it_again_with_its_flags(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "st.yaml").write_text("name: st\nresources: {infra: local}\nrun: echo hi\n")
    made = cli("plan", "st.yaml", "-c", "dev", "--cpus", "2", "--minimize", "time", "-o", "p.json")
    assert made.exit_code == 0, made.output
    with open(tmp_path / "st.yaml", "a") as task:
        task.write("# edited after the plan\n")
    stale = cli("apply", "p.json", "-y")
    assert stale.exit_code == 3, stale.output
    assert (
        "Hint: Make a new plan and review it: "
        "skyform plan st.yaml --minimize time -c dev --cpus 2 -o p.json"
    ) in stale.stderr
