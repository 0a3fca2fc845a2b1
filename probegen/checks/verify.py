"""Checking built binaries against the catalog.

``verify_binaries`` compares a Catalog with the probes read from ELF files
(probegen.elf) and returns every disagreement as a Finding: data, so the
command can print it compiler style, as JSON or as JUnit XML.

The rules, for the catalog's provider:
- every catalog probe has at least one site in the binaries;
- every probe in the binaries is in the catalog (unless extras are allowed);
- each site carries the catalog's argument count (plus arg0 in SPDK form);
- each argument's size and sign are the declared C type's on that binary
  (pointers, size_t, long follow its pointer size), at every site; a
  literal (gcc records its own type: 'false' is '-4@$0') only has to be a
  value the declared type holds;
- with arg0, a ticks probe's arg0 is the 8-byte clock, another's the 0;
- every site of a probe the catalog gives a semaphore (Catalog.has_semaphore)
  has one; a binary with none at all (built with another header, e.g.
  SPDK's own) is one finding, not one per probe, or none with
  ``allow_missing_semaphores``;
- with DWARF in the binaries (``debug_infos``), the catalog's enums and
  member paths as the debug info has them (probegen.checks.drift).

``verify_absent`` checks the opposite, for a build configured without USDT:
no probe of the provider is in the binaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from probegen.catalog.model import Arg, Catalog, Probe
from probegen.elf.argspec import Constant, NoteArg
from probegen.elf.notes import Binary, BinaryProbe
from probegen.errors import Location, printable

def no_usdt_hint(catalog: Catalog) -> str:
    """Why a binary has no notes; SPDK's configure switch only for SPDK's catalog."""
    spdk = " (for SPDK: ./configure --with-usdt)" if catalog.provider == "spdk" else ""
    return f"USDT is not configured in this build{spdk}"


@dataclass(frozen=True, order=True)
class Finding:
    location: Location  # the catalog entry, or the binary for probes the catalog lacks
    message: str
    check: str = ""  # missing-probe, undocumented-probe, arg-count, arg-type, arg0, semaphore, no-notes,
    # enum-drift, member-drift
    probe: str | None = None
    binary: str | None = None

    def __str__(self) -> str:
        return printable(f"{self.location}: error: {self.message}")


@dataclass
class Report:
    catalog: Catalog
    binaries: list[Binary]
    findings: list[Finding] = field(default_factory=list)
    probes_checked: int = 0
    sites_checked: int = 0
    expect_none: bool = False  # the build should carry no probe of the provider
    debug_info: object = None  # probegen.checks.drift.DebugInfos the enums and members were checked in

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        count = len(self.findings)
        nbin = len(self.binaries)
        files = f"{nbin} binar{'y' if nbin == 1 else 'ies'}"
        if not count and self.expect_none:
            return f"verify: OK, no probe of provider '{self.catalog.provider}' in {files}, as expected"
        if not count:
            return (f"verify: OK, {self.probes_checked} probes checked ({self.sites_checked} sites in {files})"
                    f"{self._debug_info_summary()}")
        return (f"verify: {count} finding{'s' if count != 1 else ''} in {files} "
                f"({self.probes_checked} probes checked){self._debug_info_summary()}")

    def _debug_info_summary(self) -> str:
        from probegen.checks.drift import has_types_to_check

        infos = self.debug_info
        if infos is None or not has_types_to_check(self.catalog):
            return ""
        if not infos.types:
            return "; enums and members not checked: no binary has debug info"
        checked = (f"; {infos.enums_checked} enum{'s' if infos.enums_checked != 1 else ''} and "
                   f"{infos.members_checked} member path{'s' if infos.members_checked != 1 else ''} checked "
                   "against debug info")
        if infos.without:
            checked += f" (not in {', '.join(f'{path}: {why}' for path, why in infos.without)})"
        return checked


def _hex(value: int) -> str:
    return f"0x{value:x}"


def _describe_type(arg: Arg, pointer_size: int) -> str:
    ctype = arg.ctype
    size = ctype.size_on(pointer_size)
    sign = {True: "signed", False: "unsigned", None: "either sign"}[ctype.signed]
    return f"{ctype.spelling} ({size} byte{'s' if size != 1 else ''}, {sign})"


def _arg_matches(arg: NoteArg, ctype, pointer_size: int) -> bool:
    """Size and sign as the declared type's on this binary (a pointer,
    size_t or long follows the binary's pointer size), a narrower integer
    that converts to it as C converts it, or a literal the type holds."""
    if arg.floating:
        return False
    if ctype.matches_note(arg.size, arg.signed, pointer_size) or ctype.promotes_from(arg.size, arg.signed, pointer_size):
        return True
    operand = arg.operand
    return getattr(operand, "kind", None) == "constant" and ctype.holds_constant(operand.value, pointer_size)


def _arg0_problem(probe: Probe, arg: NoteArg) -> str | None:
    size = probe.arg0.ctype.size  # the clock's, or the int 0's
    if probe.ticks:
        if arg.size != size or arg.floating:
            return f"arg0 must be the {size}-byte clock of a ticks probe, but the site has {arg.describe()}"
        return None
    if isinstance(arg.operand, Constant) and arg.operand.value == 0:
        return None
    if arg.size == size and arg.signed and not arg.floating:
        return None  # an int 0 the compiler chose to keep in a register
    return f"arg0 must be the literal 0 (an int) of a probe without ticks, but the site has {arg.describe()}"


def _group(binaries: list[Binary], provider: str) -> dict[str, list[tuple[Binary, BinaryProbe]]]:
    grouped: dict[str, list[tuple[Binary, BinaryProbe]]] = {}
    for binary in binaries:
        for probe in binary.probes:
            if probe.provider == provider:
                grouped.setdefault(probe.name, []).append((binary, probe))
    return grouped


def verify_binaries(catalog: Catalog, binaries: list[Binary], *, allow_extra: bool = False,
                    followed: frozenset[str] = frozenset(), debug_infos=None,
                    allow_missing_semaphores: bool = False) -> Report:
    """Compare the catalog with the binaries' probes.

    ``followed`` names binaries that were found as libraries of the others:
    their lack of notes is no finding, and a given binary without notes is
    none either when its libraries carry the probes. ``debug_infos``
    (probegen.checks.drift.open_debug_infos of the binaries): check the
    catalog's enums and member paths in their DWARF too.
    ``allow_missing_semaphores``: the binaries were built with a header
    that has no semaphores (SPDK's own usdt.h): their absence is no finding.
    """
    report = Report(catalog, list(binaries), debug_info=debug_infos)
    found = _group(binaries, catalog.provider)
    add = report.findings.append
    catalog_path = str(catalog.probes[0].location.path) if catalog.probes else str(catalog.path)

    libraries_have_notes = any(b.has_notes and b.path in followed for b in binaries)
    for binary in binaries:
        if binary.path in followed:
            continue
        if not binary.has_notes and not libraries_have_notes:
            add(Finding(Location(binary.path), f"no .note.stapsdt section: the binary has no USDT probes at all; "
                        f"{no_usdt_hint(catalog)}", "no-notes", binary=binary.path))

    for probe in catalog.probes:
        report.probes_checked += 1
        occurrences = found.get(probe.name, [])
        if not occurrences:
            where = ", ".join(b.path for b in binaries) or "no binaries"
            add(Finding(probe.location, f"probe '{probe.name}' has no site in {where}", "missing-probe", probe.name))
            continue
        report.sites_checked += sum(len(bprobe.sites) for _, bprobe in occurrences)
        _check_probe(catalog, probe, occurrences, add)
    if not allow_missing_semaphores:
        _check_semaphores(catalog, binaries, found, add)

    if not allow_extra:
        for name, occurrences in found.items():
            if catalog.probe(name) is not None:
                continue
            for binary, bprobe in occurrences:
                add(Finding(
                    Location(binary.path),
                    f"probe '{catalog.provider}:{name}' (site {_hex(bprobe.sites[0].address)}) is not in "
                    f"the catalog {catalog_path}: document it there (or pass --allow-extra)",
                    "undocumented-probe", name, binary.path,
                ))
    if debug_infos is not None:
        from probegen.checks import drift

        for d in drift.check(catalog, debug_infos):
            add(Finding(d.location, d.message, d.check, d.probe, d.binary))
    report.findings.sort(key=lambda f: (f.location, f.message))
    return report


def verify_absent(catalog: Catalog, binaries: list[Binary]) -> Report:
    """Every probe of the catalog's provider found in the binaries, as a
    finding: the build was meant to have USDT off."""
    report = Report(catalog, list(binaries), expect_none=True)
    for name, occurrences in _group(binaries, catalog.provider).items():
        for binary, bprobe in occurrences:
            report.sites_checked += len(bprobe.sites)
            report.findings.append(Finding(
                Location(binary.path),
                f"probe '{catalog.provider}:{name}' is in the binary (site {_hex(bprobe.sites[0].address)}"
                f"{f' and {len(bprobe.sites) - 1} more' if len(bprobe.sites) > 1 else ''}), but this build "
                f"should have USDT off ({catalog.header.enable_macro or 'its disable_macro'} "
                f"{'not ' if catalog.header.enable_macro else ''}defined)",
                "unexpected-probe", name, binary.path,
            ))
    report.probes_checked = len(catalog.probes)
    report.findings.sort(key=lambda f: (f.location, f.message))
    return report


def _check_probe(catalog: Catalog, probe: Probe, occurrences, add) -> None:
    # Group identical problems across sites: one finding, the first site,
    # and how many more sites have it.
    problems: dict[tuple, list] = {}

    def note(key, location, check, binary, site, message):
        problems.setdefault(key, [location, check, binary, message, []])[4].append(site.address)

    for binary, bprobe in occurrences:
        # Sites often repeat an argument string: its problems are found
        # once per binary, and noted at each site that has it.
        args_problems: dict[str, list[tuple]] = {}
        for site in bprobe.sites:
            found = args_problems.get(site.args_text)
            if found is None:
                found = args_problems[site.args_text] = _args_problems(catalog, probe, binary, site)
            for key, location, check, message in found:
                note(key, location, check, binary, site, message)

    for location, check, binary, message, addresses in problems.values():
        more = f" (and {len(addresses) - 1} more site{'s' if len(addresses) > 2 else ''})" if len(addresses) > 1 else ""
        add(Finding(location, message.replace("{site}", _hex(addresses[0]) + more), check, probe.name, binary.path))


def _check_semaphores(catalog: Catalog, binaries: list[Binary], found, add) -> None:
    """Sites without the semaphore the catalog gives their probe. A binary
    where no such site has one was built with another header (SPDK's own
    has none): one finding for it, so the real drifts stay readable; in a
    binary that has some, each probe lacking one is a finding."""
    for binary in binaries:
        lacking: list[tuple[Probe, list[int]]] = []  # (probe, addresses of its sites without one)
        any_semaphore = False
        for probe in catalog.probes:
            if not catalog.has_semaphore(probe):
                continue
            for where, bprobe in found.get(probe.name, []):
                if where is not binary:
                    continue
                addresses = [site.address for site in bprobe.sites if not site.semaphore]
                any_semaphore = any_semaphore or len(addresses) < len(bprobe.sites)
                if addresses:
                    lacking.append((probe, addresses))
        if not lacking:
            continue
        if not any_semaphore:
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
            more = f" (and {len(addresses) - 1} more site{'s' if len(addresses) > 2 else ''})" if len(addresses) > 1 else ""
            add(Finding(probe.location,
                        f"probe '{probe.name}': the catalog gives it a semaphore ({_semaphore_reason(catalog, probe)}) "
                        f"but binary {binary.path} site {_hex(addresses[0])}{more} has none", "semaphore",
                        probe.name, binary.path))


def _semaphore_reason(catalog: Catalog, probe: Probe) -> str:
    if probe.ticks:
        return "a ticks probe"
    return "enabled_check: true" if probe.enabled_check else "header style dtrace"


def _args_problems(catalog: Catalog, probe: Probe, binary: Binary, site) -> list[tuple]:
    """(key, location, check, message) of each problem of the site's
    arguments; ``{site}`` in the message stands for the sites that have it."""
    expected = len(probe.note_args)
    pointer_size = binary.pointer_size
    found = []
    if len(site.args) != expected:
        extra = f" (arg0 plus {len(probe.args)})" if probe.arg0 else ""
        found.append((("count", binary.path, len(site.args)), probe.location, "arg-count",
                      f"probe '{probe.name}': catalog says {expected} argument{'s' if expected != 1 else ''}{extra}, "
                      f"binary {binary.path} site {{site}} has {len(site.args)}: {site.args_text or '(none)'}"))
        return found
    for arg, got in zip(probe.note_args, site.args):
        if arg.passed:
            problem = _arg0_problem(probe, got)
            if problem:
                found.append((("arg0", binary.path, got.spec), probe.location, "arg0",
                              f"probe '{probe.name}': {problem} (binary {binary.path} site {{site}})"))
        elif not _arg_matches(got, arg.ctype, pointer_size):
            found.append((("arg", arg.index, binary.path, got.size, got.signed, got.floating), arg.location,
                          "arg-type", f"probe '{probe.name}' argument {arg.index} '{arg.name}': catalog says "
                          f"{_describe_type(arg, pointer_size)}, binary {binary.path} site {{site}} has {got.describe()}"))
    return found


# --- rendering ---------------------------------------------------------------

JSON_VERSION = 1


def report_json(report: Report, errors=()) -> dict:
    """``{"version", "ok", "catalog", "binaries", "probes_checked",
    "sites_checked", "findings": [{"check", "probe", "binary", "file",
    "line", "column", "location", "message"}], "errors": [{"path", "message"}],
    "summary"}``"""
    return {
        "version": JSON_VERSION,
        "ok": report.ok and not errors,
        "catalog": str(report.catalog.path),
        "binaries": [b.path for b in report.binaries],
        "probes_checked": report.probes_checked,
        "sites_checked": report.sites_checked,
        "findings": [
            {
                "check": f.check, "probe": f.probe, "binary": f.binary,
                "file": f.location.path, "line": f.location.line or None, "column": f.location.column or None,
                "location": str(f.location), "message": f.message,
            }
            for f in report.findings
        ],
        "errors": [{"path": e.path, "message": e.problem} for e in errors],
        "summary": report.summary(),
    }


def report_junit(report: Report, errors=()) -> str:
    """JUnit XML: one test case per catalog probe (failed by its findings),
    one per binary for findings about the binary as a whole or probes the
    catalog lacks, and an errored case per unreadable file."""
    import xml.etree.ElementTree as ET

    provider = report.catalog.provider
    by_probe: dict[str, list[Finding]] = {}
    by_binary: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.probe is not None and report.catalog.probe(finding.probe) is not None:
            by_probe.setdefault(finding.probe, []).append(finding)
        else:
            by_binary.setdefault(finding.binary or "", []).append(finding)
    cases = []
    for probe in report.catalog.probes:
        cases.append((f"probegen.checks.verify.{provider}", probe.name, by_probe.get(probe.name, []), None))
    for binary in report.binaries:
        cases.append(("probegen.checks.verify.binary", binary.path, by_binary.pop(binary.path, []), None))
    for path, findings in by_binary.items():
        cases.append(("probegen.checks.verify.binary", path, findings, None))
    for error in errors:
        cases.append(("probegen.checks.verify.binary", error.path, [], error.problem))

    failures = sum(1 for c in cases if c[2])
    suite = ET.Element("testsuite", {
        "name": "probegen verify", "tests": str(len(cases)), "failures": str(failures),
        "errors": str(len(errors)), "skipped": "0",
    })
    for classname, name, findings, error in cases:
        # printable(): names and messages quote file names, and control
        # characters are not allowed in XML 1.0.
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": printable(name)})
        if findings:
            failure = ET.SubElement(case, "failure", {
                "message": printable(findings[0].message) if len(findings) == 1 else f"{len(findings)} findings",
                "type": ",".join(sorted({f.check for f in findings})),
            })
            failure.text = "\n".join(map(str, findings))
        if error:
            ET.SubElement(case, "error", {"message": printable(error), "type": "input"})
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
