"""probegen.runtime.bcc, the part of every generated BCC tool no catalog
changes: options, selection, histograms, counts and JSON, without BCC.
(tests/test_bcc.py runs the generated tools for real.)"""

from __future__ import annotations

import ast
import ctypes as ct
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CATALOGS, SYSTEM_PYTHON, compile_c
from probegen.catalog import load_catalog
from probegen.generators import bcc as generator
from probegen.runtime import bcc

SPANS = CATALOGS / "spans.yaml"


def spans_tool():
    """The tables of the spans catalog's tool, as the tool itself builds them."""
    text = generator.render_tool(load_catalog(SPANS))
    namespace = {"__name__": "generated"}
    exec(compile(text, "spantest.py", "exec"), namespace)  # the tool's own code, not main()
    return namespace["TOOL"]


@pytest.fixture(scope="module")
def tool():
    return spans_tool()


def test_log2_slots_and_rows():
    assert [bcc.log2_slot(v) for v in (0, 1, 2, 3, 4, 1023, 1024)] == [0, 1, 2, 2, 3, 10, 11]
    assert [bcc.slot_range(s) for s in (0, 1, 2, 3, 11)] == [(0, 1), (0, 1), (2, 3), (4, 7), (1024, 2047)]
    # rows run from "0 -> 1" to the last slot with a count; slots 0 and 1 share a row
    assert bcc.rows({0: 2, 1: 1, 3: 4}) == [(0, 1, 3), (2, 3, 0), (4, 7, 4)]
    assert bcc.rows({}) == [(0, 1, 0)]


def test_histogram_text_in_bcc_style():
    text = bcc.format_histogram("usecs", [(0, 1, 0), (2, 3, 1), (4, 7, 4)])
    assert text.splitlines() == [
        "                   usecs : count     distribution",
        "         0 -> 1          : 0        |                                        |",
        "         2 -> 3          : 1        |**********                              |",
        "         4 -> 7          : 4        |****************************************|",
    ]


@pytest.mark.parametrize("argv, message", [
    ([], "give -p PID or a BINARY"),
    (["-p", "0"], "-p needs a process id above 0"),
    (["-p", "1", "-i", "1"], "--interval needs --count or --hist"),
    (["-p", "1", "-m"], "--per-key, -m and --span need --hist"),
    (["-p", "1", "-d", "0"], "--duration needs a number of seconds above 0"),
    (["-p", "1", "--probe", "nope"], "no probe, group or span named 'nope' (see --list)"),
    (["-p", "1", "--hist", "--span", "nope"], "no probe, group or span named 'nope' (see --list)"),
    (["-p", "1", "--hist", "--count"], "not allowed with argument"),
])
def test_bad_options_are_one_line_and_exit_2(tool, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        bcc.parse_args(tool, argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "error:" in error and message in error


def test_hist_needs_spans(tool):
    bare = bcc.Tool("p", "d", "", {}, [("a", "g", "doc", [])], [])
    with pytest.raises(bcc.UsageError, match="no spans"):
        bcc.check_args(bare, bcc.parser_for(bare).parse_args(["-p", "1", "--hist"]))


def test_selection(tool):
    def chosen(*argv):
        probes, spans = bcc.selection(tool, bcc.parse_args(tool, ["-p", "1", *argv]))
        return [p.name for p in probes], [s.name for s in spans]

    assert chosen() == (["req_start", "req_done", "work_begin", "work_end"], [])
    assert chosen("--group", "work", "--probe", "req_done") == (["req_done", "work_begin", "work_end"], [])
    assert chosen("--hist") == (["req_start", "req_done", "work_begin", "work_end"], ["request", "request_tagged", "work"])
    assert chosen("--hist", "--span", "work") == (["work_begin", "work_end"], ["work"])
    assert chosen("--hist", "--group", "req") == (["req_start", "req_done"], ["request", "request_tagged"])


def test_program_switches(tool):
    def program(*argv):
        args = bcc.parse_args(tool, ["-p", "1", *argv])
        return bcc.program_text(tool, args, bcc.selection(tool, args)[1]).splitlines()[:3]

    assert program()[0] == "#define PG_LINES 1"
    assert program("--count")[0] == "#define PG_COUNT 1"
    assert program("--hist", "--span", "work") == ["#define PG_SPANS 1", "#define PG_SPAN_2 1", ""]


def _hit(probe, ts, **values):
    event = probe.event()
    event.ts, event.id = ts, probe.number
    for name, value in values.items():
        setattr(event, name, value)
    return ct.addressof(event), event


def test_hit_line_text_and_json_agree(tool):
    probe = tool.by_name["req_start"]
    data, _keep = _hit(probe, 12_345_678_901, f0=7, f1=1, f2=b"tag-7")
    assert bcc.hit_line(tool, data, False) == "12.345678: req_start id=7 kind=WRITE tag=tag-7"
    obj = json.loads(bcc.hit_line(tool, data, True))
    assert obj == {"type": "hit", "probe": "req_start", "ts_ns": 12_345_678_901,
                   "args": {"id": 7, "kind": "WRITE", "tag": "tag-7"}}
    unknown, _keep = _hit(probe, 0, f0=1, f1=9, f2=b"")
    assert bcc.hit_line(tool, unknown, False) == "0.000000: req_start id=1 kind=UNKNOWN(9) tag="


def _span(span, ns, by=(), **key):
    event = span.event()
    event.ns, event.span = ns, span.number
    for name, value in key.items():
        setattr(event.key, name, value)
    for field, value in zip(span.by, by):
        setattr(event, field.member, value)
    return event


@pytest.mark.parametrize("per_key", [False, True])
def test_histograms_per_by_and_per_key(tool, per_key):
    request = tool.spans[0]
    histograms = bcc.Histograms(tool.spans, per_key, milliseconds=False)
    events = [_span(request, 1_500_000, (0,), k0=1), _span(request, 1_600_000, (0,), k0=2),
              _span(request, 12_000_000, (1,), k0=1)]
    for event in events:
        histograms.add(ct.addressof(event))
    taken = histograms.take()
    text = histograms.text(taken, {0: 1})
    objects = histograms.json(taken, {0: 1})
    assert histograms.take() == []  # each take starts over
    if per_key:
        assert [o["key"] for o in objects[:-1]] == [{"id": 1}, {"id": 2}]
        assert "span request: id=1" in text and "span request: id=2" in text
    else:
        assert [o["by"] for o in objects[:-1]] == [{"kind": "READ"}, {"kind": "WRITE"}]
        assert objects[0]["buckets"] == [{"min": 1024, "max": 2047, "count": 2}]
        assert objects[0]["count"] == 2 and objects[0]["unit"] == "us" and objects[0]["type"] == "span"
        assert objects[1]["buckets"] == [{"min": 8192, "max": 16383, "count": 1}]
        assert "span request: kind=READ" in text
    assert objects[-1] == {"type": "unmatched", "span": "request", "count": 1}
    assert text.endswith("span request: 1 end without a start")
    # the text's rows are the JSON's buckets
    for obj in objects[:-1]:
        for bucket in obj["buckets"]:
            assert "%10d -> %-10d : %-8d |" % (bucket["min"], bucket["max"], bucket["count"]) in text


def test_milliseconds(tool):
    histograms = bcc.Histograms(tool.spans, False, milliseconds=True)
    event = _span(tool.spans[2], 8_500_000, tid=5)
    histograms.add(ct.addressof(event))
    (_, slots), = histograms.take()
    assert histograms.unit == "msecs" and slots == {4: 1}  # 8 ms: [8, 16)


def test_runtime_loads_without_bcc_or_probegen():
    """The tool embeds the module: it may import only the standard library
    at load time (bcc inside main), on the system's Python 3.9 or later."""
    source = Path(bcc.__file__).read_text()
    tree = ast.parse(source)
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert top <= set(sys.stdlib_module_names), top
    # ... and nothing newer than 3.9 (Debian 11's python3)
    ast.parse(source, feature_version=(3, 9))


def test_generated_tool_lists_and_prints_its_program(tmp_path):
    path = tmp_path / "spantest.py"
    path.write_text(generator.render_tool(load_catalog(SPANS)))
    listing = subprocess.run([sys.executable, path, "--list"], capture_output=True, text=True, check=True).stdout
    assert "  req req_start: A request starts." in listing
    assert "  request: req_start -> req_done, key id; by kind:" in listing
    program = subprocess.run([sys.executable, path, "--hist", "--ebpf"], capture_output=True, text=True,
                             check=True).stdout
    assert program.startswith("#define PG_SPANS 1\n") and "BPF_HASH(span_0_starts" in program


# --- enum names from the traced files' debug info ---

# req_kind as another version of the program numbers it: the catalog's
# KIND_READ, KIND_WRITE the other way round, and a value with an alias.
REQ_KIND_C = """enum req_kind { KIND_WRITE, KIND_READ, KIND_OTHER = 7, KIND_AGAIN = 7 };
volatile enum req_kind kind = KIND_READ;
int main(void) { return kind; }
"""


@pytest.fixture(scope="module")
def enum_binaries(tmp_path_factory):
    """(a binary whose DWARF has req_kind, one whose DWARF has not, one without DWARF)."""
    directory = tmp_path_factory.mktemp("bcc_enums")
    (directory / "kind.c").write_text(REQ_KIND_C)
    (directory / "plain.c").write_text("int main(void) { return 0; }\n")
    return (compile_c([directory / "kind.c"], directory / "kind", extra=["-g"]),
            compile_c([directory / "plain.c"], directory / "plain", extra=["-g"]),
            compile_c([directory / "kind.c"], directory / "nodebug"))


def test_printed_enums_are_the_selected_fields(tool):
    probes, spans = tool.probes, tool.spans
    assert bcc.printed_enums(probes, []) == ["req_kind"]
    assert bcc.printed_enums([tool.by_name["work_begin"]], []) == []
    assert bcc.printed_enums(probes, [spans[0]]) == ["req_kind"]  # by kind


def test_enum_names_from_a_files_debug_info(enum_binaries):
    kind, plain, _ = enum_binaries
    tool = spans_tool()  # its tables change
    assert bcc.dwarf_enums(kind, ["req_kind", "absent"]) == {
        "req_kind": (("KIND_WRITE", 0), ("KIND_READ", 1), ("KIND_OTHER", 7), ("KIND_AGAIN", 7))}
    lines = bcc.use_debug_info(tool, ["req_kind"], [("plain", plain), ("kind", kind)])
    assert lines == ["enum names from the debug info of 'kind': req_kind (differs from the catalog's)"]
    assert tool.enums["req_kind"][0] == {0: "WRITE", 1: "READ", 7: "OTHER"}  # prefix stripped, alias after
    data, _keep = _hit(tool.by_name["req_start"], 0, f0=1, f1=0, f2=b"")
    assert bcc.hit_line(tool, data, False) == "0.000000: req_start id=1 kind=WRITE tag="


def test_enum_names_stay_the_catalogs_and_stderr_says_why(enum_binaries, tmp_path):
    _, plain, nodebug = enum_binaries
    damaged = tmp_path / "damaged"
    damaged.write_bytes(b"\x7fELF" + b"\0" * 12)
    tool = spans_tool()
    lines = bcc.use_debug_info(tool, ["req_kind"], [("nodebug", nodebug), ("damaged", damaged), ("plain", plain)])
    (line,) = lines
    assert line.startswith("enum names of req_kind from the catalog (as the tool has them): 'nodebug' has no "
                           "debug info; debug info of 'damaged' unusable: ")
    assert line.endswith("; not in the debug info of 'plain'")
    assert tool.enums["req_kind"][0] == {0: "READ", 1: "WRITE"}
    assert bcc.use_debug_info(tool, ["req_kind"], []) == [
        "enum names of req_kind from the catalog (as the tool has them): no file to read"]


def test_enum_names_without_pyelftools_are_the_catalogs(enum_binaries, tmp_path):
    """The system Python without its site packages (so without Debian's
    python3-pyelftools), running the tool's own code."""
    kind, _, _ = enum_binaries
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} not found")
    if subprocess.run([SYSTEM_PYTHON, "-S", "-c", "import elftools"], capture_output=True).returncode == 0:
        pytest.skip(f"pyelftools is importable in {SYSTEM_PYTHON} even without site packages")
    path = tmp_path / "spantest.py"
    path.write_text(generator.render_tool(load_catalog(SPANS)))
    code = ("import runpy, sys; tool = runpy.run_path(sys.argv[1]); "
            "print(*tool['use_debug_info'](tool['TOOL'], ['req_kind'], [('kind', sys.argv[2])]), sep='\\n')")
    result = subprocess.run([SYSTEM_PYTHON, "-S", "-c", code, path, kind], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "enum names of req_kind from the catalog (as the tool has them): pyelftools is not installed for "
        f"{SYSTEM_PYTHON} (Debian: python3-pyelftools)"]


def test_enum_names_never_wait_on_a_file_the_process_swapped(enum_binaries, tmp_path):
    """A path the traced process mapped may name a FIFO by the time the
    tool reads it (root would wait on it for ever): it is refused at once,
    and the next file still gives the names."""
    import os

    _, plain, _ = enum_binaries
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    tool = spans_tool()
    lines = bcc.use_debug_info(tool, ["req_kind"], [("swapped", fifo), ("plain", plain)])
    assert lines == ["enum names of req_kind from the catalog (as the tool has them): debug info of "
                     "'swapped' unusable: not a regular file; not in the debug info of 'plain'"]


def test_reading_debug_info_has_a_time_limit():
    import time

    start = time.monotonic()
    with pytest.raises(TimeoutError, match="over 1 s"):
        with bcc.time_limit(1):
            while True:
                time.sleep(0.05)
    assert time.monotonic() - start < 5
