"""`probegen import` then `probegen verify` on the same binaries exits 0:
programs built with gcc for x86_64, i686 and aarch64 whose probes pass
literals at some sites and variables (bool, int, pointer, size_t, long,
char) at others, imported one at a time and all together; and every
provider of real binaries (libstdc++, python3.11, libjvm, PostgreSQL).
Verify still finds what is wrong: a literal the declared type cannot
hold, a uint64_t where a 32-bit binary passes a pointer."""

from __future__ import annotations

import subprocess

import pytest

from helpers import (
    C_DIR, LIBJVM, LIBSTDCXX, PYTHON311, WARNINGS, compile_c, compile_for, require_bpftrace, require_file, run_cli,
    sdt_include_dir,
)
from probegen.catalog import load_catalog
from probegen.elf.notes import read_binary

ARCHES = ("x86_64", "i686", "aarch64")
POSTGRES = "/usr/lib/postgresql/15/bin/postgres"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """tests/c/import_roundtrip.c for each architecture (skipped where the
    cross compiler is missing)."""
    directory = tmp_path_factory.mktemp("roundtrip")
    sdt = sdt_include_dir(directory / "sdt")
    binaries = {}
    for arch in ARCHES:
        try:
            binaries[arch] = compile_for(arch, [C_DIR / "import_roundtrip.c"], directory / f"rt_{arch}", include_dirs=[sdt])
        except pytest.skip.Exception:
            continue
    return binaries


def binaries_for(built, *arches):
    missing = [a for a in arches if a not in built]
    if missing:
        pytest.skip(f"no compiler for {', '.join(missing)} (see COMPILERS in tests/helpers/__init__.py)")
    return [built[a] for a in arches]


def import_catalog(capsys, out, provider, *binaries):
    code, stdout, err = run_cli(capsys, "import", *binaries, "--provider", provider, "-o", out)
    assert code == 0 and not err and not stdout, err
    return load_catalog(out)


def verify(capsys, catalog_path, *binaries) -> tuple[int, str]:
    code, stdout, err = run_cli(capsys, "verify", "-c", catalog_path, *binaries)
    return code, stdout + err


def types(catalog, probe):
    return [a.ctype.spelling for a in catalog.probe(probe).args]


def specs(binary, probe, index) -> set[str]:
    return {s.args[index].spec for p in read_binary(binary).probes if p.name == probe for s in p.sites}


@pytest.mark.parametrize("arch", ARCHES)
def test_one_binary_imports_and_verifies(built, tmp_path, capsys, arch):
    [binary] = binaries_for(built, arch)
    catalog = import_catalog(capsys, tmp_path / "rt.yaml", "rt", binary)
    code, out = verify(capsys, tmp_path / "rt.yaml", binary)
    assert code == 0, out
    pointer = "uint32_t" if arch == "i686" else "uint64_t"
    assert types(catalog, "mixed")[:2] == [pointer, pointer]
    assert types(catalog, "throw") == [pointer, "int32_t"]


def test_literal_sites_do_not_vote(built, tmp_path, capsys):
    """PostgreSQL's sort__start: 'false' at three sites is the int 0
    (-4@$0), the bool variable at the fourth is 1 byte: the variable
    decides, and verify accepts the 0 as a value of the byte."""
    [binary] = binaries_for(built, "x86_64")
    arg1 = specs(binary, "sort__start", 1)
    assert "-4@$0" in arg1 and any(s.startswith("1@") for s in arg1), arg1  # the case is really in the binary
    catalog = import_catalog(capsys, tmp_path / "rt.yaml", "rt", binary)
    assert types(catalog, "sort__start") == ["int32_t", "uint8_t"]
    # Only literals: the widest, signed as one of them is negative.
    assert types(catalog, "literals") == ["int32_t", "int32_t"]
    # An unsigned variable, and the sentinel -1 at another site.
    assert "-4@$-1" in specs(binary, "mixed", 3) and types(catalog, "mixed")[3] == "uint32_t"
    assert verify(capsys, tmp_path / "rt.yaml", binary)[0] == 0


def test_keyword_and_double_underscore_names_are_imported_as_they_are(built, tmp_path, capsys):
    [binary] = binaries_for(built, "x86_64")
    catalog = import_catalog(capsys, tmp_path / "rt.yaml", "rt", binary)
    assert {p.name for p in catalog.probes} == {"sort__start", "mixed", "literals", "throw", "catch"}
    text = (tmp_path / "rt.yaml").read_text()
    assert "$schema" not in text and "clock" not in text and "arg0: true" not in text


def test_three_architectures_together(built, tmp_path, capsys):
    """Pointer-wide arguments in binaries of both pointer sizes become
    void * (intptr_t when signed); a char signed on x86 and unsigned on
    arm64 is plain char."""
    binaries = binaries_for(built, *ARCHES)
    catalog = import_catalog(capsys, tmp_path / "rt.yaml", "rt", *binaries)
    assert types(catalog, "mixed") == ["void *", "void *", "intptr_t", "uint32_t", "char", "uint64_t"]
    assert types(catalog, "throw") == ["void *", "int32_t"]
    code, out = verify(capsys, tmp_path / "rt.yaml", *binaries)
    assert code == 0 and "30 sites in 3 binaries" in out, out
    for binary in binaries:
        code, out = verify(capsys, tmp_path / "rt.yaml", binary)
        assert code == 0, out


def test_a_32_bit_import_does_not_fit_the_64_bit_binary(built, tmp_path, capsys):
    """What importing the architectures together prevents: uint32_t from
    i686 alone, and x86_64 passes 8-byte pointers. (The other way round,
    i686's 4-byte pointers convert to a uint64_t as C converts them.)"""
    x86_64, i686 = binaries_for(built, "x86_64", "i686")
    import_catalog(capsys, tmp_path / "rt.yaml", "rt", i686)
    code, out = verify(capsys, tmp_path / "rt.yaml", x86_64)
    assert code == 1 and "argument 0 'arg0': catalog says uint32_t (4 bytes, unsigned)" in out, out
    import_catalog(capsys, tmp_path / "rt64.yaml", "rt", x86_64)
    assert verify(capsys, tmp_path / "rt64.yaml", i686)[0] == 0


CATALOG = """\
provider: rt
header:
  semaphores: false
probes:
  - name: sort__start
    group: rt
    doc: PostgreSQL's shape.
    args:
      - {{name: kind, type: int}}
      - {{name: random_access, type: bool}}
  - name: mixed
    group: rt
    doc: Pointer-sized types follow each binary's pointer size.
    args:
      - {{name: p, type: void *}}
      - {{name: n, type: size_t}}
      - {{name: l, type: long}}
      - {{name: u, type: unsigned int}}
      - {{name: c, type: char}}
      - {{name: w, type: uint64_t}}
  - name: literals
    group: rt
    doc: Literals only.
    args:
      - {{name: a, type: {a}}}
      - {{name: b, type: {b}}}
  - name: throw
    group: rt
    doc: A keyword.
    args:
      - {{name: p, type: const char *}}
      - {{name: n, type: int}}
  - name: catch
    group: rt
    doc: A keyword.
    args:
      - {{name: p, type: struct exception *}}
      - {{name: n, type: int}}
"""


def test_declared_types_verify_on_every_architecture(built, tmp_path, capsys):
    """A catalog as a person writes it (bool, void *, size_t, long, char)
    holds on all three: a literal is accepted when the type holds its value."""
    binaries = binaries_for(built, *ARCHES)
    path = tmp_path / "rt.yaml"
    path.write_text(CATALOG.format(a="short", b="int"))
    code, out = verify(capsys, path, *binaries)
    assert code == 0, out


@pytest.mark.parametrize("a,b,bad", [("int", "uint16_t", "-4@$70000"), ("int", "int16_t", "-4@$70000"),
                                     ("bool", "int", "-4@$-3")])
def test_a_literal_the_type_cannot_hold_is_a_finding(built, tmp_path, capsys, a, b, bad):
    [binary] = binaries_for(built, "x86_64")
    path = tmp_path / "rt.yaml"
    path.write_text(CATALOG.format(a=a, b=b))
    code, out = verify(capsys, path, binary)
    assert code == 1 and out.count("error:") == 1 and "site 0x" in out and f"has {bad}" in out, out


def test_clock_only_for_spdk_shaped_providers(tmp_path, capsys):
    """One probe whose first argument is the literal 0 beside pointer-first
    probes is not SPDK's arg0: no arg0, no spdk_get_ticks() clock."""
    source = tmp_path / "lib.c"
    source.write_text("#include <sys/sdt.h>\nvolatile int v;\nstatic char b[4];\n"
                      "int main(void)\n{\n\tDTRACE_PROBE2(lib, start, 0, v);\n"
                      "\tDTRACE_PROBE1(lib, open, b + v);\n\tDTRACE_PROBE2(lib, read, b + v, v);\n\treturn 0;\n}\n")
    binary = compile_c([source], tmp_path / "lib")
    catalog = import_catalog(capsys, tmp_path / "lib.yaml", "lib", binary)
    assert not catalog.arg0 and types(catalog, "start") == ["int32_t", "int32_t"]
    assert "spdk_get_ticks" not in (tmp_path / "lib.yaml").read_text()
    assert verify(capsys, tmp_path / "lib.yaml", binary)[0] == 0


# -- keyword probe names in the generated header -------------------------------

KEYWORDS = ("throw", "catch", "rethrow", "while", "int", "class", "delete", "return", "sizeof", "typename")

KEYWORD_CATALOG = "provider: kw\nprobes:\n" + "".join(
    f"  - name: {name}\n    group: kw\n    doc: Named like a keyword.\n    args: [{{name: n, type: int}}]\n"
    for name in KEYWORDS)

KEYWORD_C = "#include \"kw.h\"\nvolatile int v = 3;\nint main(void)\n{\n" + "".join(
    f"\tPROBE_{name.upper()}(v);\n" for name in KEYWORDS) + "\treturn 0;\n}\n"


@pytest.fixture(scope="module")
def keyword_build(tmp_path_factory):
    from probegen.generators.header import render_header

    directory = tmp_path_factory.mktemp("keywords")
    catalog_path = directory / "kw.yaml"
    catalog_path.write_text(KEYWORD_CATALOG)
    (directory / "kw.h").write_text(render_header(load_catalog(catalog_path)))
    (directory / "kw.c").write_text(KEYWORD_C)
    return directory, catalog_path


@pytest.mark.parametrize("cxx", [False, True], ids=["c", "c++"])
def test_keyword_probe_names_compile_verify_and_fire(keyword_build, capsys, cxx):
    """gcc and g++ -Wall -Wextra -Werror compile the header; the notes carry
    the names as written and verify passes; bpftrace attaches to each and
    counts a hit."""
    directory, catalog_path = keyword_build
    assert WARNINGS == ["-Wall", "-Wextra", "-Werror"]
    binary = compile_c([directory / "kw.c"], directory / f"kw_{cxx}", include_dirs=[directory],
                       defines=["PROBEGEN_USDT"], cxx=cxx)
    assert {p.name for p in read_binary(binary).probes} == set(KEYWORDS)
    code, out = verify(capsys, catalog_path, binary)
    assert code == 0, out
    if cxx:
        return  # the same notes: firing them once is enough
    bpftrace = require_bpftrace()
    program = "".join(f"usdt:{binary}:kw:{name} {{ @[\"{name}\"] = count(); }}\n" for name in KEYWORDS)
    result = subprocess.run(["bash", "-c", f"ulimit -l unlimited 2>/dev/null; exec {bpftrace} -e '{program}' -c {binary}"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in KEYWORDS:
        assert f"@[{name}]: 1" in result.stdout, result.stdout + result.stderr


def test_keyword_probe_names_in_generated_scripts(keyword_build):
    """The generated all.bt (usdt:FILE:throw, ...) loads and prints one line per hit."""
    from probegen.generators import bpftrace as bpftrace_generator
    from probegen.files.output import write_all

    bpftrace = require_bpftrace()
    directory, catalog_path = keyword_build
    binary = compile_c([directory / "kw.c"], directory / "kw_scripts", include_dirs=[directory],
                       defines=["PROBEGEN_USDT"])
    write_all(bpftrace_generator.render_files(load_catalog(catalog_path), directory / "bt"))
    script = directory / "all.bt"
    # bpftrace -c resolves no 'usdt:*:': the probes name the program's file, as a user would
    script.write_text((directory / "bt" / "all.bt").read_text().replace("usdt:*:", f"usdt:{binary}:"))
    result = subprocess.run(["bash", "-c", f"ulimit -l unlimited 2>/dev/null; exec {bpftrace} {script} -c {binary}"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    hits = [line.split(": ", 1)[1] for line in result.stdout.splitlines() if ": " in line and line[0].isdigit()]
    assert hits == [f"{name} n=3" for name in KEYWORDS], result.stdout + result.stderr


@pytest.mark.parametrize("name,why", [
    ("static_assert", "is a macro in C (<assert.h> defines it)"),
    ("alignas", "is a macro in C (<stdalign.h> defines it)"),
    ("bool", "is a macro compilers or system headers define"),
    ("and", "is an operator in C++"),
    ("linux", "is a macro compilers or system headers define"),
])
def test_names_that_break_the_header_are_still_refused(tmp_path, name, why):
    from probegen.errors import CatalogError

    path = tmp_path / "kw.yaml"
    path.write_text(KEYWORD_CATALOG.replace("name: while", f"name: {name}"))
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert [why in str(d) for d in info.value.diagnostics] == [True], info.value.diagnostics


# -- real binaries -------------------------------------------------------------

REAL = [
    (LIBSTDCXX, "libstdc++6", "libstdcxx"),
    (PYTHON311, "python3.11-minimal", "python"),
    (LIBJVM, "openjdk-17-jre-headless", "hotspot"),
    (LIBJVM, "openjdk-17-jre-headless", "hs_private"),
    (LIBJVM, "openjdk-17-jre-headless", "hotspot_jni"),
    (POSTGRES, "postgresql-15", "postgresql"),
]


@pytest.mark.parametrize("path,package,provider", REAL, ids=[r[2] for r in REAL])
def test_real_binaries_import_then_verify(tmp_path, capsys, path, package, provider):
    from pathlib import Path

    binary = require_file(Path(path), package)
    catalog = import_catalog(capsys, tmp_path / "p.yaml", provider, binary)
    code, out = verify(capsys, tmp_path / "p.yaml", binary)
    assert code == 0, out
    if provider == "libstdcxx":
        assert {p.name for p in catalog.probes} == {"throw", "rethrow", "catch"}
    if provider == "postgresql":
        assert types(catalog, "sort__start")[1] == "uint8_t"  # the bool, not the literal false's int


def test_imported_catalog_builds_a_header_that_verifies(built, tmp_path, capsys):
    """The catalog imported from the three builds generates a header gcc
    and g++ compile (names with '__' and keywords included), and the
    program built with it verifies against the same catalog."""
    from probegen.generators.header import render_header

    binaries = binaries_for(built, *ARCHES)
    catalog = import_catalog(capsys, tmp_path / "rt.yaml", "rt", *binaries)
    (tmp_path / "rt.h").write_text(render_header(catalog))
    (tmp_path / "main.c").write_text(
        '#include "rt.h"\nstatic char b[4];\nvolatile int v;\nint main(void)\n{\n'
        "\tPROBE_SORT__START(v, 1);\n\tPROBE_MIXED(b, (void *)sizeof(b), -1L, 2u, 'c', 3);\n\tPROBE_LITERALS(0, 5);\n"
        "\tPROBE_THROW(b, v);\n\tPROBE_CATCH(b, v);\n\treturn 0;\n}\n")
    for cxx in (False, True):
        binary = compile_c([tmp_path / "main.c"], tmp_path / f"main_{cxx}", include_dirs=[tmp_path],
                           defines=["PROBEGEN_USDT"], cxx=cxx)
        code, out = verify(capsys, tmp_path / "rt.yaml", binary)
        assert code == 0, out
