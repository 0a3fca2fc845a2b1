"""Struct members and DWARF enum names, end to end.

bpftrace scripts and BCC tools generated with ``--binary`` from
tests/catalogs/members.yaml are attached to tests/c/members.c (built with
-g) while it fires every probe with known values. Each must print exactly
the line the program prints for the hit: members read at the offsets and
widths the DWARF gives (nested, anonymous struct/union, union, char array,
char pointer, packed enum) and enum names the catalog does not list.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from probegen.catalog import load_catalog
from probegen.cli import main
from probegen.dwarf import DwarfTypes
from probegen.generators import bpftrace
from probegen.generators.lines import probe_line
from probegen.files.output import write_all
from helpers import CATALOGS, C_DIR, SYSTEM_PYTHON, require_bpftrace
from helpers.tracing import build_program, expected_lines, probegen_argv, require_bcc, run_traced, tracer_lines

CATALOG = CATALOGS / "members.yaml"
SCRIPTS = ("all", "io", "dev")
# Names of the binary's enums that appear nowhere in the catalog: printed
# only if the generator read them from the DWARF.
DWARF_ONLY = ("req->state=DRAINING", "req->state=FAILED", "req->prio=PGM_PRIO_HIGH", "req->prio=PGM_PRIO_LOW",
              "req->kind=PGM_KIND_WRITE", "dev->state=FAILED", "from=DRAINING")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    directory = tmp_path_factory.mktemp("members")
    return build_program(C_DIR / "members.c", CATALOG, "members.h", directory,
                         defines=["PGMEM_USDT"], extra=["-g"])


@pytest.fixture(scope="module")
def untraced(binary):
    """The program's EXPECT lines, run without any tracer."""
    result = subprocess.run([binary], input="go\n", capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return [l[len("EXPECT "):] for l in result.stdout.splitlines() if l.startswith("EXPECT ")]


def generate(kind: str, binary, out):
    assert main([kind, "-c", str(CATALOG), "-o", str(out), "--binary", str(binary), "-q"]) == 0
    return out


def hits_for(catalog):
    """count_done for run_traced: the hits each group's script prints."""
    groups = {g: {p.name for p in probes} for g, probes in catalog.groups.items()}

    def count(name, expected):
        return sum(1 for e in expected if name == "all" or e.split()[0] in groups[name])
    return count


def of_group(catalog, group, lines):
    names = {p.name for p in (catalog.probes if group == "all" else catalog.groups[group])}
    return [l for l in lines if l.split()[0] in names]


@pytest.fixture(scope="module")
def bpftrace_run(catalog, binary, tmp_path_factory):
    require_bpftrace()
    scripts = generate("bpftrace", binary, tmp_path_factory.mktemp("bt"))
    program, tracers = run_traced(
        [binary],
        {s: (lambda pid, s=s: probegen_argv("trace", "-c", CATALOG, pid, scripts / f"{s}.bt")) for s in SCRIPTS},
        count_done=hits_for(catalog),
    )
    return scripts, program, tracers


@pytest.fixture(scope="module")
def bcc_run(catalog, binary, tmp_path_factory):
    require_bcc()
    tools = generate("bcc", binary, tmp_path_factory.mktemp("bcc"))
    (tool,) = tools.glob("*.py")  # one per catalog: --group picks a group's probes
    program, tracers = run_traced(
        [binary], {s: (lambda pid, s=s: [SYSTEM_PYTHON, tool, "-p", pid, *(["--group", s] if s != "all" else [])])
                   for s in SCRIPTS},
        count_done=hits_for(catalog),
    )
    return tools, program, tracers


def labels(line: str) -> list[str]:
    return re.findall(r" ([\w.>-]+)=", line)


def test_program_prints_every_field_the_catalog_asks_for(catalog, binary, untraced):
    """The oracle is complete: each EXPECT line names, in order, every
    argument and member the generated line has (so an equal tracer line
    checked them all), and every probe fires."""
    with DwarfTypes.open(binary) as types:
        fields = {p.name: [f.label for f in probe_line(catalog, p, types).fields] for p in catalog.probes}
    assert {l.split()[0] for l in untraced} == set(fields)
    for line in untraced:
        assert labels(line) == fields[line.split()[0]], line
    for shown in DWARF_ONLY:
        assert any(shown in l.split() for l in untraced), shown


def test_names_come_from_dwarf_not_the_catalog(binary, tmp_path, catalog):
    text = CATALOG.read_text()
    for shown in DWARF_ONLY:
        assert shown.split("=")[1] not in text
    scripts = generate("bpftrace", binary, tmp_path / "with")
    script = (scripts / "all.bt").read_text()
    assert "struct pgm_request {" in script and "union pgm_value {" in script
    assert "\tPGM_STATE_DRAINING = 7," in script and '"DRAINING"' in script
    # Without the binary: no members, and pgm_state prints as a number.
    write_all(bpftrace.render_files(catalog, tmp_path / "without"))
    plain = (tmp_path / "without" / "all.bt").read_text()
    assert "DRAINING" not in plain and "req->qid" not in plain and "struct pgm_request {" not in plain
    assert " from=%d to=%d" in plain


@pytest.mark.parametrize("script", SCRIPTS)
def test_bpftrace_prints_members_and_dwarf_enum_names(bpftrace_run, catalog, script):
    _, program, tracers = bpftrace_run
    expected = of_group(catalog, script, expected_lines(program))
    assert tracer_lines(tracers[script].lines) == expected
    count = len(catalog.probes if script == "all" else catalog.groups[script])
    assert f"Tracing {count} probes ({script}). Hit Ctrl-C to end." in tracers[script].lines
    if script == "all":  # a script printing members runs as written: trace parses no DWARF as root
        assert not any("enum names from" in line for line in tracers[script].stderr)
        printed = " ".join(tracer_lines(tracers[script].lines)).split()
        assert all(shown in printed for shown in DWARF_ONLY)


@pytest.mark.parametrize("script", SCRIPTS)
def test_bcc_prints_members_and_dwarf_enum_names(bcc_run, catalog, script):
    _, program, tracers = bcc_run
    expected = of_group(catalog, script, expected_lines(program))
    assert tracer_lines(tracers[script].lines) == expected
    assert tracers[script].proc.returncode == 0
    if script == "all":
        printed = " ".join(tracer_lines(tracers[script].lines)).split()
        assert all(shown in printed for shown in DWARF_ONLY)



@pytest.mark.parametrize("command", [["bpftrace", "-o", "out"], ["bcc", "-o", "out"], ["generate"], ["check"]])
def test_members_without_binary_is_an_error_not_silence(tmp_path, command):
    """The catalog knows members' names, not their offsets: without
    --binary, scripts cannot print them, and saying nothing would hide it."""
    catalog = tmp_path / "members.yaml"
    catalog.write_text(CATALOG.read_text() + "outputs:\n  bpftrace: bpf\n")
    result = subprocess.run(probegen_argv(*command, "-c", str(catalog)), cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert "argument 'req' of probe 'submit' lists members" in result.stderr and "--binary" in result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "bpf").exists()


def test_generate_and_check_take_the_binary_for_members(tmp_path, binary):
    catalog = tmp_path / "members.yaml"
    catalog.write_text(CATALOG.read_text() + "outputs:\n  bpftrace: bpf\n  bcc: bcc\n")
    generated = subprocess.run(probegen_argv("generate", "-c", str(catalog), "--binary", str(binary)),
                               cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert generated.returncode == 0, generated.stderr
    assert "req->opcode" in (tmp_path / "bpf" / "io.bt").read_text()
    checked = subprocess.run(probegen_argv("check", "-c", str(catalog), "--binary", str(binary)),
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr
