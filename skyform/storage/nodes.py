"""Buckets on the nodes, with rclone (one tool for S3, GCS and S3-compatible stores).

- COPY: `rclone copy` of the bucket (prefix) into the destination before setup — SkyPilot's
  `aws s3 sync` without --delete: a read-only snapshot.
- MOUNT: `rclone mount` over FUSE, streaming (writes are uploaded when a file is closed).
- MOUNT_CACHED: `rclone mount --vfs-cache-mode full`; the job's script waits for the cache's
  uploads before it exits, so a job is only marked finished once its writes are in the bucket.
  The mount stays (the next `exec`, an SSH session, another job use it), until the cluster
  stops or goes: PARK_BUCKETS then waits for every cache's uploads and unmounts, which ends
  the rclone processes.

Node files, per mount: ~/.skyform/buckets/<id>/{path,rclone.log,cache/}; every mount point
made is listed in ~/.skyform/buckets/mounted.

The remote's settings (endpoint, keys) reach rclone as RCLONE_CONFIG_SKY_* variables read
from stdin by the node's shell: never on a command line (`ps`), never in a file or a log.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from skyform.digests import sha256_hex
from skyform.exec.mounts import make_dir_command, shell_path
from skyform.plan.model import BucketMount

REMOTE = "sky"  # the rclone remote every command uses; its config comes from the environment
COPY_FLAGS = ("--transfers=32", "--checkers=32", "--fast-list", "--no-update-modtime")
FLUSH_TIMEOUT = 3600  # seconds a job waits for a MOUNT_CACHED upload queue to drain


def remote_path(mount: BucketMount) -> str:
    path = f"{REMOTE}:{mount.bucket}"
    return f"{path}/{mount.prefix}" if mount.prefix else path


def env_script(env: Mapping[str, str]) -> str:
    """What the node's shell evals from stdin: `export K='v'` lines."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))


def mount_id(dst: str) -> str:
    return sha256_hex(dst)[:12]


def copy_command(dst: str, mount: BucketMount) -> str:
    where = shell_path(dst)
    flags = " ".join(COPY_FLAGS)
    return (
        f"{make_dir_command(dst)} && rclone copy {flags} {shlex.quote(remote_path(mount))} {where}"
    )


def mount_command(dst: str, mount: BucketMount) -> str:
    """Unmount a stale mount at `dst`, make it, then mount (a daemon) and wait until it is up."""
    where = shell_path(dst)
    state = f'"$HOME"/.skyform/buckets/{mount_id(dst)}'
    flags = [
        "--daemon",
        "--daemon-wait=10s",
        "--dir-cache-time=5s",
        f"--log-file={state}/rclone.log",
        "--log-level=INFO",
    ]
    if mount.read_only:
        flags.append("--read-only")
    if mount.mode == "MOUNT_CACHED":
        flags += [
            "--vfs-cache-mode=full",
            f"--cache-dir={state}/cache",
            "--vfs-cache-poll-interval=2s",
            "--vfs-write-back=1s",
            "--vfs-fast-fingerprint",
        ]
    else:
        flags.append("--vfs-cache-mode=off")
    # a live mount is kept (a job may be using it: `exec` on a busy cluster); a dead one
    # (rclone gone: "transport endpoint is not connected") is unmounted and made again
    return (
        f"if mountpoint -q {where} 2>/dev/null && ls {where} >/dev/null 2>&1; then exit 0; fi; "
        f"{unmount_command(dst)}; {_known_flags(mount.rclone_flags)}"
        f"{make_dir_command(dst)} && mkdir -p {state} && "
        f'if [ -n "$(ls -A {where} 2>/dev/null)" ]; then '
        f"echo 'mount path {dst} is not empty' >&2; exit 3; fi && "
        # the daemon must not hold the command's pipes open; on failure show its log's tail
        f"{{ rclone mount {shlex.quote(remote_path(mount))} {where} {' '.join(flags)} $sky_tuning "
        f"</dev/null >/dev/null 2>&1 || {{ tail -n 5 {state}/rclone.log >&2; exit 1; }}; }} && "
        f'echo {where} >> "$HOME"/.skyform/buckets/mounted && echo {where} > {state}/path'
    )


def attached_probe(dsts: list[str]) -> str:
    """Prints the index of each node destination in `dsts` that has no live mount (as
    mount_command tells a live one: a mount point that can be listed)."""
    checks = [
        f"{{ mountpoint -q {shell_path(d)} && ls {shell_path(d)} >/dev/null; }} 2>/dev/null "
        f"|| echo {i}"
        for i, d in enumerate(dsts)
    ]
    return "; ".join(checks) + "; true"


def _known_flags(flags: tuple[str, ...] | list[str]) -> str:
    """Shell that sets $sky_tuning to the MOUNT_CACHED tuning flags this node's rclone knows
    (an older rclone lacks e.g. --vfs-read-chunk-streams: that one tweak is dropped, the mount
    still works)."""
    if not flags:
        return "sky_tuning=; "
    quoted = " ".join(shlex.quote(f) for f in flags)
    return (
        'sky_tuning=; sky_help="$(rclone mount --help 2>/dev/null)"; '
        f'for sky_f in {quoted}; do case "$sky_help" in '
        '*"${sky_f%%=*} "*) sky_tuning="$sky_tuning $sky_f";; esac; done; '
    )


def unmount_command(dst: str) -> str:
    """Unmount `dst` if /proc/mounts lists it (also a dead mount, which `mountpoint` and `ls`
    cannot stat): politely, then lazily."""
    where = shell_path(dst)
    listed = f"awk -v m=\"$(realpath -m {where})\" '$2 == m {{f = 1}} END {{exit !f}}' /proc/mounts"
    return (
        f"({listed} && (fusermount3 -u {where} || fusermount -u {where} || "
        f"fusermount3 -uz {where} || umount -l {where})) >/dev/null 2>&1 || true"
    )


# Wait until the rclone of the MOUNT_CACHED mount at $m (its folder $d) says its cache has
# nothing left to upload: it logs `... to upload 0, uploading 0` on every poll (2 s); only a
# line logged after the wait began counts, so a write made just before is not missed. Gives
# up after FLUSH_TIMEOUT seconds, or at once when the mount is gone.
_FLUSH_ONE = (
    'sky_log="$d/rclone.log"; sky_start=$(wc -l < "$sky_log" 2>/dev/null || echo 0); '
    "sky_waited=0; "
    f'while [ $sky_waited -lt {FLUSH_TIMEOUT} ] && grep -qsF " $m " /proc/mounts; do '
    'if tail -n +$((sky_start + 1)) "$sky_log" | grep -q "to upload 0, uploading 0"; then '
    "break; fi; sleep 1; sky_waited=$((sky_waited + 1)); done"
)


def flush_command(dst: str) -> str:
    """Wait until the MOUNT_CACHED mount at `dst` has uploaded what was written to it (the
    mount stays)."""
    return (
        f'd="$HOME"/.skyform/buckets/{mount_id(dst)}; m="$(realpath -m {shell_path(dst)})"; '
        + _FLUSH_ONE
    )


def flush_prologue(cached: list[str]) -> str:
    """Prepended to a job's run script: on exit, wait for every MOUNT_CACHED mount's uploads."""
    if not cached:
        return ""
    body = "; ".join(flush_command(dst) for dst in cached)
    return f"trap {shlex.quote('sky_rc=$?; ' + body + '; exit $sky_rc')} EXIT\n"


# Wait for the uploads of every MOUNT_CACHED mount on the node that is mounted (its folder
# has a cache and the mount point's path); counts them in $sky_flushed.
FLUSH_CACHED = (
    """
sky_flushed=0
for d in "$HOME"/.skyform/buckets/*/; do
  d=${d%/}
  [ -d "$d/cache" ] && [ -s "$d/path" ] && read -r m < "$d/path" || continue
  grep -qsF " $m " /proc/mounts || continue
  """
    + _FLUSH_ONE
    + """
  sky_flushed=$((sky_flushed + 1))
done
"""
)
# Unmount the bucket mounts skyform made on the node, which ends their rclone processes:
# the listed ones and any rclone mount under $HOME (`rm -rf` through a live mount would
# delete the bucket's objects); a dead mount (rclone gone) is listed in /proc/mounts and
# unmounted too. Counts them in $sky_unmounted.
UNMOUNT_ALL = """
sky_unmounted=0
list="$HOME/.skyform/buckets/mounted"
sky_mounts=$({ [ -f "$list" ] && cat "$list"; awk -v h="$HOME/" \\
    '$3 == "fuse.rclone" && index($2, h) == 1 {print $2}' /proc/mounts 2>/dev/null; } | sort -u)
while IFS= read -r m; do
  [ -n "$m" ] && grep -qsF " $m " /proc/mounts || continue  # not `mountpoint`: dead ones too
  { fusermount3 -u "$m" || fusermount -u "$m" || fusermount3 -uz "$m" || umount -l "$m"; } \\
    2>/dev/null && sky_unmounted=$((sky_unmounted + 1))
done <<SKY_MOUNTS
$sky_mounts
SKY_MOUNTS
rm -f "$list"
"""
# A stopping node's bucket mounts, parked: the MOUNT_CACHED ones flushed (their writes reach
# the bucket), then all unmounted. Prints `parked:<flushed> <unmounted>`. For `stop` and the
# autostop agent, after the cluster's jobs have ended.
PARK_BUCKETS = FLUSH_CACHED + UNMOUNT_ALL + 'echo "parked:$sky_flushed $sky_unmounted"\n'


def parked_words(stdout: str) -> str:
    """`PARK_BUCKETS`' last line in words."""
    counts = stdout.strip().rpartition("parked:")[2].split()
    if len(counts) != 2:
        return "bucket mounts: no answer"
    flushed, unmounted = counts
    if unmounted == "0":
        return "no bucket mounts"
    return f"{unmounted} bucket mount(s) unmounted ({flushed} MOUNT_CACHED flushed first)"
