"""A per-build-id cache of type indexes, so the second run skips the scan
(seconds on a large binary).

Entries are JSON, keyed by build id (or the path, for binaries without
one) and checked against the debug file's path, size and mtime. An entry
is used only if its every part has the expected shape and type; anything
else is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from probegen.files import cache

KIND = "types"
FORMAT = 3  # bump when the stored index changes shape
_KINDS = frozenset(("struct", "union", "enum", "typedef"))
_BUILD_ID = re.compile(r"[0-9a-f]{8,128}")


def _name(build_id: str | None, path: Path) -> str:
    if build_id and _BUILD_ID.fullmatch(build_id):
        key = build_id
    else:
        key = hashlib.sha256(str(Path(path).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return f"{key}.json"


def load(build_id: str | None, path: Path, stamp: tuple) -> dict[str, list[tuple]] | None:
    """The stored index (name -> rows) for this debug file, or None."""
    data = cache.read(KIND, _name(build_id, path))
    if data is None:
        return None
    try:
        stored = json.loads(data)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deep
        return None
    return _index(stored, stamp)


def store(build_id: str | None, path: Path, stamp: tuple, names: dict[str, list[tuple]]) -> None:
    entry = {"format": FORMAT, "stamp": list(stamp), "names": names}
    cache.write(KIND, _name(build_id, path), json.dumps(entry, separators=(",", ":")).encode("ascii"))


def _index(stored, stamp: tuple) -> dict[str, list[tuple]] | None:
    if type(stored) is not dict or stored.keys() != {"format", "stamp", "names"}:
        return None
    if stored["format"] != FORMAT or stored["stamp"] != list(stamp) or type(stored["names"]) is not dict:
        return None
    names = {}
    for name, rows in stored["names"].items():
        if type(rows) is not list or not rows:
            return None
        checked = []
        for row in rows:
            if type(row) is not list or len(row) != 5 or not _is_row(*row):
                return None
            checked.append(tuple(row))
        names[name] = checked
    return names


def _is_row(kind, cu_offset, die_offset, size, line) -> bool:
    """(kind, cu_offset, die_offset, size, line) as TypeIndex.build makes it."""
    return (type(kind) is str and kind in _KINDS
            and type(cu_offset) is int and cu_offset >= 0
            and type(die_offset) is int and die_offset > cu_offset
            and type(size) is int and size >= -1
            and type(line) is int and line >= 0)
