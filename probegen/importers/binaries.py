"""A catalog from the probes found in binaries: how a project adopts probegen.
A note records each argument's size and sign only, so types are exact-width
integers (a pointer and a uint64_t look the same).
"""

import functools
from dataclasses import dataclass
from pathlib import Path

from probegen.catalog.ctype import integer_type, is_identifier, parse_ctype
from probegen.catalog.load import parse_catalog
from probegen.catalog.model import ARG0_CLOCK, ARG0_ZERO, SDT_MAX_ARGS
from probegen.elf.argspec import NoteArg
from probegen.elf.notes import Binary, ProbeSite, probes_by_name
from probegen.errors import CatalogError, CommandError, InputError, Location
from probegen.files.inputs import TEXT_LIMIT
from probegen.generators.render import render

# Longer provider and probe names are no real program's (a crafted note or
# .d file's), and each costs every reader and every output line.
MAX_NAME = 255

Seen = tuple[ProbeSite, int]  # a site and its binary's pointer size


class Disagreement(ValueError):
    """Sites no one catalog can describe (binaries of different versions)."""


@dataclass(frozen=True)
class ImportedArg:
    name: str
    type: str
    note: str = ""  # why a person should look at it, if anything
    doc: str = ""  # from a provider file's @param line


@dataclass(frozen=True)
class ImportedProbe:
    name: str
    args: tuple[ImportedArg, ...]
    ticks: bool = False
    enabled_check: bool = False  # every site has a semaphore (a ticks probe gets one anyway)
    doc: str = ""  # from a provider file's doc comment


@dataclass(frozen=True)
class ImportedCatalog:
    provider: str
    arg0: bool
    semaphores: bool
    probes: tuple[ImportedProbe, ...]
    sources: tuple[str, ...]
    # From a provider file (importers.dfile; header style dtrace): its typedefs, as (name, C type).
    from_provider_file: bool = False
    typedefs: tuple[tuple[str, str], ...] = ()


def _spdk_arg0(provider: str, probes: dict[str, list[Seen]]) -> dict[str, bool] | None:
    """probe name -> ticks, when every probe passes SPDK's arg0: the int 0 at
    every site, or the 8-byte clock (never a literal) at every site. At least
    one probe passes the 0 (else any pointer-first probes would qualify), two
    for a provider other than 'spdk' (one literal 0 is not SPDK's clock)."""
    ticks = {}
    for name, seen in probes.items():
        firsts = [site.args[0] if site.args else None for site, _ in seen]
        if all(a and a.literal == 0 and a.size == ARG0_ZERO.size for a in firsts):
            ticks[name] = False
        elif all(a and a.size == ARG0_CLOCK.size and not a.floating and a.literal is None for a in firsts):
            ticks[name] = True
        else:
            return None
    return ticks if list(ticks.values()).count(False) >= (1 if provider == "spdk" else 2) else None


@functools.lru_cache(maxsize=4096)
def _fits(value: int, type_name: str) -> bool:
    return parse_ctype(type_name).holds_constant(value, 8)


def _variables_type(variables: list[tuple[NoteArg, int]], notes: list[str]) -> str:
    """The type the sites that pass a variable agree on. Pointer-wide in
    binaries of both pointer sizes: void * (scripts print it in hex), intptr_t
    when most are signed. Else the widest size (narrower sites convert to it),
    signed if any site is, wider when unsigned and signed sites of that size
    need it; a byte passed with both signs is plain char."""
    specs = ", ".join(sorted({a.spec for a, _ in variables}))
    if len({p for _, p in variables}) > 1 and all(a.size == p for a, p in variables):
        return "intptr_t" if sum(a.signed for a, _ in variables) * 2 > len(variables) else "void *"
    sizes = {a.size for a, _ in variables}
    size = max(sizes)
    if len(sizes) > 1:
        notes.append(f"sites pass different sizes: {specs}")
    signs = {a.signed for a, _ in variables if a.size == size}
    if len(signs) > 1 and size == 1 and not any(a.signed for a, _ in variables if a.size < size):
        return "char"
    signed = any(a.signed for a, _ in variables)
    if signed and False in signs:
        if size == 8:
            raise Disagreement(f"sites pass {specs}: no integer type holds every one")
        size *= 2
    return integer_type(size, signed)


def _constants_type(constants: list[NoteArg]) -> str:
    """The widest size seen, signed if any literal is (or is negative), widened until every value fits."""
    values = [a.literal for a in constants]
    signed = any(a.signed for a in constants) or any(v < 0 for v in values)
    types = [integer_type(s, signed) for s in (1, 2, 4, 8) if s >= max(a.size for a in constants)]
    return next((t for t in types if all(_fits(v, t) for v in values)), types[-1])


def _infer_type(name: str, seen: list[tuple[NoteArg, int]]) -> ImportedArg:
    """The argument from every site's (note argument, pointer size). The sites
    passing a variable decide: a literal's size is its own ('false' is
    '-4@$0' for a 1-byte bool); verify accepts a literal the type holds."""
    notes: list[str] = []
    variables = [(a, p) for a, p in seen if a.literal is None]
    constants = [a for a, _ in seen if a.literal is not None]
    type_name = _variables_type(variables, notes) if variables else _constants_type(constants)
    misfits = sorted({a.spec for a in constants if not _fits(a.literal, type_name)})
    if misfits:
        notes.append(f"literals {type_name} cannot hold: {', '.join(misfits)}")
    if any(a.floating for a, _ in seen):
        notes.append("floating point at some site: the catalog (and bpftrace) cannot read it")
    return ImportedArg(name, type_name, "; ".join(notes))


def infer_catalog(binaries: list[Binary], provider: str) -> ImportedCatalog:
    if not is_identifier(provider):
        raise CommandError(f"provider '{provider}' is not a C identifier")
    sites: dict[str, list[Seen]] = {}
    for name, found in probes_by_name(binaries, provider).items():
        sites[name] = [(site, binary.pointer_size) for binary, probe in found for site in probe.sites]
    paths = ", ".join(b.path for b in binaries)
    if not sites:
        found = sorted({p.provider for b in binaries for p in b.probes})
        listed = f"; providers found: {', '.join(found)}" if found else "; the binaries have no USDT probes"
        raise CommandError(f"no probes of provider '{provider}' in {paths}{listed}")
    for name, seen in sites.items():  # bounds before the per-argument work
        check_bounds(name, max(len(s.args) for s, _ in seen))
    ticks = _spdk_arg0(provider, sites)
    probes, disagreements = [], []
    for name, seen in sites.items():
        counts = {len(s.args) for s, _ in seen}
        if len(counts) > 1:
            disagreements.append(f"probe '{name}': sites pass {' or '.join(map(str, sorted(counts)))} arguments")
            continue
        args = []
        for index in range(0 if ticks is None else 1, next(iter(counts))):
            try:
                args.append(_infer_type(f"arg{index}", [(s.args[index], p) for s, p in seen]))
            except Disagreement as exc:
                disagreements.append(f"probe '{name}' argument {index}: {exc}")
        is_ticks = bool(ticks and ticks[name])
        probes.append(ImportedProbe(name, tuple(args), is_ticks,
                                    enabled_check=not is_ticks and all(s.semaphore for s, _ in seen)))
    if disagreements:
        raise CommandError(
            f"no catalog fits every site of {paths} (binaries of different versions? import one "
            f"version at a time): {'; '.join(disagreements[:5])}"
            + (f"; and {len(disagreements) - 5} more" if len(disagreements) > 5 else ""))
    # The header gives semaphores to ticks and enabled_check probes: off when
    # no site has one (SPDK's own header), or a ticks probe's site lacks it.
    with_semaphore = any(s.semaphore for group in sites.values() for s, _ in group)
    ticks_without = any(not s.semaphore for p in probes if p.ticks for s, _ in sites[p.name])
    return ImportedCatalog(provider, ticks is not None, with_semaphore and not ticks_without, tuple(probes),
                           tuple(b.path for b in binaries))


def check_bounds(name: str, args: int) -> None:
    if len(name) > MAX_NAME:
        raise CommandError(f"probe '{name[:40]}...' has a name of {len(name)} characters; "
                           f"at most {MAX_NAME} are allowed")
    if args > SDT_MAX_ARGS:
        raise CommandError(f"probe '{name}' has {args} arguments; <sys/sdt.h> passes at most {SDT_MAX_ARGS}")


def checked_text(imported: ImportedCatalog, file_name: str, failure: str, location: Location | None = None) -> str:
    """The catalog's YAML, within bounds and loaded back: never one the other commands refuse."""
    if len(imported.provider) > MAX_NAME:
        raise CommandError(f"a provider name of {len(imported.provider)} characters; at most {MAX_NAME} are allowed")
    for probe in imported.probes:
        check_bounds(probe.name, len(probe.args))
    text = render_catalog(imported)
    size = len(text.encode("utf-8"))
    if size > TEXT_LIMIT:
        raise CommandError(f"the catalog would be {size} bytes; probegen reads catalogs of at most "
                           f"{TEXT_LIMIT >> 20} MiB")
    loaded(text, file_name, failure, location=location)
    return text


def loaded(text: str, path, failure: str, header_output=None, location: Location | None = None):
    """InputError 'FAILURE: its first problem' if the loader refuses the text."""
    try:
        return parse_catalog(text.encode("utf-8"), Path(str(path)), header_output)
    except CatalogError as exc:  # the loader raises it with one diagnostic or more
        raise (InputError if location else CommandError)(f"{failure}: {exc.diagnostics[0].message}", location) from None


def render_catalog(imported: ImportedCatalog) -> str:
    return render("catalog.yaml.j2", catalog=imported, any_ticks=any(p.ticks for p in imported.probes))
