"""Reading ELF and DWARF that may be damaged or truncated.

pyelftools trusts what it reads: a truncated or corrupted file makes it
raise almost anything (its own errors, construct's, KeyError, IndexError,
AssertionError, ...). ``reading(path)`` is the one place where all of that
becomes a one-line InputError naming the file. Our own checks for damage
that pyelftools does not notice (cycles, out-of-order DIEs, absurd sizes)
raise ``Damaged`` and end up there too.
"""

from __future__ import annotations

import struct
import sys
import zlib
from contextlib import contextmanager

from probegen.errors import BinaryError, InputError, Location


class Damaged(Exception):
    """Damage found by probegen's own checks."""


# What parsing a damaged file raises. TypeError and AttributeError come
# from pyelftools when an attribute has an unexpected form (bytes where
# it computes with an int); OSError from seeking to a negative offset;
# MemoryError from a bounded address space. pyelftools' own errors count
# once it is imported (C programs are read without it).
_FAILURES = (
    Damaged, KeyError, IndexError, struct.error,
    UnicodeDecodeError, ValueError, AssertionError, RecursionError, OverflowError,
    NotImplementedError, EOFError, zlib.error, TypeError, AttributeError, MemoryError, OSError,
)


def _failures() -> tuple:
    if "elftools" not in sys.modules:
        return _FAILURES
    from elftools.common.exceptions import DWARFError, ELFError
    from elftools.construct.core import ConstructError

    return (*_FAILURES, DWARFError, ELFError, ConstructError)


def describe(exc: BaseException) -> str:
    if isinstance(exc, Damaged):
        text = str(exc)
    else:
        detail = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
        text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    text = " ".join(text.split())  # one line
    return text if len(text) <= 160 else text[:157] + "..."


@contextmanager
def reading(path, failures=None):
    """Turn any failure of parsing ``path`` into one InputError. drgn's
    callers pass Exception: libdw's errors are plain Exceptions."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:
        if not isinstance(exc, failures or _failures()):
            raise
        raise BinaryError(f"damaged or truncated ELF/DWARF: {describe(exc)}", Location(str(path))) from None
