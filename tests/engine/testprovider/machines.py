"""Real machines for the test provider's instances: a VM is a sandbox (the test cluster's pod
runtime, kubecluster/sandbox.py) in a network namespace of its own on a test bridge
(kubecluster/podnet.py), running sshd on port 22 of its address, with the login user the
image would have and the key the instance was given:

- AWS: user `ubuntu` (SkyPilot's and Ubuntu's AMIs), authorized key = the public key of the
  key pair the instance names (`keyName`), as cloud-init installs it;
- GCP: the `user:key` of the instance's `ssh-keys` metadata, as the guest agent creates it.

Provider processes are short-lived (one per engine operation), machines must outlive them:
`MachineHost` runs in the test process and serves boot/halt requests on a Unix socket whose
path reaches the provider as SKYFORM_TEST_MACHINES. Without it, instances get made-up
addresses and nothing boots.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from pathlib import Path

ENV_SOCKET = "SKYFORM_TEST_MACHINES"
AWS_USER = "ubuntu"
VM_UID = 58000  # far from the ssh-pool test users' ids, which other workers scan /proc for
BOOT_TIMEOUT = 15.0


# -- the provider's side ------------------------------------------------------------------------


def _ask(request: dict) -> dict:
    path = os.environ[ENV_SOCKET]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(BOOT_TIMEOUT + 5)
        conn.connect(path)
        conn.sendall((json.dumps(request) + "\n").encode())
        reply = json.loads(conn.makefile().readline())
    if reply.get("error"):
        raise RuntimeError(f"the machine host could not {request['op']}: {reply['error']}")
    return reply


def login(package: str, inputs: dict, cloud) -> tuple[str, str]:
    """(user, authorized key) an instance's image would set up from its inputs."""
    from testprovider.cloud import reveal

    if package == "aws":
        key_name = reveal(inputs.get("keyName"))
        for pair in cloud.resources("aws:ec2/keyPair:KeyPair"):
            if pair["outputs"].get("keyName") == key_name:
                return AWS_USER, str(reveal(pair["outputs"]["publicKey"]))
        raise RuntimeError(f"InvalidKeyPair.NotFound: The key pair '{key_name}' does not exist")
    entry = str(reveal((inputs.get("metadata") or {}).get("ssh-keys") or ""))
    user, _, key = entry.partition(":")
    if not user or not key:
        raise RuntimeError("the instance has no ssh-keys metadata: no user would be created")
    return user, key


def boot(package: str, instance_id: str, inputs: dict, outputs: dict, cloud) -> dict:
    """The instance's outputs with the address of its machine (unchanged without a host)."""
    if not os.environ.get(ENV_SOCKET):
        return outputs
    user, key = login(package, inputs, cloud)
    address = _ask({"op": "boot", "id": instance_id, "user": user, "key": key})["address"]
    outputs = dict(outputs)
    if package == "aws":
        outputs.update(publicIp=address, privateIp=address, publicDns="", privateDns="")
    else:
        nics = outputs.get("networkInterfaces") or [{}]
        first = dict(nics[0], networkIp=address)
        first["accessConfigs"] = [dict(c, natIp=address) for c in first.get("accessConfigs") or []]
        outputs["networkInterfaces"] = [first, *nics[1:]]
    return outputs


def halt(instance_id: str, *, keep_disk: bool = False) -> None:
    """Stop the instance's machine; its disk (the home directories) stays when stopped."""
    if os.environ.get(ENV_SOCKET):
        _ask({"op": "halt", "id": instance_id, "keep_disk": keep_disk})


# -- the test's side ---------------------------------------------------------------------------


def vm_script(user: str, key: str) -> str:
    q = shlex.quote
    home = f"/home/{user}"
    return "\n".join(
        [
            "set -e",
            # -m on a kept disk (a restart) finds the home there and keeps it
            f"useradd -u {VM_UID} -m -d {q(home)} -s /bin/bash -p '*' {q(user)}",
            f"install -d -m 700 -o {q(user)} -g {q(user)} {q(home + '/.ssh')}",
            f"printf '%s\\n' {q(key.strip())} > {q(home + '/.ssh/authorized_keys')}",
            f"chown {q(user)}: {q(home + '/.ssh/authorized_keys')}",
            f"chmod 600 {q(home + '/.ssh/authorized_keys')}",
            "mkdir -p /run/sshd",
            "exec /usr/sbin/sshd -D -e -o PasswordAuthentication=no -o PermitRootLogin=no",
        ]
    )


class Machine:
    def __init__(self, sandbox, netns: str, address: str) -> None:
        self.sandbox, self.netns, self.address = sandbox, netns, address


class MachineHost:
    """Boots and halts machines for the provider (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        from kubecluster.podnet import PodNetwork

        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        # A Unix socket's path has at most 107 bytes: pytest's tmp paths can be longer.
        self._socket_dir = tempfile.mkdtemp(prefix="sfm-", dir="/tmp")
        self.socket_path = os.path.join(self._socket_dir, "machines.sock")
        self.network = PodNetwork()
        self.machines: dict[str, Machine] = {}
        self.booted: list[str] = []  # instance ids, in boot order
        self.boots = 0
        self._lock = threading.Lock()
        host = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                request = json.loads(self.rfile.readline())
                try:
                    reply = host._serve(request)
                except Exception as exc:
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                self.wfile.write((json.dumps(reply) + "\n").encode())

        self._server = socketserver.ThreadingUnixStreamServer(self.socket_path, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="machine-host"
        )
        self._thread.start()

    def _serve(self, request: dict) -> dict:
        if request["op"] == "boot":
            return {"address": self.boot(request["id"], request["user"], request["key"])}
        if request["op"] == "halt":
            self.halt(request["id"], keep_disk=request.get("keep_disk", False))
            return {}
        raise ValueError(f"unknown op {request['op']!r}")

    def boot(self, instance_id: str, user: str, key: str) -> str:
        from kubecluster.sandbox import PodSpec, Sandbox, Volume

        key_part = instance_id.rsplit("/", 1)[-1][-8:]
        vm_dir = self._disk(instance_id)
        (vm_dir / "home").mkdir(parents=True, exist_ok=True)
        with self._lock:
            netns, address = self.network.add_pod(key_part)
            self.boots += 1
            sandbox_dir = vm_dir / f"boot-{self.boots}"
        hostname = "ip-" + address.replace(".", "-")
        spec = PodSpec(
            uid=instance_id,
            name=hostname,
            argv=["/bin/sh", "-c", vm_script(user, key)],
            volumes=[Volume("/home", vm_dir / "home")],
        )
        sandbox = Sandbox(spec, netns, address, sandbox_dir)
        machine = Machine(sandbox, netns, address)
        with self._lock:
            self.machines[instance_id] = machine
            self.booted.append(instance_id)
        sandbox.start()
        deadline = time.monotonic() + BOOT_TIMEOUT
        while not _banner(address, 22):
            if sandbox.exit_code() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"machine {instance_id} did not boot: {sandbox.log_tail()}")
            time.sleep(0.05)
        return address

    def _disk(self, instance_id: str) -> Path:
        return self.root / instance_id.replace("/", "_")

    def halt(self, instance_id: str, *, keep_disk: bool = False) -> None:
        with self._lock:
            machine = self.machines.pop(instance_id, None)
        if machine is not None:
            machine.sandbox.remove()
            with self._lock:
                self.network.remove_pod(machine.netns, machine.address)
        if not keep_disk:
            shutil.rmtree(self._disk(instance_id), ignore_errors=True)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        for instance_id in list(self.machines):
            self.halt(instance_id)
        self.network.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def _banner(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as conn:
            conn.settimeout(0.5)
            return conn.recv(4).startswith(b"SSH-")
    except OSError:
        return False
