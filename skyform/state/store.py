"""The state-store contract, and which store a command uses.

`StateStore` is everything callers do with state: transactions, lineage and serial with the
per-cluster versions plans are checked against, clusters and their hosts, jobs, events,
usage, and leases (locks with an owner and an expiry). Two implementations keep it:

- `sqlite:///path` — the embedded default, SKYFORM_HOME/state.db (sqlite.py);
- `postgresql://user@host:port/db` — team mode, one database for a team (postgres.py,
  `pip install 'skyform[postgres]'`).

The URL comes from SKYFORM_STATE_URL, else `state: {url: ...}` in config.yaml, else the
embedded file. Use a store as a context manager: `with open_state() as db: ...` closes it.

This module loads no model and no driver until a store is opened: `status` on a fresh
machine asks `state_exists()` and stops there.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlsplit

from skyform.errors import StateError
from skyform.paths import home, state_path

if TYPE_CHECKING:
    from skyform.state.leases import Lease
    from skyform.state.models import (
        ClusterRecord,
        ClusterStatus,
        Event,
        JobRecord,
        UsageInterval,
    )
    from skyform.state.rows import ClusterRow
    from skyform.state.sql import SqlStateStore
    from skyform.state.sqlcore import Conn, LastChange

URL_ENV = "SKYFORM_STATE_URL"
SCHEMES = ("sqlite", "postgresql", "postgres")


@runtime_checkable
class StateStore(Protocol):
    url: str  # for messages: never with a password
    kind: str  # sqlite | postgresql
    acting_for: str | None  # whom cluster changes are recorded as made by (None: the command)

    # plumbing
    def transaction(self) -> AbstractContextManager[Conn]: ...
    def close(self) -> None: ...
    def reopen(self) -> StateStore: ...
    def now(self) -> float: ...

    # lineage, serial and the per-cluster versions (compare-and-swap of plans against state)
    @property
    def lineage(self) -> str: ...
    @property
    def serial(self) -> int: ...
    def cluster_version(self, name: str) -> int: ...
    def cluster_change(self, name: str) -> LastChange | None: ...

    # clusters and hosts
    def get_cluster(self, name: str) -> ClusterRecord | None: ...
    def require_cluster(self, name: str) -> ClusterRecord: ...
    def list_clusters(self) -> list[ClusterRecord]: ...
    def cluster_rows(self) -> list[ClusterRow] | None: ...
    def shown_names(self) -> dict[str, str]: ...
    def put_cluster(self, record: ClusterRecord) -> None: ...
    def set_cluster_status(self, name: str, status: ClusterStatus) -> None: ...
    def delete_cluster(self, name: str) -> None: ...
    def node_owner(self, node_id: str) -> str | None: ...
    def reserve_nodes(self, cluster: str, node_ids: list[str]) -> None: ...
    def taken_nodes(self) -> dict[str, str]: ...
    def release_nodes(self, cluster: str, node_ids: list[str] | None = None) -> None: ...
    def mark_preempted(self, node_id: str, reason: str) -> None: ...
    def clear_preempted(self, node_ids: list[str]) -> None: ...
    def preempted_since(self, cutoff: float) -> dict[str, float]: ...

    # jobs, events, usage
    def next_job_id(self, cluster: str) -> int: ...
    def put_job(self, job: JobRecord) -> None: ...
    def get_job(self, cluster: str, job_id: int) -> JobRecord | None: ...
    def list_jobs(self, cluster: str | None = None) -> list[JobRecord]: ...
    def latest_job(self, cluster: str) -> JobRecord | None: ...
    def clusters_with_unstarted_jobs(self) -> list[str]: ...
    def events(self, *, cluster: str | None = None, since: float | None = None) -> list[Event]: ...
    def usage(self, *, since: float | None = None) -> list[UsageInterval]: ...
    def close_usage(self, cluster: str, *, ended_at: float | None = None) -> None: ...

    # leases
    def try_lease(self, name: str, *, purpose: str, ttl: float) -> Lease | None: ...
    def renew_lease(self, lease: Lease, ttl: float) -> bool: ...
    def release_lease(self, lease: Lease) -> None: ...
    def get_lease(self, name: str) -> Lease | None: ...
    def list_leases(self, prefix: str = "") -> list[Lease]: ...
    def force_unlock(self, name: str) -> Lease | None: ...


def state_url() -> str:
    """The store this command uses (SKYFORM_STATE_URL > config.yaml state.url > state.db)."""
    url = os.environ.get(URL_ENV, "").strip()
    if not url and os.path.lexists(home() / "config.yaml"):  # anything there is read
        from skyform.config import load_config

        url = load_config().state.url or ""
    return url or f"sqlite:///{state_path()}"


def sqlite_path(url: str) -> Path | None:
    """The file of a `sqlite:///path` URL (None: the URL is not SQLite's)."""
    parts = urlsplit(url)
    if parts.scheme != "sqlite":
        return None
    if parts.netloc or not parts.path or parts.path == "/":
        raise StateError(
            f"the state URL {url!r} names no file",
            "Write it as sqlite:///absolute/path/state.db",
        )
    return Path("/" + parts.path.lstrip("/")).expanduser()


def check_url(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        from skyform.state.postgres import redact

        raise StateError(
            f"the state URL {redact(url)!r} is neither sqlite:///path nor postgresql://...",
            "Set SKYFORM_STATE_URL (or state.url in config.yaml) to sqlite:///path/state.db "
            "or postgresql://user@host:port/database.",
        )
    return url


def state_exists(url: str | None = None) -> bool:
    """Whether there is state to read: a database server always counts; a SQLite file only
    once it exists (commands that only read never create it). Anything at the path counts,
    a link to nothing or a link loop too: opening it says what is wrong, where "no state"
    would forget every cluster it held."""
    url = check_url(url or state_url())
    path = sqlite_path(url)
    return path is None or os.path.lexists(path)


def open_state(path: Path | None = None, *, url: str | None = None) -> SqlStateStore:
    """Open the store (`path`: that SQLite file); creates and migrates it as needed."""
    if path is not None:
        from skyform.state.sqlite import SqliteStateStore

        return SqliteStateStore(path)
    url = check_url(url or state_url())
    file = sqlite_path(url)
    if file is not None:
        from skyform.state.sqlite import SqliteStateStore

        return SqliteStateStore(file)
    from skyform.state.postgres import PostgresStateStore

    return PostgresStateStore(url)
