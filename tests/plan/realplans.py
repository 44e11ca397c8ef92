"""Real plans, made by `skyform plan` in-process, for the untrusted-plan tests: local, a
multi-node local cluster, an ssh pool, aws, gcp, a pipeline, a DAG and a destroy plan."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from skyform.plan.jobdigest import with_digests
from skyform.plan.model import JobSpec, Plan
from skyform.plan.planfile import DIGEST_KEY, content_digest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TASKS = {
    "local": "name: hello\nresources: {infra: local}\nenvs: {GREETING: hi}\n"
    "secrets: {TOKEN: null}\nsetup: echo setup\nrun: echo $GREETING\n",
    "ssh": "name: onprem\nresources: {infra: ssh/lab}\nnum_nodes: 2\nrun: hostname\n",
    "aws": "name: a\nresources: {infra: aws, cpus: 2}\nrun: echo hi\n",
    "gcp": "name: g\nresources: {infra: gcp, accelerators: {L4: 1}, use_spot: true}\n"
    "workdir: .\nfile_mounts: {/data: s3://bucket/data}\nrun: nvidia-smi\n",
}
SSH_POOL = {
    "ssh_pools": {
        "lab": {
            "user": "me",
            "hosts": [{"host": "10.0.0.1"}, {"host": "10.0.0.2"}, {"host": "10.0.0.3"}],
        }
    }
}


def make_plans(cli, home: Path, where: Path) -> dict[str, Path]:
    """{kind: plan file} for every kind; the destroy plan's cluster is applied for real."""
    (home / "config.yaml").write_text(yaml.safe_dump(SSH_POOL))
    plans: dict[str, Path] = {}

    def plan(kind: str, task: Path, *flags: str) -> None:
        out = where / f"{kind}.plan.json"
        result = cli("plan", task, "-o", out, *flags)
        assert result.exit_code == 0, result.output
        plans[kind] = out

    doomed = where / "doomed.yaml"  # applied first: every plan is made against this state
    doomed.write_text("name: doomed\nresources: {infra: local}\nrun: echo bye\n")
    applied = cli("apply", doomed, "-y")
    assert applied.exit_code == 0, applied.output
    for kind, text in TASKS.items():
        task = where / f"{kind}.yaml"
        task.write_text(text)
        plan(kind, task, *(["--secret", "TOKEN=s3cr3t"] if kind == "local" else []))
    plan("pipeline", EXAMPLES / "pipeline.yaml")
    plan("dag", EXAMPLES / "dag.yaml")
    plan("destroy", doomed, "--destroy")
    return plans


def reseal(raw: dict) -> dict:
    """`raw` made self-consistent again after an edit: job digests, the changes' copies of
    them, and the content digest recomputed, as a careful tamperer would."""
    raw = {k: v for k, v in raw.items() if k != DIGEST_KEY}
    for task in raw.get("tasks", []):
        job = with_digests(JobSpec.model_validate(task["job"]))
        task["job"].update(setup_digest=job.setup_digest, job_digest=job.job_digest)
        for change in raw.get("changes", []):
            if change.get("cluster") == task["cluster"] and change.get("after"):
                change["after"].update(setup_digest=job.setup_digest, job_digest=job.job_digest)
    plan = Plan.model_validate(raw)
    return {**raw, DIGEST_KEY: content_digest(plan)}


def write_json(path: Path, raw: dict) -> Path:
    path.write_text(json.dumps(raw, indent=2, sort_keys=True))
    return path
