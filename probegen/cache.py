"""probegen's cache: derived data kept between runs to save time.

It lives in $XDG_CACHE_HOME/probegen (default ~/.cache/probegen), one
subdirectory per kind of entry (stamps, catalog models, compiled
templates, type indexes). Everything in it can be rebuilt, so a cache
that cannot be read or written only costs time, and PROBEGEN_NO_CACHE=1
turns all of it off. Catalog models are stored pickled, so the directory
must be writable only by its user (as ~/.cache is).
"""

from __future__ import annotations

import functools
import os

# Entries kept per subdirectory: each catalog edit adds one.
KEEP = 64


def directory(kind: str) -> str | None:
    """The subdirectory for one kind of entry, or None when caching is off."""
    if os.environ.get("PROBEGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "probegen", kind)


def read(kind: str, name: str) -> bytes | None:
    where = directory(kind)
    if where is None:
        return None
    try:
        with open(os.path.join(where, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def write(kind: str, name: str, data: bytes) -> None:
    """Store an entry atomically (readers see the old one or the new one)
    and drop the oldest entries beyond KEEP."""
    where = directory(kind)
    if where is None:
        return
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        # Not tempfile: importing it costs more than a small command's work.
        tmp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(where, name))
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(where)
    except OSError:
        pass


def _prune(where: str) -> None:
    entries = [e for e in os.scandir(where) if not e.name.startswith(".")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda e: e.stat().st_mtime_ns)
    for entry in entries[:-KEEP]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """Names, sizes and mtimes of probegen's code, templates and schema:
    an upgrade or an edit of probegen invalidates what it derived."""
    import probegen
    import probegen.templates as templates

    lines = []
    for top in (os.path.dirname(probegen.__file__), os.path.dirname(templates.__file__)):
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".j2", ".json")):
                    st = os.stat(os.path.join(root, name))
                    lines.append(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(lines)
