"""probegen structs: definitions from real DWARF, checked by gcc, pahole and
a live bpftrace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import C_DIR, require
from helpers.dwarf import (
    checker_source, gcc, layout_checks, pahole_layout, run_bpftrace_with, run_checker, trace_first_line,
)
from probegen.cli import main
from probegen.catalog.ctype import Kind
from probegen.dwarf import DwarfTypes, model as m
from probegen.generators.cdecl import order_definitions
from probegen.generators.structs import render_definitions
from probegen.generators.typesource import member_ctype
from probegen.errors import InputError

SOURCE = C_DIR / "dwarf_types.c"
ALL_TYPES = [
    "spdk_nvmf_subsystem", "spdk_nvmf_qpair", "holder", "with_aligned_member", "packed_bits",
    "zero_len", "spdk_scheduler_thread_info", "packed_union", "point_t", "cacheline", "value",
]
VARIANTS = {
    "dwarf4": ["-gdwarf-4"],
    "dwarf5": ["-gdwarf-5"],
    "dwarf5-gz": ["-gdwarf-5", "-gz"],
    "dwarf4-gz": ["-gdwarf-4", "-gz"],
}


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="session")
def binaries(tmp_path_factory):
    out = tmp_path_factory.mktemp("bins")
    built = {}
    for name, flags in VARIANTS.items():
        built[name] = out / f"types-{name}"
        gcc(SOURCE, built[name], "-g", "-O0", "-DWITH_PROBE", *flags)
    return built


@pytest.fixture(params=list(VARIANTS))
def binary(request, binaries):
    return binaries[request.param]


def spell_emitted(t: m.Struct) -> str:
    return f"{t.kind} {t.name}"


def spell_original(t: m.Struct) -> str:
    return t.name if t.typedef_name else f"{t.kind} {t.name}"


def test_layout_equals_dwarf_and_gcc(binary, tmp_path):
    """Every offset, bit position and size: DWARF == gcc on the emitted
    definitions == gcc on the original source."""
    with DwarfTypes.open(binary) as types:
        text = render_definitions(types, ALL_TYPES, ["odd_values", "wide_values"])
        roots = [m.unqualified(types.lookup(n)) for n in ALL_TYPES]
    _, defined = order_definitions(roots)
    checks = layout_checks(defined)
    assert len(checks) > 100
    emitted = run_checker(tmp_path, "emitted", checker_source(text, checks, spell_emitted))
    original = run_checker(
        tmp_path, "original",
        checker_source(f"#define main original_main\n#include \"{SOURCE}\"\n#undef main", checks, spell_original),
    )
    dwarf = {f"{spell_emitted(t)}.{path}:{kind}": value for t, path, kind, value in checks}
    assert {k: original[k.replace("struct point_t", "point_t")] for k in dwarf} == dwarf
    assert emitted == dwarf


def test_emitted_definitions_compile_cleanly(binaries, tmp_path):
    with DwarfTypes.open(binaries["dwarf5"]) as types:
        text = render_definitions(types, ALL_TYPES, ["odd_values", "wide_values"], annotate=True)
    source = tmp_path / "defs.c"
    source.write_text(text)
    result = gcc(source, tmp_path / "defs.o", "-c", "-std=gnu11", "-Wall", "-Wextra", "-Werror", check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["spdk_nvmf_subsystem", "spdk_nvmf_qpair", "holder", "packed_hdr",
                                  "with_aligned_member", "spdk_scheduler_thread_info", "packed_union"])
def test_agrees_with_pahole(binaries, name):
    size, offsets = pahole_layout(binaries["dwarf4"], name)
    with DwarfTypes.open(binaries["dwarf4"]) as types:
        t = types.lookup(name)
    assert size is None or t.size == size
    ours = {mb.name: mb.offset for mb in t.members if mb.name}
    assert offsets, "pahole printed no members"
    for member, offset in offsets.items():
        assert ours[member] == offset, member


def test_bitfield_member_through_anonymous_struct(tmp_path):
    """A bitfield's bit offset counts from the outer struct, as its byte offset does."""
    source = tmp_path / "bits.c"
    source.write_text("struct outer { long a, b; struct { int x; int bf : 4; }; } o;\nint main(void) { return 0; }\n")
    gcc(source, tmp_path / "bits", "-g", "-O0")
    with DwarfTypes.open(tmp_path / "bits") as types:
        bf = types.member("outer", "bf")
    assert (bf.offset, bf.bit_offset, bf.bit_size) == (20, 160, 4)

def test_annotate_and_typedefs(binaries):
    with DwarfTypes.open(binaries["dwarf5"]) as types:
        plain = render_definitions(types, ["spdk_nvmf_qpair"])
        annotated = render_definitions(types, ["spdk_nvmf_qpair"], annotate=True)
        assert plain == render_definitions(types, ["spdk_nvmf_qpair"])  # deterministic
    assert "\ntypedef" not in plain  # bpftrace 0.17 rejects every typedef
    assert "struct spdk_nvmf_tgt;" in plain  # reached through a pointer only
    assert "enum spdk_nvmf_subsystem_state {" in plain
    assert "unsigned short qid;\t/*     8    2 */" in annotated
    assert "/* size: 40, members: 8 */" in annotated


def test_member_ctypes(binaries):
    with DwarfTypes.open(binaries["dwarf5"]) as types:
        subnqn = member_ctype(types, "spdk_nvmf_subsystem", "subnqn")
        assert subnqn.kind is Kind.STRING
        qid = member_ctype(types, "spdk_nvmf_qpair", "qid")
        assert (qid.kind, qid.size, qid.signed, qid.spelling) == (Kind.INTEGER, 2, False, "qid_t")
        state = member_ctype(types, "spdk_nvmf_qpair", "state")
        assert (state.kind, state.enum_name) == (Kind.ENUM, "spdk_nvmf_subsystem_state")
        assert member_ctype(types, "spdk_nvmf_subsystem", "id.nsid").size == 4
        assert member_ctype(types, "spdk_nvmf_subsystem", "id.hi").size == 4  # through anonymous members
        assert types.member("spdk_nvmf_subsystem", "id.hi").offset == 352 + 12
        assert member_ctype(types, "spdk_nvmf_qpair", "tgt").struct_name == "spdk_nvmf_tgt"
        assert member_ctype(types, "spdk_nvmf_qpair", "cb").kind is Kind.FUNCTION_POINTER
        assert member_ctype(types, "spdk_nvmf_qpair", "name").kind is Kind.STRING
        with pytest.raises(InputError, match="no member 'qidd'.*qid"):
            member_ctype(types, "spdk_nvmf_qpair", "qidd")
        names = [e.name for e in types.enumerators("spdk_nvmf_subsystem_state")]
        assert names[0] == "SPDK_NVMF_SUBSYSTEM_INACTIVE" and len(names) == 8
        assert [(e.name, e.value) for e in types.enumerators("odd_values")] == [
            ("ODD_NEG", -5), ("ODD_BIG", 200), ("ODD_HUGE", 0x7FFFFFFF), ("ODD_ZERO", 0)]
        assert types.enumerators("no_such_enum") is None
        assert "struct spdk_nvmf_qpair {" in render_definitions(types, ["spdk_nvmf_qpair"])


def test_bpftrace_reads_live_struct(binaries, tmp_path):
    """The full emitted definitions load in bpftrace, and members of the
    live structs read through them have the values the program set."""
    binary = binaries["dwarf5-gz"]
    with DwarfTypes.open(binary) as types:
        defs = render_definitions(types, ALL_TYPES)
    script = defs + f"""
usdt:{binary}:test:subsys
{{
	$s = (struct spdk_nvmf_subsystem *)arg0;
	$q = (struct spdk_nvmf_qpair *)arg1;
	printf("subnqn=%s nsid=%u state=%d hi=%x\\n", $s->subnqn, $s->id.nsid, $s->state, $s->id.hi);
	printf("qid=%u qstate=%d\\n", $q->qid, $q->state);
	@seen[1] = 1;
}}
usdt:{binary}:test:holder
{{
	$w = (struct with_aligned_member *)arg0;
	printf("hot=%lu s=%d\\n", $w->line.hot, $w->s);
	@seen[2] = 1;
}}
usdt:{binary}:test:state
{{
	$h = (struct holder *)arg1;
	printf("len=%x after=%x\\n", $h->hdr.len, $h->after);
	// bpftrace attaches the three in any order while the program loops:
	// stop only once the other two have printed.
	if (@seen[1] && @seen[2]) {{ exit(); }}
}}
"""
    out, err = run_bpftrace_with(script, [str(binary), "run"], tmp_path)
    assert "subnqn=nqn.2016-06.io.spdk:cnode1 nsid=7 state=4 hi=abcdef" in out, out + err
    assert "qid=42 qstate=2" in out
    assert "hot=99 s=-3" in out
    assert "len=11223344 after=5566" in out


def test_enum_maps(binaries, tmp_path, capsys):
    binary = binaries["dwarf4"]
    assert main(["structs", str(binary), "--enum", "spdk_nvmf_subsystem_state", "--enum-map", "bpftrace",
                 "--strip-prefix", "SPDK_NVMF_SUBSYSTEM_"]) == 0
    block = capsys.readouterr().out
    assert '@spdk_nvmf_subsystem_state[4] = "PAUSED";' in block
    assert main(["structs", str(binary), "--enum", "odd_values", "--enum-map", "bcc"]) == 0
    namespace: dict = {}
    exec(capsys.readouterr().out, namespace)
    assert namespace["ODD_VALUES"] == {-5: "ODD_NEG", 200: "ODD_BIG", 0x7FFFFFFF: "ODD_HUGE", 0: "ODD_ZERO"}
    # bpftrace accepts the block and prints names from it.
    # bpftrace 0.17 allows one BEGIN probe: the block is the script's.
    script = block + '\ninterval:ms:50 { printf("%s %s\\n", @spdk_nvmf_subsystem_state[4], ' \
        '@spdk_nvmf_subsystem_state[0]); clear(@spdk_nvmf_subsystem_state); exit(); }\n'
    path = tmp_path / "enum.bt"
    path.write_text(script)
    result = subprocess.run(["bpftrace", str(path)], capture_output=True, text=True, timeout=60)
    assert "PAUSED INACTIVE" in result.stdout, result.stderr


def test_separate_debug_file(binaries, tmp_path, capsys):
    require("objcopy", "binutils")
    full = binaries["dwarf5"]
    debug = tmp_path / "prog.debug"
    stripped = tmp_path / "prog"
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", str(full), str(stripped)], check=True)
    expected = main(["structs", str(full), "-t", "holder"]), capsys.readouterr().out
    # No debug info in the stripped binary and none found by build id.
    assert main(["structs", str(stripped), "-t", "holder"]) == 2
    assert "build it with -g" in capsys.readouterr().err
    assert main(["structs", str(stripped), "--debug-file", str(debug), "-t", "holder"]) == 0
    got = capsys.readouterr().out
    assert got.replace("prog", "X") == expected[1].replace(full.name, "X")
    # The build-id tree: <root>/.build-id/xx/rest.debug
    with DwarfTypes.open(full) as types:
        ident = types.info.build_id
    tree = tmp_path / "debugroot" / ".build-id" / ident[:2]
    tree.mkdir(parents=True)
    (tree / f"{ident[2:]}.debug").write_bytes(debug.read_bytes())
    with DwarfTypes.open(stripped, debug_dirs=(str(tmp_path / "debugroot"),)) as types:
        assert types.info.path.name == f"{ident[2:]}.debug"
        assert types.lookup("holder").size == 22
    # A debug file of another binary is refused.
    other = tmp_path / "other"
    gcc(C_DIR / "dwarf_dup_b.c", other, "-g", "-c")
    assert main(["structs", str(stripped), "--debug-file", str(binaries["dwarf4"]), "-t", "holder"]) == 2
    assert "is not the debug file" in capsys.readouterr().err


def test_build_id_lookup_in_system_tree(binaries, tmp_path, capsys):
    """The default /usr/lib/debug/.build-id look-up, as distributions ship it."""
    full = binaries["dwarf4-gz"]
    stripped = tmp_path / "prog"
    subprocess.run(["objcopy", "--strip-debug", str(full), str(stripped)], check=True)
    with DwarfTypes.open(full) as types:
        ident = types.info.build_id
    target = Path("/usr/lib/debug/.build-id") / ident[:2] / f"{ident[2:]}.debug"
    if not os.access("/usr/lib", os.W_OK):
        pytest.skip("cannot write /usr/lib/debug (not root)")
    created = not target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(target)], check=True)
    try:
        assert main(["structs", str(stripped), "-t", "spdk_nvmf_qpair"]) == 0
        assert "struct spdk_nvmf_qpair {" in capsys.readouterr().out
    finally:
        if created:
            target.unlink()


def test_errors_are_one_line(binaries, tmp_path, capsys):
    binary = binaries["dwarf5"]
    cases = [
        (["structs", str(binary), "-t", "spdk_nvmf_qpairs"], "no struct, union, enum or typedef named"),
        (["structs", str(binary), "-t", "qid_t"], "not a struct, union or enum"),
        (["structs", str(tmp_path / "missing"), "-t", "x"], "no such file"),
        (["structs", str(SOURCE), "-t", "x"], "not an ELF file"),
        (["structs", str(binary)], "--type NAME"),
        (["structs", "/bin/true", "-t", "x"], "build it with -g"),
        (["structs", str(binary), "-t", "spdk_nvmf_qpair", "--enum-map", "bpftrace"], "--enum-map takes"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and err.count("\n") == 1, err


def test_same_name_in_two_units(tmp_path, capsys):
    """drgn gives the first definition of a name (it has no way to list
    them all): one definition comes out, whole."""
    binary = tmp_path / "dup"
    require("gcc", "gcc")
    subprocess.run(["gcc", "-g", "-o", str(binary), str(C_DIR / "dwarf_dup_a.c"), str(C_DIR / "dwarf_dup_b.c")], check=True)
    for name in ("dup", "same"):
        assert main(["structs", str(binary), "-t", name]) == 0
        assert capsys.readouterr().out.count(f"struct {name} {{") == 1


def test_cli_writes_file(binaries, tmp_path):
    out = tmp_path / "defs.h"
    assert main(["structs", str(binaries["dwarf5"]), "-t", "holder", "-o", str(out)]) == 0
    first = out.stat().st_mtime_ns
    assert main(["structs", str(binaries["dwarf5"]), "-t", "holder", "-o", str(out)]) == 0
    assert out.stat().st_mtime_ns == first  # unchanged: not rewritten
    result = subprocess.run([sys.executable, "-m", "probegen", "structs", str(binaries["dwarf5"]), "-t", "holder"],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == out.read_text()


E2E_CATALOG = """\
provider: test
header:
  guard: T_H
  enable_macro: T_USDT
enums:
  - name: spdk_nvmf_subsystem_state
    strip_prefix: SPDK_NVMF_SUBSYSTEM_
probes:
  - name: subsys
    group: nvmf
    doc: a subsystem and a qpair
    args:
      - name: subsystem
        type: struct spdk_nvmf_subsystem *
        members: [subnqn, id.nsid, id.hi, state]
      - name: qpair
        type: struct spdk_nvmf_qpair *
        members: [qid]
"""


def test_bpftrace_script_prints_members_from_dwarf(binaries, tmp_path, capsys):
    """Catalog members + `probegen bpftrace --binary`: the generated script
    carries the DWARF definitions and prints the live struct's members,
    enum states by the binary's names."""
    binary = binaries["dwarf4"]
    catalog = tmp_path / "probes.yaml"
    catalog.write_text(E2E_CATALOG)
    out = tmp_path / "bt"
    assert main(["bpftrace", "-c", str(catalog), "-o", str(out), "--binary", str(binary), "-q"]) == 0
    script = (out / "nvmf.bt").read_text()
    assert "struct spdk_nvmf_subsystem {" in script and "\ntypedef" not in script
    # Run without -p (the program starts after bpftrace attaches): the probes name the
    # program's file where the script has '*', as a user would
    assert "\nusdt:*:" in script
    line = trace_first_line(script.replace("usdt:*:", f"usdt:{binary}:"), [str(binary), "run"], tmp_path, " subsys ")
    assert "subsystem->subnqn=nqn.2016-06.io.spdk:cnode1" in line, line
    assert "subsystem->id.nsid=7" in line and "subsystem->id.hi=11259375" in line, line
    assert "subsystem->state=PAUSED" in line and "qpair->qid=42" in line, line
    # Without debug info: one clear line, exit 2.
    assert main(["bpftrace", "-c", str(catalog), "-o", str(out), "--binary", "/bin/true", "-q"]) == 2
    assert "build it with -g" in capsys.readouterr().err
