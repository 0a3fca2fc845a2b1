"""Skip work whose inputs did not change since the last run.

A build runs ``probegen header`` whenever the catalog's mtime changes, often
with the same content. The stamp is a hash of everything that shapes the
outputs (the command's arguments, the catalog's bytes, probegen's code and
templates); the cache remembers the hash of each output written for it.
When both still hold, the command is done without loading YAML or jinja2.
"""

from __future__ import annotations

import hashlib
import json
import os

from probegen import cache

KIND = "stamps"


def _digest_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def stamp(*parts: str | bytes) -> str:
    """Hash of the parts and of probegen's own code and templates."""
    h = hashlib.sha256()
    for part in (*parts, cache.code_fingerprint()):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def enabled() -> bool:
    return cache.directory(KIND) is not None


def is_fresh(key: str) -> bool:
    """True when every output recorded for this stamp is still as written."""
    data = cache.read(KIND, key)
    try:
        recorded = json.loads(data) if data else None
    except ValueError:
        return False
    return bool(recorded) and all(_digest_file(path) == digest for path, digest in recorded.items())


def record(key: str, paths) -> None:
    entry = {os.path.abspath(p): _digest_file(str(p)) for p in paths}
    cache.write(KIND, key, json.dumps(entry).encode())
