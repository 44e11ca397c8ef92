"""Attach a job's buckets to every node of a cluster before setup: COPY, MOUNT, MOUNT_CACHED.

Credentials: on cloud VMs rclone uses the instance's own (instance profile / service
account: env_auth); on local and ssh nodes and Kubernetes pods (which have no identity of
the bucket's cloud: SkyPilot sends them this machine's credentials) the endpoint and keys
from config.yaml `storage:` or the AWS_* variables. Either way they travel on the command's
stdin, never its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

from skyform.config import StorageSettings
from skyform.errors import ExecError
from skyform.exec.mounts import node_path
from skyform.exec.results import raise_first
from skyform.exec.run import ClusterSession
from skyform.exec.runner import NodeRunner
from skyform.infra import infra
from skyform.plan.model import BucketMount, JobSpec
from skyform.plan.mountdiff import FUSED
from skyform.state.models import ClusterHandle, NodeKind
from skyform.storage.client import S3Access, gcs_rclone_env, s3_access
from skyform.storage.nodes import REMOTE, copy_command, env_script, flush_prologue, mount_command

COPY_TIMEOUT = 6 * 3600.0  # a COPY of a large prefix takes as long as it takes


def bucket_mounts(job: JobSpec) -> dict[str, BucketMount]:
    """Node destination (`~/x` or `/x`) -> bucket mount."""
    return {node_path(dst): m.bucket for dst, m in sorted(job.file_mounts.items()) if m.bucket}


def with_recorded_mounts(job: JobSpec, recorded: JobSpec | None) -> JobSpec:
    """`job` plus the MOUNT and MOUNT_CACHED buckets of the job last applied on the cluster
    that `job` does not mount itself: they are attached again before anything runs (an
    `exec` after a stop and start, a reboot, an rclone that died), so what the job writes
    under them reaches the bucket and not a plain directory."""
    if recorded is None:
        return job
    have = {node_path(dst) for dst in job.file_mounts}
    extra = {
        dst: m
        for dst, m in recorded.file_mounts.items()
        if m.bucket is not None and m.bucket.mode in FUSED and node_path(dst) not in have
    }
    if not extra:
        return job
    return job.model_copy(update={"file_mounts": {**extra, **job.file_mounts}})


def rclone_env(store: str, settings: StorageSettings, cluster: ClusterHandle) -> dict[str, str]:
    kind = infra(cluster.offer.cloud)
    on_cloud = kind is not None and kind.node_identity
    if store == "gcs":  # on a cloud VM: its service account; elsewhere as on this machine
        return gcs_rclone_env(REMOTE, {} if on_cloud else None)
    access = S3Access(provider="AWS") if on_cloud and store == "s3" else s3_access(settings, store)
    return access.rclone_env(REMOTE)


def attach_buckets(
    session: ClusterSession, job: JobSpec, settings: StorageSettings
) -> dict[str, BucketMount]:
    """COPY and mount every bucket of `job` on every node; raises on the first node that
    could not (naming the mount and rclone's last words)."""
    mounts = bucket_mounts(job)
    if not mounts:
        return {}
    cluster = session.cluster
    for dst in mounts:
        if cluster.head.kind is NodeKind.LOCAL and dst.startswith("/"):
            raise ExecError(
                f"file mount {dst}: a local node is a directory on this machine, so it only "
                "takes destinations in its home",
                hint=f"use ~{dst} (the job sees it as $HOME{dst})",
            )
    envs = {m.store: rclone_env(m.store, settings, cluster) for m in mounts.values()}

    def one(rank: int, runner: NodeRunner) -> None:
        _require_tools(runner, any(m.mode != "COPY" for m in mounts.values()))
        for dst, mount in mounts.items():
            command = (
                copy_command(dst, mount) if mount.mode == "COPY" else mount_command(dst, mount)
            )
            result = runner.run(
                f'eval "$(cat)" && {command}',
                stdin=env_script(envs[mount.store]),
                timeout=COPY_TIMEOUT,
            )
            if not result.ok:
                detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
                raise ExecError(
                    f"{runner.label}: {mount.mode} of {mount.store}://{mount.bucket}"
                    f"{'/' + mount.prefix if mount.prefix else ''} at {dst} failed"
                    + (f": {' / '.join(detail)}" if detail else ""),
                    "Check config.yaml `storage:` (endpoint, keys) and that the bucket exists.",
                )
            session.emit("file_mounts", rank, f"{dst}: {mount.mode.lower()} {mount.bucket}")

    raise_first(session.fan_out(one), "attaching buckets")
    return mounts


def _require_tools(runner: NodeRunner, fuse: bool) -> None:
    need = "command -v rclone >/dev/null"
    if fuse:
        need += " && [ -e /dev/fuse ] && (command -v fusermount3 || command -v fusermount)"
    if not runner.run(f"{need} >/dev/null").ok:
        what = "rclone and FUSE (/dev/fuse, fusermount3)" if fuse else "rclone"
        raise ExecError(
            f"{runner.label}: bucket file mounts need {what} on the node",
            "Install them on the node: apt-get install rclone fuse3.",
        )


def with_flush(job: JobSpec, attached: Mapping[str, BucketMount]) -> JobSpec:
    """The job whose run script, on exit, waits until the MOUNT_CACHED mounts `attached` for
    it have uploaded what was written (the mounts stay)."""
    cached = [dst for dst, m in attached.items() if m.mode == "MOUNT_CACHED"]
    if not cached or not job.run:
        return job
    return job.model_copy(update={"run": flush_prologue(cached) + job.run})
