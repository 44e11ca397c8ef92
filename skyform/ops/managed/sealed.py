"""A managed job's inputs and plan revisions in the state store, so a controller on another
machine (another SKYFORM_HOME) can run and recover it.

At launch on a team store (PostgreSQL) with SKYFORM_PASSPHRASE set, the job's task file bytes
and its resolved inputs (--env and --secret values, resource flags) are sealed as one
(teamkeys.seal: scrypt + AES-256-GCM; the task file may hold secrets too) into
`managed_inputs`, next to the sha256 of the task bytes. A controller whose SKYFORM_HOME lacks
the job's copy opens them (`materialise`): the digest is recomputed from the bytes and must
match the stored one and the launch plan's, then task.yaml and inputs.json are written under
its own SKYFORM_HOME/jobs/<id> (0600), as the launching machine has them. Every plan
revision's bytes are in the store as well (plans hold no secrets) and are read from there,
checked against the revision's digest, whichever machine made them. When the job ends its
stored secrets are dropped, as the local copy's are.

Without a passphrase nothing is stored: only controllers sharing the launching SKYFORM_HOME
can run the job (`jobs launch` says so). The embedded SQLite store stores no inputs, as before.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from skyform.digests import sha256
from skyform.errors import StateError
from skyform.ops.managed import jobdir
from skyform.plan.model import Plan
from skyform.plan.planfile import parse_plan, read_plan
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobs
from skyform.state.revisions import Revision, Revisions, job_owner
from skyform.state.teamkeys import PASSPHRASE_ENV, passphrase, seal, unseal


def share(db: StateDB, job_id: int) -> bool:
    """Seal the job's task and inputs (this machine's copy) into a team store; False when
    there is no team store or no passphrase to seal them with."""
    secret = passphrase()
    if not db.shares_keys or secret is None:
        return False
    task = jobdir.saved_task(job_id)
    bundle = {"task": base64.b64encode(task).decode(), **jobdir.load_inputs(job_id)}
    data = json.dumps(bundle, sort_keys=True).encode()
    ManagedJobs(db).put_inputs(job_id, sha256(task), seal(secret, data))
    return True


def shared(db: StateDB, job_id: int) -> bool:
    return ManagedJobs(db).get_inputs(job_id) is not None


def runnable_here(db: StateDB, job_id: int) -> bool:
    """This machine can run the job: its copy is here, or in the store with a passphrase."""
    return jobdir.has_task(job_id) or (passphrase() is not None and shared(db, job_id))


def materialise(db: StateDB, job_id: int) -> bool:
    """Write the job's task and inputs under this SKYFORM_HOME from the store when they are
    not here; True when written."""
    if jobdir.has_task(job_id):
        return False
    what = f"managed job {job_id}'s task and inputs"
    found = ManagedJobs(db).get_inputs(job_id)
    if found is None:
        raise StateError(
            f"{what} are neither under this SKYFORM_HOME ({jobdir.job_dir(job_id)}) nor in the "
            f"state store (it was launched without {PASSPHRASE_ENV})",
            "Run the controller with the launching machine's SKYFORM_HOME, or launch the job "
            f"again with {PASSPHRASE_ENV} set.",
        )
    digest, token = found
    secret = passphrase()
    if secret is None:
        raise StateError(
            f"{what} are in the team's state store, encrypted",
            f"Set {PASSPHRASE_ENV} to the team's passphrase (the one the job was launched "
            "with), then run the controller again.",
        )
    again = "Cancel the job and launch it again."
    bundle = json.loads(unseal(secret, token, what=what, damaged_hint=again))
    task = base64.b64decode(bundle["task"])
    launched = _launch_digest(db, job_id)
    if sha256(task) != digest or launched not in (None, digest):
        raise StateError(
            f"the stored task file of managed job {job_id} is not the one it was launched "
            f"with (sha256 {sha256(task)}, recorded {digest})",
            again,
        )
    jobdir.save_task(job_id, task)
    jobdir.save_inputs(
        job_id,
        envs=list(bundle.get("envs", [])),
        secrets=list(bundle.get("secrets", [])),
        overrides=dict(bundle.get("overrides", {})),
        base_dir=bundle.get("base_dir"),
    )
    return True


def forget_secrets(db: StateDB, job_id: int) -> None:
    """The job is over: drop the secret values, here and in the store."""
    jobdir.forget_secrets(job_id)
    if jobdir.has_task(job_id) and shared(db, job_id):
        share(db, job_id)


def _launch_digest(db: StateDB, job_id: int) -> str | None:
    """The task digest the job's first plan revision recorded (None: no stored revision)."""
    revisions = Revisions(db).list(job_owner(job_id))
    if not revisions:
        return None
    plan, _ = revision_plan(db, revisions[0])
    return plan.task.file_digest


def revision_plan(db: StateDB, rev: Revision) -> tuple[Plan, bytes]:
    """A managed job's revision's plan and bytes: from the store (checked against its
    digest), else from its file (a revision made by a skyform before schema 6)."""
    data = Revisions(db).body(rev)
    if data is not None:
        return parse_plan(data, rev.path or f"revision {rev.revision} of {rev.owner}"), data
    if rev.path is None:
        raise StateError(f"plan revision {rev.revision} of {rev.owner} has no plan in the store")
    return read_plan(Path(rev.path))
