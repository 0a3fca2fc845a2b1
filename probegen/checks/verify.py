"""Built binaries against the catalog: each disagreement as a Finding at the
catalog entry (or the binary) it is about; enums and member paths in checks.drift.
"""

from collections import namedtuple
from dataclasses import dataclass, field

from probegen.catalog.model import Arg, Catalog, Probe
from probegen.elf.argspec import NoteArg
from probegen.elf.notes import Binary, ProbeSite, probes_by_name
from probegen.errors import Diagnostic, Location


class Finding(namedtuple("Finding", "location message check probe binary", defaults=(None, None)), Diagnostic):
    """A Diagnostic (``rule`` reads ``check``, one of probegen.reports.rules') with its probe and binary."""

    __slots__ = ()


@dataclass
class Report:
    catalog: Catalog
    binaries: list[Binary]
    findings: list[Finding] = field(default_factory=list)
    sites_checked: int = 0
    expect_none: bool = False  # the build should carry no probe of the provider
    debug_info: object = None  # probegen.checks.drift.DebugInfos the enums and members were checked in

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        count = len(self.findings)
        files = f"{len(self.binaries)} binar{'y' if len(self.binaries) == 1 else 'ies'}"
        if not count and self.expect_none:
            return f"verify: OK, no probe of provider '{self.catalog.provider}' in {files}, as expected"
        checked = f"{len(self.catalog.probes)} probes checked"
        debug_info = self.debug_info.summary() if self.debug_info else ""
        if not count:
            return f"verify: OK, {checked} ({self.sites_checked} sites in {files}){debug_info}"
        return f"verify: {count} finding{'s' if count != 1 else ''} in {files} ({checked}){debug_info}"


def _describe_type(arg: Arg, pointer_size: int) -> str:
    ctype = arg.ctype
    size = ctype.size_on(pointer_size)
    sign = {True: "signed", False: "unsigned", None: "either sign"}[ctype.signed]
    return f"{ctype.spelling} ({size} byte{'s' if size != 1 else ''}, {sign})"


def _arg_matches(arg: NoteArg, ctype, pointer_size: int) -> bool:
    """Size and sign as the type's on this binary, a narrower integer C
    converts to it, or a literal the type holds."""
    literal = arg.literal is not None and ctype.holds_constant(arg.literal, pointer_size)
    return not arg.floating and (literal or ctype.carries(arg.size, arg.signed, pointer_size))


def _arg0_problem(probe: Probe, arg: NoteArg) -> str | None:
    size = probe.arg0.ctype.size  # the clock's, or the int 0's
    if probe.ticks and (arg.size != size or arg.floating):
        return f"arg0 must be the {size}-byte clock of a ticks probe, but the site has {arg.describe()}"
    # A ticks probe's clock (its size checked above), the literal 0, or an int 0 kept in a register.
    if probe.ticks or arg.literal == 0 or arg.size == size and arg.signed and not arg.floating:
        return None
    return f"arg0 must be the literal 0 (an int) of a probe without ticks, but the site has {arg.describe()}"


def verify_binaries(catalog: Catalog, binaries: list[Binary], *, allow_extra: bool = False,
                    followed: frozenset[str] = frozenset(), debug_infos=None,
                    allow_missing_semaphores: bool = False) -> Report:
    """``followed``: binaries found as libraries of the others (a binary
    without notes is no finding when they carry the probes); ``debug_infos``:
    drift.open_debug_infos of the binaries, to check the catalog's enums and
    member paths in."""
    report = Report(catalog, list(binaries), debug_info=debug_infos)
    found = probes_by_name(binaries, catalog.provider)
    add = report.findings.append
    catalog_path = catalog.probes[0].location.path  # as the user named it (a catalog has probes)

    libraries_have_notes = any(b.has_notes and b.path in followed for b in binaries)
    for binary in binaries:
        if not binary.has_notes and not libraries_have_notes and binary.path not in followed:
            spdk = " (for SPDK: ./configure --with-usdt)" if catalog.provider == "spdk" else ""
            add(Finding(Location(binary.path), "no .note.stapsdt section: the binary has no USDT probes at all; "
                        f"USDT is not configured in this build{spdk}", "no-notes", binary=binary.path))

    for probe in catalog.probes:
        occurrences = found.get(probe.name, [])
        if not occurrences:
            where = ", ".join(b.path for b in binaries)  # verify reads at least one
            add(Finding(probe.location, f"probe '{probe.name}' has no site in {where}", "missing-probe", probe.name))
            continue
        report.sites_checked += sum(len(bprobe.sites) for _, bprobe in occurrences)
        _check_probe(probe, occurrences, add)
    if not allow_missing_semaphores:
        _check_semaphores(catalog, binaries, add)

    undocumented = {} if allow_extra else {n: found[n] for n in found if catalog.probe(n) is None}
    for name, occurrences in undocumented.items():
        for binary, bprobe in occurrences:
            add(Finding(Location(binary.path), f"probe '{catalog.provider}:{name}' (site "
                        f"{bprobe.sites[0].address:#x}) is not in the catalog {catalog_path}: document it there "
                        "(or pass --allow-extra)", "undocumented-probe", name, binary.path))
    if debug_infos is not None:
        from probegen.checks import drift

        report.findings += drift.check(catalog, debug_infos)
    report.findings.sort(key=lambda f: (f.location, f.message))
    return report


def verify_absent(catalog: Catalog, binaries: list[Binary]) -> Report:
    """A build meant to have USDT off: each probe of the provider is a finding."""
    report = Report(catalog, list(binaries), expect_none=True)
    macro = catalog.header.enable_macro
    for name, occurrences in probes_by_name(binaries, catalog.provider).items():
        for binary, bprobe in occurrences:
            report.sites_checked += len(bprobe.sites)
            more = f" and {len(bprobe.sites) - 1} more" if len(bprobe.sites) > 1 else ""
            report.findings.append(Finding(
                Location(binary.path), f"probe '{catalog.provider}:{name}' is in the binary (site "
                f"{bprobe.sites[0].address:#x}{more}), but this build should have USDT off "
                f"({macro or 'its disable_macro'} {'not ' if macro else ''}defined)", "unexpected-probe", name,
                binary.path))
    report.findings.sort(key=lambda f: (f.location, f.message))
    return report


def _check_probe(probe: Probe, occurrences, add) -> None:
    """One finding per distinct problem, at its first site, saying how many more have it."""
    problems: dict[tuple, tuple[Binary, ProbeSite, list[int]]] = {}  # key: (first binary, first site, addresses)
    for binary, bprobe in occurrences:
        for site in bprobe.sites:
            for key, _ in _site_problems(probe, binary, site, ""):
                problems.setdefault(key, (binary, site, []))[2].append(site.address)
    for key, (binary, site, addresses) in problems.items():
        add(dict(_site_problems(probe, binary, site, _sites(addresses)))[key])


def _sites(addresses: list[int]) -> str:
    more = len(addresses) - 1
    return f"{addresses[0]:#x}" + (f" (and {more} more site{'s' if more > 1 else ''})" if more else "")


def _check_semaphores(catalog: Catalog, binaries: list[Binary], add) -> None:
    """Sites without the semaphore the catalog gives their probe. A binary
    where no such site has one was built with another header (SPDK's own
    has none): one finding for it, so the real drifts stay readable; in a
    binary that has some, each probe lacking one is a finding."""
    for binary in binaries:
        sites_of = {bprobe.name: bprobe.sites for bprobe in binary.probes if bprobe.provider == catalog.provider}
        wanted = [(probe, sites_of.get(probe.name, ())) for probe in filter(catalog.has_semaphore, catalog.probes)]
        lacking = [(probe, addresses) for probe, sites in wanted  # addresses: of its sites without one
                   if (addresses := [site.address for site in sites if not site.semaphore])]
        if not lacking:
            continue
        if not any(site.semaphore for _, sites in wanted for site in sites):
            sites = sum(len(addresses) for _, addresses in lacking)
            names = ", ".join(probe.name for probe, _ in lacking[:3]) + (", ..." if len(lacking) > 3 else "")
            other = ("SPDK's own usdt.h defines none" if catalog.provider == "spdk" else
                     "one with _SDT_HAS_SEMAPHORES undefined, as GLib's build makes dtrace -h's")
            add(Finding(Location(binary.path),
                        f"binary {binary.path}: no site of provider '{catalog.provider}' names a semaphore "
                        f"({catalog.provider}_NAME_semaphore, which tracers raise while attached), but the catalog "
                        f"gives {len(lacking)} of its probes one ({names}; {sites} site{'s' if sites != 1 else ''}): "
                        f"it was built with another header than the catalog's ({other}); pass "
                        "--allow-missing-semaphores if that is expected", "semaphore", binary=binary.path))
            continue
        for probe, addresses in lacking:
            reason = ("a ticks probe" if probe.ticks else
                      "enabled_check: true" if probe.enabled_check else "header style dtrace")
            add(Finding(probe.location, f"probe '{probe.name}': the catalog gives it a semaphore ({reason}) "
                        f"but binary {binary.path} site {_sites(addresses)} has none", "semaphore",
                        probe.name, binary.path))


def _site_problems(probe: Probe, binary: Binary, site, sites: str) -> list[tuple[tuple, Finding]]:
    """(key, Finding) of each problem of the site's arguments; ``sites``: the
    text for the sites with the same key, which the message names."""
    expected = len(probe.note_args)
    pointer_size = binary.pointer_size
    if len(site.args) != expected:
        extra = f" (arg0 plus {len(probe.args)})" if probe.arg0 else ""
        return [(("count", binary.path, len(site.args)), Finding(
            probe.location, f"probe '{probe.name}': catalog says {expected} argument{'s' if expected != 1 else ''}"
            f"{extra}, binary {binary.path} site {sites} has {len(site.args)}: {site.args_text or '(none)'}",
            "arg-count", probe.name, binary.path))]
    found = []
    for arg, got in zip(probe.note_args, site.args):
        if arg.passed:
            if problem := _arg0_problem(probe, got):
                found.append((("arg0", binary.path, got.spec), Finding(
                    probe.location, f"probe '{probe.name}': {problem} (binary {binary.path} site {sites})", "arg0",
                    probe.name, binary.path)))
        elif not _arg_matches(got, arg.ctype, pointer_size):
            found.append((("arg", arg.index, binary.path, got.size, got.signed, got.floating), Finding(
                arg.location, f"probe '{probe.name}' argument {arg.index} '{arg.name}': catalog says "
                f"{_describe_type(arg, pointer_size)}, binary {binary.path} site {sites} has {got.describe()}",
                "arg-type", probe.name, binary.path)))
    return found
