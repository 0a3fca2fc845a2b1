"""`probegen trace` fits a generated script to the process it traces
(runtime/fit.py): a program built as SPDK v25.09 is, traced with the
committed nvmf.bt made from master's catalog, through real bpftrace."""

from __future__ import annotations

import collections
import json
import re

import pytest

from helpers import C_DIR, REPO, compile_c, lines_run, require_bpftrace
from helpers.tracing import LINE, SPDK_CATALOG, expected_lines, probegen_argv, run_traced, tracer_lines

NVMF_BT = REPO / "scripts" / "bpf" / "probegen" / "nvmf.bt"


@pytest.fixture(scope="module")
def v25_09(tmp_path_factory):
    require_bpftrace()
    directory = tmp_path_factory.mktemp("v25_09")
    binary = compile_c([C_DIR / "spdk_v25_09.c"], directory / "spdk_v25_09", extra=["-g", "-pthread"])
    program, tracers = run_traced([binary], {"nvmf": lambda pid: probegen_argv(
        "trace", "-c", SPDK_CATALOG, "-p", pid, NVMF_BT, "--timeline", directory / "timeline.json")})
    return program, tracers, json.loads((directory / "timeline.json").read_text())


def test_every_value_printed_as_the_process_passes_it(v25_09):
    """Three arguments where the catalog has two, by position; status from
    a 1-byte and an 8-byte site; a 223-character NQN whole (in pieces on
    bpftrace 0.17, joined); v25.09's own nvmf_tgt_state names."""
    program, tracers, _ = v25_09
    expected = expected_lines(program)
    printed = tracer_lines(tracers["nvmf"].lines)
    assert printed[:6] == expected[:6]
    assert "nvmf_tgt_state state=FINI_STOP_LISTEN" in expected and len(expected[4].split("subnqn=")[1].split()[0]) == 223
    assert collections.Counter(printed[6:]) == collections.Counter(expected[6:])


def test_hits_from_two_cpus_print_in_timestamp_order(v25_09):
    """bpftrace prints each CPU's buffer in turn; trace puts the hits of
    two threads firing at once back in the order they happened."""
    _, tracers, _ = v25_09
    stamps = [line.split(":")[0] for line in tracers["nvmf"].lines if LINE.match(line)]
    assert len(stamps) == 6 + 2 * 2000
    assert stamps == sorted(stamps, key=lambda s: tuple(map(int, s.split("."))))


def test_each_difference_is_a_warning_naming_the_probe(v25_09):
    _, tracers, _ = v25_09
    stderr = tracers["nvmf"].stderr
    assert ("probegen trace: warning: nvmf_ctrlr_destruct: the process's note passes 4 arguments, the catalog 3 "
            "(arg0 included): printed by position (arg0..arg3) as the note has them") in stderr
    assert ("probegen trace: warning: nvmf_subsystem_change_state_done: argument status is int in the catalog "
            "(4 bytes), 1 or 8 bytes, signed in the process's note: printed as the note has it") in stderr
    assert any("enum names from the debug info of" in line and "nvmf_tgt_state (differs from the catalog's)" in line
               for line in stderr), stderr


def test_probes_the_process_lacks_are_named_once_and_the_rest_traced(v25_09):
    _, tracers, _ = v25_09
    absent = [line for line in tracers["nvmf"].stderr if "not traced" in line]
    assert len(absent) == 1 and "nvmf_ctrlr_create" in absent[0] and "nvmf_tgt_state" not in absent[0]
    assert any(line.startswith("Tracing 3 probes (nvmf)") for line in tracers["nvmf"].lines)


def test_timeline_values_are_named_as_the_fitted_lines_print_them(v25_09):
    """--timeline reads each hit as the line fitted to the process prints
    it: nvmf_ctrlr_destruct's four values by position (arg0..arg3, where
    the catalog names three), each an instant event's argument with the
    value the program passed."""
    program, tracers, timeline = v25_09
    instants = [e for e in timeline["traceEvents"] if e["ph"] == "i"]
    printed = [m for m in map(re.compile(r"^(\d+)\.(\d{6}): (.*)$").match, tracers["nvmf"].lines) if m]
    assert [(int(e["ts"]), " ".join([e["name"], *(f"{k}={v}" for k, v in e["args"].items())])) for e in instants] == \
        [(int(m[1]) * 1_000_000 + int(m[2]), m[3]) for m in printed]
    destruct = [e["args"] for e in instants if e["name"] == "nvmf_ctrlr_destruct"]
    expected = [dict((k, int(v)) for k, v in (w.split("=") for w in line.split()[1:]))
                for line in expected_lines(program) if line.startswith("nvmf_ctrlr_destruct ")]
    assert destruct == expected and list(destruct[0]) == ["arg0", "arg1", "arg2", "arg3"]


def test_bpftrace_holding_big_strings_gets_one_str_per_string(tmp_path):
    """On bpftrace 0.21 and later (here a stand-in saying v0.23.2) trace
    reads each string with one str() and prints each hit in one printf; on
    0.17 it reads them in pieces. (Seen run on Debian 13's 0.23.2: every
    value of this test's program right, 223-character NQNs whole.)"""
    import os
    import subprocess

    from helpers.tracing import Process

    binary = compile_c([C_DIR / "spdk_v25_09.c"], tmp_path / "spdk_v25_09", extra=["-g", "-pthread"])
    fake = tmp_path / "bin" / "bpftrace"
    fake.parent.mkdir()
    programs = {}
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        for version in ("0.17.0", "0.23.2"):
            fake.write_text(f"#!/bin/sh\necho bpftrace v{version}\n")
            fake.chmod(0o755)
            env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
            result = subprocess.run(probegen_argv("trace", "-c", SPDK_CATALOG, "--dry-run", "-p", program.pid, NVMF_BT),
                                    capture_output=True, text=True, env=env)
            assert result.returncode == 0, result.stderr
            programs[version] = result.stdout
    finally:
        program.kill()
    assert "str(arg1, 224)" in programs["0.23.2"] and "$pg_" not in programs["0.23.2"]
    assert "str(arg1, 224)" not in programs["0.17.0"] and "[tid %d 1/" in programs["0.17.0"]


def test_fit_reads_each_argument_as_the_notes_have_it():
    """Each difference between notes and catalog is a warning naming the
    probe, and the field is printed as the notes have it (the real run
    above shows bpftrace printing those values right)."""
    from probegen.catalog import load_catalog
    from probegen.elf.argspec import parse_args
    from probegen.generators.lines import Style
    from probegen.runtime import trace
    from probegen.runtime.fit import fit

    catalog = load_catalog(SPDK_CATALOG)
    probe = catalog.probe("nvmf_subsystem_change_state_done")  # arg0 0, subnqn, two enums, status int

    def sites(*specs):  # as the child without root reports them to probegen trace
        parsed = [parse_args(spec, "EM_X86_64") for spec in specs]
        return [tuple(trace.NoteFacts(a.size, a.signed, a.floating, trace._literal(a)) for a in site)
                for site in parsed]

    same, warnings = fit(catalog, probe, sites("-4@$0 8@%rbp -4@%r12d -4@%r13d -4@%eax"), {})
    assert not warnings and [f.style for f in same.fields] == [Style.STRING, Style.ENUM, Style.ENUM, Style.SIGNED]
    wide, warnings = fit(catalog, probe, sites("-4@$0 8@%rbp -4@%r12d -4@%r13d -1@%al",
                                               "-4@$0 8@%rbp -4@%r12d -4@%r13d 8@%rax"), {})
    assert [(f.label, f.style, f.size) for f in wide.fields][-1] == ("status", Style.SIGNED, 8)
    assert warnings == ["nvmf_subsystem_change_state_done: argument status is int in the catalog (4 bytes), "
                        "1 or 8 bytes, signed or unsigned in the process's note: printed as the note has it"]
    unsigned, _ = fit(catalog, probe, sites("-4@$0 8@%rbp -4@%r12d -4@%r13d 4@%eax"), {})
    assert unsigned.fields[-1].style is Style.UNSIGNED
    more, warnings = fit(catalog, probe, sites("-4@$0 8@%rbp -4@%r12d -4@%r13d -4@%eax 8f@%xmm0"), {})
    assert [f.label for f in more.fields] == ["arg0", "arg1", "arg2", "arg3", "arg4", "arg5"]
    assert [w.split(":")[1].strip() for w in warnings] == [
        "arg5 floating point in the process's note", "the process's note passes 6 arguments, the catalog 5 (arg0 included)"]


def test_program_for_bpftrace_0_23_prints_every_value_whole(trixie, tmp_path_factory):
    """The program trace makes for Debian 13's bpftrace 0.23 (one str() a
    string), run there on the v25.09-shaped program: every value as with
    0.17, the 223-character NQNs whole, one line per hit."""
    from helpers.tracing import Process
    from helpers.trixie import ROOT, inside, install
    from probegen.catalog import load_catalog
    from probegen.runtime import trace

    root = trixie
    directory = tmp_path_factory.mktemp("v25_09_trixie")
    binary, = install(root, compile_c([C_DIR / "spdk_v25_09.c"], directory / "spdk_v25_09", extra=["-g", "-pthread"]))
    traced = Process(inside(root, binary), stdin=True)
    tracer = None
    try:
        traced.wait_line("READY")
        text = trace.program_for(traced.pid, [NVMF_BT], catalog=load_catalog(SPDK_CATALOG), big_strings=True)
        # trace runs outside the root here, so it names the file by the path this side sees
        program = directory / "nvmf_for_0_23.bt"
        program.write_text(text.replace(f"/proc/{traced.pid}/root{ROOT}/", f"/proc/{traced.pid}/root/"))
        script, = install(root, program)
        tracer = Process(inside(root, "bpftrace", "-p", traced.pid, script))
        tracer.wait_for(lambda lines: any(l.startswith("Tracing 3 probes") for l in lines), "attach")
        traced.send("go\n")
        traced.wait_line("DONE")
        expected = expected_lines(traced)
        tracer.wait_for(lambda lines: len(tracer_lines(lines)) >= len(expected), "every hit")
    finally:
        traced.kill()
        if tracer is not None:
            tracer.kill()
    assert "str(arg1, 224)" in text and "[tid " not in text
    printed = tracer_lines(tracer.lines)
    assert printed[:6] == expected[:6], tracer.stderr
    assert collections.Counter(printed[6:]) == collections.Counter(expected[6:])


MEMCACHED_CATALOG = """\
provider: memcached
header:
  style: dtrace
probes:
  - name: assoc__insert
    group: memcached
    doc: the catalog probegen import makes from memcached_dtrace.d and memcached
    args:
      - {name: key, type: const char *, length: keylen, doc: the key}
      - {name: keylen, type: int, doc: its length}
  - name: command__get
    group: memcached
    doc: a get
    args:
      - {name: connid, type: int, doc: connection}
      - {name: key, type: const char *, length: keylen, doc: the key}
      - {name: keylen, type: uint64_t, doc: its length}
      - {name: size, type: int, doc: its size}
      - {name: casid, type: uint64_t, doc: its cas}
"""


def test_what_verify_accepts_prints_the_same_and_is_no_warning(tmp_path):
    """memcached passes its keys' uint8_t nkey where the .d file, and the
    catalog import makes, say int (1@%sil), and a literal 0 casid
    (-4@$0) for a uint64_t: verify passes them, bpftrace prints the same
    value with the catalog's type, so probegen trace keeps that type and
    warns of nothing (it warned 18 times on memcached). A wider site and a
    negative literal of an unsigned type still differ."""
    from probegen.catalog import load_catalog
    from probegen.elf.argspec import parse_args
    from probegen.runtime import trace
    from probegen.runtime.fit import fit

    (tmp_path / "probes.yaml").write_text(MEMCACHED_CATALOG)
    catalog = load_catalog(tmp_path / "probes.yaml")
    insert, get = catalog.probe("assoc__insert"), catalog.probe("command__get")

    def sites(*specs):
        return [parse_args(spec, "EM_X86_64") for spec in specs]

    def facts(*specs):  # as the child without root reports them to probegen trace
        rows = [[[a.size, a.signed, a.floating, trace._literal(a)] for a in site] for site in sites(*specs)]
        assert trace._sites_ok(rows)
        return [tuple(trace.NoteFacts(*a) for a in site) for site in rows]

    line, warnings = fit(catalog, insert, facts("8@%rdi 1@%sil"), {})
    assert not warnings and line == fit(catalog, insert, facts("8@%rdi -4@%esi"), {})[0]
    line, warnings = fit(catalog, get, facts("-4@%ebx 8@%rbp 1@%sil -4@$-1 -4@$0",
                                             "-4@%ebx 8@%r12 8@%r13 -4@%eax 8@%rdx"), {})
    assert not warnings and [f.ctype.name for f in line.fields][2:] == ["uint64_t", "int", "uint64_t"]
    _, warnings = fit(catalog, insert, facts("8@%rdi 8@%r13"), {})
    assert warnings == ["assoc__insert: argument keylen is int in the catalog (4 bytes), 8 bytes, unsigned "
                        "in the process's note: printed as the note has it"]
    _, warnings = fit(catalog, get, facts("-4@%ebx 8@%rbp 1@%sil -4@%eax -4@$-1"), {})
    assert warnings == ["command__get: argument casid is uint64_t in the catalog (8 bytes), 4 bytes, signed "
                        "in the process's note: printed as the note has it"]
    assert [a.constant for a in facts("-4@$0 8@%rdx 4@$7")[0]] == [0, None, 7]
    assert not trace._sites_ok([[[4, True, False, 1 << 64]]]) and not trace._sites_ok([[[4, True, False]]])


def test_a_script_of_many_probes_is_made_again_in_linear_work(tmp_path):
    """A generated script naming each probe of a large catalog is fitted in work linear in its
    probes: its probes were once matched against the catalog's pairwise (2.6 s for 10,000)."""
    import os

    from probegen.catalog import load_catalog
    from probegen.files.unprivileged import deadline_in
    from probegen.runtime import fit, trace

    mapped = trace.mapped_files(os.getpid())[0]

    def regenerate(count):
        path = tmp_path / f"many{count}.yaml"
        path.write_text("provider: many\nprobes:\n" + "".join(
            f"  - {{name: p{i}, group: g, doc: d, args: [{{name: n, type: int, doc: d}}]}}\n" for i in range(count)))
        catalog = load_catalog(path)
        script = trace.Script("all.bt", "".join(f"usdt:*:many:p{i} {{}}\n" for i in range(count)))
        holders = {("many", f"p{i}"): (mapped, [(trace.NoteFacts(4, True, False, None),)]) for i in range(count)}
        (scripts, labels), lines = lines_run(lambda: fit.regenerate(
            os.getpid(), [script], {0: "g"}, catalog, False, False, holders, deadline_in(30), False))
        assert len(labels) == count and scripts[0].text.count("usdt:*:many:p") == count
        return lines

    regenerate(10)  # once untraced: first-use costs (imports, the template) are no probe's work
    tiny, small, large = (regenerate(count) for count in (10, 100, 1000))
    assert (large - small) / 900 <= 2 * (small - tiny) / 90


def test_enum_names_from_debug_info_print_an_enum_the_catalog_lists_none_of(tmp_path):
    """An enum declared without enumerators ("take them from the binary's DWARF"): the names
    trace reads from the process's debug info are printed (the number was, though stderr said
    the names came from there); a hexadecimal argument of that enum stays a number."""
    from probegen.catalog import load_catalog
    from probegen.generators.lines import EnumTable, Style
    from probegen.runtime import trace
    from probegen.runtime.fit import fit

    (tmp_path / "probes.yaml").write_text(
        "provider: p\nenums:\n  - {name: state}\nprobes:\n  - name: change\n    group: g\n    doc: d\n"
        "    args:\n      - {name: now, type: enum state, doc: d}\n"
        "      - {name: raw, type: enum state, hex: true, doc: d}\n")
    catalog = load_catalog(tmp_path / "probes.yaml")
    table = EnumTable("state", ((0, "IDLE"), (1, "BUSY")), False)
    site = (trace.NoteFacts(4, True, False, None),) * 2
    line, warnings = fit(catalog, catalog.probe("change"), [site], {"state": table})
    assert not warnings and [(f.style, f.enum) for f in line.fields] == [(Style.ENUM, table), (Style.HEX, None)]
    assert [f.style for f in fit(catalog, catalog.probe("change"), [site], {})[0].fields] == [Style.SIGNED, Style.HEX]
