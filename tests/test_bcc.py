"""Generated BCC tools, run for real with /usr/bin/python3 against programs
firing probes with known values and spans with known delays: lines per
hit, --count, --hist per by and per key value, --json, --ebpf, and BCC
attached to one process together with bpftrace (issue 14), with and
without semaphores."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time

import pytest

from helpers import CATALOGS, C_DIR, SYSTEM_PYTHON, require_bpftrace
from helpers.tracing import (
    Process, build_program, expected_lines, require_bcc, run_traced, tracer_lines, wait_attached,
)
from probegen.catalog import load_catalog
from probegen.files.output import write_all
from probegen.generators import bcc

TYPES = CATALOGS / "tracing_types.yaml"
SPANS = CATALOGS / "spans.yaml"
# tracing_types.c's long_default argument, 100 characters: bpftrace prints
# 63 (its default BPFTRACE_STRLEN), the BCC tool all of them.
LONG_STRING = "".join(chr(ord("a") + i % 26) for i in range(100))


def write_tool(catalog_path, directory):
    catalog = load_catalog(catalog_path)
    write_all(bcc.render_files(catalog, directory))
    return directory / bcc.tool_name(catalog)


def bcc_expected(program):
    """The program's EXPECT lines as the BCC tool prints them."""
    return [e.replace("long_default=" + LONG_STRING[:63] + " ", "long_default=" + LONG_STRING + " ")
            for e in expected_lines(program)]


@pytest.fixture(scope="module")
def types_run(tmp_path_factory):
    require_bcc()
    directory = tmp_path_factory.mktemp("bcc_types")
    catalog = load_catalog(TYPES)
    tool = write_tool(TYPES, directory / "tools")
    binary = build_program(C_DIR / "tracing_types.c", TYPES, "tracing_types.h", directory, defines=["PGTEST_USDT"])
    groups = {g: {p.name for p in probes} for g, probes in catalog.groups.items()}

    def count(name, expected):
        probes = groups.get(name)
        return sum(1 for e in expected if probes is None or e.split()[0] in probes)

    program, tracers = run_traced([binary], {
        "all": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid],
        "ints": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--group", "ints"],
        "misc": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, binary, "--group", "misc"],
        "big": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--probe", "big_string"],
    }, count_done=count)
    return catalog, tool, binary, program, tracers, groups


def test_every_value_printed(types_run):
    _, _, _, program, tracers, _ = types_run
    assert tracer_lines(tracers["all"].lines) == bcc_expected(program)
    assert tracers["all"].lines[0] == "Tracing 10 probes (pgtest): a line per hit. Hit Ctrl-C to end."
    assert tracers["all"].proc.returncode == 0


def test_group_and_probe_filters(types_run):
    _, _, _, program, tracers, groups = types_run
    for name, probes in (("ints", groups["ints"]), ("misc", groups["misc"]), ("big", {"big_string"})):
        expected = [e for e in bcc_expected(program) if e.split()[0] in probes]
        assert tracer_lines(tracers[name].lines) == expected, name
        assert tracers[name].proc.returncode == 0


def test_one_executable_tool_per_catalog(types_run, tmp_path):
    _, tool, *_ = types_run
    assert [p.name for p in tool.parent.iterdir()] == ["pgtest.py"]
    assert tool.read_text().startswith("#!/usr/bin/python3\n")
    assert tool.stat().st_mode & stat.S_IXUSR
    first = bcc.render_files(load_catalog(TYPES), tmp_path)
    assert [(f.path, f.text) for f in first] == [(f.path, f.text) for f in bcc.render_files(load_catalog(TYPES), tmp_path)]


@pytest.mark.parametrize("provider, name", [("spdk", "spdk.py"), ("json", "json_usdt.py"), ("bcc", "bcc_usdt.py")])
def test_tool_is_never_named_like_a_module_it_imports(tmp_path, provider, name):
    catalog = tmp_path / "c.yaml"
    catalog.write_text(f"provider: {provider}\nprobes:\n  - name: hit\n    group: g\n    doc: d\n")
    (tool,) = bcc.render_files(load_catalog(catalog), tmp_path)
    assert tool.path.name == name


def test_duration_sigterm_and_binary_alone(types_run):
    _, tool, binary, *_ = types_run
    sleeper = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        timed = subprocess.run([SYSTEM_PYTHON, tool, "-p", str(sleeper.pid), "--probe", "big_string", "--duration", "0.5"],
                               capture_output=True, text=True, timeout=120)
        assert timed.returncode == 0, timed.stderr
        assert "Tracing 1 probe (pgtest): a line per hit. Hit Ctrl-C to end." in timed.stdout
        traced = Process([SYSTEM_PYTHON, tool, "-p", sleeper.pid, "--count"])
        traced.wait_line("Tracing ")
        assert traced.stop(signal.SIGTERM) == 0
        traced.drain()
        assert not any("Traceback" in line for line in traced.stderr), "\n".join(traced.stderr)
        assert traced.lines[-1].split() == ["PROBE", "COUNT"]  # the summary, even of nothing
    finally:
        sleeper.kill()
        sleeper.wait()
    # Probes without semaphores: the binary alone, every process running it
    alone = subprocess.run([SYSTEM_PYTHON, tool, binary, "--count", "-d", "0.5"], capture_output=True, text=True,
                           timeout=120)
    assert alone.returncode == 0 and alone.stdout.splitlines()[-1].split() == ["PROBE", "COUNT"], alone.stderr


def test_bad_pid_and_usage_are_clear_errors(types_run):
    _, tool, *_ = types_run
    result = subprocess.run([SYSTEM_PYTHON, tool, "-p", "999999999"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "error:" in result.stderr and "Traceback" not in result.stderr
    usage = subprocess.run([SYSTEM_PYTHON, tool], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "give -p PID or a BINARY" in usage.stderr


def test_spdk_catalog_tool_prints_what_spdk_passes(tmp_path):
    """The default SPDK catalog's tool against a program firing SPDK's
    probes as SPDK's sources do (untyped SPDK_DTRACE_PROBEn macros)."""
    from helpers.tracing import SPDK_CATALOG, build_spdk_program

    require_bcc()
    catalog = load_catalog(SPDK_CATALOG)
    tool = write_tool(SPDK_CATALOG, tmp_path / "bcc")
    binary = build_spdk_program(tmp_path)
    program, tracers = run_traced([binary], {
        "spdk": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid],
        "count": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--count"],
        "hist": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--hist"],  # every SPDK span loads
    }, count_done=lambda name, expected: len(expected) if name == "spdk" else 0)
    expected = expected_lines(program)
    assert {e.split()[0] for e in expected} == {p.name for p in catalog.probes}
    assert tracer_lines(tracers["spdk"].lines) == expected
    hits = {p.name: sum(1 for e in expected if e.split()[0] == p.name) for p in catalog.probes}
    assert dict(line.split() for line in tracers["count"].lines[2:]) == {p: str(n) for p, n in hits.items() if n}
    span_probes = {p.name for s in catalog.spans for p in (s.start, s.end)}
    assert tracers["hist"].lines[0] == (f"Tracing {len(span_probes)} probes (spdk): {len(catalog.spans)} spans "
                                        "as histograms. Hit Ctrl-C to end.")
    assert tracers["hist"].proc.returncode == 0
    # stderr: only where each printed enum's names came from
    assert tracers["hist"].stderr and all(l.startswith("spdk.py: enum names ") for l in tracers["hist"].stderr)


# --- enum names from the traced binary's debug info ---

@pytest.fixture(scope="module")
def drift_tool(tmp_path_factory):
    """drift_spdk.c at two versions, and the drift catalog's tool (its
    tables number nvmf_tgt_state's states as "master" does)."""
    from helpers.drift import DRIFT_CATALOG, build_drift

    require_bcc()
    directory = tmp_path_factory.mktemp("bcc_drift")
    return build_drift(directory), write_tool(DRIFT_CATALOG, directory / "tools")


def trace_drift(binary, tool, *options):
    """(the program's expected tgt_state lines, the tool's Process) of one run."""
    def states(expected):
        return [e for e in expected if e.split()[0] == "tgt_state"]

    program, tracers = run_traced([binary], {"bcc": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--group", "tgt",
                                                                 *options]},
                                  count_done=lambda name, expected: len(states(expected)))
    assert tracers["bcc"].proc.returncode == 0, tracers["bcc"].stderr
    return states(expected_lines(program)), tracers["bcc"]


def catalog_order(lines):
    """The lines as the catalog names the states: v25.09's two swapped."""
    swapped = {"state=FINI_STOP_LISTEN": "state=FINI_STOP_SUBSYSTEMS",
               "state=FINI_STOP_SUBSYSTEMS": "state=FINI_STOP_LISTEN"}
    return [" ".join(swapped.get(word, word) for word in line.split()) for line in lines]


def test_bcc_prints_the_traced_binarys_enum_names(drift_tool):
    """Each version's states by its own names, from its executable's DWARF
    (stderr says so), though the tool's tables are master's."""
    binaries, tool = drift_tool
    for version, note in (("v25_09", " (differs from the catalog's)"), ("master", "")):
        expected, tracer = trace_drift(binaries[version], tool)
        assert "tgt_state state=FINI_STOP_LISTEN" in expected
        assert tracer_lines(tracer.lines) == expected, version
        shown = os.path.realpath(binaries[version])
        assert tracer.stderr == [f"pgdrift.py: enum names from the debug info of '{shown}': nvmf_tgt_state{note}"]


def test_bcc_keeps_the_catalogs_enum_names_when_told_or_without_debug_info(drift_tool, tmp_path):
    binaries, tool = drift_tool
    expected, tracer = trace_drift(binaries["v25_09"], tool, "--no-debug-info")
    assert tracer_lines(tracer.lines) == catalog_order(expected)
    assert tracer.stderr == ["pgdrift.py: enum names of nvmf_tgt_state from the catalog (as the tool has them): "
                             "--no-debug-info"]
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("strip (binutils) is not installed: no binary without debug info")
    stripped = tmp_path / "v25_09_stripped"
    subprocess.run([strip, "-g", "-o", stripped, binaries["v25_09"]], check=True)
    expected, tracer = trace_drift(stripped, tool)
    assert tracer_lines(tracer.lines) == catalog_order(expected)
    assert tracer.stderr == ["pgdrift.py: enum names of nvmf_tgt_state from the catalog (as the tool has them): "
                             f"'{os.path.realpath(stripped)}' has no debug info"]


# --- spans: tests/c/spans.c fires them with known delays ---

def run_spans(binary, tools: dict, others: dict = None):
    """Start spans.c, attach others (name -> (argv given the pid, header)),
    then every BCC tool (name -> argv after the tool, given the pid), let
    the program fire and end; BCC tools end with it. Returns (program lines,
    {name: Process})."""
    program = Process([binary, "4"], stdin=True)
    running = {}
    try:
        program.wait_line("READY")
        for name, (argv, header) in (others or {}).items():
            running[name] = Process(argv(program.pid))
            running[name].wait_line(header)
            if header == "Attaching ":  # bpftrace says so before it attaches
                wait_attached(program.pid, " ".join(running[name].argv))
        for name, argv in tools.items():
            running[name] = Process([SYSTEM_PYTHON, *argv(program.pid)])
        for name, tracer in running.items():
            if name in tools:
                tracer.wait_line('{"type": "attached"' if "--json" in tracer.argv else "Tracing ")
        # The program fires for ~0.1 s: the -i 0.1 tools have their intervals before it
        # starts (the last tool attached once only 0.1 s before, and printed two).
        time.sleep(0.5)
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        for name in tools:  # each ends by itself when the traced process has
            assert running[name].proc.wait(60) == 0, "\n".join(running[name].stderr)
        for name in others or {}:
            running[name].end()
    finally:
        program.kill()
        for tracer in running.values():
            tracer.kill()
    for process in (program, *running.values()):
        process.drain()
    return program.lines, running


def fired(lines):
    return {w[1]: int(w[2]) for w in (l.split() for l in lines) if w[0] == "FIRED"}


def measured(lines):
    """(span, by value) -> [(low, high)]: the microseconds the program
    measured before the start and after the end of each span, around it."""
    spans = {}
    for words in (l.split() for l in lines):
        if words[0] == "SPAN":
            spans.setdefault((words[1], words[2]), []).append((int(words[3]), int(words[4])))
    return spans


def histograms(lines):
    """{(span, 'label=value ...'): {low: count}} from a text --hist output."""
    found, current = {}, None
    for line in lines:
        title = re.match(r"^span (\w+)(?:: (.*))?$", line)
        row = re.match(r"^\s*(\d+) -> (\d+)\s*: (\d+)", line)
        if title and "without a start" not in line:
            current = found.setdefault((title[1], title[2] or ""), {})
        elif row and current is not None and int(row[3]):
            current[int(row[1])] = int(row[3])
    return found


def assert_in_buckets(histogram, brackets, what):
    """The histogram's counts match the spans one to one, each in a bucket
    from its bracket's low to one past its high (one bucket of slack)."""
    intervals = [(low.bit_length(), high.bit_length() + 1) for low, high in brackets]  # a value's log2 slot
    counted = sorted(low.bit_length() for low, count in histogram.items() for _ in range(count))
    assert len(counted) == len(intervals), (what, histogram, brackets)
    for slot in counted:  # each count takes the open interval holding it that closes first
        fits = [i for i in intervals if i[0] <= slot <= i[1]]
        assert fits, (what, f"a count in slot {slot}", histogram, brackets)
        intervals.remove(min(fits, key=lambda i: i[1]))


def spans_catalog(directory, semaphores):
    """spans.yaml, its probes with semaphores (enabled_check) or not."""
    if not semaphores:
        return SPANS
    catalog = directory / "spans.yaml"
    catalog.write_text(re.sub(r"(\n    group: \w+\n)", r"\1    enabled_check: true\n", SPANS.read_text()))
    return catalog


def semaphores_of(binary):
    from probegen.elf.notes import read_binary

    return {probe.name: site.semaphore for probe in read_binary(binary).probes for site in probe.sites}


@pytest.fixture(scope="module")
def spans_binary(tmp_path_factory):
    require_bcc()
    directory = tmp_path_factory.mktemp("bcc_spans")
    binary = build_program(C_DIR / "spans.c", SPANS, "spans.h", directory, defines=["SPANTEST_USDT"], extra=["-pthread"])
    return binary, write_tool(SPANS, directory / "tools")


@pytest.fixture(scope="module")
def spans_run(spans_binary):
    binary, tool = spans_binary
    lines, tracers = run_spans(binary, {
        "hist": lambda pid: [tool, "-p", pid, "--hist"],
        "per_key": lambda pid: [tool, "-p", pid, "--hist", "--per-key", "--json"],
        "msecs": lambda pid: [tool, "-p", pid, "--hist", "-m", "--span", "work"],
        "json": lambda pid: [tool, "-p", pid, "--hist", "--json"],
        "count": lambda pid: [tool, "-p", pid, "--count"],
        "count_json": lambda pid: [tool, "-p", pid, "--count", "--json"],
        "intervals": lambda pid: [tool, "-p", pid, "--count", "--json", "-i", "0.1"],
        "hist_intervals": lambda pid: [tool, "-p", pid, "--hist", "-i", "0.1", "--span", "work"],
        "lines": lambda pid: [tool, "-p", pid, "--group", "req"],
        "lines_json": lambda pid: [tool, "-p", pid, "--group", "req", "--json"],
    })
    return lines, tracers


def test_hist_per_by_value_in_the_right_buckets(spans_run):
    lines, tracers = spans_run
    found = histograms(tracers["hist"].lines)
    by_label = {"request": "kind", "request_tagged": "status", "work": None}
    spans = measured(lines)
    assert {(s, f"{by_label[s]}={v}" if by_label[s] else "") for s, v in spans} == set(found)
    for (span, value), brackets in spans.items():
        label = f"{by_label[span]}={value}" if by_label[span] else ""
        assert_in_buckets(found[(span, label)], brackets, (span, value))
    for span in by_label:  # the stray end of each
        assert f"span {span}: 1 end without a start" in tracers["hist"].lines


def test_hist_json_agrees_with_text(spans_run):
    """The JSON tool's histograms are the text tool's: the same spans and
    by values, counts and unmatched ends, each in the program's buckets
    (two tools time a span each with its own clock reads: a duration at a
    bucket's edge may fall on either side)."""
    lines, tracers = spans_run
    objects = [json.loads(line) for line in tracers["json"].lines]
    assert objects[0] == {"type": "attached", "probes": 4}
    from_json = {(o["span"], " ".join(f"{k}={v}" for k, v in o["by"].items())):
                 {b["min"]: b["count"] for b in o["buckets"]} for o in objects if o["type"] == "span"}
    from_text = histograms(tracers["hist"].lines)
    assert {k: sum(h.values()) for k, h in from_json.items()} == {k: sum(h.values()) for k, h in from_text.items()}
    by_label = {"request": "kind=", "request_tagged": "status=", "work": ""}
    for (span, value), brackets in measured(lines).items():
        label = by_label[span] + value if by_label[span] else ""
        assert_in_buckets(from_json[(span, label)], brackets, (span, value))
    assert {o["span"]: o["count"] for o in objects if o["type"] == "unmatched"} == {
        "request": 1, "request_tagged": 1, "work": 1}


def test_hist_per_key(spans_run):
    lines, tracers = spans_run
    objects = [o for o in map(json.loads, tracers["per_key"].lines) if o["type"] == "span"]
    spans = measured(lines)
    # request: one span per id; odd ids are the WRITEs (spans.c)
    request = {o["key"]["id"]: {b["min"]: b["count"] for b in o["buckets"]} for o in objects if o["span"] == "request"}
    assert len(request) == 16 and all(sum(h.values()) == 1 for h in request.values())
    for id_, histogram in request.items():
        brackets = spans[("request", "WRITE" if id_ % 2 else "READ")]
        # which bracket is this id's is not printed: the widest of its kind
        assert_in_buckets(histogram, [(min(b[0] for b in brackets), max(b[1] for b in brackets))], id_)
    tagged = {o["key"]["tag"] for o in objects if o["span"] == "request_tagged"}
    assert len(tagged) == 16 and all(re.fullmatch(r"t[12]-r\d-(read|write)", t) for t in tagged)
    # work: by thread, the two workers' ids, 4 each
    work = [o for o in objects if o["span"] == "work"]
    assert len(work) == 2 and all(o["count"] == 4 and set(o["key"]) == {"tid"} for o in work)


def test_hist_milliseconds(spans_run):
    lines, tracers = spans_run
    found = histograms(tracers["msecs"].lines)
    assert list(found) == [("work", "")]
    brackets = [(low // 1000, high // 1000) for low, high in measured(lines)[("work", "-")]]
    assert_in_buckets(found[("work", "")], brackets, "work in ms")
    assert "msecs" in "\n".join(tracers["msecs"].lines)


def test_count_equals_hits_fired(spans_run):
    lines, tracers = spans_run
    table = dict(line.split() for line in tracers["count"].lines[2:])
    assert {name: int(n) for name, n in table.items()} == fired(lines)
    objects = [json.loads(line) for line in tracers["count_json"].lines]
    assert objects[0] == {"type": "attached", "probes": 4}
    assert objects[1:] == [{"type": "hits", "probe": p, "count": n} for p, n in fired(lines).items()]


def test_intervals_add_up_to_the_whole(spans_run):
    """-i: a summary per interval, of the hits since the last one; they
    add up to the hits fired (the program runs for about 0.1 s per round)."""
    lines, tracers = spans_run
    objects = [json.loads(line) for line in tracers["intervals"].lines]
    assert sum(1 for o in objects if o["type"] == "interval") >= 3
    totals = {}
    for o in objects:
        if o["type"] == "hits":
            totals[o["probe"]] = totals.get(o["probe"], 0) + o["count"]
    assert totals == fired(lines)
    text = tracers["hist_intervals"].lines
    stamps = [line for line in text if re.fullmatch(r"\[\d\d:\d\d:\d\d\]", line)]
    per_interval = [int(m[1]) for m in (re.match(r"^\s*\d+ -> \d+\s*: (\d+)", line) for line in text) if m]
    assert len(stamps) >= 3 and sum(per_interval) == fired(lines)["work_begin"]


def test_lines_json_agrees_with_text(spans_run):
    _, tracers = spans_run
    text = tracer_lines(tracers["lines"].lines)
    objects = [o for o in map(json.loads, tracers["lines_json"].lines) if o["type"] == "hit"]
    assert len(text) == len(objects) == sum(fired(spans_run[0])[p] for p in ("req_start", "req_done"))
    as_text = sorted(" ".join([o["probe"], *(f"{k}={v}" for k, v in o["args"].items())]) for o in objects)
    assert as_text == sorted(text)


def test_ebpf_output_compiles_in_bcc(spans_binary):
    """--ebpf with -p prints BCC's argument readers and the program: the
    whole text BCC compiles, in each mode."""
    binary, tool = spans_binary
    sleeper = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        for mode in ([], ["--count"], ["--hist"]):
            program = subprocess.run([SYSTEM_PYTHON, tool, "-p", str(sleeper.pid), "--ebpf", *mode],
                                     capture_output=True, text=True, timeout=120, check=True).stdout
            compiled = subprocess.run(
                [SYSTEM_PYTHON, "-c", "import sys; from bcc import BPF; BPF(text=sys.stdin.read()); print('compiled')"],
                input=program, capture_output=True, text=True, timeout=300)
            assert compiled.stdout.strip() == "compiled", (mode, compiled.stderr[-2000:])
    finally:
        sleeper.kill()
        sleeper.wait()


# --- BCC and bpftrace on one process (issue 14) ---

@pytest.mark.parametrize("semaphores", [True, False], ids=["semaphores", "no-semaphores"])
def test_bcc_and_bpftrace_trace_one_process_at_once(tmp_path, semaphores):
    """bpftrace attaches with the semaphore's offset as ref_ctr_offset (0
    without one); the kernel refuses a second uprobe on the same place
    with another. BCC 0.26's binding passed garbage there."""
    bpftrace = require_bpftrace()
    require_bcc()
    catalog = spans_catalog(tmp_path, semaphores)
    binary = build_program(C_DIR / "spans.c", catalog, "spans.h", tmp_path, defines=["SPANTEST_USDT"], extra=["-pthread"])
    assert all(semaphores_of(binary).values()) if semaphores else not any(semaphores_of(binary).values())
    tool = write_tool(catalog, tmp_path / "tools")
    if semaphores:  # BCC 0.26 enables probes with semaphores only in a running process
        alone = subprocess.run([SYSTEM_PYTHON, tool, binary], capture_output=True, text=True, timeout=120)
        assert alone.returncode == 2 and "give -p PID" in alone.stderr and "Traceback" not in alone.stderr
    script = "".join(f'usdt:{binary}:spantest:{p} {{ printf("bt {p}\\n"); }} ' for p in ("req_start", "req_done"))
    others = {"bpftrace": (lambda pid: [bpftrace, "-p", pid, "-e", script], "Attaching ")}
    if not semaphores:  # and a BCC tool on the binary alone (every process running it), stopped by Ctrl-C
        others["alone"] = (lambda pid: [SYSTEM_PYTHON, tool, binary, "--count"], "Tracing ")
    lines, tracers = run_spans(binary, {"count": lambda pid: [tool, "-p", pid, "--count"]}, others)
    counts = fired(lines)
    bt = [line.split()[1] for line in tracers["bpftrace"].lines if line.startswith("bt ")]
    assert {p: bt.count(p) for p in ("req_start", "req_done")} == {p: counts[p] for p in ("req_start", "req_done")}
    for name in ("count", "alone") if not semaphores else ("count",):
        table = dict(line.split() for line in tracers[name].lines[2:])
        assert {name: int(n) for name, n in table.items()} == counts, name
    assert not any("ref_ctr" in line or "Failed" in line for t in tracers.values() for line in t.stderr)


def test_strings_print_whole_up_to_255(tmp_path):
    """SPDK's NQNs (char[224], passed as 'const char *' without max_len)
    print at their full 223 characters (issue 14)."""
    require_bcc()
    catalog = CATALOGS / "bcc_strings.yaml"
    binary = build_program(C_DIR / "bcc_strings.c", catalog, "bcc_strings.h", tmp_path, defines=["STRTEST_USDT"])
    tool = write_tool(catalog, tmp_path / "tools")
    program, tracers = run_traced([binary], {"strings": lambda pid: [SYSTEM_PYTHON, tool, "-p", pid]})
    (expected,) = expected_lines(program)
    assert len(expected.split()[1]) == len("subnqn=") + 223
    assert tracer_lines(tracers["strings"].lines) == [expected]


def test_semaphore_offsets_are_the_notes_file_offsets(tmp_path):
    """The ref_ctr_offset the tool attaches with (libbcc's semaphore_offset)
    is the semaphore's place in the file, as the note and the program
    headers give it."""
    import ctypes as ct

    from elftools.elf.elffile import ELFFile

    from probegen.elf.notes import read_binary
    from probegen.runtime.bcc import Libbcc

    require_bcc()
    binary = build_program(C_DIR / "spans.c", spans_catalog(tmp_path, True), "spans.h", tmp_path,
                           defines=["SPANTEST_USDT"], extra=["-pthread"])
    libbcc = Libbcc()
    new_context = libbcc.lib.bcc_usdt_new_frompath
    new_context.argtypes, new_context.restype = [ct.c_char_p], ct.c_void_p
    context = new_context(str(binary).encode())
    try:
        found = libbcc.semaphore_offsets(context)
    finally:
        libbcc.lib.bcc_usdt_close.argtypes = [ct.c_void_p]
        libbcc.lib.bcc_usdt_close(context)
    with open(binary, "rb") as stream:
        loads = [s for s in ELFFile(stream).iter_segments() if s["p_type"] == "PT_LOAD"]
    expected = {}
    for probe in read_binary(binary).probes:
        (site,) = {s.semaphore: s for s in probe.sites}.values()  # sites of one probe share its semaphore
        (segment,) = [s for s in loads if s["p_vaddr"] <= site.semaphore < s["p_vaddr"] + s["p_filesz"]]
        expected[(str(binary).encode(), probe.provider.encode(), probe.name.encode())] = \
            site.semaphore - segment["p_vaddr"] + segment["p_offset"]
    assert found == expected and all(expected.values())


# --- a binary that differs from the catalog (issue 24) ---

def test_a_binary_that_differs_from_the_catalog_prints_every_value_right(tmp_path):
    """tests/c/bcc_mismatch.c against its catalog, as SPDK v25.09 against
    master's: a probe missing, one with an argument more, an enum's states
    swapped, an int passed as uint8_t at one site and uint64_t at another, a
    223-character string; hits of two threads on two CPUs print in the
    order they fired, and --timeline has each span on its thread. The tool
    is stopped while the program fires: each CPU's buffer then holds many
    hits, which BCC reads one buffer after the other."""
    from helpers import compile_c

    require_bcc()
    catalog = CATALOGS / "bcc_mismatch.yaml"
    binary = compile_c([C_DIR / "bcc_mismatch.c"], tmp_path / "mismatch", extra=["-g", "-pthread"])
    tool = write_tool(catalog, tmp_path / "tools")
    timeline = tmp_path / "timeline.json"
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        tracer = Process([SYSTEM_PYTHON, tool, "-p", program.pid, "--timeline", timeline])
        tracer.wait_line("Tracing ")
        os.kill(tracer.pid, signal.SIGSTOP)
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        os.kill(tracer.pid, signal.SIGCONT)
        assert tracer.proc.wait(60) == 0, tracer.stderr  # it ends with the traced process
    finally:
        program.kill()
        tracer.kill()
    for process in (program, tracer):
        process.drain()
    assert tracer_lines(tracer.lines) == expected_lines(program)  # in firing order, across the threads
    where = f"/proc/{program.pid}/root{binary}"
    assert tracer.stderr == [
        f"pgmis.py: warning: not traced, not found in pid {program.pid}: never_here",
        f"pgmis.py: warning: probe ctrlr_destruct has 3 arguments in '{where}', the catalog 2: "
        "the catalog's are read by position",
        f"pgmis.py: enum names from the debug info of '{binary}': nvmf_tgt_state (differs from the catalog's)",
    ]
    # The timeline: an instant per hit, with its values; a slice per span on its thread
    events = json.loads(timeline.read_text())["traceEvents"]
    assert all(e["pid"] == program.pid and e["ph"] in ("i", "X") for e in events)
    instants = [e for e in events if e["ph"] == "i"]
    stamps = [(int(m[1]) * 1_000_000 + int(m[2]), m[3]) for m in map(re.compile(r"^(\d+)\.(\d{6}): (.*)$").match,
                                                                      tracer.lines) if m]
    assert [(int(e["ts"]), " ".join([e["name"], *(f"{k}={v}" for k, v in e["args"].items())])) for e in instants] == \
        [(us, line) for us, line in stamps]
    slices = [e for e in events if e["ph"] == "X"]
    tids = [int(l.split("tid=")[1]) for l in program.lines if l.startswith("SPAN busy")]
    begins = [us for us, line in stamps if line == "busy_begin"]
    ends = [us for us, line in stamps if line == "busy_end"]
    assert [e["tid"] for e in slices] == tids and len(set(tids)) == 2
    for e, begin, end in zip(slices, begins, ends, strict=True):
        assert e["name"] == "busy" and int(e["ts"]) == begin and abs(e["ts"] + e["dur"] - end) <= 1


def test_names_the_traced_process_chose_reach_the_terminal_escaped(tmp_path):
    """An executable named with a terminal escape, a carriage return and a
    forged CI annotation: stderr shows them escaped. (A newline in the name
    BCC cannot trace: /proc/PID/maps shows it as \\012.)"""
    from helpers import compile_c

    require_bcc()
    built = compile_c([C_DIR / "bcc_mismatch.c"], tmp_path / "built", extra=["-g", "-pthread"])
    binary = tmp_path / "evil\x1b[2J\r::error::forged\x07"
    built.rename(binary)
    tool = write_tool(CATALOGS / "bcc_mismatch.yaml", tmp_path / "tools")
    argv = lambda pid: [SYSTEM_PYTHON, tool, "-p", pid, "--probe", "tgt_state"]  # noqa: E731
    _, tracers = run_traced([binary], {"bcc": argv}, count_done=lambda name, expected: 1)
    stderr = tracers["bcc"].stderr
    assert tracer_lines(tracers["bcc"].lines) == ["tgt_state state=FINI_STOP_LISTEN"]
    shown = str(tmp_path).replace("\\", "\\\\") + "/evil\\x1b[2J\\r::error::forged\\x07"
    assert stderr == [f"pgmis.py: enum names from the debug info of '{shown}': "
                      "nvmf_tgt_state (differs from the catalog's)"]


# --- debug info that is a zip bomb (issue 23) ---

# Runs argv[2:], then writes the peak RSS (KiB) of it and the children it
# waited for (the tool's DWARF reader) to argv[1]; exits as it did.
PEAK_RSS = ("import os, sys\npid = os.fork()\nif not pid:\n    os.execv(sys.argv[2], sys.argv[2:])\n"
            "_, status, usage = os.wait4(pid, 0)\nopen(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))")
BOMBS = {  # library: (GNU .zdebug, section, claimed bytes); each section inflates to 512 MiB of zeros
    1: (True, "info", 1 << 20),
    2: (False, "info", 1 << 20),  # SHF_COMPRESSED
    3: (False, "str", 255 << 20),  # just under the tool's 256 MB a section, with .debug_info intact
}


def test_zip_bombs_in_three_libraries_cost_the_tool_little(tmp_path):
    """A program (no debug info) linked with three libraries holding probes,
    each with a debug section that inflates to 512 MiB: the tool reads
    none of them, prints every hit with the catalog's enum names, says
    why on stderr, and starts in bounded time and memory (the issue: 96 s
    and 3.3 GB for three such libraries before attaching)."""
    from helpers import compile_c, require
    from helpers.dwarf import zip_bomb

    require_bcc()
    require("objcopy", "binutils")
    libraries = []
    for n, (legacy, section, claim) in BOMBS.items():
        built = compile_c([C_DIR / "bcc_bomb_lib.c"], tmp_path / f"built{n}.so", defines=[f"BOMB_LIB={n}"],
                          extra=["-shared", "-fPIC", "-g"])
        libraries.append(zip_bomb(built, tmp_path / f"libbomb{n}.so", legacy, mib=512, claim=claim, section=section))
    binary = compile_c([C_DIR / "bcc_bomb_main.c", *libraries], tmp_path / "bombed", extra=["-g0"])
    tool = write_tool(CATALOGS / "bcc_mismatch.yaml", tmp_path / "tools")
    peak = tmp_path / "peak_rss"
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        tracer = Process([SYSTEM_PYTHON, "-c", PEAK_RSS, peak, SYSTEM_PYTHON, tool, "-p", program.pid,
                          "--probe", "tgt_state", "--probe", "key_set"])
        tracer.wait_line("Tracing ")
        program.send("go\n")
        program.wait_line("DONE")
        tracer.wait_for(lambda lines: len(tracer_lines(lines)) >= 6, "6 hits")
        assert program.proc.wait(60) == 0
        assert tracer.proc.wait(60) == 0, tracer.stderr  # it ends with the traced process
    finally:
        program.kill()
        tracer.kill()
    for process in (program, tracer):
        process.drain()
    assert tracer_lines(tracer.lines) == expected_lines(program)
    assert "tgt_state state=FINI_STOP_LISTEN" in expected_lines(program)
    from elftools.elf.elffile import ELFFile

    with open(libraries[2], "rb") as file:
        stored = ELFFile(file).get_section_by_name(".debug_str")["sh_size"]
    where = f"/proc/{program.pid}/root{tmp_path}"
    assert tracer.stderr == [  # the executable, then the libraries in order; no traceback
        "pgmis.py: enum names of nvmf_tgt_state from the catalog (as the tool has them): "
        f"'{binary}' has no debug info; "
        f"debug info of '{where}/libbomb1.so' unusable: GNU .zdebug compression is not read; "
        f"debug info of '{where}/libbomb2.so' unusable: .debug_info inflates to more than the 1048576 bytes "
        f"it claims; debug info of '{where}/libbomb3.so' unusable: .debug_str claims {255 << 20} bytes "
        f"inflated from {stored}"]
    # Read (refused) within the 10 s deadline, and attached, for all three
    # files together: ~0.2 s and ~1.3 s here
    assert tracer.arrived[tracer.stderr[0]] < 10 and tracer.arrived[tracer.lines[0]] < 15
    # The tool and its DWARF reader: ~140 MiB here (~550 before the claims
    # were checked: pyelftools inflated libbomb3's .debug_str to its claim)
    assert int(peak.read_text()) < 256 << 10
