"""Faults on Kubernetes through the real engine, as a user meets them: each is skyform's
error (what, why in the engine's own words, what to do), never a traceback, and a cluster
is left so that the next command converges once the cause is gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import yaml
from helpers import closed_port, wait_until
from kubecluster.skyuser import kill_tree, nothing_of

pytestmark = pytest.mark.engine

ONE_POD = """\
name: {name}
resources: {{infra: k8s, cpus: 1, memory: 2}}
run: echo "ran on $(hostname)"
"""


def rewrite_kubeconfig(path, *, server: str | None = None, token: str | None = None) -> None:
    """The same kubeconfig file with another API server address or token (a cluster moved
    or down, a token revoked): the stack reads the file it was made with."""
    doc = yaml.safe_load(path.read_text())
    if server is not None:
        doc["clusters"][0]["cluster"]["server"] = server
    if token is not None:
        doc["users"][0]["user"]["token"] = token
    path.write_text(yaml.safe_dump(doc))


def error_of(run) -> tuple[str, str]:
    assert "Traceback" not in run.output
    message, _, hint = run.stderr.partition("\nHint: ")
    return message.split("Error: ", 1)[1], hint


def test_an_unreachable_api_server_and_a_refused_token_are_named(kube_user):
    user, name = kube_user, "k8s-away"
    user.task("task.yaml", ONE_POD.format(name=name))
    user.sky("launch", "task.yaml", "-y")
    good = user.kubeconfig.read_text()

    port = closed_port()
    rewrite_kubeconfig(user.kubeconfig, server=f"https://127.0.0.1:{port}")
    for args, verb in ((["status", "--refresh"], "refresh"), (["down", "-y", name], "destroy")):
        message, hint = error_of(user.sky(*args, check=1))
        assert message.startswith(
            f"cannot {verb} cluster {name}: configured Kubernetes cluster is unreachable: "
            "unable to load schema information from the API server: Get "
            f'"https://127.0.0.1:{port}/openapi/v2?timeout=32s": dial tcp 127.0.0.1:{port}: '
            "connect: connection refused"
        ), message
        assert "credentials" not in message
        assert hint.startswith("The cluster's API server did not answer.")
        assert f"skyform down --purge {name}" not in hint and "skyform down --purge" in hint

    user.kubeconfig.write_text(good)
    rewrite_kubeconfig(user.kubeconfig, token="not-the-token")
    message, hint = error_of(user.sky("status", "--refresh", check=1))
    assert message == (
        "kubernetes credentials are missing or not valid: configured Kubernetes cluster is "
        "unreachable: unable to load schema information from the API server: the server has "
        "asked for the client to provide credentials"
    )
    assert "kubectl --context CONTEXT get nodes" in hint

    user.kubeconfig.write_text(good)  # the token is right again: down goes through
    user.sky("down", "-y", name)
    wait_until(lambda: nothing_of(user, name), 15)


def test_a_missing_provider_plugin_makes_nothing_and_says_how_to_install_it(kube_user):
    user, name = kube_user, "k8s-noplugin"
    user.task("task.yaml", ONE_POD.format(name=name))
    only_cli = user.cwd / "only-the-cli"
    only_cli.mkdir()
    engine_bin = user.env["PATH"].split(os.pathsep)[0]
    (only_cli / "pulumi").symlink_to(os.path.join(engine_bin, "pulumi"))
    path = os.pathsep.join([str(only_cli), *user.env["PATH"].split(os.pathsep)[1:]])

    refused = user.sky("launch", "task.yaml", "-y", check=1, env=dict(user.env, PATH=path))
    message, hint = error_of(refused)
    assert message == (
        f"cannot bring up cluster {name}: the Pulumi provider plugin for kubernetes is not "
        "installed (no resource plugin 'pulumi-resource-kubernetes' found in the workspace at "
        "version v4.25.0 or on your $PATH)"
    )
    assert hint.startswith("Install it: pulumi plugin install resource kubernetes 4.25.0")
    assert json.loads(user.sky("status", "--json").stdout) == []  # nothing made, no record
    assert nothing_of(user, name)
    # with the plugin back on PATH the same launch goes through
    assert "ran on k8s-noplugin-0" in user.sky("launch", "task.yaml", "-y").stdout
    user.sky("down", "-y", name)
    wait_until(lambda: nothing_of(user, name), 15)


TWO_PODS = """\
name: {name}
num_nodes: 2
resources: {{infra: k8s, cpus: 1, memory: 2}}
run: echo "rank $SKYPILOT_NODE_RANK ran on $(hostname)"
"""


def kill_inside_up(user, name: str):
    """`skyform apply` of a new 2-node cluster, killed with SIGKILL (skyform, the Pulumi CLI
    and its provider) while the engine waits for the Services: the Pods exist, the
    Services are being made. What a killed engine leaves: its lock, and pending creates."""
    user.task("task.yaml", TWO_PODS.format(name=name))
    user.sky("plan", "task.yaml", "-o", "plan.json")
    proc = user.start("apply", "plan.json", log=user.cwd / "killed.log")
    wait_until(lambda: len(user.objects(name)["pods"]) == 2, 60)
    # skyform's own lock keeps any other skyform command off the cluster meanwhile
    busy = user.sky("down", "-y", name, check=1, env=dict(user.env, SKYFORM_LOCK_WAIT="0"))
    assert f"cluster {name!r} is locked by " in busy.stderr and "apply plan.json" in busy.stderr
    kill_tree(proc)
    stacks = user.home / "pulumi" / ".pulumi"
    assert list((stacks / "locks").rglob(f"{name}/*.json"))  # the engine's lock is left
    checkpoint = json.loads((stacks / "stacks" / "skyform" / f"{name}.json").read_text())
    pending = checkpoint["checkpoint"]["latest"]["pending_operations"]
    assert {p["type"] for p in pending} == {"creating"}, pending


def test_an_up_killed_halfway_is_converged_by_the_next_apply(kube_user):
    user, name = kube_user, "k8s-killed"
    kill_inside_up(user, name)

    planned = user.sky("plan", "task.yaml", "-o", "again.json").stdout
    assert "the last apply did not finish" in planned
    applied = user.sky("apply", "again.json", timeout=120)
    assert "released the lock of pulumi process" in applied.stdout
    for rank in (0, 1):
        assert f"rank {rank} ran on {name}-{rank}" in applied.stdout
    status = json.loads(user.sky("status", "--json").stdout)
    assert [(c["name"], c["status"]) for c in status] == [(name, "UP")]
    assert not list((user.home / "pulumi" / ".pulumi" / "locks").rglob(f"{name}/*.json"))
    user.sky("down", "-y", name)
    wait_until(lambda: nothing_of(user, name), 15)


def test_down_right_after_a_killed_up_leaves_nothing(kube_user):
    """What the killed engine had begun to make (its pending creates: the Services) is not
    in the stack; down still removes it."""
    user, name = kube_user, "k8s-killed-down"
    kill_inside_up(user, name)
    down = user.sky("down", "-y", name, timeout=120)
    assert "released the lock of pulumi process" in down.stdout
    wait_until(lambda: nothing_of(user, name), 15)
    assert json.loads(user.sky("status", "--json").stdout) == []


# Another Pulumi update of the same stack, outside skyform (a teammate's `pulumi up`, a
# script's Automation API): its program waits for the test to release it, then fails, so
# the update ends without changing anything.
HOLDER = """
import pathlib, sys, time
import pulumi.automation as auto

work, name, ready, release = sys.argv[1:5]

def program():
    pathlib.Path(ready).touch()
    while not pathlib.Path(release).exists():
        time.sleep(0.1)
    raise RuntimeError("released by the test")

stack = auto.select_stack(
    name, project_name="skyform", program=program,
    opts=auto.LocalWorkspaceOptions(work_dir=work),
)
try:
    stack.up(color="never")
except auto.CommandError:
    pass
"""


def test_another_pulumi_update_of_the_stack_is_skyforms_lock_error(kube_user):
    user, name = kube_user, "k8s-held"
    user.task("task.yaml", ONE_POD.format(name=name))
    user.sky("launch", "task.yaml", "-y")
    ready, release = user.cwd / "ready", user.cwd / "release"
    env = dict(
        user.env,
        PULUMI_BACKEND_URL=(user.home / "pulumi").as_uri(),
        PULUMI_CONFIG_PASSPHRASE=(user.home / "secrets" / "pulumi-passphrase").read_text().strip(),
    )
    work = user.home / "pulumi-work" / "skyform" / name
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(work), name, str(ready), str(release)], env=env
    )
    try:
        wait_until(ready.exists, 60)
        user.task(
            "task.yaml", ONE_POD.format(name=name).replace("cpus: 1,", "cpus: 1, ports: 8080,")
        )
        for args in (["status", "--refresh"], ["apply", "task.yaml", "-y"], ["down", "-y", name]):
            message, hint = error_of(user.sky(*args, check=1))
            assert message.startswith(
                f"stack skyform/{name} (cluster {name}) is locked by another Pulumi update (the "
                "stack is currently locked by 1 lock(s): pulumi process "
            ), (args, message)
            assert f"@{socket.gethostname()} (since " in message
            assert hint.startswith("Wait for it to finish, then run this again.")
    finally:
        release.touch()
        holder.wait(timeout=60)
    user.sky("down", "-y", name)  # the update is over: skyform goes ahead
    wait_until(lambda: nothing_of(user, name), 15)


def test_the_stack_reads_the_kubeconfig_of_the_machine_it_runs_on(kube_user):
    """A teammate's machine, or this one after the kubeconfig moved: KUBECONFIG names
    another file with the same context. refresh and destroy (which do not run the program)
    read that one, not a path the stack recorded when it was made."""
    user, name = kube_user, "k8s-moved"
    user.task("task.yaml", ONE_POD.format(name=name))
    user.sky("launch", "task.yaml", "-y")
    moved = user.cwd / "moved" / "config"
    moved.parent.mkdir()
    user.kubeconfig.rename(moved)
    env = dict(user.env, KUBECONFIG=str(moved))
    refreshed = user.sky("status", "--refresh", env=env).stdout
    assert name in refreshed and "lost" not in refreshed
    user.sky("down", "-y", name, env=env)
    wait_until(lambda: nothing_of(user, name), 15)
    moved.rename(user.kubeconfig)  # for the fixture's clean-up
