"""probegen.runtime.bcc, the part of every generated BCC tool no catalog
changes: options, selection, histograms, counts and JSON, without BCC.
(tests/test_bcc.py runs the generated tools for real.)"""

from __future__ import annotations

import ast
import collections
import ctypes as ct
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import CATALOGS, SYSTEM_PYTHON, compile_c
from probegen.catalog import load_catalog
from probegen.generators import bcc as generator
from probegen.runtime import bcc

SPANS = CATALOGS / "spans.yaml"


def spans_tool():
    """The spans catalog's tool's tables, as the tool itself builds them."""
    text = generator.render_tool(load_catalog(SPANS))
    namespace = {"__name__": "generated"}
    exec(compile(text, "spantest.py", "exec"), namespace)  # the tool's own code, not main()
    return bcc.Tool(*(namespace[n] for n in ("PROVIDER", "DESCRIPTION", "ENUMS", "PROBES", "SPANS", "STRUCTS")))


@pytest.fixture(scope="module")
def tool():
    return spans_tool()


def test_log2_slots_and_rows():
    # a value's slot is its bit length (bpf_log2l's, but 0 for 0)
    assert [v.bit_length() for v in (0, 1, 2, 3, 4, 1023, 1024)] == [0, 1, 2, 2, 3, 10, 11]
    assert [bcc.rows({s: 1})[-1][:2] for s in (0, 1, 2, 3, 11)] == [(0, 1), (0, 1), (2, 3), (4, 7), (1024, 2047)]
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


def test_hist_needs_spans(capsys):
    bare = bcc.Tool("p", "d", {}, [("a", "g", "doc", 0, [])], [])
    with pytest.raises(SystemExit):
        bcc.parse_args(bare, ["-p", "1", "--hist"])
    assert "no spans" in capsys.readouterr().err


def test_selection(tool):
    def chosen(*argv):
        probes, spans = bcc.selection(tool, bcc.parse_args(tool, ["-p", "1", *argv]))
        return [p.name for p in probes], [s.name for s in spans]

    assert chosen() == (["req_start", "req_done", "work_begin", "work_end"], [])
    assert chosen("--group", "work", "--probe", "req_done") == (["req_done", "work_begin", "work_end"], [])
    assert chosen("--hist") == (["req_start", "req_done", "work_begin", "work_end"], ["request", "request_tagged", "work"])
    assert chosen("--hist", "--span", "work") == (["work_begin", "work_end"], ["work"])
    assert chosen("--hist", "--group", "req") == (["req_start", "req_done"], ["request", "request_tagged"])


def args_of(tool, *argv):
    return bcc.parse_args(tool, ["-p", "1", *argv])


def test_program_of_each_mode(tool):
    def program(*argv):
        args = args_of(tool, *argv)
        return bcc.program_text(tool, args, *bcc.selection(tool, args))

    assert "BPF_PERF_OUTPUT(events);" in program() and "counts" not in program()
    assert "counts.atomic_increment(3);" in program("--count") and "events" not in program("--count")
    hist = program("--hist", "--span", "work")
    assert "BPF_HISTOGRAM(span_2_hist, struct span_2_slot, 4096);" in hist and "span_0" not in hist
    assert "bpf_log2l(ns / 1000)" in hist and "bpf_log2l(ns / 1000000)" in program("--hist", "-m")


@pytest.mark.parametrize("fmt, note, read, signed", [
    ("s32", "int32_t", "int32_t v = 0; bpf_usdt_readarg(2, ctx, &v); ev->f0 = (s32)v;", True),
    ("s32", "uint32_t", "uint32_t v = 0; bpf_usdt_readarg(2, ctx, &v); ev->f0 = (s32)v;", True),  # the catalog's sign
    ("s32", "uint8_t", "uint8_t v = 0; bpf_usdt_readarg(2, ctx, &v); ev->f0 = (u8)v;", False),  # memcached's nkey
    ("u16", "int64_t", "int64_t v = 0; bpf_usdt_readarg(2, ctx, &v); ev->f0 = (s64)v;", True),
    ("str:9", "uint64_t", "uint64_t v = 0; bpf_usdt_readarg(2, ctx, &v); if (bpf_probe_read_user_str(ev->f0, "
     "sizeof(ev->f0), (void *)(unsigned long)v) < 0) ev->f0[0] = 0;", False),
])
def test_arguments_are_read_at_the_notes_size(fmt, note, read, signed):
    """BCC's bpf_usdt_readarg reads nothing unless the destination's size is
    the note's: the tool reads at the note's size, with the catalog's sign
    when the sizes agree, else the note's."""
    field = bcc.Field("x", 1, fmt)
    field.bind(note)
    assert field.c_read("ev->f0", note) == "{ " + read + " }"
    assert field.signed is signed
    missing = bcc.Field("x", 1, fmt)
    missing.bind(None)
    assert missing.c_read("ev->f0", None) == "" and missing.value(0, {}) == ("?", None)


def test_note_types_from_bccs_readers():
    readers = """static __always_inline int _bpf_readarg_probe_3_2(struct pt_regs *ctx, void *dest, size_t len) {
  if (len != sizeof(uint8_t)) return -1;
static __always_inline int _bpf_readarg_probe_12_1(struct pt_regs *ctx, void *dest, size_t len) {
  if (len != sizeof(int64_t)) return -1;"""
    assert bcc.note_types(readers) == {("probe_3", 1): "uint8_t", ("probe_12", 0): "int64_t"}


def _hit(tool, probe, ts, tid=5, **values):
    event = probe.event()
    event.ts, event.tid, event.id = ts, tid, probe.number
    for name, value in values.items():
        setattr(event, name, value)
    return bcc.decode(tool, ct.addressof(event))


def test_hit_line_text_and_json_agree(tool):
    probe = tool.by_name["req_start"]
    hit = _hit(tool, probe, 12_345_678_901, f0=7, f1=1, f2=b"tag-7")
    assert bcc.hit_line(hit, False) == "12.345678: req_start id=7 kind=WRITE tag=tag-7"
    obj = json.loads(bcc.hit_line(hit, True))
    assert obj == {"type": "hit", "probe": "req_start", "ts_ns": 12_345_678_901,
                   "args": {"id": 7, "kind": "WRITE", "tag": "tag-7"}}
    unnamed = _hit(tool, probe, 0, f0=1, f1=9, f2=b"")
    assert bcc.hit_line(unnamed, False) == "0.000000: req_start id=1 kind=UNKNOWN(9) tag="


def test_hits_print_in_timestamp_order_within_the_window(monkeypatch):
    printed = []
    reorder = bcc.Reorder(printed.append)
    now = 10 * bcc.REORDER_NS
    monkeypatch.setattr(bcc.time, "monotonic_ns", lambda: now)
    for ts in (now - 10, now - 30, now - 20):  # as two CPUs' buffers deliver them
        reorder.add((ts, 0, None, ()))
    reorder.due()
    assert printed == []  # younger than the window: held
    now += bcc.REORDER_NS
    reorder.due()
    assert [h[0] for h in printed] == [now - bcc.REORDER_NS - d for d in (30, 20, 10)]
    reorder.add((1, 0, None, ()))  # past the window: printed at once, counted
    assert printed[-1][0] == 1 and reorder.late == 1


def _kernel_histogram(name, hits):
    """A BPF histogram as BCC's table gives it: (key, count) pairs, a key a
    slot and a value in ``name``, ``hits`` [(value, slot)] each counted once."""
    value = type("V", (ct.Structure,), {"_fields_": [(name, ct.c_uint64)]})
    key = type("K", (ct.Structure,), {"_fields_": [("slot", ct.c_uint64), ("v", value)]})
    counts = collections.Counter(hits)
    pairs = [(key(slot, value(v)), ct.c_uint64(n)) for (v, slot), n in counts.items()]
    return types.SimpleNamespace(items=lambda: pairs)


@pytest.mark.parametrize("per_key", [False, True])
def test_histograms_per_by_and_per_key(tool, per_key):
    histograms = bcc.Histograms(tool, tool.spans, per_key, milliseconds=False)
    table = _kernel_histogram("k0" if per_key else "b0", [(0, 11), (1 if per_key else 0, 11), (1, 14)])
    empty = types.SimpleNamespace(items=list)
    bpf = {"span_0_hist": table, "span_1_hist": empty, "span_2_hist": empty}
    objects, text = histograms.report(bpf, {0: 1})
    assert histograms.report(bpf, {}) == ([], "")  # each report starts over
    if per_key:
        assert [o["key"] for o in objects[:-1]] == [{"id": 0}, {"id": 1}]
        assert "span request: id=0" in text and "span request: id=1" in text
    else:
        assert [o["by"] for o in objects[:-1]] == [{"kind": "READ"}, {"kind": "WRITE"}]
        assert objects[0]["buckets"] == [{"min": 1024, "max": 2047, "count": 2}]
        assert objects[0]["count"] == 2 and objects[0]["unit"] == "us" and objects[0]["type"] == "span"
        assert objects[1]["buckets"] == [{"min": 8192, "max": 16383, "count": 1}]
        assert "span request: kind=READ" in text
    assert objects[-1] == {"type": "unmatched", "span": "request", "count": 1}
    assert text.endswith("span request: 1 end without a start")
    for obj in objects[:-1]:  # the text's rows are the JSON's buckets
        for bucket in obj["buckets"]:
            assert "%10d -> %-10d : %-8d |" % (bucket["min"], bucket["max"], bucket["count"]) in text


def test_runtime_loads_without_bcc_or_probegen():
    """The tool embeds the module: it may import only the standard library
    at load time (bcc inside main), on the system's Python 3.9 or later."""
    source = generator.runtime_source()
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
    assert "BPF_HASH(span_0_starts" in program and "BPF_HISTOGRAM(span_0_hist" in program


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
    with open(kind, "rb") as file:
        found = bcc.dwarf_enums(file, ["req_kind", "absent"])
    assert found == {
        "req_kind": (("KIND_WRITE", 0), ("KIND_READ", 1), ("KIND_OTHER", 7), ("KIND_AGAIN", 7))}
    lines = bcc.use_debug_info(tool, ["req_kind"], [("plain", plain), ("kind", kind)])
    assert lines == ["enum names from the debug info of 'kind': req_kind (differs from the catalog's)"]
    assert tool.enums["req_kind"]["names"] == {0: "WRITE", 1: "READ", 7: "OTHER"}  # prefix stripped, alias after
    assert bcc.hit_line(_hit(tool, tool.by_name["req_start"], 0, f0=1, f1=0, f2=b""), False) == (
        "0.000000: req_start id=1 kind=WRITE tag=")


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
    assert tool.enums["req_kind"]["names"] == {0: "READ", 1: "WRITE"}
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
            "t = tool['Tool'](*(tool[n] for n in ('PROVIDER', 'DESCRIPTION', 'ENUMS', 'PROBES', 'SPANS'))); "
            "print(*tool['use_debug_info'](t, ['req_kind'], [('kind', sys.argv[2])]), sep='\\n')")
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


def test_compressed_debug_info_is_read_and_zip_bombs_are_refused(enum_binaries, tmp_path):
    """gcc -gz's sections (SHF_COMPRESSED, honest claims) give the names;
    bombs inflating to 512 MiB (tests/test_bcc.py traces libraries holding
    them with the tool) are refused before pyelftools reads them: by name,
    by a claim past 64 times the stored bytes, or by inflating (a chunk at
    a time) past the claim."""
    from helpers import require
    from helpers.dwarf import zip_bomb

    require("objcopy", "binutils")
    kind = compile_c([enum_binaries[0].with_suffix(".c")], tmp_path / "kind", extra=["-g", "-gz"])
    with open(kind, "rb") as file:
        assert bcc.dwarf_enums(file, ["req_kind"])["req_kind"][0] == ("KIND_WRITE", 0)
    for legacy, section, claim, why in [
            (True, "info", 1 << 20, "GNU .zdebug compression is not read"),
            (False, "info", 1 << 20, ".debug_info inflates to more than the 1048576 bytes it claims"),
            (False, "abbrev", 16 << 20, ".debug_abbrev inflates to more than the 16777216 bytes it claims"),
            (False, "str", 255 << 20, r".debug_str claims 267386880 bytes inflated from \d+$")]:
        bomb = zip_bomb(kind, tmp_path / f"bomb_{section}", legacy, mib=512, claim=claim, section=section)
        with open(bomb, "rb") as file, pytest.raises(ValueError, match=why):
            bcc.dwarf_enums(file, ["req_kind"])


def hostile_reader(monkeypatch, behaviour):
    """dwarf_enums replaced in the child the tool forks (fork copies this
    process, the patch with it), as a hostile file could make it behave."""
    monkeypatch.setattr(bcc, "dwarf_enums", lambda file, wanted: behaviour())


def test_debug_info_is_parsed_by_a_child_without_root(enum_binaries, monkeypatch):
    import os

    if os.getuid() != 0:
        pytest.skip("needs root: the child gives up root")
    kind, _, _ = enum_binaries
    hostile_reader(monkeypatch, lambda: {"req_kind": (("UID%d_GID%d" % (os.getuid(), os.getgid()), 0),)})
    ((_, found, _),) = bcc.read_enums([("kind", kind)], ["req_kind"])
    nobody = bcc.owner(None)
    assert nobody != (0, 0) and found == {"req_kind": [["UID%d_GID%d" % nobody, 0]]}


def test_reading_debug_info_has_one_deadline_for_all_files(enum_binaries, monkeypatch):
    """Files that would make a parser loop cost one deadline together, not one each."""
    import time

    kind, plain, _ = enum_binaries
    hostile_reader(monkeypatch, lambda: time.sleep(3600))
    start = time.monotonic()
    results = bcc.read_enums([("a", kind), ("b", plain), ("c", kind)], ["req_kind"], seconds=1)
    assert time.monotonic() - start < 5
    assert [r[2] for r in results] == ["debug info of '%s' not read within 1 s" % n for n in "abc"]


def test_reading_debug_info_has_a_memory_limit(enum_binaries, monkeypatch):
    import os

    if os.getuid() != 0:
        pytest.skip("needs root: limits are set as the child gives up root")
    kind, plain, _ = enum_binaries
    hostile_reader(monkeypatch, lambda: bytearray(2 * bcc.DWARF_MEMORY))
    results = bcc.read_enums([("bomb", kind)], ["req_kind"])
    assert results == [("bomb", None, "debug info of 'bomb' unusable: MemoryError")]


def test_a_taken_over_child_is_not_trusted(enum_binaries, monkeypatch):
    """A file's text in an exception reaches the terminal escaped; and the child's
    answer is checked, as a child taken over by what it parsed may send anything:
    a reason not printable is escaped, an enum's names must be strings and its values
    integers, and an enum not asked for, or found twice, is ignored (it stopped the tool)."""
    kind, _, _ = enum_binaries

    def unusable(file, wanted):
        raise ValueError(".debug_\x1b[2J holds 1 bytes")

    monkeypatch.setattr(bcc, "dwarf_enums", unusable)
    assert bcc.read_enums([("kind", kind)], ["req_kind"]) == [
        ("kind", None, "debug info of 'kind' unusable: .debug_\\x1b[2J holds 1 bytes")]
    answers = iter(["\n".join(json.dumps(answer) for answer in [
        [0, None, "forged\x1b[2J"],
        [1, {"other": [["X", 1]], "req_kind": [["KIND_A", 0]]}, None],
        [2, {"req_kind": [["KIND_B", 0]]}, None],
        [2, {"req_kind": [[1, 0]]}, None]])])
    monkeypatch.setattr(bcc, "dwarf_enums", lambda file, wanted: {})
    monkeypatch.setattr(bcc.json, "dumps", lambda answer: next(answers, ""))  # in the child only
    files = [(name, kind) for name in "abc"]
    assert bcc.read_enums(files, ["req_kind"]) == [
        ("a", None, "forged\\x1b[2J"), ("b", {"other": [["X", 1]], "req_kind": [["KIND_A", 0]]}, None),
        ("c", {"req_kind": [["KIND_B", 0]]}, None)]
    tool = spans_tool()
    assert bcc.use_debug_info(tool, ["req_kind"], files) == [
        "enum names from the debug info of 'b': req_kind (differs from the catalog's)"]
    assert tool.enums["req_kind"]["names"] == {0: "A"}


def test_a_span_without_values_whose_probe_is_absent_is_not_measured(capsys):
    """Keyed by thread and with no by, it has no argument to find missing: it
    was kept, and building the program failed on its absent probe (KeyError)."""
    tool = spans_tool()
    work = next(s for s in tool.spans if s.name == "work")
    usdt = types.SimpleNamespace(get_text=lambda: "", enumerate_probes=lambda: [])
    assert bcc.bind(tool, usdt, [tool.by_name["work_begin"]], [work]) == ({}, [])
    assert capsys.readouterr().err.endswith("warning: span work not measured: its probes or their arguments are "
                                            "not all in the traced files\n")


def test_names_from_a_binary_reach_the_terminal_escaped():
    assert bcc.shown_names([("E_\x1b[2J", 0), ("E_A\rB\n::error::forged", 1)], "E_") == {
        0: "\\x1b[2J", 1: "A\\rB\\n::error::forged"}
    assert bcc.printable("/tmp/a\\b\x07") == "/tmp/a\\\\b\\x07"
