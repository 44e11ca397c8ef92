"""`serve status` text: SkyPilot's two tables, colour off, at a fixed time."""

from __future__ import annotations

from skyform.cli.render.serve import status_text
from skyform.serve.state import ReplicaRecord, ServiceRecord

NOW = 10_000.0


def record(**kw) -> ServiceRecord:
    replicas = [
        ReplicaRecord(replica_id=1, cluster="web-1", status="READY", launched_at=NOW - 125,
                      endpoint="http://10.213.0.2:8080", infra="local"),
        ReplicaRecord(replica_id=2, cluster="web-2", status="STARTING", launched_at=NOW - 5,
                      endpoint="http://10.213.0.6:8080", infra="local"),
        ReplicaRecord(replica_id=3, cluster="web-3", status="FAILED_PROVISION"),
    ]  # fmt: skip
    base = {
        "name": "web",
        "task_path": "/t/web.yaml",
        "status": "READY",
        "endpoint": "http://127.0.0.1:30001",
        "ready_since": NOW - 64,
        "autoscaling": "Fixed 2 replicas",
        "replicas": replicas,
    }
    return ServiceRecord(**{**base, **kw})


def test_status_tables():
    assert status_text([record()], verbose=False, now=NOW) == (
        "Services\n"
        "NAME  VERSION  UPTIME  STATUS  REPLICAS  ENDPOINT\n"
        "web   1        1m 4s   READY   1/2       http://127.0.0.1:30001\n"
        "\n"
        "Service Replicas\n"
        "SERVICE_NAME  ID  VERSION  ENDPOINT                LAUNCHED   INFRA  STATUS\n"
        "web           1   1        http://10.213.0.2:8080  2m 5s ago  local  READY\n"
        "web           2   1        http://10.213.0.6:8080  5s ago     local  STARTING\n"
        "web           3   1        -                       -          -      FAILED_PROVISION\n"
        "\n"
        "Failed replicas\n"
        "  web 3 (FAILED_PROVISION): no reason recorded\n"
    )


def test_a_failed_replica_shows_its_exit_code_and_last_lines():
    failed = ReplicaRecord(
        replica_id=4, cluster="web-4", status="FAILED", reason="its process ended (FAILED "
        "with code 3)", exit_code=3, last_lines=["loading model", "boom: \x1b[31mno GPU"],
        log_kept=True,
    )  # fmt: skip
    text = status_text([record(replicas=[failed])], verbose=False, now=NOW)
    assert text.endswith(
        "Failed replicas\n"
        "  web 4 (FAILED): its process ended (FAILED with code 3)\n"
        "    last lines of its log:\n"
        "    | loading model\n"
        "    | boom: \\x1b[31mno GPU\n"
        "    its log: skyform serve logs web 4\n"
    ), text


def test_verbose_adds_policies_and_no_services_says_so():
    text = status_text([record()], verbose=True, now=NOW)
    assert "AUTOSCALING_POLICY  LOAD_BALANCING_POLICY" in text
    assert "Fixed 2 replicas    least_load" in text
    assert status_text([], verbose=False, now=NOW) == "No existing services.\n"


def test_replica_table_is_cut_at_ten_unless_verbose():
    many = [ReplicaRecord(replica_id=i, cluster=f"web-{i}", status="READY") for i in range(1, 13)]
    text = status_text([record(replicas=many)], verbose=False, now=NOW)
    assert "... 2 more (see all with -v)" in text
    assert "web           12" in status_text([record(replicas=many)], verbose=True, now=NOW)


def test_an_exit_code_the_reason_does_not_name_is_shown():
    failed = ReplicaRecord(replica_id=5, cluster="web-5", status="FAILED", exit_code=137)
    text = status_text([record(replicas=[failed])], verbose=False, now=NOW)
    assert "  web 5 (FAILED): exit code 137\n" in text, text
