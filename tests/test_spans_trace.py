"""Span scripts against a real process, with real bpftrace and real time.

tests/c/spans.c fires requests (1.5 ms READs and 12 ms WRITEs in flight at
once, two threads, matched by id and by tag string) and pieces of work
(24 ms, matched by thread), each measured by the program's own clock, plus
an end without a start per span. The generated spans.bt (text) and
`probegen trace --hist --count --json` run at the same time; their
histograms must agree with each other bucket for bucket, and each with the
program's own measurements within one log2 bucket of scheduling slack
(the time between the program's clock reads and bpftrace's handlers);
the counts must equal the hits fired.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict

import pytest

from helpers import C_DIR, CATALOGS, require_bpftrace
from helpers.tracing import Process, build_program, probegen_argv, wait_attached
from probegen.catalog import load_catalog
from probegen.generators.spans import render_files

CATALOG = CATALOGS / "spans.yaml"
ROUNDS = 10
# The delays tests/c/spans.c sleeps, and the log2 bucket each falls in.
NOMINAL = {("request", "READ"): 1500, ("request", "WRITE"): 12000, ("request_tagged", "0"): 1500,
           ("request_tagged", "1"): 12000, ("work", ""): 24000}
SLACK = 1  # buckets
_HIST_HEAD = re.compile(r"^@(\w+)_us(?:\[(.*)\])?:\s*$")
_BUCKET = re.compile(r"^\[(\d+)([KMG]?)(?:, (\d+)([KMG]?)\))?\]?\s+(\d+) \|")
_COUNT = re.compile(r"^@(\w+)_unmatched: (\d+)$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def bucket(us: int) -> int:
    """Index of bpftrace's log2 bucket: [2^i, 2^(i+1)); 0 and 1 are their own."""
    return -1 if us <= 0 else int(math.log2(us))


def text_histograms(lines: list[str]) -> tuple[dict, dict]:
    """bpftrace's printed maps: {(span, by): Counter(bucket index: count)}, {span: unmatched}."""
    hists: dict = {}
    unmatched = {}
    current = None
    for line in lines:
        head = _HIST_HEAD.match(line)
        if head:
            current = hists.setdefault((head[1], head[2] or ""), Counter())
            continue
        count = _COUNT.match(line)
        if count:
            unmatched[count[1]] = int(count[2])
            current = None
            continue
        row = _BUCKET.match(line)
        if row and current is not None:
            low = int(row[1]) * _UNITS[row[2]]
            if int(row[5]):
                current[bucket(low)] += int(row[5])
        elif not line.strip():
            current = None
    return hists, unmatched


def json_results(lines: list[str]) -> tuple[dict, dict, dict]:
    hists, unmatched, hits = {}, {}, {}
    for line in lines:
        event = json.loads(line)  # every line parses
        if event["type"] == "span":
            by = ",".join(str(v) for v in event["by"].values())
            counter = Counter({bucket(b["min"]): b["count"] for b in event["buckets"]})
            assert sum(counter.values()) == event["count"]
            hists[(event["span"], by)] = counter
        elif event["type"] == "unmatched":
            unmatched[event["span"]] = event["count"]
        elif event["type"] == "hits":
            hits[event["probe"]] = event["count"]
    return hists, unmatched, hits


def measured(program: Process) -> dict:
    """{(span, by): [outer microseconds]} as the program measured them."""
    result = defaultdict(list)
    for line in program.lines:
        if line.startswith("SPAN "):
            _, span, by, _inner, outer = line.split()
            result[(span, "" if by == "-" else by)].append(int(outer))
    return result


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    require_bpftrace()
    directory = tmp_path_factory.mktemp("spans")
    binary = build_program(C_DIR / "spans.c", CATALOG, "spans.h", directory,
                           defines=["SPANTEST_USDT"], extra=["-pthread"])
    (script,) = render_files(load_catalog(CATALOG), directory)
    script.path.write_text(script.text)
    program = Process([binary, ROUNDS], stdin=True)
    program.wait_line("READY")
    tracers = {}
    try:
        tracers["text"] = Process(probegen_argv("trace", program.pid, script.path))
        tracers["json"] = Process(probegen_argv("trace", program.pid, "--hist", "--count", "--json",
                                                "--catalog", CATALOG))
        tracers["text"].wait_line("Tracing ")  # probegen trace's banner: spans.bt has no BEGIN
        tracers["json"].wait_for(lambda lines: any('"printf"' in l and "Tracing" in l for l in lines),
                                 "the json tracer to attach")
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        for tracer in tracers.values():  # each ends with the process (a SIGINT then raced its exit)
            code = tracer.proc.wait(60)
            assert code == 0, (code, tracer.stderr)
    finally:
        program.kill()
        for tracer in tracers.values():
            tracer.kill()
    for process in (program, *tracers.values()):
        process.drain()
    return program, tracers


def test_histograms_match_the_programs_own_clock(traced):
    program, tracers = traced
    hists, unmatched = text_histograms(tracers["text"].lines)
    expected = measured(program)
    assert set(hists) == set(expected) == set(NOMINAL)
    report = []
    for key, values in sorted(expected.items()):
        got = sorted(hists[key].elements())
        want = sorted(bucket(v) for v in values)
        assert len(got) == len(want) == 2 * ROUNDS  # two threads, one of each per round
        # Sorted, the i-th tracer bucket is within SLACK of the i-th measured one.
        off = [g - w for g, w in zip(got, want)]
        assert all(abs(d) <= SLACK for d in off), (key, got, want)
        nominal = bucket(NOMINAL[key])
        report.append(f"{key}: nominal [{1 << nominal}, {2 << nominal}) us, tracer {dict(hists[key])}, "
                      f"program {dict(Counter(want))}")
    print("\n".join(report))
    assert unmatched == {"request": 1, "request_tagged": 1, "work": 1}


def test_every_start_is_matched_by_its_key(traced):
    """Requests of both threads overlap: matched by anything but their key,
    READs and WRITEs would trade latencies. No span is shorter than its
    delay's bucket, and each the program itself saw within SLACK buckets
    of its delay is there in the tracer too (the tracer's time lies inside
    the program's, so scheduling can only push values up)."""
    program, tracers = traced
    hists, _ = text_histograms(tracers["text"].lines)
    expected = measured(program)
    for key, delay in NOMINAL.items():
        nominal = bucket(delay)
        assert min(hists[key]) >= nominal, (key, hists[key])
        in_slack = sum(n for b, n in hists[key].items() if b <= nominal + SLACK)
        program_in_slack = sum(1 for v in expected[key] if bucket(v) <= nominal + SLACK)
        assert in_slack >= program_in_slack, (key, hists[key], expected[key])


def test_json_lines_agree_with_text(traced):
    """Both tracers saw the same hits, each timing them in its own handler:
    the same counts, and the same buckets but for a value a few
    microseconds from a bucket's edge."""
    _, tracers = traced
    text_hists, text_unmatched = text_histograms(tracers["text"].lines)
    json_hists, json_unmatched, _ = json_results(tracers["json"].lines)
    assert set(json_hists) == set(text_hists)
    for key, counter in text_hists.items():
        got, want = sorted(json_hists[key].elements()), sorted(counter.elements())
        assert len(got) == len(want), key
        assert all(abs(g - w) <= 1 for g, w in zip(got, want)), (key, got, want)
    assert json_unmatched == text_unmatched


def test_count_mode_equals_hits_fired(traced):
    program, tracers = traced
    fired = {l.split()[1]: int(l.split()[2]) for l in program.lines if l.startswith("FIRED ")}
    _, _, hits = json_results(tracers["json"].lines)
    assert hits == fired


# "bpftrace -p" would show what the shebang shows: the same bpftrace, the same flags.
@pytest.mark.parametrize("way", ["probegen trace", "shebang", "SPDK's bpftrace.sh"])
def test_spdk_span_script_measures_spdk_call_sites(tmp_path, way):
    """scripts/bpf/probegen/spans.bt, as committed, loads in bpftrace 0.17
    and measures every span of tests/c/tracing_spdk.c, which fires each
    probe once as SPDK's sources do (a poll group destroyed before one is
    created: an end without a start, and a start still open at exit),
    through each way a script is run: SPDK's bpftrace.sh
    (tests/spdk_bpftrace.sh) appends its own BEGIN and END blocks."""
    import os

    require_bpftrace()
    from helpers import TESTS
    from helpers.tracing import SPDK_CATALOG, build_spdk_program

    script = SPDK_CATALOG.parent / "scripts/bpf/probegen/spans.bt"
    binary = build_spdk_program(tmp_path)
    program = Process([binary], stdin=True)
    program.wait_line("READY")
    pid = program.pid
    argv = {"probegen trace": probegen_argv("trace", pid, script),
            "shebang": [script, "-p", pid], "SPDK's bpftrace.sh": [TESTS / "spdk_bpftrace.sh", pid, script]}[way]
    # The script's header asks for it; probegen trace sets it itself.
    env = {**os.environ, "BPFTRACE_STRLEN": "200"} if way != "probegen trace" else None
    tracer = Process(argv, env=env)
    try:
        if way == "probegen trace":
            tracer.wait_line("Tracing ")  # its banner: spans.bt has no BEGIN
        else:  # bpftrace alone says "Attaching" before it attaches, and nothing after
            wait_attached(pid, script.read_text())
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        assert tracer.proc.wait(60) == 0, tracer.stderr  # ends with the process
    finally:
        program.kill()
        tracer.kill()
    tracer.drain()
    hists, unmatched = text_histograms(tracer.lines)
    spans = {s.name for s in load_catalog(SPDK_CATALOG).spans}
    assert {name for name, _ in hists} == spans - {"poll_group_lifetime"}
    assert all(sum(c.values()) == 1 for c in hists.values()), hists
    assert ("subsystem_state_change", "PAUSED") in hists
    assert ("poll_group_state_change", "UNKNOWN") in hists  # the done probe passes state 8
    assert unmatched["poll_group_lifetime"] == 1
    assert sum(unmatched.values()) == 1
    # Without an END block every map prints: the one span still open, and
    # SPDK's enum maps only when its bpftrace.sh added them (and cleared them).
    others = sorted(l.split("[")[0].split(":")[0] for l in tracer.lines
                    if l.startswith("@") and not _HIST_HEAD.match(l) and not _COUNT.match(l))
    assert others == ["@poll_group_lifetime_start"], "\n".join(tracer.lines)


def test_bpftrace_and_bcc_json_report_the_same_attached_and_unmatched(tmp_path):
    """`probegen trace --hist --json` and the BCC tool's `--hist --json` on
    one run of spans.c, each with a summary a second: `attached` is the
    catalog probes attached in the process (4, whatever their sites and
    bpftrace's BEGIN, END and interval blocks), and `unmatched` the same
    counts, none printed as 0 (bpftrace prints its cleared maps)."""
    from helpers import SYSTEM_PYTHON
    from helpers.tracing import require_bcc
    from probegen.files.output import write_all
    from probegen.generators import bcc

    require_bpftrace()
    require_bcc()
    catalog = load_catalog(CATALOG)
    binary = build_program(C_DIR / "spans.c", CATALOG, "spans.h", tmp_path, defines=["SPANTEST_USDT"],
                           extra=["-pthread"])
    write_all(bcc.render_files(catalog, tmp_path / "tools"))
    program = Process([binary, "2"], stdin=True)
    tracers = {}
    try:
        program.wait_line("READY")
        tracers["bpftrace"] = Process(probegen_argv("trace", program.pid, "--hist", "--json", "--interval", "1",
                                                    "--catalog", CATALOG))
        tracers["bpftrace"].wait_for(lambda lines: any("Tracing" in l for l in lines), "bpftrace to attach")
        tracers["bcc"] = Process([SYSTEM_PYTHON, tmp_path / "tools" / bcc.tool_name(catalog), "-p", program.pid,
                                  "--hist", "--json", "-i", "1"])
        tracers["bcc"].wait_line('{"type": "attached"')
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        assert tracers["bcc"].proc.wait(60) == 0, tracers["bcc"].stderr  # it ends with the process
        assert tracers["bpftrace"].proc.wait(60) == 0, tracers["bpftrace"].stderr  # so does probegen trace
    finally:
        program.kill()
        for tracer in tracers.values():
            tracer.kill()
    results = {}
    for name, tracer in tracers.items():
        tracer.drain()
        objects = [json.loads(line) for line in tracer.lines]
        unmatched = Counter()
        for o in objects:
            if o["type"] == "unmatched":
                assert o["count"] > 0, (name, o)
                unmatched[o["span"]] += o["count"]
        results[name] = ([o["probes"] for o in objects if o["type"] == "attached"], unmatched)
    assert results["bpftrace"] == results["bcc"] == ([4], {"request": 1, "request_tagged": 1, "work": 1})
