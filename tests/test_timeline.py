"""Timelines (issue 24): hits and spans as Chrome trace-event JSON, from
probegen trace (bpftrace) on tests/c/spans.c; the BCC tool's --timeline is
checked in tests/test_bcc.py against a program with two threads."""

from __future__ import annotations

import json
import re

from helpers import CATALOGS, C_DIR, require_bpftrace
from helpers.tracing import Process, build_program, probegen_argv
from probegen.catalog import load_catalog
from probegen.generators.bpftrace import render_files
from probegen.runtime.bcc import trace_events

CATALOG = CATALOGS / "spans.yaml"
STAMP = re.compile(r"^(\d+)\.(\d{6}): (\w+) ?(.*)$")


def check_trace_events(document):
    """What Perfetto UI, chrome://tracing and speedscope need of each event."""
    assert set(document) == {"traceEvents", "displayTimeUnit"}
    for event in document["traceEvents"]:
        assert isinstance(event["name"], str) and isinstance(event["args"], dict)
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int) and event["ts"] >= 0
        assert event["ph"] == "X" and event["dur"] >= 0 or event["ph"] == "i" and event["s"] == "t"
    return json.loads(json.dumps(document))


def test_spans_pair_by_key_or_by_thread():
    spans = [("req", "start", "done", [("id", "req_id")]), ("work", "begin", "end", [])]
    hits = [(1000, 1, "start", {"id": 7}), (2000, 1, "begin", {}), (2500, 2, "begin", {}), (3000, 2, "done", {"req_id": 7}),
            (4000, 2, "end", {}), (9000, 1, "end", {}), (9500, 1, "done", {"req_id": 8})]
    events = check_trace_events(trace_events(hits, spans, 5))["traceEvents"]
    instants = [(e["name"], e["ts"], e["tid"]) for e in events if e["ph"] == "i"]
    assert instants == [(h[2], h[0] / 1000, h[1]) for h in hits]
    assert [(e["name"], e["ts"], e["dur"], e["tid"]) for e in events if e["ph"] == "X"] == [
        ("req", 1.0, 2.0, 1), ("work", 2.5, 1.5, 2), ("work", 2.0, 7.0, 1)]  # an end without a start: no slice


def test_probegen_trace_timeline_has_every_span_at_the_printed_times_on_its_thread(tmp_path):
    """probegen trace req.bt work.bt --timeline on spans.c's two threads: a
    slice per span from its start's printed time to its end's, on the
    thread of its start. The lines trace makes print each hit's thread for
    the timeline (and trace takes it off what it prints), so each thread
    is a track and the work spans, matched by thread, are there too: each
    as long as the 24 ms a thread works (matched across the threads,
    which work at once, some would be shorter)."""
    require_bpftrace()
    catalog = load_catalog(CATALOG)
    binary = build_program(C_DIR / "spans.c", CATALOG, "spans.h", tmp_path, defines=["SPANTEST_USDT"],
                           extra=["-pthread"])
    scripts = [f for f in render_files(catalog, tmp_path / "bt") if f.path.name in ("req.bt", "work.bt")]
    scripts[0].path.parent.mkdir(parents=True)
    for script in scripts:
        script.path.write_text(script.text)
    timeline = tmp_path / "timeline.json"
    program = Process([binary, "2"], stdin=True)
    try:
        program.wait_line("READY")
        tracer = Process(probegen_argv("trace", program.pid, *(s.path for s in scripts), "--catalog", CATALOG,
                                       "--timeline", timeline))
        tracer.wait_line("Tracing ")
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(60) == 0
        assert tracer.proc.wait(60) == 0, tracer.stderr  # it ends with the process
    finally:
        program.kill()
        tracer.kill()
    tracer.drain()
    events = check_trace_events(json.loads(timeline.read_text()))["traceEvents"]
    hits = [(int(m[1]) * 1_000_000 + int(m[2]), m[3], m[4]) for m in map(STAMP.match, tracer.lines) if m]
    assert not any("[tid" in line for line in tracer.lines)
    instants = [e for e in events if e["ph"] == "i"]
    assert [(int(e["ts"]), e["name"]) for e in instants] == [(us, probe) for us, probe, _ in hits]
    assert all(e["pid"] == program.pid for e in events)
    workers = sorted({e["tid"] for e in instants if e["name"] == "req_start"})
    assert len(workers) == 2 and program.pid not in workers
    starts = {re.search(r"\bid=(\d+)", rest)[1]: us for us, probe, rest in hits if probe == "req_start"}
    ends = {re.search(r"\bid=(\d+)", rest)[1]: us for us, probe, rest in hits if probe == "req_done"}
    slices = {(e["name"], e["args"]["id"]): e for e in events if e["ph"] == "X" and e["name"] == "request"}
    paired = [i for i in ends if i in starts]
    assert paired and set(slices) == {("request", int(i)) for i in paired}
    start_tids = {e["args"]["id"]: e["tid"] for e in instants if e["name"] == "req_start"}
    for i in paired:
        e = slices[("request", int(i))]
        assert e["tid"] == start_tids[int(i)] and e["ts"] == starts[i] and e["dur"] == ends[i] - starts[i]
    work = [e for e in events if e["ph"] == "X" and e["name"] == "work"]
    assert sorted(e["tid"] for e in work) == sorted(workers * 2)  # two rounds each; the stray end has no slice
    assert all(e["dur"] >= 24000 for e in work), work


def test_a_split_hit_never_completed_is_no_hit_and_keeps_the_spans_by_thread():
    """The parts of a hit the trace ended in the middle of are left out: read
    as a hit without a thread, they made every span paired by thread vanish."""
    from probegen.runtime.trace import _hit

    labels = {"begin": ["id", "name"], "end": []}
    assert _hit("1.000002: begin [tid 7] id=3 name=a b", labels) == (1000002000, 7, "begin", {"id": 3, "name": "a b"})
    assert _hit("1.000003: end", labels) == (1000003000, None, "end", {})
    assert _hit("1.000004: begin [tid 7 1/2] id=3 name=a", labels) is None
    assert _hit("1.000005: other [tid 7] x=1", labels) is None


def test_a_hit_is_read_by_its_labels_in_order():
    """Each value follows its own label: a label ending an earlier one ("qpair->qid", then
    "qid") or spelled inside an earlier string value was found there, from the line's start."""
    from probegen.runtime.trace import _hit

    labels = {"op": ["qpair->qid", "qid", "name"], "s": ["name", "size"]}
    assert _hit("1.000001: op [tid 7] qpair->qid=1 qid=2 name=x", labels)[3] == {"qpair->qid": 1, "qid": 2, "name": "x"}
    assert _hit("1.000001: s name=xsize=9 size=4", labels)[3] == {"name": "xsize=9", "size": 4}
    assert _hit("1.000001: s name=a b", labels)[3] == {}  # not the labels' line: no fields read
    # a line of other labels: refused in linear time (a backtracking read took minutes on this one)
    hostile = "1.000001: p a=" + " b= c=" * 2000 + " x"
    assert _hit(hostile, {"p": ["a", "b", "c", "d"]})[3] == {}
