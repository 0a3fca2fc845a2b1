"""The names the generated header defines and uses (formed here for the
header generator; ``header_definitions`` lists them), and ``problems``: each
catalog name that would break a generated file.
"""

import re
from pathlib import Path
from typing import NamedTuple

from probegen.catalog.model import SDT_MAX_ARGS, Catalog, HeaderConfig
from probegen.errors import Location

LOCAL_PREFIX = "_pg_"  # and the argument's name: the typed macros' locals
ENABLED_SUFFIX = "_ENABLED"
# Parameters of the untyped compatibility macros: PREFIXn(name, a1, ..., an).
COMPAT_PARAMS = frozenset(["name", *(f"a{i}" for i in range(1, SDT_MAX_ARGS + 1))])

# C++ spells operators with these words: not identifiers there, so no macro,
# macro parameter or name pasted by <sys/sdt.h> may be one.
CPP_ALTERNATIVE_TOKENS = frozenset("and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq".split())
# Macros compilers predefine without a leading underscore (GNU C modes):
# a provider or probe named so would be replaced by its value.
PREDEFINED_MACROS = frozenset("linux unix i386 sun sparc mips vax m68k".split())
# Object-like and function-like macros of the headers the generated header
# includes (<stdint.h>, <stddef.h>, <stdbool.h>, <sys/sdt.h>).
_SYSTEM_MACRO = re.compile(
    r"(?:U?INT(?:8|16|32|64|PTR|MAX)|U?INT_(?:LEAST|FAST)(?:8|16|32|64)|PTRDIFF|SIG_ATOMIC|SIZE|WCHAR|WINT)"
    r"_(?:MIN|MAX|WIDTH|C)|(?:STAP|DTRACE)_PROBE(?:[0-9]*|V|_ASM\w*)|STAP_SDT_\w*|STAP_HAS_SEMAPHORES"
    r"|NULL|offsetof|bool|true|false"
)
# Words the header's own text uses (besides C keywords and each catalog's
# types), and those <sys/sdt.h> (systemtap 4.8) uses in its macros and the
# assembler text it builds: a macro named so would rewrite them (an
# enable_macro 'x', defined as 1, breaks sdt.h's assembler macros).
HEADER_WORDS = frozenset(
    """uint64_t weak visibility section used hidden
    CT I N SDT_USE_VARIADIC T _ _0 _1 _2 _3 _4 _5 _6 _7 _8 _9 _10 _11 _12 _semaphore a aG altmacro
    arg1 arg2 arg3 arg4 arg5 arg6 arg7 arg8 arg9 arg10 arg11 arg12 arglist args ascii asciz b balign
    base c comdat config cstddef d e endm f g h i id ifc iflt j k l m macro n nZr name no nop nor note
    nr p pack_args parm1 parm2 parm3 parm4 parm5 parm6 parm7 parm8 parm9 parm10 parm11 parm12 popsection
    probe progbits provider public purgem pushsection sdt size size_t space stapsdt template typename use
    wchar_t x x00 x20""".split()
)
# A word of a type or of the clock: a macro, or a macro parameter, of that name would replace it.
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")

# The 'header:' keys that hold a name: each a macro the header defines or tests.
HEADER_NAMES = ("guard", "enable_macro", "disable_macro", "compat_prefix", "typed_prefix")

# Scripts the bpftrace generator writes besides one per group (NAME.bt), which no
# group may be named; the BCC tool is one per catalog, PROVIDER.py.
ALL_SCRIPT, COUNTS_SCRIPT, SPAN_SCRIPT = "all", "counts", "spans"
SCRIPT_NAMES = frozenset([ALL_SCRIPT, COUNTS_SCRIPT, SPAN_SCRIPT])

Origin = Location | str  # where a name comes from: a position, or a key under 'header:'


def typed_macro(header: HeaderConfig, probe_name: str) -> str:
    if header.style == "dtrace":  # dtrace -h: MYAPP_QUERY_START for query__start
        probe_name = probe_name.replace("__", "_")
    return f"{header.typed_prefix}_{probe_name.upper()}"


def default_guard(provider: str, output: str) -> str:
    """The include guard of a header whose catalog sets none: the provider and
    the file's name (not its directory: build trees differ)."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", Path(output).name).strip("_").upper() or "PROBES_H"
    guard = f"{provider.upper()}_{name}"  # a provider is never empty in a catalog that loads
    return guard if guard[0].isalpha() else "PROBES_" + guard.lstrip("_")


def semaphore(provider: str, probe_name: str) -> str:
    return f"{provider}_{probe_name}_semaphore"


def no_semaphore_macro(header: HeaderConfig) -> str:
    """The header's helper for probes without a semaphore, where <sys/sdt.h>
    names one at every site (a weak symbol the link leaves at 0)."""
    return header.guard + "_NO_SEMAPHORE"


class Definition(NamedTuple):
    name: str
    kind: str  # a key of _WHAT
    subject: str  # the probe it is for, or ""
    origin: Origin

    @property
    def what(self) -> str:  # for messages: "the _ENABLED() macro of probe 'foo'"
        return _WHAT[self.kind].format(self.subject)


_WHAT = {
    "guard": "the include guard", "helper": "the header's helper macro for probes without a semaphore",
    "compat": "an untyped compat_prefix macro", "macro": "the macro of probe '{}'",
    "enabled": "the _ENABLED() macro of probe '{}'", "semaphore": "the semaphore of probe '{}'",
}


def header_definitions(catalog: Catalog) -> list[Definition]:
    """Every macro and global symbol the header defines, in the order a
    reader meets their causes (a clash is reported at the later one)."""
    header = catalog.header
    found = [Definition(header.guard, "guard", "", "guard")]
    found.append(Definition(no_semaphore_macro(header), "helper", "", "guard"))
    if header.compat_prefix:  # the untyped macros, as usdt.h.j2 writes them
        suffixes = ["", "_TICKS"] if catalog.arg0 and header.clock else [""]
        found += [Definition(f"{header.compat_prefix}{n or ''}{suffix}", "compat", "", "compat_prefix")
                  for suffix in suffixes for n in range(catalog.max_args + 1)]
    for probe in catalog.probes:
        macro = typed_macro(header, probe.name)
        found.append(Definition(macro, "macro", probe.name, probe.location))
        found.append(Definition(macro + ENABLED_SUFFIX, "enabled", probe.name, probe.location))
        if header.semaphores:  # the header defines it, or <sys/sdt.h> names it at the probe's sites
            found.append(Definition(semaphore(catalog.provider, probe.name), "semaphore", probe.name, probe.location))
    return found


def _unusable(name: str, *, macro: bool = False, expanded: bool = False) -> str | None:
    """Why a name cannot be used; ``macro``: the header defines it (or tests
    it), ``expanded``: it is passed through <sys/sdt.h>'s macros."""
    if name.startswith("__") or name[:1] == "_" and name[1:2].isupper():  # reserved: __LINE__, _Pragma
        return "is a reserved identifier (it starts with '__' or '_' and a capital letter)"
    if name in CPP_ALTERNATIVE_TOKENS:
        return "is an operator in C++ (the header must compile as C++)"
    if (macro or expanded) and (name in PREDEFINED_MACROS or _SYSTEM_MACRO.fullmatch(name)):
        return "is a macro compilers or system headers define"
    if macro and name in HEADER_WORDS:
        return "is a word the generated header uses"
    return None


def problems(catalog: Catalog) -> list[tuple[Origin, str]]:
    """(origin, message) for each catalog name that would break the header."""
    found: list[tuple[Origin, str]] = []
    header = catalog.header
    # Macros the user defines and the header only tests.
    tested = {header.enable_macro: "enable_macro"} if header.enable_macro else {}
    if header.disable_macro:
        if header.disable_macro == header.enable_macro:
            found.append(("disable_macro", f"disable_macro '{header.disable_macro}' is also the enable_macro: "
                                           "the probes could never be compiled in"))
        tested.setdefault(header.disable_macro, "disable_macro")
    object_macros = {header.guard: "the include guard", **tested}

    def unusable(origin: Origin, what: str, name: str, **kinds) -> None:
        why = _unusable(name, **kinds)
        if why:
            found.append((origin, f"{what} '{name}' {why}"))
        # Names <sys/sdt.h> receives are macro-expanded first: an object-like
        # macro of the header (or one the user defines for it) would replace them.
        if kinds.get("expanded") and name in object_macros:
            found.append((origin, f"{what} '{name}' is also {object_macros[name]}"))

    unusable("provider", "provider", catalog.provider, expanded=True)
    for key in HEADER_NAMES:
        if getattr(header, key):
            unusable(key, key, getattr(header, key), macro=True)
    for probe in catalog.probes:
        unusable(probe.location, "probe", probe.name, expanded=True)
        for arg in probe.args:
            unusable(arg.location, f"probe '{probe.name}': argument", arg.name)
            if arg.name.startswith(LOCAL_PREFIX):
                found.append((arg.location, f"probe '{probe.name}': argument '{arg.name}': names starting "
                                            f"with '{LOCAL_PREFIX}' are the header's own (its locals)"))

    seen: dict[str, Definition] = {}
    clashes: set[tuple] = set()  # (origin, first origin): one message per pair
    for definition in header_definitions(catalog):
        name = definition.name
        first = seen.setdefault(name, definition)
        if first is not definition:
            origin = definition.origin
            if (origin, first.origin) not in clashes:
                clashes.add((origin, first.origin))
                at = first.origin if isinstance(first.origin, Location) else f"'{first.origin}' under 'header:'"
                found.append((origin, f"{definition.what} is {name}, as is {first.what} ({at})"))
            continue
        if name in tested:
            found.append((tested[name], f"{tested[name]} '{name}' is also {definition.what}"))
        if definition.kind in ("macro", "enabled"):
            why = _unusable(name, macro=True)  # e.g. typed_prefix INT8 and probe 'max'
            if why and (definition.origin, "macro") not in clashes:
                clashes.add((definition.origin, "macro"))
                found.append((definition.origin, f"{definition.what} is {name}, which {why}"))

    spellings = {arg.ctype.spelling for probe in catalog.probes for arg in probe.args}
    type_words = set(IDENTIFIER.findall(" ".join(spellings)))  # no identifier spans two spellings
    # Even unused by the header (no arg0), the clock names the project's own
    # function: a macro of that name defined for the build breaks the project.
    clock_words = set(IDENTIFIER.findall(header.clock or ""))
    for name, what in object_macros.items():
        if name in type_words:
            found.append(("guard" if what == "the include guard" else what,
                          f"{what} '{name}' is a word of an argument's type: the macro would replace it"))
        if name in clock_words:
            found.append(("clock", f"clock: '{name}' is also {what}: the macro would replace it"))
    if header.compat_prefix:
        if catalog.provider in COMPAT_PARAMS:
            found.append(("provider", f"provider '{catalog.provider}' is a parameter name of the "
                                      "compat_prefix macros (name, a1, a2, ...)"))
        for word in clock_words & COMPAT_PARAMS if catalog.arg0 else ():  # once each
            found.append(("clock", f"clock: '{word}' is a parameter name of the compat_prefix "
                                   "macros (name, a1, a2, ...): rename it or drop compat_prefix"))
        if header.typed_prefix == header.compat_prefix:
            found.append(("typed_prefix", f"typed_prefix '{header.typed_prefix}' is also the compat_prefix"))
    return found
