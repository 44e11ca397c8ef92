"""A job group on real sshd nodes (tests/sshnodes.py): a data server, a reward server and a
trainer that calls both by name (`<task>-0.<group>`), each task on a node of its own. The node
users are not root, so the names reach them through libnss_wrapper; the group ends when the
trainer (its primary task) does, termination_delay after it."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest
import yaml
from e2ekit import job_ended, task_file, two_region_pool, wait_for_job, write_pool

pytestmark = pytest.mark.e2e

# each server binds its own node's address only: reaching it by name proves the name maps
# to that node, not merely to some loopback address
SERVER = """\
name: {name}
resources: {{infra: ssh/lab, cpus: 2}}
run: |
  mkdir -p www && echo "{name} on $SKYPILOT_NODE_IPS" > www/id.txt
  echo "{name} serving"
  exec /usr/bin/python3 -m http.server {port} --bind "$SKYPILOT_NODE_IPS" --directory www
"""

GROUP = """\
name: rl
execution: parallel
primary_tasks: [trainer]
termination_delay: 3s
---
{data}---
{reward}---
name: trainer
resources: {{infra: ssh/lab, cpus: 2}}
run: |
  # names resolve from the first line: every task was provisioned and named before any ran
  echo "resolved data $(getent hosts data-server-0.$SKYPILOT_JOBGROUP_NAME | cut -d' ' -f1)"
  echo "resolved reward $(getent hosts reward-server-0.rl | cut -d' ' -f1)"
  for i in $(seq 1 100); do
    curl -sf http://data-server-0.rl:8001/id.txt && break; sleep 0.2
  done
  /usr/bin/python3 - <<'PY'
  import time, urllib.request
  url = "http://reward-server-0.rl:8002/id.txt"
  for _ in range(100):
      try:
          print(urllib.request.urlopen(url).read().decode(), end="")
          break
      except OSError:
          time.sleep(0.2)
  PY
  echo "trainer done at $(date +%s.%N)"
"""


@pytest.fixture
def group_file(tmp_path):
    text = GROUP.format(
        data=SERVER.format(name="data-server", port=8001),
        reward=SERVER.format(name="reward-server", port=8002),
    )
    return task_file(tmp_path, "group.yaml", text)


@pytest.mark.skipif(not shutil.which("curl"), reason="the trainer calls a server with curl")
def test_tasks_of_a_group_reach_each_other_by_name_and_the_group_ends_with_its_primary(
    sky, skyform_home, fresh_ssh_nodes, group_file
):
    write_pool(skyform_home, fresh_ssh_nodes, [0, 1, 2])
    sky("jobs", "launch", group_file, "-y", check=0, timeout=300)
    job = json.loads(sky("jobs", "queue", "--json", check=0).stdout)[0]
    assert job["status"] == "SUCCEEDED", sky(
        "jobs", "logs", "1", "--no-follow", "--controller"
    ).stdout
    tasks = {t["name"]: t for t in job["tasks"]}
    assert {n: t["status"] for n, t in tasks.items()} == {
        "data-server": "CANCELLED",
        "reward-server": "CANCELLED",
        "trainer": "SUCCEEDED",
    }
    out = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    served = dict(re.findall(r"(data|reward)-server on (\S+)$", out, re.M))
    resolved = dict(re.findall(r"resolved (data|reward) (\S*)$", out, re.M))
    assert resolved == served, out  # resolved at once, to the node the server runs on
    assert len(set(served.values())) == 2 and all(
        ip.startswith("127.0.100.") for ip in served.values()
    )
    trainer_end = float(re.search(r"trainer done at (\S+)", out).group(1))
    for name in ("data-server", "reward-server"):  # stopped termination_delay after the trainer
        assert tasks[name]["ended_at"] - trainer_end >= 3.0
    assert sky("status", "--json", check=0).stdout.strip() == "[]"


RECOVERED = """\
name: grp
execution: parallel
primary_tasks: [client]
---
name: server
resources: {infra: ssh/lab, use_spot: true, cpus: 2}
run: |
  mkdir -p www && echo "$SKYPILOT_NODE_IPS" > www/id.txt
  echo "server on $SKYPILOT_NODE_IPS"
  exec /usr/bin/python3 -m http.server 8001 --bind "$SKYPILOT_NODE_IPS" --directory www
---
name: client
resources: {infra: ssh/lab, use_spot: true, cpus: 2}
run: |
  first=
  for i in $(seq 1 360); do
    ip=$(curl -sf -m 2 http://server-0.grp:8001/id.txt || true)
    if [ -n "$ip" ] && [ -z "$first" ]; then first=$ip; echo "first answer from $ip"; fi
    if [ -n "$ip" ] && [ "$ip" != "$first" ]; then echo "then from $ip"; exit 0; fi
    sleep 0.5
  done
  exit 1
"""


@pytest.mark.skipif(not shutil.which("curl"), reason="the client calls the server with curl")
def test_a_preempted_task_of_a_group_is_recovered_and_its_new_address_reaches_the_others(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    """The client keeps calling `server-0.grp` while the server's node is killed: the server
    is recovered on another host and the same name, in the same running client, now reaches
    it there."""
    nodes = make_ssh_nodes(4)  # one is killed: never the session's shared nodes
    two_region_pool(skyform_home, nodes)
    sky("jobs", "launch", task_file(tmp_path, "grp.yaml", RECOVERED), "-d", check=0)
    deadline = time.monotonic() + 90
    while "first answer from" not in (
        out := sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    ):
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    server_ip = re.search(r"first answer from (\S+)", out).group(1)
    nodes.kill_node(next(i for i in range(4) if nodes.handle(i).host == server_ip))
    job = wait_for_job(sky, job_ended, timeout=180)
    out = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    assert job["status"] == "SUCCEEDED", out
    tasks = {t["name"]: t for t in job["tasks"]}
    assert (tasks["server"]["recoveries"], tasks["client"]["recoveries"]) == (1, 0)
    moved = re.search(r"then from (\S+)", out).group(1)
    assert moved != server_ip and moved.startswith("127.0.100.")


def test_no_task_of_a_group_runs_when_another_cannot_be_provisioned(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    """The client's only host is dead: the group fails for want of resources and the server,
    provisioned on `local` at once, never starts (it waited for the client's cluster)."""
    nodes = make_ssh_nodes(1)
    write_pool(skyform_home, nodes, [0])
    config = yaml.safe_load((skyform_home / "config.yaml").read_text())
    config["recovery"] = {"check_interval": 0.2, "lost_after": 2, "max_rounds": 2}
    (skyform_home / "config.yaml").write_text(yaml.safe_dump(config))
    nodes.kill_node(0)
    started = tmp_path / "server-started"
    text = f"""\
name: lonely
execution: parallel
---
name: server
resources: {{infra: local}}
run: touch {started}; sleep 60
---
name: client
resources: {{infra: ssh/lab, cpus: 2}}
run: echo hello
"""
    sky("jobs", "launch", task_file(tmp_path, "lonely.yaml", text), "-y", timeout=180)
    job = wait_for_job(sky, job_ended, timeout=120)
    assert job["status"] == "FAILED_NO_RESOURCE"
    assert not started.exists()
    log = sky("jobs", "logs", "1", "--no-follow", "--controller", check=0).stdout
    assert "job group lonely: waiting for client to be provisioned" in log
    assert sky("status", "--json", check=0).stdout.strip() == "[]"
