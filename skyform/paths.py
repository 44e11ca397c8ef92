"""Where skyform keeps its files. Importable without pydantic: `status` on an empty state
and the catalog need these paths before (or instead of) any model."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skyform.errors import OutputPathError

DEFAULT_HOME = "~/.skyform"


def home() -> Path:
    """SKYFORM_HOME as an absolute path (not created)."""
    return Path(os.environ.get("SKYFORM_HOME") or DEFAULT_HOME).expanduser().resolve()


def ensure_dir(path: Path) -> Path:
    """`path` as a directory: each missing level is created 0700 (skyform's own, holding
    state, keys and sockets); a level that exists is left exactly as it is. SKYFORM_HOME may
    be $HOME or `.`, a state URL may name a file in /tmp: skyform never changes the mode of
    a folder it did not create (it once left /etc at 0700). A SKYFORM_HOME that others can
    read is used as it is, with a warning (warn_if_shared)."""
    path = Path(path)
    missing: list[Path] = []
    level = Path(os.path.abspath(path))
    while not level.is_dir() and level.parent != level:
        missing.append(level)
        level = level.parent
    for level in reversed(missing):
        try:
            os.mkdir(level, 0o700)
        except FileExistsError:
            if level.is_dir():
                continue  # another process made it just now: it is not this one's to change
            raise
        os.chmod(level, 0o700)  # made here: exactly 0700, whatever the umask
    root, resolved = home(), path.resolve()
    if resolved == root or root in resolved.parents:
        warn_if_shared(root, "SKYFORM_HOME")
    return path


def ensure_home() -> Path:
    return ensure_dir(home())


# Said once per folder per command; the CLI prints them (nothing below cli/ prints).
_notices: list[str] = []
_checked: set[Path] = set()
SHARED_BITS = 0o066  # read or write for the group or for others


def warn_if_shared(folder: Path, what: str) -> None:
    """Note (once) that `folder` is open to other users: skyform's files in it are 0600 and
    the folder stays as its owner made it, but others can see which files there are (or,
    when it is writable, put files there)."""
    folder = Path(folder)
    if folder in _checked:
        return
    _checked.add(folder)
    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return
    if not mode & SHARED_BITS:
        return
    how = "read and written" if mode & 0o022 else "read"
    _notices.append(
        f"{what} {folder} can be {how} by other users (mode {stat.S_IMODE(mode):04o}): "
        "skyform uses it as it is, with its own files in it 0600; a folder only you can "
        "open keeps even their names private"
    )


def add_notice(text: str) -> None:
    """A warning for the CLI to print when the command ends (nothing below cli/ prints)."""
    _notices.append(text)


def take_notices() -> list[str]:
    """The warnings noted so far, once each; the CLI prints them when a command ends, and
    the next command (in the same process: tests, a controller's verbs) looks again."""
    taken = list(_notices)
    _notices.clear()
    _checked.clear()
    return taken


@contextmanager
def atomic_path(path: Path, mode: int = 0o644, *, exclusive: bool = False) -> Iterator[Path]:
    """A temp file beside `path` to fill (a database, a download); when the block ends
    without error it gets `mode` and takes `path`'s place in one rename, else it is removed.
    `exclusive`: never overwrite — it is linked into place, and FileExistsError says
    `path` was there first."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)  # atomic, and fails if the file exists: first writer wins
        else:
            os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_atomic(
    path: Path, data: bytes | str, mode: int = 0o644, *, exclusive: bool = False
) -> bool:
    """Write via a temp file in the same directory, fsync, then rename over `path`: a reader
    sees the old file or the new one, never half of one; a failed write changes nothing.
    `mode` 0o600 for anything private (keys, state, secrets). With `exclusive`, an existing
    `path` is left alone and the result is False."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        with atomic_path(path, mode, exclusive=exclusive) as tmp, open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
    except FileExistsError:
        if not exclusive:
            raise
        return False
    return True


# -- files written for a user (plan -o, export -o, state migrate --to) -----------------------


def output_file(path: str | os.PathLike[str], what: str) -> Path:
    """Where `what` (e.g. "the plan") goes when a user names `path`: the path itself, or
    the file a symlink there leads to (written through, the link kept, as shell
    redirection and `terraform plan -out` do). Refused, before anything is written, when
    it is, or leads to, anything but a regular file or nothing yet: `-o .`, a directory,
    a device (`-o /dev/null` would be replaced by a plan), a FIFO, a socket, a link loop,
    or a folder that does not exist."""
    label = os.fspath(path)
    if label.endswith(("/", os.sep)) or Path(label).name in ("", ".", ".."):
        raise _refused(label, what, "names a directory")
    try:
        info: os.stat_result | None = os.stat(label)
    except FileNotFoundError:
        info = None  # nothing there yet (or a link to nothing: its target is made)
    except OSError as exc:
        problem = _LOOP if exc.errno == errno.ELOOP else f"cannot be used ({exc.strerror})"
        raise _refused(label, what, problem) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        through = " (through a symbolic link)" if os.path.islink(label) else ""
        raise _refused(label, what, f"is {file_kind(info.st_mode)}{through}")
    target = Path(os.path.realpath(label)) if os.path.islink(label) else Path(label)
    if not target.parent.is_dir():
        raise OutputPathError(
            f"cannot write {what} to {label}: directory {target.parent} does not exist",
            "Create the directory first, or name a file in one that exists.",
        )
    return target


def write_output(path: str | os.PathLike[str], data: bytes | str, what: str) -> Path:
    """Write `data` to the file a user named (checked by `output_file`), atomically; a
    file that was there keeps its permissions. The file written is returned."""
    target = output_file(path, what)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o644  # shared like any file a user writes (plans are reviewed, committed)
    write_atomic(target, data, mode)
    return target


def output_dir(path: str | os.PathLike[str], what: str, *, create: bool = True) -> Path:
    """A directory a user named to write `what` into (`export -o DIR`): made when missing
    and `create` (as the user's own files, with the umask's mode), refused when something
    else is there."""
    label = os.fspath(path)
    try:
        info = os.stat(label)
    except FileNotFoundError:
        if os.path.islink(label):
            raise _refused(label, what, "is a symbolic link to nothing", _DIR_HINT) from None
        if create:
            os.makedirs(label, exist_ok=True)
        return Path(label)
    except OSError as exc:
        problem = _LOOP if exc.errno == errno.ELOOP else f"cannot be used ({exc.strerror})"
        raise _refused(label, what, problem, _DIR_HINT) from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a regular file" if stat.S_ISREG(info.st_mode) else file_kind(info.st_mode)
        raise _refused(label, what, f"is {kind}, not a directory", _DIR_HINT)
    return Path(label)


_LOOP = "is a symbolic link loop (a link that leads back to itself)"
_FILE_HINT = "Name a regular file (a new one, or one to replace) in a directory that exists."
_DIR_HINT = "Name a directory (a new one, or one that exists)."


def _refused(label: str, what: str, problem: str, hint: str = _FILE_HINT) -> OutputPathError:
    return OutputPathError(
        f"refusing to write {what} to {label}: it {problem}; nothing was written", hint
    )


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words (`a FIFO`)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def state_path() -> Path:
    """The state database (skyform.state.db opens it)."""
    return home() / "state.db"
