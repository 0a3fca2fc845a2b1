"""Skip work whose inputs did not change since the last run.

A build runs ``probegen header`` whenever the catalog's mtime changes, often
with the same content. The stamp is a hash of everything that shapes the
outputs (the command's arguments, the catalog's bytes, probegen's code and
templates); the cache remembers the hash of each output written for it.
When both still hold, the command is done without loading YAML or jinja2.
Any failure to read or write the cache just means doing the work.
"""

from __future__ import annotations

import hashlib
import json
import os

def _code_dirs() -> list[str]:
    import probegen
    import probegen.templates as templates
    return [os.path.dirname(probegen.__file__), os.path.dirname(templates.__file__)]


def _cache_dir() -> str | None:
    if os.environ.get("PROBEGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "probegen", "stamps")


def _digest_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def stamp(*parts: str | bytes) -> str:
    """Hash of the parts and of probegen's own code and templates."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    for directory in _code_dirs():
        for root, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".j2", ".json")):
                    st = os.stat(os.path.join(root, name))
                    h.update(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def is_fresh(key: str) -> bool:
    """True when every output recorded for this stamp is still as written."""
    directory = _cache_dir()
    if directory is None:
        return False
    try:
        with open(os.path.join(directory, key)) as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        return False
    return bool(recorded) and all(_digest_file(path) == digest for path, digest in recorded.items())


def record(key: str, paths) -> None:
    directory = _cache_dir()
    if directory is None:
        return
    entry = {os.path.abspath(p): _digest_file(str(p)) for p in paths}
    try:
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{key}.{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, os.path.join(directory, key))
    except OSError:
        pass
