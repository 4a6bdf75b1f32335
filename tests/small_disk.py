"""Small real filesystems for the full-disk tests: a tmpfs mounted for one test (root only; the test is skipped
elsewhere), and a file that fills it."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(mount: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` at ``mount`` (made when missing), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(mount)], check=False
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path, leave: int = 0) -> Path:
    """Write ``path`` until its filesystem has about ``leave`` bytes free; with 0, until it refuses even one more
    block (the last ones written a block at a time)."""
    stats = os.statvfs(path.parent)
    left = stats.f_bavail * stats.f_frsize - leave
    with open(path, "ab", buffering=0) as out:
        for chunk in (1 << 20, 4096) if not leave else (1 << 20,):
            try:
                while (left > 0 or not leave) and out.write(b"\xa5" * (min(chunk, left) if leave else chunk)):
                    left -= chunk
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return path
