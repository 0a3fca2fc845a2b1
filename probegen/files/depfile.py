"""Make-syntax depfiles (``target: prerequisites``, which ninja's ``deps = gcc`` reads too): a generated
file is made from its catalog and from probegen's template for it (a newer one may render differently).
"""

import os
from pathlib import Path

import probegen.templates
from probegen.errors import InputError, Location
from probegen.files.output import GeneratedFile, write_if_changed

_NO_ESCAPE = ";%*?[\\"  # no escape of these is read alike by make and ninja (doc/security.md)


def escape(path: str) -> str:
    """A path as one word of a make rule, read alike by ninja: ' ', '#' and ':' backslashed, '$'
    doubled; one with control characters, _NO_ESCAPE's or not UTF-8 is refused (doc/security.md)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise InputError("a depfile cannot name a path with control characters", Location(path))
    if any(0xD800 <= ord(c) <= 0xDFFF for c in path):  # surrogateescape's stand-ins for bytes
        raise InputError("a depfile cannot name a path that is not UTF-8", Location(path))
    bad = sorted({c for c in path if c in _NO_ESCAPE})
    if bad:
        raise InputError(f"a depfile cannot name a path with {' '.join(bad)} "
                         "(make and ninja read it differently; rename the file)", Location(path))
    return "".join("\\" + c if c in " #:" else "$$" if c == "$" else c for c in path)


def write(depfile, target, catalog, template: str) -> None:
    """``target`` as the build system passed it (ninja checks that the depfile names the output it asked for)."""
    prerequisites = [str(catalog), os.path.join(os.path.dirname(probegen.templates.__file__), template)]
    words = " \\\n  ".join(map(escape, prerequisites))
    write_if_changed(GeneratedFile(Path(depfile), f"{escape(str(target))}: \\\n  {words}\n"))
