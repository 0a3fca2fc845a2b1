"""probegen's cache: catalog models and compiled templates are reused only
while their inputs are unchanged, a damaged or unwritable cache costs only
time, and the fast commands start without YAML, jinja2 or DWARF code."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from elf_helpers import build_pgtest, write_pgtest
from probegen import cache
from probegen.catalog import load_catalog
from probegen.catalog.load import parse_catalog
from probegen.errors import CatalogError
from probegen.generators.header import render_header

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "probegen"


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "probes.yaml"
    shutil.copy(REPO / "probes.yaml", path)
    return path


def entries(cache_home: Path, kind: str) -> list[Path]:
    where = cache_home / kind
    return sorted(where.iterdir()) if where.is_dir() else []


def test_model_comes_from_the_cache_equal_to_a_fresh_parse(cache_home, catalog, monkeypatch):
    first = load_catalog(catalog)
    assert len(entries(cache_home, "catalogs")) == 1

    def no_yaml(*_):
        raise AssertionError("the catalog was parsed again")

    monkeypatch.setattr("probegen.catalog.load.parse_catalog", no_yaml)
    cached = load_catalog(catalog)
    assert cached == first == parse_catalog(catalog.read_bytes(), catalog)
    assert cached is not first


def test_edit_with_same_size_and_mtime_is_seen(cache_home, catalog):
    load_catalog(catalog)
    before = catalog.stat()
    text = catalog.read_text()
    edited = text.replace("provider: spdk", "provider: spdX")
    assert len(edited) == len(text)
    catalog.write_text(edited)
    os.utime(catalog, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_catalog(catalog).provider == "spdX"


def test_damaged_entries_are_rebuilt(cache_home, catalog):
    expected = load_catalog(catalog)
    for entry in entries(cache_home, "catalogs"):
        entry.write_bytes(b"\x80\x05garbage")
    assert load_catalog(catalog) == expected
    assert load_catalog(catalog) == expected  # rewritten, readable again


def test_bad_catalog_is_never_cached(cache_home, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("provider: p\nprobes:\n  - name: a\n    group: g\n    doc: d\n    args: [{name: x, type: floof}]\n")
    for _ in range(2):
        with pytest.raises(CatalogError, match="floof"):
            load_catalog(bad)
    assert entries(cache_home, "catalogs") == []


def test_no_cache_variable_and_unwritable_cache(cache_home, catalog, monkeypatch, tmp_path):
    monkeypatch.setenv("PROBEGEN_NO_CACHE", "1")
    expected = load_catalog(catalog)
    render_header(expected)
    assert not cache_home.exists()
    monkeypatch.delenv("PROBEGEN_NO_CACHE")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert load_catalog(catalog) == expected


def test_old_entries_are_pruned(cache_home):
    for i in range(cache.KEEP + 5):
        cache.write("catalogs", f"entry{i:03}", b"x")
        os.utime(cache_home / "catalogs" / f"entry{i:03}", ns=(i, i))
    names = [p.name for p in entries(cache_home, "catalogs")]
    assert len(names) == cache.KEEP and "entry000" not in names and f"entry{cache.KEEP + 4:03}" in names


def test_compiled_templates_are_reused(cache_home, catalog, monkeypatch):
    import jinja2

    from probegen import render

    render.environment.cache_clear()
    model = load_catalog(catalog)
    expected = render_header(model)
    assert len(entries(cache_home, "templates")) == 1
    render.environment.cache_clear()

    def no_compile(*_args, **_kwargs):
        raise AssertionError("the template was compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", no_compile)
    try:
        assert render_header(model) == expected
    finally:
        render.environment.cache_clear()


def test_unchanged_header_command_skips_work_and_keeps_mtime(cache_home, catalog, tmp_path):
    out = tmp_path / "usdt.h"
    probegen = [sys.executable, "-m", "probegen", "header", "-c", str(catalog), "-o", str(out)]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent)}
    subprocess.run(probegen, check=True, env=env)
    mtime = out.stat().st_mtime_ns
    stamp_entries = entries(cache_home, "stamps")
    assert len(stamp_entries) == 1
    assert json.loads(stamp_entries[0].read_text()) == {str(out): hashlib.sha256(out.read_bytes()).hexdigest()}
    subprocess.run(probegen, check=True, env=env)
    assert out.stat().st_mtime_ns == mtime


IMPORTS = """
import sys
from probegen.cli import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] if not m.startswith("probegen") else ".".join(m.split(".")[:2])
                for m in sys.modules} & {"yaml", "jinja2", "probegen.dwarf", "probegen.render",
                                         "probegen.generators", "probegen.lint"})
print(code, ",".join(heavy))
"""


def imported(env, *argv) -> tuple[int, set[str]]:
    out = subprocess.run([sys.executable, "-c", IMPORTS, *argv], env=env, check=True,
                         capture_output=True, text=True).stdout.splitlines()[-1]
    code, heavy = out.split(" ", 1) if " " in out else (out, "")
    return int(code), set(filter(None, heavy.split(",")))


def test_verify_and_list_import_no_yaml_jinja2_or_dwarf_code(cache_home, tmp_path):
    catalog = write_pgtest(tmp_path / "src")
    binary = build_pgtest("x86_64", tmp_path, "good")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent)}
    assert imported({**env, "PROBEGEN_NO_CACHE": "1"}, "verify", "-c", str(catalog), str(binary)) == (0, {"yaml"})
    imported(env, "verify", "-c", str(catalog), str(binary))  # stores the model, if no test did
    assert imported(env, "verify", "-c", str(catalog), str(binary)) == (0, set())
    assert imported(env, "list", str(binary)) == (0, set())
