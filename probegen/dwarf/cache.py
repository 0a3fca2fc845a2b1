"""A per-build-id cache of type indexes, so the second run skips the scan.

Entries live under $XDG_CACHE_HOME/probegen (default ~/.cache/probegen),
keyed by build id (or the path, for binaries without one) and checked
against the debug file's size and mtime. A cache that cannot be read or
written is ignored: the index is then simply rebuilt.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from pathlib import Path

FORMAT = 2  # bump when the stored index changes shape


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "probegen"


def _entry(build_id: str | None, path: Path) -> Path:
    key = build_id or hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return cache_dir() / f"types-{key}.idx"


def load(build_id: str | None, path: Path, stamp: tuple) -> object | None:
    if os.environ.get("PROBEGEN_NO_CACHE"):
        return None
    try:
        with open(_entry(build_id, path), "rb") as f:
            stored = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != FORMAT or stored[1] != stamp:
        return None
    return stored[2]


def store(build_id: str | None, path: Path, stamp: tuple, data: object) -> None:
    if os.environ.get("PROBEGEN_NO_CACHE"):
        return
    target = _entry(build_id, path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".types-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump((FORMAT, stamp, data), f)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass  # an unwritable cache only costs speed
