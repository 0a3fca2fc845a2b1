"""probegen-dtrace in place of SystemTap's dtrace, in builds shaped like
memcached's (autotools: $DTRACE -h, then -G over the objects, linked in)
and GLib's (meson: find_program('dtrace'), two generators, the header
rewritten to ship without semaphores), with no edit to the build files:
the built binaries carry the same notes as with SystemTap's dtrace, and
each semaphore once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from helpers import REPO, VENV_BIN, build_env, readelf_probes, require, require_sdt, run_cli

ADOPT = Path(__file__).parent / "d" / "adopt"
SOURCES = ["stdtypes.d", "stdtypes.c", "main.c"]
PROBES = 5


def probegen_dtrace() -> str:
    return str(VENV_BIN / "probegen-dtrace")


def notes(binary: Path) -> list[tuple]:
    """What a tracer sees of each site: names, argument sizes and signs,
    whether it names a semaphore."""
    return sorted((p["provider"], p["name"], tuple(a.split("@")[0] for a in p["args"]), p["semaphore"] != 0)
                  for p in readelf_probes(binary))


def probes_section_size(binary: Path) -> int:
    out = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if " .probes " in l)
    return int(line.split()[line.split().index(".probes") + 4], 16)


def run(command, cwd: Path, **env) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**build_env(), **env})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def project(tmp_path: Path, shape: str, name: str) -> Path:
    directory = tmp_path / name
    shutil.copytree(ADOPT / shape, directory)
    for source in SOURCES:
        shutil.copy(ADOPT / source, directory)
    return directory


def recipe(name: str) -> str:
    """The fenced block after '<!-- recipe: NAME -->' in doc/build.md."""
    text = (REPO / "doc" / "build.md").read_text()
    block = text.split(f"<!-- recipe: {name} -->\n", 1)[1]
    return block.split("\n", 1)[1].split("```", 1)[0]


def autotools_build(tmp_path: Path, name: str, configure: str) -> Path:
    directory = project(tmp_path, "autotools", name)
    run(["autoreconf", "-i"], directory)
    run(["sh", "-c", configure], directory)
    run(["make"], directory)
    return directory


@pytest.mark.slow
def test_autotools_project_builds_unchanged(tmp_path):
    require_sdt()
    for tool, package in (("autoreconf", "autoconf"), ("automake", "automake"), ("make", "make")):
        require(tool, package)
    dtrace = require("dtrace", "systemtap-sdt-dev")
    ours = autotools_build(tmp_path, "probegen", recipe("autotools"))
    assert "probegen-dtrace" in (ours / "Makefile").read_text()
    reference = autotools_build(tmp_path, "systemtap", f"./configure --enable-dtrace DTRACE={dtrace}")
    assert notes(ours / "adopt") == notes(reference / "adopt")
    assert len(notes(ours / "adopt")) == PROBES and all(n[3] for n in notes(ours / "adopt"))
    assert probes_section_size(ours / "adopt") == 2 * PROBES
    # Nothing changed: make does nothing, and -G keeps its object as it was.
    stamp = (ours / "adopt_dtrace.o").stat().st_mtime_ns
    (ours / "stdtypes.o").touch()
    run(["make"], ours)
    assert (ours / "adopt_dtrace.o").stat().st_mtime_ns == stamp
    run(["./adopt"], ours)


@pytest.mark.slow
def test_meson_project_builds_unchanged(tmp_path):
    require_sdt()
    require("meson", pip="meson")
    require("ninja", pip="ninja")
    dtrace = require("dtrace", "systemtap-sdt-dev")
    built = {}
    for name, native_file in (("probegen", recipe("meson native file")), ("systemtap", f"[binaries]\ndtrace = '{dtrace}'\n")):
        directory = project(tmp_path, "meson", name)
        native = directory / "native.ini"
        native.write_text(native_file)
        run(["meson", "setup", "build", "--native-file", str(native)], directory)
        run(["ninja", "-C", "build"], directory)
        built[name] = directory / "build"
    ours = notes(built["probegen"] / "libadopt.so")
    assert ours == notes(built["systemtap"] / "libadopt.so")
    assert len(ours) == PROBES and not any(n[3] for n in ours)  # GLib's rewrite: no semaphores at the sites
    run([str(built["probegen"] / "adopt")], built["probegen"])


def test_options_as_builds_pass_them(tmp_path, capsys):
    """-C with -D picks a branch; unknown options and a missing -s are one
    line and exit 2; the default output is the file's base name here."""
    source = tmp_path / "cond.d"
    source.write_text("#if defined(WITH_B)\nprovider p { probe b(int); };\n#else\n"
                      "provider p { probe a(uintmax_t, time_t); };\n#endif\n")
    assert run_cli(capsys, "dtrace", "-C", "-D", "WITH_B", "-h", "-s", source, "-o", tmp_path / "b.h")[0] == 0
    assert "define P_B(" in (tmp_path / "b.h").read_text()
    assert run_cli(capsys, "dtrace", "-h", "-s", source, "-o", tmp_path / "a.h", "-x", "nolibs", "--types",
                   "--no-pyparsing")[0] == 0
    assert "define P_A(" in (tmp_path / "a.h").read_text() and "P_B" not in (tmp_path / "a.h").read_text()
    assert run_cli(capsys, "dtrace", "-C", "-DWITH_B", "-h", "-s", source, "-o", tmp_path / "b2.h")[0] == 0
    assert "define P_B(" in (tmp_path / "b2.h").read_text()
    for argv in (["-h", "-q", "-s", source], ["-h"], ["-h", "-G", "-s", source], ["-s", source], ["-h", "-s"]):
        code, out, err = run_cli(capsys, "dtrace", *argv)
        assert (code, out, len(err.splitlines())) == (2, "", 1), (argv, err)
    result = subprocess.run([probegen_dtrace(), "-G", "-s", str(source), "x.o"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0 and (tmp_path / "cond.o").exists(), result.stderr


def test_object_that_cannot_be_written_is_one_line(tmp_path, capsys):
    """-G into a missing directory, or over a directory: one line, exit 2
    (a traceback once)."""
    source = tmp_path / "p.d"
    source.write_text("provider p { probe a(int); };\n")
    missing = tmp_path / "missing" / "dir" / "x.o"
    code, out, err = run_cli(capsys, "dtrace", "-G", "-s", source, "-o", missing)
    assert (code, out, err) == (2, "", f"{missing}: error: cannot create a file in {missing.parent}: "
                                       "No such file or directory\n")
    (tmp_path / "taken.o").mkdir()
    code, out, err = run_cli(capsys, "dtrace", "-G", "-s", source, "-o", tmp_path / "taken.o")
    assert (code, out, err) == (2, "", f"{tmp_path / 'taken.o'}: error: cannot write: Is a directory\n")


def test_object_over_a_fifo_does_not_block(tmp_path):
    """-G compares the new object with the file at -o before replacing it:
    a FIFO there (no writer) is not read, it is replaced."""
    source = tmp_path / "p.d"
    source.write_text("provider p { probe a(int); };\n")
    fifo = tmp_path / "p.o"
    os.mkfifo(fifo)
    result = subprocess.run([probegen_dtrace(), "-G", "-s", str(source), "-o", str(fifo)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert fifo.is_file() and fifo.read_bytes().startswith(b"\x7fELF")


def test_object_into_a_device_keeps_the_device(tmp_path, capsys):
    """-G -o /dev/null as root renamed the object over the device, deleting it: a device is written, as the
    header is."""
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    source = tmp_path / "p.d"
    source.write_text("provider p { probe a(int); };\n")
    assert run_cli(capsys, "dtrace", "-G", "-s", source, "-o", null)[0] == 0
    assert stat.S_ISCHR(null.stat().st_mode)

def test_header_h_is_not_help(tmp_path, capsys):
    """`probegen header -h -s F.d -o F.h`, a naive swap for dtrace, writes
    the header (it used to print help, exit 0 and write nothing)."""
    code, out, _ = run_cli(capsys, "header", "-h", "-s", ADOPT / "stdtypes.d", "-o", tmp_path / "s.h")
    assert code == 0 and out == ""
    assert "#define STDT_STORE(" in (tmp_path / "s.h").read_text()


def build_direct(tmp_path: Path, without_semaphores: bool) -> Path:
    """stdtypes.c built as the projects build it: probegen-dtrace -h (and,
    as GLib does, the header rewritten to #undef _SDT_HAS_SEMAPHORES), -G,
    the object linked in."""
    tmp_path.mkdir()
    subprocess.run([probegen_dtrace(), "-h", "-s", str(ADOPT / "stdtypes.d"), "-o", "stdtypes.h"], cwd=tmp_path, check=True)
    subprocess.run([probegen_dtrace(), "-G", "-s", str(ADOPT / "stdtypes.d"), "-o", "sem.o"], cwd=tmp_path, check=True)
    if without_semaphores:
        header = tmp_path / "stdtypes.h"
        header.write_text(header.read_text().replace("define _SDT_HAS_SEMAPHORES 1", "undef _SDT_HAS_SEMAPHORES"))
    binary = tmp_path / "adopt"
    subprocess.run(["gcc", "-O2", "-I", str(tmp_path), str(ADOPT / "stdtypes.c"), str(ADOPT / "main.c"),
                    str(tmp_path / "sem.o"), "-o", str(binary)], check=True)
    return binary


def test_imported_provider_file_verifies_and_semaphore_finding_speaks_of_the_provider(tmp_path, capsys):
    require_sdt()
    catalog = tmp_path / "probes.yaml"
    assert run_cli(capsys, "import", ADOPT / "stdtypes.d", "-o", catalog)[0] == 0
    with_semaphores = build_direct(tmp_path / "with", False)
    code, out, err = run_cli(capsys, "verify", "-c", catalog, with_semaphores)
    assert code == 0, out + err
    without = build_direct(tmp_path / "without", True)
    code, out, err = run_cli(capsys, "verify", "-c", catalog, without)
    assert code == 1 and "SPDK" not in out + err
    findings = [line for line in out.splitlines() if "semaphore" in line]
    assert len(findings) == 1 and str(without) in findings[0] and "'stdt'" in findings[0], out
    assert run_cli(capsys, "verify", "-c", catalog, "--allow-missing-semaphores", without)[0] == 0


@pytest.mark.parametrize("provider", ["stap", "dtrace"])
def test_providers_named_like_the_tools(tmp_path, capsys, provider):
    """Their guard (STAP_..._H, DTRACE_..._H) is no macro of <sys/sdt.h>."""
    require_sdt()
    source = tmp_path / "tool.d"
    source.write_text(f"provider {provider} {{ probe go(int n); }};\n")
    assert run_cli(capsys, "header", "-s", source, "-o", tmp_path / "tool_probes.h")[0] == 0
    catalog = tmp_path / "probes.yaml"
    assert run_cli(capsys, "import", source, "-o", catalog)[0] == 0
    assert run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "probes.h")[0] == 0
    call = tmp_path / "call.c"
    call.write_text(f'#include "tool_probes.h"\n#include "probes.h"\nint main(void) {{ {provider.upper()}_GO(1); return 0; }}\n')
    subprocess.run(["gcc", "-Wall", "-Werror", "-I", str(tmp_path), str(call), "-o", str(tmp_path / "call")], check=True)


def kv_binaries(tmp_path: Path) -> tuple[Path, Path]:
    """kv.c (and kv2.c, its next version) built with probegen-dtrace -h/-G."""
    source = ADOPT / "kv.d"
    for mode, output in (("-h", "kv.h"), ("-G", "kv_probes.o")):
        subprocess.run([probegen_dtrace(), mode, "-s", str(source), "-o", output], cwd=tmp_path, check=True)
    built = []
    for name in ("kv", "kv2"):
        subprocess.run(["gcc", "-O2", "-I", str(tmp_path), str(ADOPT / f"{name}.c"), str(tmp_path / "kv_probes.o"),
                        "-o", str(tmp_path / name)], check=True)
        built.append(tmp_path / name)
    return built[0], built[1]


def test_import_from_d_takes_the_binaries_types(tmp_path, capsys):
    """Names and docs from the .d, types from the binary, each difference
    one note at its line in the .d, and the catalog verifies."""
    require_sdt()
    from probegen.catalog import load_catalog

    kv, _ = kv_binaries(tmp_path)
    catalog = tmp_path / "probes.yaml"
    code, out, err = run_cli(capsys, "import", "--from-d", ADOPT / "kv.d", kv, "-o", catalog)
    assert code == 0 and out == "", err
    text = (ADOPT / "kv.d").read_text().splitlines()
    notes = sorted((int(line.split(":")[1]), line.split(": note: ")[1].split(":")[0]) for line in err.splitlines())
    assert all(": note: " in line for line in err.splitlines())
    get = 1 + next(i for i, l in enumerate(text) if "probe get(" in l)
    never = 1 + next(i for i, l in enumerate(text) if "probe never(" in l)
    assert notes == [(get, "probe 'get' argument 1 'keylen'"), (get, "probe 'get' argument 2 'casid'"),
                     (never, "probe 'never' has no site in the binaries")]
    loaded = load_catalog(catalog)
    get_probe = loaded.probe("get")
    assert get_probe.doc == "Fired when a key is looked up."
    assert [(a.name, a.doc) for a in get_probe.args] == [
        ("key", "the key (not NUL-terminated)"), ("keylen", "the length of the key"), ("casid", "the CAS id")]
    assert get_probe.args[0].ctype.spelling == "const char *"  # the file's type: every site is one
    assert (get_probe.args[1].ctype.size, get_probe.args[2].ctype.signed) == (8, False)
    code, out, err = run_cli(capsys, "verify", "-c", catalog, kv)
    assert code == 0, out + err


def test_import_of_two_versions_that_disagree_is_an_error(tmp_path, capsys):
    require_sdt()
    kv, kv2 = kv_binaries(tmp_path)
    for argv in (["--provider", "kv"], ["--from-d", ADOPT / "kv.d"]):
        code, out, err = run_cli(capsys, "import", *argv, kv, kv2, "-o", tmp_path / "probes.yaml")
        assert (code, out, len(err.splitlines())) == (2, "", 1) and "'get'" in err, err
        assert not (tmp_path / "probes.yaml").exists()
    # One version at a time imports, and verifies.
    for binary in (kv, kv2):
        assert run_cli(capsys, "import", "--provider", "kv", binary, "-o", tmp_path / "one.yaml")[0] == 0
        assert run_cli(capsys, "verify", "-c", tmp_path / "one.yaml", binary)[0] == 0


def test_float_and_double_as_sdt_passes_them(tmp_path, capsys):
    """probegen-dtrace reads them as dtrace does (notes '8f@', '4f@'); a
    catalog cannot hold them, and import says so at their place."""
    require_sdt()
    dtrace = require("dtrace", "systemtap-sdt-dev")
    source = tmp_path / "fl.d"
    source.write_text("provider fl {\n\tprobe go(double d, float f, const double c, int n);\n};\n")
    calls = tmp_path / "fl.c"
    calls.write_text('#include "fl.h"\nint main(int argc, char **argv)\n{\n\t(void)argv;\n'
                     "\tdouble d = argc * 1.5;\n\tfloat f = argc * 2.5f;\n\tFL_GO(d, f, d, argc);\n\treturn 0;\n}\n")
    built = {}
    for name, tool in (("probegen", probegen_dtrace()), ("systemtap", dtrace)):
        directory = tmp_path / name
        directory.mkdir()
        for mode, output in (("-h", "fl.h"), ("-G", "fl.o")):
            subprocess.run([tool, mode, "-s", str(source), "-o", output], cwd=directory, check=True)
        built[name] = directory / "fl"
        subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-I", str(directory), str(calls), str(directory / "fl.o"),
                        "-o", str(built[name])], check=True)
    assert notes(built["probegen"]) == notes(built["systemtap"])
    assert notes(built["probegen"])[0][2][:3] == ("8f", "4f", "8f")
    code, out, err = run_cli(capsys, "import", source)
    assert (code, out, len(err.splitlines())) == (2, "", 1) and err.startswith(f"{source}:2:11: error:"), err
