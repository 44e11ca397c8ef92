"""Every `skyform` command that README.md and examples/*.yaml show, and what running it does.

`documented_commands()` finds them: lines of README code blocks that start with `skyform`
(a trailing `  # comment` dropped), README inline code that runs skyform (`` `skyform ...` ``,
also after `VAR=x` or `&&`), and comments in examples/*.yaml that start with `skyform` (text
after two spaces dropped). The README's "On a fresh machine" section belongs to test_readme.py.

SCENARIOS run them. A scenario is a list of steps run in order by bash, in one scratch folder
(a copy of examples/, `task.yaml` = examples/hello.yaml, an empty `ci-home/`) with one
SKYFORM_HOME and `skyform` on PATH, so a documented line runs exactly as a user pastes it. A
step says which documented text it covers (`doc`; None for a step that only prepares), the
command lines that run it (`run`; default: the text itself — a usage line with placeholders
lists concrete forms instead), and the one outcome each line must have: exit code, text it
prints (stdout + stderr), text it must not print.

To add a command to the docs, add a Step for it here (to the scenario whose state it needs,
or to a new scenario). test_every_documented_command_has_a_step fails until there is one, and
fails when a step's `doc` is no longer in the docs.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Step:
    doc: str | None
    run: tuple[str, ...] = ()
    exit: int = 0
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ("Traceback", "internal error")
    stdin: str = ""

    @property
    def lines(self) -> tuple[str, ...]:
        assert self.run or self.doc, "a step runs something"
        return self.run or (self.doc,)  # type: ignore[return-value]


def run_step(step: Step, line: str, cwd: Path, env: dict[str, str]) -> None:
    """One line of a step, run by bash as a user pastes it; asserts the step's outcome."""
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        cwd=cwd,
        env=env,
        input=step.stdin if step.stdin else None,
        stdin=None if step.stdin else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    where = f"`{line}` (documented as `{step.doc}`)\n{output}"
    assert proc.returncode == step.exit, where
    for text in step.says:
        assert text in output, f"missing {text!r}: {where}"
    for text in step.never:
        assert text not in output, f"printed {text!r}: {where}"


def _runs_skyform(text: str) -> bool:
    for part in text.split("&&"):
        words = part.split()
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]
        if len(words) >= 2 and words[0] == "skyform":
            return True
    return False


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    head, _, rest = text.partition("## On a fresh machine")
    text = head + "\n## " + rest.split("\n## ", 1)[1]
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.sub(r"^\s*(- )?(run: )?", "", line)
            line = re.split(r"\s{2,}#", line)[0].strip()
            if line.startswith("skyform "):
                found.append(line)
    prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`]+)`", prose):
        span = " ".join(span.split())
        if _runs_skyform(span):
            found.append(span)
    return found


def example_commands() -> list[str]:
    found = []
    for path in sorted((REPO / "examples").glob("*.yaml")):
        for line in path.read_text().splitlines():
            if "#" in line:
                comment = re.split(r"\s{2,}", line.split("#", 1)[1].strip())[0]
                if comment.startswith("skyform ") and _runs_skyform(comment):
                    found.append(comment)
    return found


def documented_commands() -> list[str]:
    return list(dict.fromkeys(readme_commands() + example_commands()))


TRAIN_PY = "printf 'import sys\\nprint(\"train\", *sys.argv[1:])\\n' > train.py"

LATEST_JOB = (
    "skyform queue hello --json | "
    "python3 -c 'import json, sys; print(max(j[\"job_id\"] for j in json.load(sys.stdin)))'"
)

# A cluster `hello` on `local` (examples/hello.yaml), reviewed, applied, driven, torn down.
LOCAL = [
    Step("skyform validate task.yaml", says=("hello",)),
    Step("skyform plan task.yaml -o plan.json", says=("Plan: 1 to add", "Saved the plan")),
    Step(
        "skyform plan task.yaml --preview",
        says=("Engine preview", '# cluster "hello" (local): (no engine: local)'),
    ),
    Step(
        "skyform show plan.json [--markdown]",
        run=("skyform show plan.json", "skyform show plan.json --markdown"),
        says=("hello",),
    ),
    Step("skyform cost plan.json", says=("hello",)),
    Step(
        "skyform cost plan.json [--markdown|--json|--csv]",
        run=(
            "skyform cost plan.json --markdown",
            "skyform cost plan.json --json",
            "skyform cost plan.json --csv",
        ),
        says=("hello",),
    ),
    Step("skyform cost plan.json --markdown > comment.md"),
    Step(None, run=("grep -F hello comment.md",)),
    Step(
        "skyform cost reprice plan.json [--catalog DIR]",
        run=("skyform cost reprice plan.json",),
    ),
    Step("skyform plan task.yaml --check plan.json", says=("plan.json is up to date",)),
    Step("skyform plan task.yaml --check plan.json --max-hourly-cost 10", says=("up to date",)),
    Step(
        "git show origin/${{ github.base_ref }}:plan.json > base.json && "
        "skyform cost diff base.json plan.json --markdown",
        run=("cp plan.json base.json && skyform cost diff base.json plan.json --markdown",),
    ),
    Step("skyform apply plan.json", says=("hello from", "Apply complete!")),
    Step("skyform apply task.yaml", says=("No changes.",), never=("running the job",)),
    Step(
        "skyform launch task.yaml", says=("running the job again", "hello from", "Launch complete!")
    ),
    Step(
        "skyform status [-u] [--ip|--endpoints C] | queue [-s] [C...] | logs C [JOB] "
        "[--no-follow] [--tail N]",
        run=(
            "skyform status | grep -F hello",
            "skyform status -u | grep -F hello",
            "skyform status --ip hello | grep -Fx 127.0.0.1",
            "skyform queue hello | grep -F SUCCEEDED",
            "skyform queue -s hello | grep -F 'No jobs on cluster hello'",
            "skyform logs hello | grep -F 'hello from'",
            "skyform logs hello 1 --no-follow | grep -F 'hello from'",
            "skyform logs hello 1 --tail 1 | grep -F 'hello from'",
        ),
    ),
    Step(
        "skyform cancel C JOB | down C...|-a [--purge]",
        run=("skyform cancel hello 1 | grep -F SUCCEEDED",),
    ),
    Step("skyform status --ip C", run=("skyform status --ip hello",), says=("127.0.0.1",)),
    Step("skyform logs C [JOB]", run=("skyform logs hello",), says=("hello from",)),
    Step("skyform logs CLUSTER JOB", run=("skyform logs hello 1",), says=("hello from",)),
    Step("skyform logs C JOB --follow", run=("skyform logs hello 1 --follow",), says=("hello",)),
    Step(None, run=("skyform exec hello -d sleep 60",)),
    Step(
        "skyform cancel C JOB", run=(f"skyform cancel hello $({LATEST_JOB})",), says=("CANCELLED",)
    ),
    Step("skyform plan --destroy task.yaml", says=("will be destroyed", "1 to destroy")),
    Step("skyform queue", says=("Job queue of cluster hello", "SUCCEEDED")),
    Step(None, run=(TRAIN_PY,)),
    Step(
        "skyform exec C CMD [ARGS...] | exec C task.yaml | ssh C [--node N] [-- CMD ARGS...]",
        run=(
            "skyform exec hello echo one two | grep -F 'one two'",
            "skyform exec hello task.yaml | grep -F 'hello from'",
            "skyform ssh hello --node 0 -- echo on-the-node | grep -F on-the-node",
        ),
    ),
    Step("skyform exec CLUSTER task.yaml", run=("skyform exec hello task.yaml",)),
    Step(
        "skyform exec C --workdir . python train.py --lr 1e-3",
        run=("skyform exec hello --workdir . python train.py --lr 1e-3",),
        says=("train --lr 1e-3",),
    ),
    Step("skyform exec C -- echo -d", run=("skyform exec hello -- echo -d",), says=(") -d",)),
    Step("skyform exec", run=("skyform exec hello 'exit 7'",), exit=7),
    Step(
        "skyform ssh C",
        run=("skyform ssh hello",),
        stdin="echo in-the-shell; exit 4\n",
        exit=4,
        says=("in-the-shell",),
    ),
    Step("skyform ssh C -- CMD", run=("skyform ssh hello -- 'exit 5'",), exit=5),
    Step(
        "skyform debug preempt CLUSTER [--node N]",
        run=("skyform debug preempt hello --node 0",),
        says=("preempted",),
    ),
    Step(
        "skyform cost-report [--days N]",
        run=("skyform cost-report", "skyform cost-report --days 7"),
        says=("hello",),
    ),
    Step(
        "skyform dashboard [--host 127.0.0.1] [--port 8765] [--open] [--allow-actions]",
        run=(  # it serves until stopped: start it, read the cluster list, stop it
            "skyform dashboard --port 0 > dash.out & "
            "for i in $(seq 100); do grep -q http dash.out && break; sleep 0.2; done; "
            "curl -s \"$(grep -o 'http://[^ ]*' dash.out)clusters\"; kill $!",
        ),
        says=("<h1>Clusters</h1>", ">hello</a>"),
    ),
    Step(
        "skyform cost-report [--days N] [--json|--csv]",
        run=("skyform cost-report --days 0 --json", "skyform cost-report --csv"),
        says=("hello",),
    ),
    Step(
        "skyform launch -c dev --gpus A100",
        run=(  # launch places only where `check` finds credentials: GCP's (never used)
            'echo \'{"type": "authorized_user"}\' > adc.json && '
            "GOOGLE_APPLICATION_CREDENTIALS=$PWD/adc.json GOOGLE_CLOUD_PROJECT=demo "
            "skyform launch -c dev --gpus A100 --dryrun",
        ),
        says=('cluster "dev" will be created', "A100:1"),
    ),
    Step(
        "skyform launch -c dev [--gpus A100 ...]",
        run=("skyform launch -c dev --infra local -y",),
        says=("Launch complete!",),
    ),
    Step(
        None, run=("skyform exec dev echo on-the-dev-box",), says=("(dev, node=0) on-the-dev-box",)
    ),
    Step("skyform down -a", exit=1, says=("needs confirmation", "Pass -y")),
    Step("skyform down --purge C", run=("skyform down --purge -y hello",), says=("terminated",)),
    Step(None, run=("skyform down -a -y", "skyform status | grep -F 'No existing clusters'")),
    Step("SKYFORM_HOME=ci-home skyform plan task.yaml -o plan.json", says=("Plan: 1 to add",)),
    Step(
        "skyform known-hosts forget HOST:PORT",
        run=("skyform known-hosts forget 10.0.0.5:2222",),
        says=("No key recorded",),
    ),
]

# A job's controller takes its cluster down after the job: a plan made before that is stale.
NO_CLUSTERS_LEFT = (
    "for i in $(seq 100); do skyform status | grep -F 'No existing clusters' && break; "
    "sleep 0.3; done; skyform status | grep -F 'No existing clusters'"
)

# Managed jobs on `local`.
MANAGED = [
    Step("skyform jobs launch task.yaml", says=("Managed job 1", "hello from")),
    Step(None, run=(NO_CLUSTERS_LEFT,)),
    Step(
        "skyform jobs launch task.yaml|plan.json [--recovery failover|eager_next_region]",
        run=(
            "skyform plan task.yaml -o jobs.plan.json && skyform jobs launch jobs.plan.json"
            " --recovery eager_next_region",
            "skyform jobs launch task.yaml --recovery failover -d",
        ),
        says=("submitted",),
    ),
    Step(
        "skyform jobs launch -n NAME",
        run=("skyform jobs launch -n greeting -y task.yaml",),
        says=("(greeting)",),
    ),
    Step(
        "skyform jobs queue | jobs logs ID [--no-follow] | jobs cancel ID|--all "
        "| jobs plans ID [--show N]",
        run=(
            "skyform jobs queue | grep -F greeting",
            "skyform jobs logs 1 | grep -F 'hello from'",  # it has ended: following returns
            "skyform jobs logs 1 --no-follow | grep -F 'hello from'",
            "skyform jobs logs 4 -f | grep -F 'hello from'",
            "skyform jobs cancel 1 | grep -F SUCCEEDED",
            "skyform jobs cancel --all -y",
            "skyform jobs plans 1 | grep -F launch",
            "skyform jobs plans 1 --show 1 | grep -F j1-hello",
        ),
    ),
    Step("skyform jobs plans ID", run=("skyform jobs plans 1",), says=("launch",)),
    Step("skyform jobs cancel N", run=("skyform jobs cancel 1",), says=("SUCCEEDED",)),
]

# Machine-wide views: the catalog, infra checks, GPUs. No cloud account is needed.
CATALOG = [
    Step("skyform check", says=("local", "Usable infra")),
    Step("skyform gpus", says=("A100",)),
    Step("skyform gpus A100", says=("p4d.24xlarge",)),
    Step("skyform gpus [NAME]", run=("skyform gpus H100",), says=("H100",)),
    Step("skyform gpus list", says=("A100",)),
    Step("skyform show-gpus", says=("A100",)),
    Step("skyform catalog show", says=("bundled",)),
    # No network here: as for a user offline, the download fails and nothing changes.
    Step(
        "skyform catalog refresh [--url BASE]",
        run=("skyform catalog refresh --url http://127.0.0.1:9",),
        exit=1,
        says=("download failed", "Check the URL"),
    ),
    Step(None, run=("skyform catalog show | grep -F bundled",)),
]

# A cloud task (examples/gpu.yaml) as a user without cloud credentials gets it: planned,
# exported, costed; apply stops at the missing Pulumi CLI; `down --purge` forgets what that
# left.
CLOUD = [
    Step("skyform plan examples/gpu.yaml --secret HF_TOKEN", says=("Plan: 1 to add",)),
    Step(
        "skyform plan examples/gpu.yaml --secret HF_TOKEN --minimize time",
        says=("objective: time",),
    ),
    Step(
        "skyform plan examples/gpu.yaml --secret HF_TOKEN --gpus A100:1 --infra gcp",
        says=("Planned with resource flags: --gpus A100:1 --infra gcp", "a2-highgpu-1g"),
    ),
    Step("skyform validate examples/gpu.yaml --secret HF_TOKEN", says=("finetune",)),
    Step(
        None,
        run=(
            "skyform plan examples/gpu.yaml --secret HF_TOKEN -o plan.json",
            "skyform plan examples/gpu.yaml --secret HF_TOKEN --minimize time -o new.json",
        ),
    ),
    Step("skyform export plan.json -o infra/", says=("Pulumi.yaml",)),
    Step(None, run=("test -f infra/finetune/__main__.py",)),
    Step(
        "skyform cost diff OLD.json NEW.json [--markdown|--json]",
        run=(
            "skyform cost diff plan.json new.json",
            "skyform cost diff plan.json new.json --markdown",
            "skyform cost diff plan.json new.json --json",
        ),
        says=("finetune",),
    ),
    Step("skyform cost diff", run=("skyform cost diff plan.json new.json",), says=("objective",)),
    Step(
        "skyform apply plan.json",
        run=("skyform apply plan.json --secret HF_TOKEN",),
        exit=1,
        says=("the Pulumi CLI is not installed", "get.pulumi.com"),
    ),
]

# Pipelines and launch on a fresh machine (examples/*.yaml comments).
EXAMPLES = [
    Step(
        "skyform launch task.yaml",
        run=("skyform launch task.yaml",),
        exit=1,
        says=("needs confirmation", "Pass -y"),
    ),
    Step(None, run=("skyform status | grep -F 'No existing clusters'",)),
    Step("skyform validate examples/hello.yaml", says=("hello",)),
    Step(
        "skyform plan examples/hello.yaml -o hello.plan.json && skyform apply hello.plan.json",
        says=("Apply complete!",),
    ),
    Step("skyform launch examples/hello.yaml -y", says=("running the job again", "hello from")),
    Step("skyform down -y hello", says=("terminated",)),
    Step("skyform launch examples/multinode.yaml -y", says=("node 1 of 2", "Launch complete!")),
    Step(
        "skyform exec multinode --num-nodes 2 -- echo node '$SKYFORM_NODE_RANK'",
        says=("node 0", "node 1"),
    ),
    Step("skyform ssh multinode --node 1 -- pwd", says=("multinode/node-1",)),
    Step("skyform down NAME", run=("skyform down -y multinode",), says=("terminated",)),
]

# Buckets: with no S3 store configured, there is nothing skyform created to list or delete.
STORAGE = [
    Step("skyform storage ls", says=("No existing storage.",)),
    Step("skyform storage ls --json", says=("[]",)),
    Step(
        "skyform storage delete my-ckpt -y",
        exit=1,
        says=("bucket 'my-ckpt' not found", "never deletes a bucket it did not create"),
    ),
]


# Services: the plan of a two-replica service on this machine.
SERVICE_FILE = (
    "printf 'service:\\n  readiness_probe: /\\n  replicas: 2\\nresources:\\n  infra: local\\n"
    "  ports: 8080\\nrun: python3 -m http.server 8080\\n' > service.yaml"
)
SERVE = [
    Step(None, run=(SERVICE_FILE,)),
    Step(
        "skyform serve plan service.yaml [-n NAME] [--markdown|--json]",
        run=(
            "skyform serve plan service.yaml",
            "skyform serve plan service.yaml -n web --markdown",
            "skyform serve plan service.yaml --json",
        ),
        says=("Fixed 2 replicas", "local"),
    ),
    Step(
        None,
        run=("skyform serve plan service.yaml -n web --markdown | grep -F '### Service `web`'",),
    ),
]

# Services brought up on this machine (needs network namespaces: root).
SERVE_UP = [
    Step(None, run=(SERVICE_FILE,)),
    Step(
        "skyform serve up service.yaml [-n NAME] [-y]",
        run=("skyform serve up service.yaml -n web -y",),
        says=("Service name: web", "Endpoint URL: http://127.0.0.1:300"),
    ),
    Step(
        None,
        run=(
            "for i in $(seq 100); do skyform serve status web | grep -q 'READY   2/2' && break; "
            "sleep 0.3; done; curl -sf $(skyform serve status web --endpoint)/ | grep -F Directory",
        ),
    ),
    Step(
        "skyform serve status [NAME...] [-v] [--endpoint] [--json]",
        run=(
            "skyform serve status",
            "skyform serve status web -v",
            "skyform serve status web --endpoint",
            "skyform serve status web --json",
        ),
        says=("127.0.0.1:300",),
    ),
    Step(
        "skyform serve logs NAME --controller|--load-balancer|REPLICA_ID [--no-follow] [--tail N]",
        run=(
            "skyform serve logs web --controller --no-follow --tail 50",
            "skyform serve logs web --load-balancer --no-follow",
            "skyform serve logs web 1 --no-follow",
        ),
        says=("10.213.",),  # replica addresses: launched at, routed to, probed from
    ),
    Step(
        "skyform serve down NAME...|-a [--purge] [-y]",
        run=("skyform serve down web -y",),
        says=("Service web is down.",),
    ),
    Step(None, run=("skyform serve status | grep -F 'No existing services'",)),
]

# Autostop on `local` (only down exists there): set, changed, cancelled; stop refused.
AUTOSTOP = [
    Step(
        "skyform launch task.yaml -y --down",
        says=('autostop       = "1m (down)"', "Launch complete!"),
    ),
    Step(
        "skyform autostop C [-i N] [--down] [--cancel] | stop C... | start C...",
        run=("skyform autostop hello -i 10 --down",),
        says=("hello autostop: 10m (down)",),
    ),
    Step(
        "skyform autostop C -i 10 --down",
        run=("skyform autostop hello -i 10 --down",),
        says=("10m (down)",),
    ),
    Step(
        "skyform autostop CLUSTER [-i N] [--down] [--wait-for jobs_and_ssh|jobs|none] [--cancel]",
        run=("skyform autostop hello -i 30 --down --wait-for jobs",),
        says=("30m (down)",),
    ),
    Step(None, run=("skyform status | grep -F '30m (down)'",)),
    Step(None, run=("skyform autostop hello --cancel",), says=("cancelled",)),
    Step(
        "skyform stop CLUSTER...",
        run=("skyform stop -y hello",),
        exit=1,
        says=("cannot be stopped", "only to tear down"),
    ),
    Step("skyform start CLUSTER...", run=("skyform start hello",), says=("already up",)),
    Step("skyform status --refresh", says=("hello",)),
    Step(None, run=("skyform down -y hello",), says=("terminated",)),
]

DIGEST = 'python3 -c \'import json; print(json.load(open("plan.json"))["digest"])\''

# "Plans you did not make": an edited plan is refused; CI applies only the reviewed digest.
TRUST = [
    Step(None, run=("skyform plan task.yaml -o plan.json",), says=("Plan digest: sha256:",)),
    Step(
        "skyform apply plan.json --expect-digest sha256:…",
        run=("skyform apply plan.json --expect-digest sha256:0123",),
        exit=1,
        says=("it is not the plan that was reviewed",),
    ),
    Step(
        None,
        run=("sed 's/hostname/id/' plan.json > edited.json && skyform apply edited.json",),
        exit=1,
        says=("plan is corrupt or was edited", "job_digest does not match"),
    ),
    Step(None, run=('test ! -e "$SKYFORM_HOME/state.db"',)),
    Step(
        None,
        run=(f'skyform apply plan.json --expect-digest "$({DIGEST})"',),
        says=("Apply complete!",),
    ),
    Step(None, run=("skyform down -y hello",), says=("terminated",)),
]

# Team mode's commands, on the embedded store (the PostgreSQL runs are tests/e2e/test_team_mode.py).
TEAM = [
    Step("skyform plan task.yaml --markdown -o plan.json > plan.md"),
    Step(None, run=("grep -F 'Plan: 1 to add' plan.md",)),
    Step("skyform apply plan.json --lock-timeout 600 --detach", says=("Apply complete!",)),
    Step(
        "skyform force-unlock CLUSTER",
        run=("skyform force-unlock hello -y",),
        says=("Cluster 'hello' is not locked: nothing to do.",),
    ),
    Step(
        'skyform state migrate --to "$SKYFORM_STATE_URL"',
        run=(
            'SKYFORM_STATE_URL="sqlite:///$PWD/team.db" && '
            'skyform state migrate --to "$SKYFORM_STATE_URL"',
        ),
        says=("Copied 1 clusters", "team.db"),
    ),
    Step(
        'skyform state migrate --from "$SKYFORM_STATE_URL" --to sqlite:///path/state.db',
        run=('skyform state migrate --from "sqlite:///$PWD/team.db" --to "sqlite:///$PWD/b.db"',),
        says=("Copied 1 clusters", "b.db"),
    ),
    Step(None, run=("skyform down hello -y",)),
]

K8S_TASK = "printf 'resources:\\n  infra: k8s\\nrun: echo on $(hostname)\\n' > task.yaml"

# README "Running skyform's Kubernetes path for real": run on the test Kubernetes cluster
# through the real engine by tests/engine/test_readme_kubernetes.py (not by the e2e runner).
KUBERNETES = [
    Step(None, run=(K8S_TASK,)),
    Step(
        "skyform launch -c demo --gpus T4:1 --num-nodes 2 task.yaml -y",
        says=("demo: job 1 SUCCEEDED",),
    ),
    Step(
        "skyform logs demo 1 && skyform exec demo 'hostname' && skyform ssh demo",
        says=("on demo-0", "on demo-1", "demo-0"),
    ),
    Step("skyform down -y demo", says=("demo down: terminated",)),
]
ENGINE_SCENARIOS: dict[str, list[Step]] = {"kubernetes": KUBERNETES}

SCENARIOS: dict[str, list[Step]] = {
    "team": TEAM,
    "storage": STORAGE,
    "autostop": AUTOSTOP,
    "trust": TRUST,
    "local": LOCAL,
    "managed": MANAGED,
    "catalog": CATALOG,
    "cloud": CLOUD,
    "examples": EXAMPLES,
    "serve": SERVE,
    "serve_up": SERVE_UP,
}
