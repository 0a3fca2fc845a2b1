"""Reading ELF and DWARF that may be damaged or truncated: ``reading(path)``
turns whatever parsing raises (drgn's and libdw's errors are plain
Exceptions; pyelftools, trusting what it reads, raises almost anything) into
one InputError line naming the file. Damage the parsers let by (cycles,
absurd sizes) is found by probegen's own checks, which raise ``Damaged``.
"""

from contextlib import contextmanager

from probegen.errors import InputError, Location


class Damaged(Exception):
    """Damage found by probegen's own checks."""


@contextmanager
def reading(path):
    try:
        yield
    except InputError:
        raise
    except Exception as exc:
        if isinstance(exc, Damaged):
            text = str(exc)
        else:
            detail = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
            text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        text = " ".join(text.split())  # one line
        text = text if len(text) <= 160 else text[:157] + "..."
        raise InputError(f"damaged or truncated ELF/DWARF: {text}", Location(str(path))) from None
