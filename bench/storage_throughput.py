#!/usr/bin/env python3
"""Bucket throughput against moto on loopback: skyform's COPY / upload / MOUNT (rclone) next to
`aws s3 sync` on the same data.

Data: a prefix of N small files (4 KB each, default 1,000) and one big file (default 100 MB).
Each measurement runs the exact command skyform runs on a node (skyform.storage.nodes) or on
this machine (skyform.storage.provision), with the remote's settings in the environment:

- COPY small / big         rclone copy bucket -> dir        (skyform's COPY before setup)
- upload small / big       rclone copy dir -> bucket        (skyform's upload of a local source)
- MOUNT read small / big   rclone mount, then cat every file (FUSE; skipped without /dev/fuse)
- MOUNT_CACHED write big   write through a --vfs-cache-mode full mount, then flush + unmount
- COPY all / aws all       the whole bucket (the small files and the big one), one command
- aws s3 sync small / big  with --aws PATH (awscli installed by hand in a throwaway venv)
- source digest            what `plan` now pays to know whether a local source changed
                           (skyform.storage.sources: files above 64 MiB by size and mtime)

Loopback moto is CPU-bound on this machine: the figures compare tools, not networks.

    .venv/bin/python bench/storage_throughput.py [--small 1000] [--big-mb 100] \
        [--aws /tmp/awsv/bin/aws]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from skyform.plan.model import BucketMount
from skyform.storage.client import S3Access
from skyform.storage.nodes import REMOTE, copy_command, env_script, flush_command, mount_command
from skyform.storage.provision import UPLOAD_FLAGS
from skyform.storage.sources import source_digest

KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret"}


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    binary = Path(sys.executable).parent / "moto_server"
    port = _port()
    proc = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("moto_server did not start")


def bash(command: str, env: dict[str, str], home: Path) -> float:
    """Run like a node does (HOME = the node's home, settings on stdin); seconds taken."""
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", f'eval "$(cat)" && {command}'],
        input=env_script(env),
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
        capture_output=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"failed: {command}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def row(name: str, seconds: float, files: int, nbytes: int) -> None:
    mb = nbytes / 1e6
    print(f"{name:<28} {seconds:8.2f} s  {files / seconds:9.1f} files/s  {mb / seconds:8.1f} MB/s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--aws", help="an aws CLI to compare with (aws s3 sync)")
    args = parser.parse_args()
    import boto3

    moto, url = start_moto()
    work = Path(tempfile.mkdtemp(prefix="skyform-bench-"))
    try:
        s3 = boto3.client(
            "s3",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"],
        )
        s3.create_bucket(Bucket="bench")
        s3.create_bucket(Bucket="bench-up")
        small = os.urandom(4096)
        for i in range(args.small):
            s3.put_object(Bucket="bench", Key=f"small/{i:05d}.bin", Body=small)
        big_bytes = args.big_mb * 1000 * 1000
        src = work / "src"
        (src / "small").mkdir(parents=True)
        (src / "big").mkdir()
        for i in range(args.small):
            (src / "small" / f"{i:05d}.bin").write_bytes(small)
        (src / "big" / "big.bin").write_bytes(os.urandom(1000 * 1000) * args.big_mb)
        s3.upload_file(str(src / "big" / "big.bin"), "bench", "big/big.bin")
        env = S3Access(
            url, "us-east-1", KEYS["AWS_ACCESS_KEY_ID"], KEYS["AWS_SECRET_ACCESS_KEY"], "Other"
        )
        rclone = env.rclone_env(REMOTE)
        home = work / "node"
        home.mkdir()
        print(f"moto on loopback, {args.small} x 4 KB files and 1 x {args.big_mb} MB\n")
        for part, files, nbytes in (
            ("small", args.small, args.small * 4096),
            ("big", 1, big_bytes),
        ):
            mount = BucketMount(bucket="bench", store="s3", prefix=part, mode="COPY")
            row(f"skyform COPY {part}", bash(copy_command(f"~/copy-{part}", mount), rclone, home),
                files, nbytes)  # fmt: skip
        everything = BucketMount(bucket="bench", store="s3", mode="COPY")
        seconds = bash(copy_command("~/copy-all", everything), rclone, home)
        row("skyform COPY all", seconds, args.small + 1, args.small * 4096 + big_bytes)
        for part, files, nbytes in (
            ("small", args.small, args.small * 4096),
            ("big", 1, big_bytes),
        ):
            command = f"rclone copy {' '.join(UPLOAD_FLAGS)} {src / part} {REMOTE}:bench-up/{part}"
            row(f"skyform upload {part}", bash(command, rclone, home), files, nbytes)
        if shutil.which("fusermount3") and os.path.exists("/dev/fuse"):
            mount = BucketMount(bucket="bench", store="s3", mode="MOUNT")
            bash(mount_command("~/mnt", mount), rclone, home)
            try:
                for part, files, nbytes in (
                    ("small", args.small, args.small * 4096),
                    ("big", 1, big_bytes),
                ):
                    seconds = bash(f"cat ~/mnt/{part}/* > /dev/null", rclone, home)
                    row(f"skyform MOUNT read {part}", seconds, files, nbytes)
            finally:
                bash("fusermount3 -u ~/mnt", rclone, home)
            cached = BucketMount(bucket="bench-up", store="s3", mode="MOUNT_CACHED")
            bash(mount_command("~/cached", cached), rclone, home)
            write = (
                f"cp {src / 'big' / 'big.bin'} ~/cached/written.bin && {flush_command('~/cached')}"
            )
            row("skyform MOUNT_CACHED write big", bash(write, rclone, home), 1, big_bytes)
        else:
            print("MOUNT: skipped (no FUSE here)")
        if args.aws:
            aws_env = {**KEYS, "AWS_ENDPOINT_URL": url, "AWS_DEFAULT_REGION": "us-east-1"}
            for part, files, nbytes in (
                ("small", args.small, args.small * 4096),
                ("big", 1, big_bytes),
            ):
                command = f"{args.aws} s3 sync --no-follow-symlinks s3://bench/{part} ~/aws-{part}"
                row(f"aws s3 sync {part}", bash(command, aws_env, home), files, nbytes)
            command = f"{args.aws} s3 sync --no-follow-symlinks s3://bench ~/aws-all"
            seconds = bash(command, aws_env, home)
            row("aws s3 sync all", seconds, args.small + 1, args.small * 4096 + big_bytes)
            for part, files, nbytes in (
                ("small", args.small, args.small * 4096),
                ("big", 1, big_bytes),
            ):
                command = (
                    f"{args.aws} s3 sync --no-follow-symlinks {src / part} s3://bench-up/aws-{part}"
                )
                row(f"aws s3 sync upload {part}", bash(command, aws_env, home), files, nbytes)
        start = time.perf_counter()
        source_digest(".", src)
        row("source digest (plan)", time.perf_counter() - start, args.small + 1, big_bytes)
    finally:
        subprocess.run(["fusermount3", "-uz", str(work / "node" / "mnt")], capture_output=True)
        subprocess.run(["fusermount3", "-uz", str(work / "node" / "cached")], capture_output=True)
        moto.terminate()
        moto.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
