"""`skyform check` reports local, ssh pools, cloud credentials, kubeconfig and the pulumi CLI."""

from __future__ import annotations

import json
import socket
import threading

import pytest
from helpers import closed_port


@pytest.fixture
def fake_sshd():
    """A TCP server that greets like sshd, then closes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def test_check_reports_pool_health_and_missing_credentials(
    cli, skyform_home, fake_sshd, monkeypatch, tmp_path
):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    (skyform_home / "config.yaml").write_text(
        "ssh_pools:\n  lab:\n    hosts:\n"
        f"      - {{host: 127.0.0.1, port: {fake_sshd}}}\n"
        f"      - {{ip: 127.0.0.1, port: {closed_port()}}}\n"
    )
    result = cli("check", "--json")
    assert result.exit_code == 0
    by_name = {r["name"]: r for r in json.loads(result.stdout)}
    assert by_name["local"]["usable"] is True
    # a banner is not a login: the pool is not usable (tests/e2e logs in to real sshd nodes)
    assert by_name["ssh/lab"]["usable"] is False
    assert by_name["ssh/lab"]["detail"] == "0/2 hosts log in"
    banner_only, closed = by_name["ssh/lab"]["items"]
    assert banner_only.startswith("✘") and "SSH handshake" in banner_only
    assert closed.startswith("✘") and "connection refused" in closed
    assert by_name["aws"]["usable"] is False and "aws configure" in by_name["aws"]["hint"]
    assert by_name["gcp"]["usable"] is False
    assert by_name["kubernetes"]["usable"] is False


def test_check_finds_credentials(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text("[default]\n")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    result = cli("check", "--json")
    by_name = {r["name"]: r for r in json.loads(result.stdout)}
    assert by_name["aws"]["usable"] is True
    assert by_name["aws"]["detail"] == "credentials: ~/.aws/credentials"


def test_check_reads_the_nodes_of_the_contexts_skyform_plans_on(
    cli, kubeconfig, kube_api, skyform_home
):
    kubeconfig({"lab": "gfd", "eks": "eks"}, current="lab")
    result = cli("check", "--json")
    (k8s,) = [r for r in json.loads(result.stdout) if r["name"] == "kubernetes"]
    assert k8s["usable"] is True
    assert k8s["detail"] == "2 context(s), current: lab; planning on: lab"
    assert k8s["items"][0] == "eks: not planned on (see kubernetes.allowed_contexts)"
    assert k8s["items"][1].startswith("lab: 5 nodes: ")
    assert "2× (254 CPU, 2016 GiB, 8× A100-80GB)" in k8s["items"][1]
    # check always reads the API again, and leaves what it read for `plan`
    cli("check", "--json")
    assert kube_api.node_requests("gfd") == 2
    assert (skyform_home / "kubernetes" / "nodes.json").is_file()


def test_check_marks_kubernetes_unusable_when_its_context_cannot_be_read(cli, kubeconfig):
    kubeconfig(
        {"down": "gfd"}, current="down", servers={"down": f"http://127.0.0.1:{closed_port()}"}
    )
    result = cli("check")
    assert result.exit_code == 0
    assert "✘ kubernetes: 1 context(s), current: down; planning on: none" in result.stdout
    assert "down: not usable: unreachable (Connection refused)" in result.stdout


def test_check_human_output_marks_usable_infra(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    result = cli("check")
    assert result.exit_code == 0
    assert "✔ local" in result.stdout
    assert "Usable infra: local" in result.stdout
