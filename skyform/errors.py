"""The one error tree. Every user-facing failure is a SkyformError.

Each class carries its exit code; `cli/main.py` is the only place that turns an
error into process output and an exit status. Messages say what was wrong and
where; `hint` says what to do about it.
"""

from __future__ import annotations


class SkyformError(Exception):
    """Root of every error skyform reports to a user (exit 1 unless a branch says otherwise)."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


# --- input ------------------------------------------------------------------------------


class SpecError(SkyformError):
    """A task file (or --env input) is malformed. Names file, line, column and field."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.path = path
        self.line = line
        self.column = column
        self.field = field

    @property
    def location(self) -> str:
        """`file:line:col` as editors and terminals link it (parts omitted when unknown)."""
        parts = [p for p in (self.path, self.line, self.column) if p is not None]
        return ":".join(str(p) for p in parts)


class UnsupportedError(SpecError):
    """Valid SkyPilot input that skyform deliberately does not run (a cloud, `service:` ...)."""


class ConfigError(SkyformError):
    """SKYFORM_HOME/config.yaml is malformed or names something that does not exist."""


# --- catalog and planning ----------------------------------------------------------------


class CatalogError(SkyformError):
    """The price catalog could not be loaded, refreshed or validated."""


class PlanError(SkyformError):
    """A plan could not be made, read or used."""


class NoOffersError(PlanError):
    """Nothing in the catalog satisfies a task's resources (or all of it is blocked)."""

    exit_code = 4


class StalePlanError(PlanError):
    """A saved plan no longer matches the task file, the catalog or the state."""

    exit_code = 3


class PlanFileError(PlanError):
    """A plan file is corrupt, truncated, or of another format version."""


# --- state, stacks, execution ---------------------------------------------------------------


class PlanCorruptError(PlanFileError):
    """A plan file that fails the loader's checks: edited, merged badly or tampered with."""


class OutputPathError(SkyformError):
    """A path skyform was told to write to (`plan -o`, `export -o`, `state migrate --to`)
    is not a regular file or a place for one: a directory, a device, a FIFO, a socket."""


class UnsafePathError(SkyformError):
    """A path made from a name would lie outside the directory it belongs in."""


class StateError(SkyformError):
    """The state database is unusable, or a record it should have is missing."""


class DamagedRecordError(StateError):
    """A record in the state store cannot be read as skyform wrote it (not JSON, a field
    missing, NaN where a number belongs). `down --purge NAME` still forgets a cluster's."""


class JobNotFoundError(StateError):
    """No such job on the cluster (SkyPilot's JobExitCode.NOT_FOUND, as `sky logs` exits)."""

    exit_code = 102


class LockedError(StateError):
    """Another skyform process holds the lock on a cluster."""


class StackError(SkyformError):
    """An engine could not bring a cluster up, refresh it or tear it down.

    `nothing_made`: the engine failed before it made or changed anything (its SDK, CLI or
    credentials are missing, there is no capacity at all, it cannot decrypt the stack), so
    no trace of a cluster it was to create is kept, and a cluster it was to tear down keeps
    its record as it was. Raisers set it only when they know; an unknown outcome keeps the
    record (a teardown's: INIT, for the next `down` to finish).
    """

    def __init__(self, message: str, hint: str | None = None, *, nothing_made: bool = False):
        super().__init__(message, hint)
        self.nothing_made = nothing_made


class CapacityError(StackError):
    """The infra has no capacity for the placement (e.g. every host of an ssh pool is taken)."""

    exit_code = 4


class InfraUnusable(StackError):
    """The infra cannot be used from this machine as it is: its SDK, CLI or provider plugin
    is missing, its credentials or project are, or an account quota refuses the request.
    Unlike lost capacity, waiting does not help: a managed job fails at once
    (FAILED_PRECHECKS, as SkyPilot's) instead of retrying for hours."""


class QuotaError(CapacityError):
    """The account's quota refuses the placement (exit 4 like no capacity, so `launch`
    re-plans elsewhere); waiting does not raise a quota, so a managed job whose every
    relaunch meets one fails at once."""


# failures that waiting does not cure (see InfraUnusable, QuotaError)
WAITING_DOES_NOT_HELP = (InfraUnusable, QuotaError)


class StorageError(SkyformError):
    """A bucket operation failed (read, create, upload, mount, delete)."""


class ExecError(SkyformError):
    """Running something on a cluster's nodes failed."""


class NodeUnreachable(ExecError):
    """A node did not answer over SSH (down, wrong key, host key mismatch, timeout).

    `reason` says which, for callers that must tell a dead node from a misconfigured one:
    refused, timeout, banner, auth, host_key, lost (connection dropped), or "" when unknown.
    """

    DEAD_REASONS = frozenset({"refused", "lost"})

    def __init__(self, message: str, hint: str | None = None, *, reason: str = "") -> None:
        super().__init__(message, hint)
        self.reason = reason

    @property
    def node_is_gone(self) -> bool:
        """The node itself is down (connection refused or dropped), not merely slow or
        misconfigured: what a preemption looks like from here."""
        return self.reason in self.DEAD_REASONS


class Interrupted(SkyformError):
    """The user pressed Ctrl-C."""

    exit_code = 130


class Fenced(BaseException):
    """A write of a process that acts under a lease (a managed job's controller) was
    refused: the lease was taken anew since — a newer fencing token exists — so another
    holder acts now (state/fencing.py). Not an Exception on purpose: no `except Exception`
    may carry on after it; the process stops what it drives, writes nothing more, exits."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
