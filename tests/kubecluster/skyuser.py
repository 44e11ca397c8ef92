"""A skyform user of the test cluster: a SKYFORM_HOME, a kubeconfig whose context points at
the cluster (its token and CA), and the environment the `skyform` CLI runs in (the real
engine first on PATH, offline). Tests drive the real CLI as a process of its own, as a user
types it; `KubeUser.sky(...)` runs one command, `KubeUser.start(...)` one in the
background (killed with `kill_tree`).

    user.task("task.yaml", "name: t\\nresources: {infra: k8s}\\nrun: echo hi\\n")
    user.sky("launch", "task.yaml", "-y")
    user.objects("t")  # what the API server holds of skyform cluster `t`
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from skyrun import Run

from kubecluster.cluster import KubeCluster

CONTEXT = "skyform-test"
NAMESPACE = "default"
KINDS = ("pods", "services", "secrets", "endpoints")


@dataclass
class KubeUser:
    cluster: KubeCluster
    home: Path  # SKYFORM_HOME
    cwd: Path  # where commands run (task files, workdirs)
    kubeconfig: Path
    env: dict[str, str] = field(default_factory=dict)  # the CLI's whole environment

    def task(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.write_text(text)
        return path

    def sky(
        self,
        *args,
        timeout: float = 300,
        check: int | None = 0,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> Run:
        """`skyform ARGS...`; a different exit code than `check` fails the test with the
        command's output (None: any exit code)."""
        proc = subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            stdin=subprocess.DEVNULL if stdin is None else None,
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=env or self.env,
            timeout=timeout,
        )
        result = Run(proc.returncode, proc.stdout, proc.stderr)
        if check is not None:
            assert result.exit_code == check, f"skyform {args}: {result.output}"
        return result

    def start(self, *args, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """`skyform ARGS...` in the background, in a session of its own, output to `log`."""
        with open(log, "w") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=env or self.env,
                start_new_session=True,
            )

    def objects(self, cluster: str) -> dict[str, list[str]]:
        """The names of what the API server holds of skyform cluster `cluster` (its label),
        per kind; the Endpoints by their Service's name."""
        rest = self.cluster.rest
        found: dict[str, list[str]] = {}
        for kind in KINDS:
            items = rest.get(f"/api/v1/namespaces/{NAMESPACE}/{kind}")["items"]
            found[kind] = sorted(
                o["metadata"]["name"]
                for o in items
                if (o["metadata"].get("labels") or {}).get("skyform/cluster") == cluster
                or (kind == "endpoints" and o["metadata"]["name"].startswith(f"{cluster}-"))
            )
        return found


def nothing_of(user: KubeUser, cluster: str) -> bool:
    return not any(user.objects(cluster).values())


def make_user(cluster: KubeCluster, bin_dir: Path, home: Path, cwd: Path) -> KubeUser:
    kubeconfig = cluster.kubeconfig(cwd.parent / f"{cwd.name}-kubeconfig", context=CONTEXT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "SKYFORM_"))}
    env.update(
        SKYFORM_HOME=str(home),
        KUBECONFIG=str(kubeconfig),
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PULUMI_HOME=str(cwd.parent / f"{cwd.name}-pulumi-home"),
        PULUMI_SKIP_UPDATE_CHECK="true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        COLUMNS="200",
        NO_COLOR="1",
    )
    return KubeUser(cluster=cluster, home=home, cwd=cwd, kubeconfig=kubeconfig, env=env)


def descendants(pid: int) -> list[int]:
    """`pid`'s child processes, theirs, and so on (read from /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


def kill_tree(proc: subprocess.Popen) -> list[int]:
    """SIGKILL `proc` and every process it started (the Pulumi CLI, its provider plugin),
    as a `kill -9` of a whole process tree; the pids killed."""
    pids = [proc.pid, *descendants(proc.pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return pids
