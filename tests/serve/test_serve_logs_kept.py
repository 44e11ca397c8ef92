"""`serve logs NAME ID` of a replica whose cluster is gone, read from the service's records
(no controller needed): the kept log when there is one, else an error saying why there is
no log, never the bare "no such cluster"."""

from __future__ import annotations

from servekit import skyform

from skyform.serve import state
from skyform.serve.replica_logs import kept_log_path


def _service(*replicas: state.ReplicaRecord) -> None:
    state.make_dir("api")
    record = state.ServiceRecord(name="api", task_path="/t/api.yaml", replicas=list(replicas))
    state.create_record(record)
    state.write_record(record)


def test_the_kept_log_of_a_torn_down_replica_is_served():
    _service(state.ReplicaRecord(replica_id=7, cluster="api-7", status="FAILED", log_kept=True))
    kept_log_path(state.service_dir("api"), 7).write_text(
        "(api-7, node=0) loading\n(api-7, node=0) fatal: out of memory\n"
    )
    out = skyform("serve", "logs", "api", "7", "--tail", "1")
    assert out.stdout == "(api-7, node=0) fatal: out of memory\n"
    assert "Replica 7 of api is FAILED: its cluster api-7 is torn down" in out.stderr


def test_a_replica_with_no_cluster_and_no_kept_log_says_so():
    _service(
        state.ReplicaRecord(
            replica_id=3, cluster="api-3", status="FAILED_PROVISION", reason="quota exceeded"
        )
    )
    out = skyform("serve", "logs", "api", "3", check=False)
    assert out.returncode != 0
    assert "replica 3 of api (FAILED_PROVISION) has no cluster any more" in out.stderr, out
    assert "quota exceeded" in out.stderr and "Traceback" not in out.stderr
