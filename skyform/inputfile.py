"""Reading a file skyform was pointed at (task file, --env-file, plan file): once, bounded.

`Path.read_bytes()` trusts the path: `/dev/zero` is read until memory runs out, a FIFO with
no writer blocks `open()` forever, a symlink loop surfaces as a bare OSError. Here the file
is opened without blocking, read in chunks up to `cap` bytes (devices and pipes included),
and a pipe that gets no data within `wait` seconds is an error, not a hang. Standard input
is refused with one message for every verb: a task file is read again later (by `apply`
for freshness and secrets, by the jobs controller on recovery), which stdin cannot be.
"""

from __future__ import annotations

import errno
import os
import select
import stat
from collections.abc import Callable

from skyform.errors import SkyformError

CHUNK = 64 * 1024
DEFAULT_WAIT = 10.0  # seconds a pipe may stay silent; SKYFORM_INPUT_WAIT overrides
STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
STDIN_REFUSED = (
    "reading {what} from standard input is not supported: skyform reads it again later "
    "(apply checks it has not changed; recovery plans from it)"
)
STDIN_HINT = "Save it to a file first, e.g. `cat > task.yaml`, and pass that path."

# (message, hint) -> the error to raise; the message does not name the file, the
# error does (SpecError's path, or the default's "PATH: " prefix)
ErrorFactory = Callable[[str, str | None], SkyformError]


def is_stdin(path: str | os.PathLike[str]) -> bool:
    """`-`, /dev/stdin and the like: the names of this process's standard input."""
    return os.fspath(path) in STDIN_NAMES


def read_input_file(
    path: str | os.PathLike[str],
    cap: int,
    *,
    what: str = "the file",
    error: ErrorFactory | None = None,
    wait: float | None = None,
    regular_only: bool = False,
) -> bytes:
    """The bytes of `path`, at most `cap` of them; every failure is `error(message, hint)`.

    `error` lets each caller raise its own branch of the error tree (SpecError with the
    path for task files, PlanFileError for plans). `regular_only`: a device, FIFO or socket
    is refused at once, without reading (a path skyform did not choose: the task path a plan
    records)."""
    label = os.fspath(path)
    if error is None:

        def error(message: str, hint: str | None) -> SkyformError:
            return SkyformError(f"{label}: {message}", hint)

    if is_stdin(label):
        raise error(STDIN_REFUSED.format(what=what), STDIN_HINT)
    try:
        fd = os.open(label, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(*_open_failure(exc, what)) from None
    try:
        info = os.fstat(fd)
        if _same_as_stdin(info):
            raise error(STDIN_REFUSED.format(what=what), STDIN_HINT)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"is a directory, not {what}", f"Pass the path of {what}.")
        if regular_only and not stat.S_ISREG(info.st_mode):
            raise error(
                f"is not a regular file ({_kind(info.st_mode)}), so it is not {what}",
                f"Point it at {what} saved on disk.",
            )
        if stat.S_ISREG(info.st_mode) and info.st_size > cap:
            raise error(_too_big(what, cap), _BIG_HINT)
        if wait is None:
            wait = float(os.environ.get("SKYFORM_INPUT_WAIT") or DEFAULT_WAIT)
        return _read_capped(fd, what, cap, error, wait)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


_BIG_HINT = "It holds configuration, not data; is this the right file?"


def _too_big(what: str, cap: int) -> str:
    return f"file is larger than {_size(cap)}, too large for {what}"


def _size(cap: int) -> str:
    return f"{cap // (1024 * 1024)} MB" if cap >= 1024 * 1024 else f"{cap} bytes"


def _same_as_stdin(info: os.stat_result) -> bool:
    try:
        stdin = os.fstat(0)
    except OSError:
        return False
    if stat.S_ISCHR(stdin.st_mode) and stat.S_ISCHR(info.st_mode):
        return False  # a terminal or /dev/null: no data is consumed twice, nothing to refuse
    return (stdin.st_dev, stdin.st_ino) == (info.st_dev, info.st_ino)


def _open_failure(exc: OSError, what: str) -> tuple[str, str | None]:
    if exc.errno == errno.ENOENT:
        return "no such file", f"Check the path to {what}."
    if exc.errno == errno.ELOOP:
        return (
            "a symbolic link loop (a link that leads back to itself)",
            "Point the link at a real file, or pass the file's own path.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied", f"Make {what} readable for your user."
    if exc.errno == errno.ENOTDIR:
        return "no such file (a part of the path is not a directory)", None
    return f"cannot read the file: {exc.strerror or exc}", None


def _read_capped(fd: int, what: str, cap: int, error: ErrorFactory, wait: float) -> bytes:
    """Read to EOF or cap+1 bytes. Non-blocking reads wait on poll, at most `wait` seconds
    without data (a FIFO nobody writes to, a silent pipe), then fail."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    silent = error(
        f"nothing arrived within {wait:g} s (a pipe or FIFO with no writer?)",
        f"Write {what} into it from another process, or pass a regular file.",
    )
    # a FIFO opened without blocking reads as empty until a writer opens it: wait for one
    if stat.S_ISFIFO(os.fstat(fd).st_mode) and not poller.poll(wait * 1000):
        raise silent
    chunks: list[bytes] = []
    total = 0
    while total <= cap:
        try:
            chunk = os.read(fd, min(CHUNK, cap + 1 - total))
        except BlockingIOError:
            if not poller.poll(wait * 1000):
                raise silent from None
            continue
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise error(f"is a directory, not {what}", None) from None
            raise error(f"cannot read the file: {exc.strerror or exc}", None) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise error(_too_big(what, cap), _BIG_HINT)
