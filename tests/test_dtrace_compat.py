"""Swapping `dtrace -h` for probegen: call sites written against SystemTap
dtrace's header build unchanged against probegen's (header style dtrace),
and their notes are the same (provider, names, argument sizes and signs),
without the `dtrace -G` object."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import C_DIR, compile_c, readelf_probes, require, run_cli

D_DIR = Path(__file__).parent / "d"
SHOP = D_DIR / "shop.d"
CALL_SITES = C_DIR / "dtrace_shop.c"


def dtrace(*args, cwd: Path) -> None:
    tool = require("dtrace", "systemtap-sdt-dev")
    result = subprocess.run([tool, *map(str, args)], cwd=cwd, capture_output=True, text=True)
    # SystemTap's dtrace falls back to a second parser with a warning: the
    # test files must read without one, or the comparison is with a guess.
    assert result.returncode == 0 and "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr


def notes(binary: Path) -> list[tuple]:
    """What a tracer sees of each probe: names, argument sizes and signs,
    and whether it has a semaphore (operands may differ: probegen's header
    keeps arguments in registers)."""
    return sorted((p["provider"], p["name"], tuple(a.split("@")[0] for a in p["args"]),
                   p["semaphore"] != 0) for p in readelf_probes(binary))


def build_with_dtrace(directory: Path, source: Path, cxx: bool) -> Path:
    dtrace("-h", "-s", source, "-o", "dt_probes.h", cwd=directory)
    dtrace("-G", "-s", source, "-o", "dt_probes.o", cwd=directory)
    calls = compile_c([CALL_SITES], directory / "with_dtrace.o", cxx=cxx, link=False,
                      include_dirs=[directory], defines=['PROBES_H="dt_probes.h"'])
    binary = directory / "with_dtrace"
    subprocess.run(["g++" if cxx else "gcc", calls, directory / "dt_probes.o", "-o", binary], check=True)
    return binary


def build_with_probegen(directory: Path, header: Path, cxx: bool) -> Path:
    return compile_c([CALL_SITES], directory / "with_probegen", cxx=cxx, include_dirs=[directory],
                     defines=[f'PROBES_H="{header.name}"'])


@pytest.mark.parametrize("cxx", [False, True], ids=["c", "c++"])
def test_header_from_provider_file_matches_dtrace(tmp_path, capsys, cxx):
    """probegen header -s shop.d -o probes.h, as dtrace -h -s is run."""
    reference = notes(build_with_dtrace(tmp_path, SHOP, cxx))
    assert ("shop", "pay__card__check", ("8", "2", "-8", "-1"), True) in reference
    code, _, err = run_cli(capsys, "header", "-s", SHOP, "-o", tmp_path / "probes.h")
    assert (code, err) == (0, "")
    assert notes(build_with_probegen(tmp_path, tmp_path / "probes.h", cxx)) == reference
    assert len(reference) == 9


def test_header_from_imported_catalog_matches_dtrace(tmp_path, capsys):
    """probegen import shop.d, then the catalog's header; verify accepts
    the binary built with dtrace -h's header too (types are the file's)."""
    reference_binary = build_with_dtrace(tmp_path, SHOP, cxx=False)
    catalog = tmp_path / "probes.yaml"
    assert run_cli(capsys, "import", SHOP, "-o", catalog)[0] == 0
    assert run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "shop_probes.h")[0] == 0
    binary = build_with_probegen(tmp_path, tmp_path / "shop_probes.h", cxx=False)
    assert notes(binary) == notes(reference_binary)
    for built in (binary, reference_binary):
        code, out, err = run_cli(capsys, "verify", "-c", catalog, built)
        assert code == 0, out + err


def test_header_is_stable_and_not_rewritten(tmp_path, capsys):
    header = tmp_path / "probes.h"
    assert run_cli(capsys, "header", "-s", SHOP, "-o", header)[0] == 0
    first, stamp = header.read_text(), header.stat().st_mtime_ns
    assert run_cli(capsys, "header", "-s", SHOP, "-o", header)[0] == 0
    assert header.read_text() == first and header.stat().st_mtime_ns == stamp
    assert "#define SHOP_PAY_CARD_CHECK(card, arg1, arg2, arg3)" in first
    assert "DTRACE_PROBE4(shop, pay__card__check, card, arg1, arg2, arg3)" in first
    assert "#ifndef SHOP_PROBES_H" in first
    code, printed, _ = run_cli(capsys, "header", "-s", SHOP, "-o", "-")
    assert code == 0 and printed == first


def test_default_output_is_named_after_the_provider_file(tmp_path, capsys, monkeypatch):
    """As dtrace -h: FILE.h in the working directory."""
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "header", "-s", SHOP)[0] == 0
    assert "#ifndef SHOP_SHOP_H\n" in (tmp_path / "shop.h").read_text()


def test_provider_file_with_two_providers(tmp_path, capsys):
    """dtrace -h writes every provider of the file into one header: so does
    probegen, each provider under its own guard."""
    source = tmp_path / "two.d"
    source.write_text("provider alpha {\n\tprobe start(int);\n};\nprovider beta {\n\tprobe stop(long, const char *);\n};\n")
    main = tmp_path / "main.c"
    main.write_text('#include PROBES_H\nint main(int argc, char **argv) {\n'
                    '\tif (ALPHA_START_ENABLED() || BETA_STOP_ENABLED()) return 3;\n'
                    '\tALPHA_START(argc);\n\tBETA_STOP((long)argc, argv[0]);\n\treturn 0;\n}\n')
    dtrace("-h", "-s", source, "-o", "dt.h", cwd=tmp_path)
    dtrace("-G", "-s", source, "-o", "dt.o", cwd=tmp_path)
    reference = compile_c([main, tmp_path / "dt.o"], tmp_path / "a", include_dirs=[tmp_path],
                          defines=['PROBES_H="dt.h"'])
    assert run_cli(capsys, "header", "-s", source, "-o", tmp_path / "pg.h")[0] == 0
    ours = compile_c([main], tmp_path / "b", include_dirs=[tmp_path], defines=['PROBES_H="pg.h"'])
    assert notes(ours) == notes(reference) == [
        ("alpha", "start", ("-4",), True), ("beta", "stop", ("-8", "8"), True)]
    text = (tmp_path / "pg.h").read_text()
    assert "#ifndef ALPHA_PG_H" in text and "#ifndef BETA_PG_H" in text


def test_header_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.d"
    bad.write_text("provider p {\n\tprobe a(int)\n};\n")
    code, _, err = run_cli(capsys, "header", "-s", bad, "-o", tmp_path / "x.h")
    assert code == 2 and err.startswith(f"{bad}:3:1: error: expected ';' after probe 'a'")
    clash = tmp_path / "clash.d"
    clash.write_text("provider p {\n\tprobe a__b();\n\tprobe a_b();\n};\n")
    code, _, err = run_cli(capsys, "header", "-s", clash, "-o", tmp_path / "x.h")
    assert code == 2 and "P_A_B" in err
    assert not (tmp_path / "x.h").exists()


def test_print_enable_macro_with_a_provider_file_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, printed, err = run_cli(capsys, "header", "-s", SHOP, "--print-enable-macro")
    assert (code, printed) == (2, "")
    assert err == "probegen header: error: --print-enable-macro reads the catalog (-c), not a provider file (-s)\n"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("header, defines, probes", [
    ("{style: dtrace, enable_macro: APP_USDT}", ["APP_USDT"], 1),
    ("{style: dtrace, enable_macro: APP_USDT}", [], 0),
    ("{style: dtrace, disable_macro: APP_NO_USDT}", [], 1),
    ("{style: dtrace, disable_macro: APP_NO_USDT}", ["APP_NO_USDT"], 0),
])
def test_style_dtrace_switches(tmp_path, capsys, header, defines, probes):
    """Compiled in unless the catalog asks for a switch; compiled out, the
    macros use their arguments (no unused-variable warnings) and evaluate none."""
    catalog = tmp_path / "probes.yaml"
    catalog.write_text(f"provider: app\nheader: {header}\nprobes:\n  - name: go__now\n    group: g\n"
                       "    doc: d\n    args: [{name: n, type: int}]\n")
    assert run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "probes.h")[0] == 0
    main = tmp_path / "main.c"
    main.write_text('#include "probes.h"\nstatic int calls;\nstatic int next(void) { return ++calls; }\n'
                    "int main(void) {\n\tint n = 4;\n\tAPP_GO_NOW(n);\n\tAPP_GO_NOW(next());\n"
                    "\treturn APP_GO_NOW_ENABLED() + calls;\n}\n")
    binary = compile_c([main], tmp_path / "main", include_dirs=[tmp_path], defines=defines)
    assert len(notes(binary)) == 2 * probes
    assert subprocess.run([binary]).returncode == probes  # next() ran once when compiled in, never when out


def test_style_is_checked(tmp_path, capsys):
    catalog = tmp_path / "probes.yaml"
    catalog.write_text("provider: app\nheader: {style: dtrace3}\nprobes: [{name: a, group: g, doc: d}]\n")
    code, _, err = run_cli(capsys, "header", "-c", catalog, "-o", "-")
    assert code == 2 and err.startswith(f"{catalog}:2:17: error: 'style': 'dtrace3' is not one of: probegen, dtrace")
