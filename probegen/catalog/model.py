"""The probe catalog as typed data, built once by ``load_catalog``."""

from collections import namedtuple
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from probegen.catalog.ctype import CType, parse_ctype
from probegen.errors import Location

# <sys/sdt.h> defines STAP_PROBE1..STAP_PROBE12.
SDT_MAX_ARGS = 12
# Each enum argument printed by name doubles the printf statements of a
# bpftrace probe (a known or unknown value each); keep scripts small.
MAX_NAMED_ENUMS = 4


@dataclass(frozen=True)
class Arg:
    name: str
    ctype: CType
    location: Location
    doc: str = ""
    hex: bool = False  # print as hexadecimal (flags, masks)
    max_len: int | None = None  # bound for str() reads of string arguments
    length: str | None = None  # a string that is not NUL-terminated: the integer argument holding its length
    members: tuple[str, ...] = ()  # members of the pointed-to struct to print
    index: int = 0  # N of argN: the position in the probe's note, as scripts read it
    passed: str | None = None  # SPDK's arg0: the C the macro passes itself (0, or the clock), no parameter
    member_locations: tuple[Location, ...] = field(default=(), compare=False, repr=False)  # one per member


ARG0_CLOCK, ARG0_ZERO = parse_ctype("uint64_t"), parse_ctype("int")


def spdk_arg0(ticks: bool, clock: str | None, location: Location) -> Arg:
    """A probe's arg0 in SPDK form: the clock of a ticks probe (cast as the
    header passes it), or the int 0 of the others."""
    if ticks:
        return Arg("ticks", ARG0_CLOCK, location, f"clock: {clock}", passed=f"({ARG0_CLOCK.spelling})({clock})")
    return Arg("", ARG0_ZERO, location, "always 0", passed="0")


@dataclass(frozen=True)
class Probe:
    name: str
    group: str
    doc: str
    args: tuple[Arg, ...]  # the catalog's arguments: the typed macro's parameters
    location: Location
    ticks: bool = False  # SPDK's arg0 is the clock, not the literal 0
    arg0: Arg | None = None  # SPDK form: the leading argument the macro passes itself
    enabled_check: bool = False  # call sites test its _ENABLED(): it needs a semaphore

    @cached_property
    def note_args(self) -> tuple[Arg, ...]:
        """What the probe's note carries, in order: argN is note_args[N]."""
        return (self.arg0, *self.args) if self.arg0 else self.args

    def arg(self, name: str) -> Arg | None:
        return next((arg for arg in self.args if arg.name == name), None)


Enumerator = namedtuple("Enumerator", "name value location")  # location: in the catalog


@dataclass(frozen=True)
class EnumDecl:
    """An enum scripts print by name. ``enumerators`` may be empty: the
    names then come from the binary's DWARF."""

    name: str
    location: Location
    strip_prefix: str = ""
    enumerators: tuple[Enumerator, ...] = ()


def enum_names(enumerators, strip_prefix: str = "") -> dict[int, str]:
    """Value -> the name scripts print: without strip_prefix, unless that is all of it; where
    values repeat, the first name."""
    names: dict[int, str] = {}
    for e in enumerators:
        names.setdefault(e.value, e.name.removeprefix(strip_prefix) or e.name)
    return names


@dataclass(frozen=True)
class HeaderConfig:
    """How the C header is shaped; defaults suit a project with no history."""

    guard: str
    enable_macro: str | None  # None: always compiled in (style dtrace without one, as dtrace -h's header)
    disable_macro: str | None = None
    includes: tuple[str, ...] = ()
    compat_prefix: str | None = None  # e.g. SPDK_DTRACE_PROBE: untyped SPDK-style macros
    typed_prefix: str = "PROBE"
    clock: str | None = None  # expression giving the ticks arg0, e.g. spdk_get_ticks()
    semaphores: bool = True  # _ENABLED() checks backed by sdt.h semaphores (see Catalog.has_semaphore)
    style: str = "probegen"  # or "dtrace": macros as dtrace -h names them, arguments passed uncast
    guard_derived: bool = True  # the guard was not written: a header -o FILE derives its own


# An argument of both probes (start and end Arg) matching a span's end to its start.
SpanKey = namedtuple("SpanKey", "name start end")
# An argument splitting a span's histogram by value: the Arg of the end probe,
# else of the start probe (at_start: kept with the start time).
SpanBy = namedtuple("SpanBy", "name arg at_start")


@dataclass(frozen=True)
class Span:
    """The time from a start probe to its end probe, ends matched to starts
    by ``key`` (empty: by thread), measured per value of ``by``."""

    name: str
    doc: str
    start: Probe
    end: Probe
    key: tuple[SpanKey, ...]
    by: tuple[SpanBy, ...]
    location: Location  # the span's entry

    @property
    def by_thread(self) -> bool:
        return not self.key


@dataclass(frozen=True)
class Catalog:
    path: Path
    provider: str
    arg0: bool  # SPDK form: every probe passes a leading arg0 (0 or ticks)
    header: HeaderConfig
    probes: tuple[Probe, ...]
    enums: tuple[EnumDecl, ...] = ()
    typedefs: dict[str, CType] = field(default_factory=dict)
    outputs: dict[str, Path] = field(default_factory=dict)  # kind -> path, absolute
    spans: tuple[Span, ...] = ()

    def has_semaphore(self, probe: Probe) -> bool:
        """Whether the header gives the probe a <sys/sdt.h> semaphore: only
        where something reads it (a ticks macro, _ENABLED() callers, dtrace
        style), as BCC then needs -p PID."""
        header = self.header
        return header.semaphores and (probe.ticks or probe.enabled_check or header.style == "dtrace")

    @property
    def max_args(self) -> int:
        """Catalog arguments a probe may have: arg0 takes one of sdt.h's."""
        return SDT_MAX_ARGS - self.arg0

    @cached_property  # verify looks up each probe it finds
    def _probes_by_name(self) -> dict[str, Probe]:
        return {probe.name: probe for probe in self.probes}

    @cached_property
    def groups(self) -> dict[str, tuple[Probe, ...]]:
        """Probe groups in first-seen order, each with its probes."""
        groups: dict[str, list[Probe]] = {}
        for probe in self.probes:
            groups.setdefault(probe.group, []).append(probe)
        return {group: tuple(probes) for group, probes in groups.items()}

    def probe(self, name: str) -> Probe | None:
        return self._probes_by_name.get(name)

    def enum(self, name: str) -> EnumDecl | None:
        return next((enum for enum in self.enums if enum.name == name), None)
