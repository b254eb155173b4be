"""Writes to a run folder that are whole or absent: a record line is appended in one ``write``
and cut off again if the file system took only part of it (disk full, a file-size limit); a
file written by rename leaves no temporary file behind when writing it fails. Either way the
failure is a ``WriteFailed`` naming the file and the cause, for one line and exit 5
(``runtime.cli.lifecycle``): what was written before stays readable, and the same command
resumes once there is room.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


WRITE_FAILED = 5
"""The exit code of a command that could not write a file it needed."""


class WriteFailed(OSError):
    """A file of the run folder (or its cache) could not be written; nothing partial was left."""

    remedy = "make room (or raise the limit)"
    """What the one line tells the user to do before the same command resumes."""

    def __init__(self, path: Path | str, cause: BaseException):
        why = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        super().__init__(getattr(cause, "errno", None), f"cannot write {path}: {why}")
        self.path = Path(path)
        self.why = why
        if getattr(cause, "errno", None) in (errno.EPERM, errno.EACCES, errno.EROFS, errno.EISDIR):
            self.remedy = "make it writable (permissions, `chattr -i`, a read-write mount)"

    def __str__(self) -> str:
        return self.strerror or ""


def odd_kind(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file ("a directory", "a FIFO",
    ...); None when it is a regular file or absent. A run folder's files must be plain files:
    anything else is refused in one line before it is written to."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a link to nothing" if os.path.islink(path) else None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return word
    return "not a regular file"


def append_whole(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` and fsync it, or leave ``path`` as it was."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:  # immutable, read-only, a directory: nothing was written
        raise WriteFailed(path, exc) from exc
    try:
        size = os.fstat(fd).st_size
        try:
            done = 0
            while done < len(data):  # a file-size limit or a full disk takes part of it: the
                written = os.write(fd, data[done:])  # next write says why
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += written
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass  # nothing more can be done; readers skip a torn last line
            raise WriteFailed(path, exc) from exc
    finally:
        os.close(fd)


def replace_whole(path: Path, text: str | bytes, tmp: Path) -> None:
    """Write ``text`` (UTF-8) or bytes to ``tmp``, fsync it and rename it over ``path``; on
    failure ``tmp`` is removed and ``path`` is untouched."""
    try:
        with open(tmp, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:  # a signal mid-write included: no temporary file stays
        try:
            tmp.unlink()
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise WriteFailed(path, exc) from exc
        raise
