"""Names from DWARF made into C that bpftrace's parser accepts: C++ names
types ``Box<int>`` or ``ns::S`` and members ``_vptr.S``, a hostile file
anything. Every name in emitted C passes through ``c_identifier``.
"""

import re

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
# C11 keywords, and C++ type words a C parser does not know.
_RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false
""".split())

# Base type names as gcc and clang write them for C, and as C accepts them.
C_BASE_NAMES = frozenset((
    "char", "signed char", "unsigned char", "short int", "short unsigned int", "int",
    "unsigned int", "long int", "long unsigned int", "long long int", "long long unsigned int",
    "short", "unsigned short", "long", "unsigned long", "long long", "unsigned long long",
    "_Bool", "float", "double", "long double", "__int128", "unsigned __int128",
    "_Float16", "_Float32", "_Float64", "_Float128", "_Float32x", "_Float64x",
))
SIGNED_INTS = {1: "signed char", 2: "short", 4: "int", 8: "long", 16: "__int128"}
UNSIGNED_INTS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long",
                 16: "unsigned __int128"}
FLOATS = {4: "float", 8: "double", 16: "long double"}
# Longest name written; a longer one is cut and told apart by a hash.
_MAX = 200


def c_identifier(name: str) -> str:
    """``name`` as a C identifier: other characters become '_'
    ("Box<int>" -> "Box_int_"), a keyword gets a '_' appended."""
    text = _NOT_IDENTIFIER.sub("_", name)
    if not text or text[0].isdigit():
        text = "_" + text
    if text in _RESERVED:
        text += "_"
    if len(text) > _MAX:
        import hashlib

        text = f"{text[:_MAX - 17]}_{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:16]}"
    return text


def unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... if taken; added to ``taken``."""
    candidate, index = name, 1
    while candidate in taken:
        index += 1
        candidate = f"{name}_{index}"
    taken.add(candidate)
    return candidate
