"""etcd and kube-apiserver on loopback, from the binaries scripts/build-engine makes.

Token authentication (tokens.csv: an admin token in `system:masters`), RBAC, TLS with a
generated CA. No controller manager and no scheduler run: the node agent (agent.py) binds
pods and keeps Endpoints. The ServiceAccount admission plugin is off (no controller creates
the `default` service account a pod would otherwise need).
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from loopback import free_port

from kubecluster.certs import ApiCerts, write_certs
from kubecluster.sandbox import die_with_parent

START_TIMEOUT = 90.0  # kube-apiserver's first start on a loaded 2-core machine: ~10-20 s


class ControlPlaneError(RuntimeError):
    pass


def _spawn(argv: list[str], log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def _tail(log: Path, chars: int = 3000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-chars:]
    return ""


class ControlPlane:
    def __init__(self, bin_dir: Path, run_dir: Path, service_range: str) -> None:
        self.bin_dir, self.run = bin_dir, run_dir
        self.service_range = service_range
        self.token = secrets.token_hex(16)
        self.etcd_port, self.peer_port, self.port = free_port(), free_port(), free_port()
        self.certs: ApiCerts = write_certs(run_dir / "certs")
        self.etcd: subprocess.Popen | None = None
        self.apiserver: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._start_etcd()
        self._start_apiserver()

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        log = self.run / "etcd.log"
        argv = [
            str(self.bin_dir / "etcd"),
            "--name=test",
            f"--data-dir={self.run / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=test={peer}",
            "--unsafe-no-fsync",  # a test cluster: speed over durability
            "--log-level=warn",
        ]
        self.etcd = _spawn(argv, log)
        self._wait(f"{client}/health", self.etcd, log, "etcd", context=None)

    def _start_apiserver(self) -> None:
        tokens = self.run / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        tokens.chmod(0o600)
        log = self.run / "kube-apiserver.log"
        argv = [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.certs.cert}",
            f"--tls-private-key-file={self.certs.key}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={self.certs.service_account_public}",
            f"--service-account-signing-key-file={self.certs.service_account_key}",
            "--disable-admission-plugins=ServiceAccount",
            f"--service-cluster-ip-range={self.service_range}",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
        ]
        self.apiserver = _spawn(argv, log)
        context = ssl.create_default_context(cafile=str(self.certs.ca))
        self._wait(f"{self.url}/readyz", self.apiserver, log, "kube-apiserver", context)

    def _wait(
        self,
        url: str,
        proc: subprocess.Popen,
        log: Path,
        what: str,
        context: ssl.SSLContext | None,
    ) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(f"{what} exited ({proc.returncode}):\n{_tail(log)}")
            try:
                with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                    if answer.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{what} did not become ready in {START_TIMEOUT:.0f} s ({last}):\n{_tail(log)}"
        )

    def stop(self) -> None:
        for proc in (self.apiserver, self.etcd):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
