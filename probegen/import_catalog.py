"""A catalog from the probes found in binaries: how a project adopts probegen.

Types are inferred from what the notes record (size and sign), so they are
the exact-width integers (int32_t, uint64_t, ...): a pointer and a
uint64_t look the same in a note, and only a person can say which it is.
The result is rendered through templates/catalog.yaml.j2 and loaded back
with the catalog loader before it is returned, so it is always a valid
catalog that `probegen verify` accepts on the same binaries.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from probegen.ctypes import is_identifier
from probegen.elf.argspec import Constant, NoteArg
from probegen.elf.notes import Binary, ProbeSite
from probegen.errors import CatalogError, InputError

TEMPLATE = "catalog.yaml.j2"

_EXACT_TYPES = {
    (1, True): "int8_t", (2, True): "int16_t", (4, True): "int32_t", (8, True): "int64_t",
    (1, False): "uint8_t", (2, False): "uint16_t", (4, False): "uint32_t", (8, False): "uint64_t",
}


@dataclass(frozen=True)
class ImportedArg:
    name: str
    type: str
    note: str = ""  # why a person should look at it, if anything


@dataclass(frozen=True)
class ImportedProbe:
    name: str
    args: tuple[ImportedArg, ...]
    ticks: bool
    sites: int
    note: str = ""


@dataclass(frozen=True)
class ImportedCatalog:
    provider: str
    arg0: bool
    semaphores: bool
    probes: tuple[ImportedProbe, ...]
    sources: tuple[str, ...]


def _is_zero(arg: NoteArg) -> bool:
    return isinstance(arg.operand, Constant) and arg.operand.value == 0 and arg.size == 4


def _is_clock(arg: NoteArg) -> bool:
    return arg.size == 8 and not arg.floating


def _spdk_arg0(probes: dict[str, list[ProbeSite]]) -> dict[str, bool] | None:
    """probe name -> ticks, when every probe passes SPDK's arg0: the int 0
    at every site, or the 8-byte clock at every site; at least one probe
    must pass the 0, or any run of pointer-first probes would qualify."""
    ticks = {}
    for name, sites in probes.items():
        if any(not s.args for s in sites):
            return None
        if all(_is_zero(s.args[0]) for s in sites):
            ticks[name] = False
        elif all(_is_clock(s.args[0]) for s in sites):
            ticks[name] = True
        else:
            return None
    return ticks if ticks and not all(ticks.values()) else None


def _infer_type(args: list[NoteArg]) -> ImportedArg:
    size, _ = Counter(a.size for a in args).most_common(1)[0]
    same = [a for a in args if a.size == size]
    # A constant's sign is its literal's, not the parameter's: let the
    # sites that pass a variable decide.
    deciding = [a for a in same if not isinstance(a.operand, Constant)] or same
    signed = sum(a.signed for a in deciding) * 2 >= len(deciding)
    if not [a for a in same if not isinstance(a.operand, Constant)]:
        signed = any(a.signed or a.operand.value < 0 for a in same)
    notes = []
    if len({a.size for a in args}) > 1:
        notes.append(f"sites disagree on the size: {', '.join(sorted({a.spec for a in args}))}")
    if any(a.floating for a in args):
        notes.append("floating point at some site: the catalog (and bpftrace) cannot read it")
    return ImportedArg("", _EXACT_TYPES[(size, signed)], "; ".join(notes))


def infer_catalog(binaries: list[Binary], provider: str) -> ImportedCatalog:
    if not is_identifier(provider):
        raise InputError(f"import: error: provider '{provider}' is not a C identifier")
    sites: dict[str, list[ProbeSite]] = {}
    for binary in binaries:
        for probe in binary.probes:
            if probe.provider == provider:
                sites.setdefault(probe.name, []).extend(probe.sites)
    if not sites:
        found = sorted({p.provider for b in binaries for p in b.probes})
        listed = f"; providers found: {', '.join(found)}" if found else "; the binaries have no USDT probes"
        raise InputError(f"import: error: no probes of provider '{provider}' in "
                         f"{', '.join(b.path for b in binaries)}{listed}")
    ticks = _spdk_arg0(sites)
    offset = 1 if ticks is not None else 0
    probes = []
    for name, probe_sites in sites.items():
        counts = Counter(len(s.args) for s in probe_sites)
        count = counts.most_common(1)[0][0]
        usable = [s for s in probe_sites if len(s.args) == count]
        args = []
        for index in range(offset, count):
            inferred = _infer_type([s.args[index] for s in usable])
            args.append(ImportedArg(f"arg{index}", inferred.type, inferred.note))
        note = f"sites disagree on the argument count: {sorted(counts)}" if len(counts) > 1 else ""
        probes.append(ImportedProbe(name, tuple(args), bool(ticks and ticks[name]), len(probe_sites), note))
    all_sites = [s for group in sites.values() for s in group]
    return ImportedCatalog(
        provider=provider,
        arg0=ticks is not None,
        semaphores=all(s.semaphore for s in all_sites),
        probes=tuple(probes),
        sources=tuple(b.path for b in binaries),
    )


def render_catalog(imported: ImportedCatalog) -> str:
    from probegen.render import render

    return render(TEMPLATE, catalog=imported, any_ticks=any(p.ticks for p in imported.probes))


def import_catalog(binaries: list[Binary], provider: str, file_name: str = "probes.yaml") -> str:
    """The catalog YAML for one provider's probes, checked by the loader."""
    from probegen.catalog.load import parse_catalog

    text = render_catalog(infer_catalog(binaries, provider))
    try:
        parse_catalog(text.encode("utf-8"), Path(file_name))
    except CatalogError as exc:
        first = exc.diagnostics[0].message if exc.diagnostics else str(exc)
        raise InputError(f"import: error: the probes of '{provider}' cannot form a catalog: {first}") from None
    return text
