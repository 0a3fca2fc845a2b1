"""A per-build-id cache of type indexes, so the second run skips the scan.

Entries are keyed by build id (or the path, for binaries without one) and
checked against the debug file's size and mtime.
"""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path

from probegen import cache

KIND = "types"
FORMAT = 2  # bump when the stored index changes shape


def _name(build_id: str | None, path: Path) -> str:
    key = build_id or hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32]
    return f"{key}.idx"


def load(build_id: str | None, path: Path, stamp: tuple) -> object | None:
    data = cache.read(KIND, _name(build_id, path))
    if data is None:
        return None
    try:
        stored = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != FORMAT or stored[1] != stamp:
        return None
    return stored[2]


def store(build_id: str | None, path: Path, stamp: tuple, data: object) -> None:
    try:
        encoded = marshal.dumps((FORMAT, stamp, data))
    except ValueError:
        return
    cache.write(KIND, _name(build_id, path), encoded)
