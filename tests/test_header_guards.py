"""Include guards: made from the catalog's provider and the header's file
name (probegen header -o FILE: that file's), so the headers of two
catalogs can be included in one translation unit, and every symbol the
header defines carries the provider."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.catalog.names import default_guard
from helpers import compile_c, readelf_probes, require_bpftrace, run_cli

CATALOG = """\
provider: {provider}
{header}
probes:
  - name: {probe}
    group: g
    doc: A probe of {provider}.
    enabled_check: {enabled_check}
    args:
      - {{name: count, type: int}}
      - {{name: label, type: const char *}}
"""

MAIN = """\
#include "alpha/probes.h"
#include "beta/probes.h"
#include <stdio.h>

int main(int argc, char **argv)
{{
	(void)argv;
	if ({alpha}_ENABLED() && {beta}_ENABLED())
		puts("both traced");
	{alpha}(argc, "a");
	{beta}(argc + 1, "b");
	return 0;
}}
"""


def write_catalog(directory: Path, provider: str, probe: str, header: str = "", enabled_check: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "probes.yaml"
    path.write_text(CATALOG.format(provider=provider, probe=probe, header=header,
                                   enabled_check=str(enabled_check).lower()))
    return path


def two_headers(tmp_path: Path, capsys, header: str = "", alpha_check: bool = True) -> None:
    """alpha/probes.h and beta/probes.h, each written with -o probes.h as
    the meson and make recipes do; alpha's probe has a semaphore with
    ``alpha_check``, beta's always."""
    for provider, probe in (("alpha", "alpha_hit"), ("beta", "beta_hit")):
        catalog = write_catalog(tmp_path / provider, provider, probe, header, provider == "beta" or alpha_check)
        code, _, err = run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / provider / "probes.h")
        assert (code, err) == (0, "")


@pytest.mark.parametrize("cxx", [False, True], ids=["gcc", "g++"])
def test_two_catalogs_in_one_translation_unit(tmp_path, capsys, cxx):
    two_headers(tmp_path, capsys)
    assert "#ifndef ALPHA_PROBES_H" in (tmp_path / "alpha" / "probes.h").read_text()
    assert "#ifndef BETA_PROBES_H" in (tmp_path / "beta" / "probes.h").read_text()
    main = tmp_path / "main.c"
    main.write_text(MAIN.format(alpha="PROBE_ALPHA_HIT", beta="PROBE_BETA_HIT"))
    binary = compile_c([main], tmp_path / "main", cxx=cxx, include_dirs=[tmp_path], defines=["PROBEGEN_USDT"])
    found = {(p["provider"], p["name"], tuple(p["args"][i].split("@")[0] for i in range(2)), p["semaphore"] != 0)
             for p in readelf_probes(binary)}
    assert found == {("alpha", "alpha_hit", ("-4", "8"), True), ("beta", "beta_hit", ("-4", "8"), True)}
    fired = fire(binary, ["alpha:alpha_hit", "beta:beta_hit"])
    assert fired == ["alpha:alpha_hit 1", "beta:beta_hit 2"]


@pytest.mark.parametrize("cxx", [False, True], ids=["gcc", "g++"])
def test_a_header_without_semaphores_first(tmp_path, capsys, cxx):
    """alpha's header, none of whose probes has a semaphore, still readies
    <sys/sdt.h> for beta's, which has one; each site records its own."""
    two_headers(tmp_path, capsys, alpha_check=False)
    main = tmp_path / "main.c"
    main.write_text(MAIN.format(alpha="PROBE_ALPHA_HIT", beta="PROBE_BETA_HIT"))
    binary = compile_c([main], tmp_path / "main", cxx=cxx, include_dirs=[tmp_path], defines=["PROBEGEN_USDT"])
    assert {(p["name"], p["semaphore"] != 0) for p in readelf_probes(binary)} == {("alpha_hit", False),
                                                                                 ("beta_hit", True)}


def test_two_dtrace_style_headers_in_one_translation_unit(tmp_path, capsys):
    two_headers(tmp_path, capsys, header="header: {style: dtrace}")
    main = tmp_path / "main.c"
    main.write_text(MAIN.format(alpha="ALPHA_ALPHA_HIT", beta="BETA_BETA_HIT"))
    binary = compile_c([main], tmp_path / "main", include_dirs=[tmp_path])
    assert sorted(p["provider"] for p in readelf_probes(binary)) == ["alpha", "beta"]


def fire(binary: Path, probes: list[str]) -> list[str]:
    """The probes hit, as bpftrace attached to them prints them (argument 0
    after the name); skips without root or bpftrace."""
    bpftrace = require_bpftrace()
    script = " ".join(f'usdt:{binary}:{p} {{ printf("{p} %d\\n", arg0); }}' for p in probes)
    result = subprocess.run([bpftrace, "-e", script, "-c", str(binary)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "BPFTRACE_NO_USER_SYMBOLS": "1"})
    assert result.returncode == 0, result.stderr
    return sorted(line for line in result.stdout.splitlines() if ":" in line and not line.startswith("Attaching"))


def test_guard_follows_the_output_file_name(tmp_path, capsys):
    catalog = write_catalog(tmp_path, "alpha", "hit", "outputs: {header: include/alpha/usdt.h}")
    assert load_catalog(catalog).header.guard == "ALPHA_USDT_H"
    assert run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "gen-probes.h")[0] == 0
    assert "#ifndef ALPHA_GEN_PROBES_H\n" in (tmp_path / "gen-probes.h").read_text()
    code, printed, _ = run_cli(capsys, "header", "-c", catalog, "-o", "-")
    assert code == 0 and "#ifndef ALPHA_USDT_H\n" in printed
    # A guard the catalog sets is kept whatever the output.
    explicit = write_catalog(tmp_path / "x", "alpha", "hit", "header: {guard: MY_GUARD_H}")
    assert run_cli(capsys, "header", "-c", explicit, "-o", tmp_path / "x" / "other.h")[0] == 0
    assert "#ifndef MY_GUARD_H\n" in (tmp_path / "x" / "other.h").read_text()


@pytest.mark.parametrize("provider, output, guard", [
    ("alpha", "probes.h", "ALPHA_PROBES_H"),
    ("alpha", "/build/dir/alpha-probes.hpp", "ALPHA_ALPHA_PROBES_HPP"),
    ("alpha", "1.h", "ALPHA_1_H"),
    ("_x", "probes.h", "PROBES_X_PROBES_H"),
    ("spdk", "include/spdk_internal/usdt.h", "SPDK_USDT_H"),
])
def test_default_guard(provider, output, guard):
    assert default_guard(provider, output) == guard


def test_derived_guard_that_clashes_is_refused(tmp_path, capsys):
    catalog = write_catalog(tmp_path, "p", "x_h", "header: {style: dtrace}")
    code, _, err = run_cli(capsys, "header", "-c", catalog, "-o", tmp_path / "x.h")
    assert code == 2
    assert "P_X_H, as is the include guard" in err and "(the include guard P_X_H is made from the provider and 'x.h')" in err
    assert "set header.guard in the catalog" in err
    assert not (tmp_path / "x.h").exists()


def test_spdk_header_keeps_its_explicit_guard():
    repo = Path(__file__).parent.parent
    catalog = load_catalog(repo / "probes.yaml")
    assert not catalog.header.guard_derived
    # #ifndef, #define and the closing comment (the helper macro's name only begins with it)
    assert len(re.findall(r"\bSPDK_INTERNAL_USDT_H\b", (repo / "include/spdk_internal/usdt.h").read_text())) == 3
