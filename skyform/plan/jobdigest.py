"""The setup and job digests of a JobSpec: computed by the planner, recomputed by the plan
loader (an edited `run`, `envs` or `workdir` no longer matches its digest).

A digest covers only what the plan shows: secrets by name, never by value (a value digest
in a shared plan could be tested offline against guesses).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from skyform.digests import sha256

if TYPE_CHECKING:  # a JobSpec, or the strict reader's view of one (plan/planview.py)
    from skyform.plan.model import JobSpec


def canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def setup_digest(job: JobSpec) -> str:
    return sha256(canonical({"setup": job.setup, "envs": job.envs, "secrets": job.secrets}))


def job_digest(job: JobSpec) -> str:
    return sha256(
        canonical(
            {
                "run": job.run,
                "envs": job.envs,
                "secrets": job.secrets,
                "workdir": job.workdir,
                "file_mounts": {k: v.model_dump(mode="json") for k, v in job.file_mounts.items()},
                "num_nodes": job.num_nodes,
                **({"checkpoint_dir": job.checkpoint_dir} if job.checkpoint_dir else {}),
            }
        )
    )


def with_digests(job: JobSpec) -> JobSpec:
    """`job` with both digests computed from its fields."""
    return job.model_copy(update={"setup_digest": setup_digest(job), "job_digest": job_digest(job)})
