"""Catalog spans: loaded into the model, refused with file:line:col when
they cannot be measured; the span script generated from them; the pieces
of `probegen trace`'s summary modes that need no tracer (the tracer runs in
tests/test_spans_trace.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.errors import CatalogError, InputError
from probegen.generators import bpftrace, spans
from probegen.runtime.trace import JsonLines, summary_script
from helpers import CATALOGS, REPO, run_cli

PROBES = """\
provider: t
arg0: true
enums:
  - name: op
    enumerators: [OP_READ, OP_WRITE]
probes:
  - name: req_start
    group: g
    doc: starts
    args:
      - {name: id, type: uint64_t}
      - {name: kind, type: enum op}
      - {name: tag, type: const char *}
      - {name: obj, type: void *}
      - {name: a, type: int}
      - {name: late, type: int}
  - name: req_done
    group: g
    doc: ends
    args:
      - {name: id, type: uint32_t}
      - {name: tag, type: const char *}
      - {name: obj, type: int}
      - {name: status, type: int}
"""


def load(tmp_path: Path, spans_text: str):
    path = tmp_path / "c.yaml"
    path.write_text(PROBES + "spans:\n" + spans_text)
    return load_catalog(path)


def errors(tmp_path: Path, spans_text: str) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        load(tmp_path, spans_text)
    return [str(d) for d in caught.value.diagnostics]


def test_spans_are_modelled(tmp_path):
    catalog = load(tmp_path, """\
  - name: req
    doc: A request.
    start: req_start
    end: req_done
    key: [id, tag]
    by: [kind, status]
  - name: per_thread
    start: req_start
    end: req_done
""")
    req, per_thread = catalog.spans
    assert (req.name, req.doc, req.start.name, req.end.name) == ("req", "A request.", "req_start", "req_done")
    assert [(k.name, k.start.ctype.spelling, k.end.ctype.spelling) for k in req.key] == [
        ("id", "uint64_t", "uint32_t"), ("tag", "const char *", "const char *")]
    assert [(b.name, b.at_start, (req.start if b.at_start else req.end).name) for b in req.by] == [
        ("kind", True, "req_start"), ("status", False, "req_done")]
    assert per_thread.by_thread and per_thread.key == () and per_thread.doc == ""
    assert str(req.location).endswith("c.yaml:26:5")


def test_every_problem_is_reported_at_its_position(tmp_path):
    found = errors(tmp_path, """\
  - name: a
    start: nope
    end: req_done
  - name: b
    start: req_start
    end: req_done
    key: [obj, kind, late]
    by: [missing]
  - name: b
    start: req_start
    end: req_start
  - name: c
    start: req_start
    end: req_done
    key: [id]
    by: [id, id]
  - name: d
    start: req_start
    end: req_done
    extra: 1
""")
    path = str(Path(tmp_path) / "c.yaml")
    assert found == [
        f"{path}:27:12: error: span 'a': start probe 'nope' is not in the catalog's probes",
        f"{path}:32:11: error: span 'b': key 'obj' is void * in 'req_start' but int in 'req_done': a key "
        "compares the same kind of value (integers and enums, pointers, or strings)",
        f"{path}:32:16: error: span 'b': key 'kind' is not an argument of 'req_done' (a key must be an argument "
        "of both probes)",
        f"{path}:32:22: error: span 'b': key 'late' is not an argument of 'req_done' (a key must be an argument "
        "of both probes)",
        f"{path}:33:10: error: span 'b': by 'missing' is not an argument of 'req_done' or 'req_start'",
        f"{path}:34:11: error: duplicate span name 'b' (first defined at {path}:29:11)",
        f"{path}:36:10: error: span 'b': start and end are the same probe 'req_start'",
        f"{path}:41:14: error: span 'c': 'id' appears twice in 'by'",
        f"{path}:45:5: " + found[-1].split(": ", 1)[1],
    ]
    assert "extra" in found[-1]


def test_arguments_bpftrace_cannot_read_are_refused(tmp_path):
    # arg0 is SPDK's: 'late' is arg6, past bpftrace 0.17's arg0..arg5.
    (message,) = errors(tmp_path, "  - {name: s, start: req_start, end: req_done, by: [late]}\n")
    assert message.endswith("span 's': 'late' is arg6 of 'req_start'; bpftrace 0.17 reads arg0..arg5 only, "
                            "so span scripts cannot read it")


def test_too_many_keys(tmp_path):
    (message,) = errors(tmp_path, "  - {name: s, start: req_start, end: req_done, key: [id, tag, id, tag, id]}\n")
    assert message.endswith(":26:53: error: 'key': has 5 items; at most 4 are allowed")


def test_what_the_schema_refuses_is_not_checked_again(tmp_path):
    found = errors(tmp_path, "  - {name: s, end: req_done}\n"
                             "  - {name: t, start: req_start, end: req_done, key: [[id]]}\n")
    assert [m.split(": error: ")[1] for m in found] == ["'spans': missing required key 'start'",
                                                         "'key': expected a string, found a list"]


def test_group_named_spans_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(PROBES.replace("group: g", "group: spans", 1))
    with pytest.raises(CatalogError, match="group 'spans' would overwrite"):
        load_catalog(path)


def test_script_only_for_catalogs_with_spans(tmp_path):
    catalog = load(tmp_path, "  - {name: s, start: req_start, end: req_done, key: [id]}\n")
    names = [f.path.name for f in bpftrace.render_files(catalog, tmp_path / "out")]
    assert names[-1] == "spans.bt"
    plain = tmp_path / "plain.yaml"
    plain.write_text(PROBES)
    assert "spans.bt" not in [f.path.name for f in bpftrace.render_files(load_catalog(plain), tmp_path / "out")]


def test_script_is_deterministic_and_documents_each_span():
    catalog = load_catalog(CATALOGS / "spans.yaml")
    text = spans.render_program(catalog)
    assert text == spans.render_program(load_catalog(CATALOGS / "spans.yaml"))
    assert "// request: A request, matched by id; per kind (read at the start)." in text
    assert "//   from work_begin to work_end, matched by thread" in text
    # One block per probe, however many spans use it, attached as the other generated scripts are.
    assert text.count("usdt:*:spantest:req_start\n") == 1
    assert "@request_start[arg0] = $now;" in text and "@request_by0[arg0] = arg1;" in text
    assert "@request_tagged_start[str(arg2, 64)] = $now;" in text
    assert "@work_start[tid] = $now;" in text


def test_span_file_has_no_begin_or_end_for_spdk_bpftrace_sh_to_add(tmp_path):
    """SPDK's bpftrace.sh appends a BEGIN and an END block, and bpftrace
    0.17 takes one of each: spans.bt names enum values in rows where the
    name is used; `probegen trace`'s summary programs keep their own."""
    catalog = load_catalog(CATALOGS / "spans.yaml")
    (script,) = spans.render_files(catalog, tmp_path)
    assert not re.search(r"^\s*(BEGIN|END)\b", script.text, re.M)
    assert '$request_n0 = "UNKNOWN";' in script.text
    assert 'if ($request_b0 == 0) { $request_n0 = "READ"; }' in script.text
    assert "@request_us[$request_n0] = hist($request_us);" in script.text
    whole = spans.render_program(catalog)
    assert re.search(r"^BEGIN$", whole, re.M) and "\tclear(@request_start);" in whole


def test_string_keys_read_as_long_as_max_len_asks(tmp_path):
    catalog = load(tmp_path, "  - {name: s, start: req_start, end: req_done, key: [tag]}\n")
    assert "str(arg3, 64)" in spans.render_program(catalog)
    path = tmp_path / "long.yaml"
    path.write_text((PROBES + "spans:\n  - {name: s, start: req_start, end: req_done, key: [tag]}\n").replace(
        "{name: tag, type: const char *}", "{name: tag, type: const char *, max_len: 150}"))
    text = spans.render_program(load_catalog(path))
    assert "str(arg3, 151)" in text and "BPFTRACE_STRLEN=151" in text


def test_spdk_catalog_declares_spans():
    catalog = load_catalog(REPO / "probes.yaml")
    by_name = {s.name: s for s in catalog.spans}
    change = by_name["subsystem_state_change"]
    assert (change.start.name, change.end.name) == ("nvmf_subsystem_change_state", "nvmf_subsystem_change_state_done")
    assert [k.name for k in change.key] == ["subnqn"] and [b.name for b in change.by] == ["requested_state"]


def test_summary_names_unknown_spans_and_probes(tmp_path):
    catalog = load_catalog(CATALOGS / "spans.yaml")
    with pytest.raises(InputError, match=r"spans.yaml has no span nope \(its spans: request, request_tagged, work\)"):
        summary_script(catalog, os.getpid(), "request,nope", None)
    with pytest.raises(InputError, match="has no probe bogus"):
        summary_script(catalog, os.getpid(), None, "bogus")
    # Named ones need no look at the process.
    script = summary_script(catalog, os.getpid(), "work", "req_start", interval=5)
    assert "@hits[\"req_start\"] = count();" in script.text and "interval:s:5" in script.text
    assert "@request_us" not in script.text


def test_summary_of_a_process_without_the_probes(tmp_path):
    catalog = load_catalog(CATALOGS / "spans.yaml")
    with pytest.raises(InputError, match="has the probes of none of spans.yaml's spans"):
        summary_script(catalog, os.getpid(), "", None)


def test_json_lines_name_spans_by_values_and_probes():
    convert = JsonLines(load_catalog(CATALOGS / "spans.yaml")).convert
    lines = [
        '{"type": "attached_probes", "data": {"probes": 4}}',
        '{"type": "time", "data": "10:00:01\\n"}',
        '{"type": "hist", "data": {"@request_us": {"READ": [{"min": 1024, "max": 2047, "count": 3}, '
        '{"min": 2048, "max": 4095, "count": 0}, {"min": 4096, "max": 8191, "count": 1}]}}}',
        '{"type": "hist", "data": {"@request_tagged_us": {"-1": [{"min": 1, "max": 1, "count": 2}]}}}',
        '{"type": "hist", "data": {"@work_us": [{"min": 16384, "max": 32767, "count": 5}]}}',
        '{"type": "map", "data": {"@work_unmatched": 1}}',
        '{"type": "map", "data": {"@hits": {"req_start": 7}}}',
        '{"type": "map", "data": {"@other": 3}}',
        "not json",
        "",
    ]
    out = [json.loads(l) for line in lines for l in convert(line)]
    assert out == [
        {"type": "attached", "probes": 4},
        {"type": "interval", "time": "10:00:01"},
        {"type": "span", "span": "request", "by": {"kind": "READ"}, "unit": "us", "count": 4,
         "buckets": [{"min": 1024, "max": 2047, "count": 3}, {"min": 4096, "max": 8191, "count": 1}]},
        {"type": "span", "span": "request_tagged", "by": {"status": -1}, "unit": "us", "count": 2,
         "buckets": [{"min": 1, "max": 1, "count": 2}]},
        {"type": "span", "span": "work", "by": {}, "unit": "us", "count": 5,
         "buckets": [{"min": 16384, "max": 32767, "count": 5}]},
        {"type": "unmatched", "span": "work", "count": 1},
        {"type": "hits", "probe": "req_start", "count": 7},
        {"type": "map", "data": {"@other": 3}},
        {"type": "text", "text": "not json"},
    ]


@pytest.mark.parametrize("argv, message", [
    ([], "nothing to trace: give bpftrace scripts, --hist or --count"),
    (["x.bt", "--hist"], "give scripts or --hist/--count, not both"),
    (["x.bt", "--interval", "2"], "--interval applies to --hist and --count"),
    (["--hist", "--interval", "0"], "at least 1"),
])
def test_trace_usage_errors(capsys, argv, message):
    try:
        code, _, err = run_cli(capsys, "trace", os.getpid(), *argv)
    except SystemExit as exc:  # argparse's own usage errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
