"""The generated header, compiled for real against <sys/sdt.h>.

With USDT on, every catalog probe must be in .note.stapsdt with the
catalog's provider, argument count and argument sizes (read with pyelftools
and with binutils' readelf); with it off, no notes, no warnings and no
argument evaluated.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from helpers import (
    C_DIR, REPO, STUBS, compile_c, readelf_probes, require, require_bpftrace, sdt_include_dir, spdk_config, try_compile,
)
from probegen.catalog import load_catalog
from probegen.generators.header import render_header

SPEC = re.compile(r"^(-?)(\d+)@(.+)$")


def parse_spec(spec: str) -> tuple[int, bool, str]:
    sign, size, where = SPEC.match(spec).groups()
    return int(size), sign == "-", where


def section_range(binary: Path, name: str) -> tuple[int, int] | None:
    with open(binary, "rb") as f:
        section = ELFFile(f).get_section_by_name(name)
        return None if section is None else (section["sh_addr"], section["sh_addr"] + section["sh_size"])


def has_section(binary: Path, name: str) -> bool:
    with open(binary, "rb") as f:
        return ELFFile(f).get_section_by_name(name) is not None


def run(binary: Path, *args) -> dict[str, int]:
    out = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


# -- the default SPDK catalog -------------------------------------------------

@pytest.fixture(scope="module")
def spdk_catalog():
    return load_catalog(REPO / "probes.yaml")


@pytest.fixture(scope="module")
def spdk_include(tmp_path_factory, spdk_catalog):
    include = tmp_path_factory.mktemp("include")
    (include / "spdk_internal").mkdir()
    (include / "spdk_internal" / "usdt.h").write_text(render_header(spdk_catalog))
    return include


def build_spdk(tmp_path: Path, include: Path, usdt: bool, cxx: bool, defines=()) -> Path:
    config = spdk_config(tmp_path / "config", usdt)
    return compile_c(
        [C_DIR / "spdk_fire_all.c"], tmp_path / ("fire_all_cxx" if cxx else "fire_all"),
        include_dirs=[config, STUBS, include], cxx=cxx, defines=defines,
    )


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_spdk_probes_with_usdt_on(tmp_path, spdk_catalog, spdk_include, cxx):
    binary = build_spdk(tmp_path, spdk_include, usdt=True, cxx=cxx)
    # nvmf_create_poll_group (a ticks probe) has a semaphore, down with no
    # tracer; event_exec has none, so its _ENABLED() is always 1.
    assert run(binary) == {"ENABLED": 1, "EVALUATED": 115}

    notes = readelf_probes(binary)
    assert {n["provider"] for n in notes} == {"spdk"}
    assert sorted(n["name"] for n in notes) == sorted(p.name for p in spdk_catalog.probes)
    semaphores = section_range(binary, ".probes")
    assert semaphores is not None
    for note in notes:
        probe = spdk_catalog.probe(note["name"])
        assert len(note["args"]) == len(probe.args) + 1, note
        arg0_size, arg0_signed, arg0_where = parse_spec(note["args"][0])
        if probe.ticks:
            assert (arg0_size, arg0_signed) == (8, False), note  # spdk_get_ticks()
        else:
            assert (arg0_size, arg0_signed, arg0_where) == (4, True, "$0"), note  # the literal 0
        for arg, spec in zip(probe.args, note["args"][1:]):
            size, signed, _ = parse_spec(spec)
            assert arg.ctype.matches_note(size, signed), (probe.name, arg.name, spec)
        if spdk_catalog.has_semaphore(probe):  # the ticks probes
            assert semaphores[0] <= note["semaphore"] < semaphores[1], note
        else:
            assert note["semaphore"] == 0, note
    assert {n["name"] for n in notes if n["semaphore"]} == {p.name for p in spdk_catalog.probes if p.ticks}


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_spdk_probes_compiled_out(tmp_path, spdk_include, cxx):
    # -Werror: SPDK's own empty macros fail here with unused variables.
    binary = build_spdk(tmp_path, spdk_include, usdt=False, cxx=cxx)
    assert not has_section(binary, ".note.stapsdt")
    assert not has_section(binary, ".probes")
    assert run(binary) == {"ENABLED": 0, "EVALUATED": 0}


def test_unit_test_macro_compiles_probes_out(tmp_path, spdk_include):
    binary = build_spdk(tmp_path, spdk_include, usdt=True, cxx=False, defines=["SPDK_UNIT_TEST"])
    assert not has_section(binary, ".note.stapsdt")
    assert run(binary)["EVALUATED"] == 0


def test_notes_agree_with_pyelftools(tmp_path, spdk_include, spdk_catalog):
    """The raw note descriptors, read with pyelftools, say what readelf says."""
    binary = build_spdk(tmp_path, spdk_include, usdt=True, cxx=False)
    with open(binary, "rb") as f:
        section = ELFFile(f).get_section_by_name(".note.stapsdt")
        raw = []
        for note in section.iter_notes():
            assert note["n_name"] == "stapsdt" and note["n_type"] in (3, "NT_GNU_BUILD_ID")
            pc, base, semaphore = (int.from_bytes(note["n_desc"][i:i + 8], "little") for i in (0, 8, 16))
            provider, name, args = note["n_desc"][24:].split(b"\0")[:3]
            raw.append({"provider": provider.decode(), "name": name.decode(), "pc": pc, "base": base,
                        "semaphore": semaphore, "args": args.decode().split()})
    assert raw == readelf_probes(binary)


# -- a catalog with every argument kind ----------------------------------------

@pytest.fixture(scope="module")
def types_catalog():
    return load_catalog(Path(__file__).parent / "catalogs" / "header_types.yaml")


@pytest.fixture(scope="module")
def types_include(tmp_path_factory, types_catalog):
    include = tmp_path_factory.mktemp("types_include")
    (include / "pgtest_probes.h").write_text(render_header(types_catalog))
    return include


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_typed_macros_carry_catalog_sizes(tmp_path, types_catalog, types_include, cxx):
    binary = compile_c([C_DIR / "header_types.c"], tmp_path / "types", include_dirs=[types_include],
                       defines=["PGTEST_USDT"], cxx=cxx)
    notes = readelf_probes(binary)
    typed = {n["name"]: n for n in notes if n["pc"] and n["name"] not in ("timed", "pgtest")}
    assert set(typed) == {"no_args", "integers", "others"}
    for name, note in typed.items():
        probe = types_catalog.probe(name)
        assert parse_spec(note["args"][0])[:2] == (4, True)  # arg0 is the literal 0
        assert len(note["args"]) == len(probe.args) + 1
        for arg, spec in zip(probe.args, note["args"][1:]):
            size, signed, _ = parse_spec(spec)
            assert arg.ctype.matches_note(size, signed), (name, arg.name, spec)
            expected = -arg.ctype.size_on() if arg.ctype.signed else arg.ctype.size_on()
            if arg.ctype.signed is not None:
                assert (-size if signed else size) == expected, (name, arg.name, spec)
    assert "pgtest" not in typed  # a ticks probe: behind its semaphore, present all the same
    assert [n["args"][1:] for n in notes if n["name"] == "pgtest"][0][0].startswith("4@")
    timed = [n for n in notes if n["name"] == "timed"]
    assert len(timed) == 2  # typed and SPDK-style sites
    assert all(parse_spec(n["args"][0])[:2] == (8, False) for n in timed)
    # No tracer: the typed ticks probe neither fires nor reads the clock;
    # the SPDK-style _TICKS probe reads it every time.
    assert run(binary, 3) == {"ENABLED": 0, "CLOCK": 3}


def _probes_built(tmp_path, catalog: str, main: str, cxx: bool, enable: str) -> list[list[str]]:
    """The probes of main.c built against the header of ``catalog``, without and with ``enable``."""
    (tmp_path / "c.yaml").write_text(catalog)
    (tmp_path / "c.h").write_text(render_header(load_catalog(tmp_path / "c.yaml")))
    (tmp_path / "main.c").write_text('#include "c.h"\n' + main)
    return [[n["name"] for n in readelf_probes(compile_c([tmp_path / "main.c"], tmp_path / f"b{len(defines)}",
                                                          include_dirs=[tmp_path], defines=defines, cxx=cxx))]
            for defines in ([], [enable])]


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_qualified_function_pointer_argument_compiles(tmp_path, cxx):
    """A 'void (* const)(int)' argument is held in a local the macro declares
    (void (*const _pg_fn)(int)), with probes on and off."""
    assert _probes_built(tmp_path, "provider: fp\nheader:\n  enable_macro: FP_USDT\nprobes:\n"
                         "  - {name: cb, group: g, doc: d, args: [{name: fn, type: void (* const)(int)}]}\n",
                         "static void f(int x) { (void)x; }\nint main(void) { PROBE_CB(f); return 0; }\n",
                         cxx, "FP_USDT") == [[], ["cb"]]


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_c_bool_keyword_argument_compiles(tmp_path, cxx):
    """A catalog's '_Bool' (C's keyword, no C++ one) is spelled bool from <stdbool.h>, with
    probes on and off: the header compiles as C++ too."""
    assert _probes_built(tmp_path, "provider: b\nheader:\n  enable_macro: B_USDT\nprobes:\n"
                         "  - {name: flag, group: g, doc: d, args: [{name: set, type: const _Bool},"
                         " {name: at, type: _Bool *}]}\n",
                         "int main(void) { bool set = 1; PROBE_FLAG(set, &set); return 0; }\n",
                         cxx, "B_USDT") == [[], ["flag"]]


@pytest.mark.parametrize("cxx", [False, True], ids=["c11", "c++17"])
def test_parameter_named_like_the_helper_macro_compiles(tmp_path, cxx):
    """A probe without a semaphore calls the header's helper (GUARD_NO_SEMAPHORE(name)) in its
    expansion: an argument of that name is a parameter renamed, not substituted there."""
    assert _probes_built(tmp_path, "provider: h\nheader:\n  guard: H_H\n  semaphores: false\nprobes:\n"
                         "  - {name: p, group: g, doc: d, args: [{name: H_H_NO_SEMAPHORE, type: int}]}\n",
                         "int main(void) { PROBE_P(7); return 0; }\n", cxx, "PROBEGEN_USDT")[1] == ["p"]


def test_typed_macros_compiled_out_evaluate_nothing(tmp_path, types_include):
    binary = compile_c([C_DIR / "header_types.c"], tmp_path / "types_off", include_dirs=[types_include])
    assert not has_section(binary, ".note.stapsdt")
    assert run(binary) == {"ENABLED": 0, "CLOCK": 0}


@pytest.mark.parametrize("usdt", [True, False], ids=["usdt-on", "usdt-off"])
@pytest.mark.parametrize("call, message", [
    ("PGTEST_OTHERS(&obj, PGTEST_STATE_IDLE, &obj, &obj, cb, 0, 'x', 1u)", "incompatible"),
    ("PGTEST_OTHERS(\"s\", PGTEST_STATE_IDLE, &obj, 42, cb, 0, 'x', 1u)", "integer"),
    ("PGTEST_INTEGERS(1, 2, 3, 4, 5, &obj, 7, 8, 1, 2, 3)", "pointer"),
    ("PGTEST_INTEGERS(1, 2, 3)", "macro"),
])
def test_wrong_argument_is_a_compiler_diagnostic(tmp_path, types_include, usdt, call, message):
    source = tmp_path / "wrong.c"
    source.write_text(
        '#include "pgtest_probes.h"\n'
        "enum pgtest_state { PGTEST_STATE_IDLE };\nstruct pgtest_obj { int x; };\n"
        "static int cb(void *c) { (void)c; return 0; }\n"
        "uint64_t pgtest_clock(void);\n"
        f"int main(void) {{ struct pgtest_obj obj = {{ 0 }}; (void)cb; {call}; return 0; }}\n"
    )
    result = try_compile([source], tmp_path / "wrong", include_dirs=[types_include],
                         defines=["PGTEST_USDT"] if usdt else [])
    assert result.returncode != 0
    assert message in result.stderr


def test_docs_with_comment_markers_compile(types_catalog):
    header = render_header(types_catalog)
    assert "Docs with * / and / * and % and \"quotes\" and a \\ backslash" in header


# -- real tracer ---------------------------------------------------------------

def test_enabled_check_and_ticks_probe_fire_under_bpftrace(tmp_path, types_include):
    """With bpftrace attached, _ENABLED() turns true and the typed ticks
    probe fires with the clock as arg0."""
    if os.geteuid() != 0:
        pytest.skip("attaching bpftrace needs root")
    bpftrace = require_bpftrace()
    source = tmp_path / "wait.c"
    source.write_text(
        '#define _DEFAULT_SOURCE\n#include "pgtest_probes.h"\n#include <stdio.h>\n#include <unistd.h>\n'
        "uint64_t pgtest_clock(void);\nuint64_t pgtest_clock(void) { return 987654321; }\n"
        "int main(void) {\n"
        "  int i;\n"
        "  for (i = 0; i < 2000 && !PGTEST_TIMED_ENABLED(); i++) usleep(5000);\n"
        '  printf("ENABLED %d\\n", PGTEST_TIMED_ENABLED()); fflush(stdout);\n'
        "  PGTEST_TIMED(-5);\n  return 0;\n}\n"
    )
    binary = compile_c([source], tmp_path / "wait", include_dirs=[types_include], defines=["PGTEST_USDT"])
    # Attach by path before the program starts (with -p, bpftrace 0.17 needs
    # tracefs for semaphore probes, which these machines do not mount).
    tracer = subprocess.Popen(
        [bpftrace, "-e", f'usdt:{binary}:pgtest:timed {{ printf("timed %lu %d\\n", arg0, arg1); exit(); }}'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    program = None
    try:
        assert "Attaching" in tracer.stdout.readline()
        program = subprocess.Popen([str(binary)], stdout=subprocess.PIPE, text=True)
        out, err = tracer.communicate(timeout=60)
        program_out = program.communicate(timeout=30)[0]
    finally:
        for process in (tracer, program):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGKILL)
    assert "ENABLED 1" in program_out
    assert "timed 987654321 -5" in out, err


# -- cross-compiled for aarch64 -----------------------------------------------

def test_aarch64_arguments_are_registers_or_constants(tmp_path, spdk_include):
    """SPDK's aarch64 fix: arguments in registers or constants, which tracers
    decode, not memory operands."""
    compiler = require("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    require("aarch64-linux-gnu-readelf", "binutils-aarch64-linux-gnu")
    config = spdk_config(tmp_path / "config", True)
    # systemtap-sdt-dev installs sdt.h (one file for every architecture)
    # under the host's multiarch directory only.
    sdt = sdt_include_dir(tmp_path / "sdt")
    obj = compile_c([C_DIR / "spdk_fire_all.c"], tmp_path / "fire_all.o", compiler=compiler, link=False,
                    include_dirs=[config, STUBS, spdk_include, sdt])
    text = subprocess.run(["aarch64-linux-gnu-readelf", "-n", "-W", str(obj)], capture_output=True,
                          text=True, check=True).stdout
    specs = [s for line in text.splitlines() if "Arguments:" in line for s in line.split(":", 1)[1].split()]
    assert len(specs) > 100
    for spec in specs:
        _, _, where = parse_spec(spec)
        assert re.fullmatch(r"[xw]\d+|sp|\$?-?\d+", where), spec
