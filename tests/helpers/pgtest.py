"""The pgtest catalog (SPDK-shaped: arg0, a ticks probe, untyped compat
macros and typed ones) and tests/c/elf_verify.c built against its header."""

from __future__ import annotations

from pathlib import Path

from helpers import C_DIR, compile_for

PGTEST_CATALOG = """\
provider: pgtest
arg0: true
header:
  guard: PGTEST_USDT_H
  enable_macro: PGTEST_USDT
  compat_prefix: PGTEST_DTRACE_PROBE
  typed_prefix: PGTEST_PROBE
  clock: pg_ticks()
  includes: [pgtest_clock.h]
probes:
  - name: qpair_add
    group: nvmf
    doc: A queue pair joins a poll group.
    ticks: true
    args:
      - {name: qpair, type: struct qp *}
      - {name: qid, type: uint16_t}
  - name: state_change
    group: nvmf
    doc: A subsystem changes state.
    enabled_check: true
    args:
      - {name: name, type: const char *}
      - {name: state, type: int}
      - {name: flags, type: uint32_t, hex: true}
  - name: tick
    group: misc
    doc: A probe with no arguments of its own.
"""


def write_pgtest(directory: Path, semaphores: bool = True) -> Path:
    """The test catalog and its generated header in ``directory``;
    returns the catalog path."""
    from probegen.catalog import load_catalog
    from probegen.generators.header import render_header

    directory.mkdir(parents=True, exist_ok=True)
    text = PGTEST_CATALOG if semaphores else PGTEST_CATALOG.replace("  clock:", "  semaphores: false\n  clock:")
    catalog_path = directory / "probes.yaml"
    catalog_path.write_text(text)
    (directory / "pgtest_clock.h").write_text("#include <stdint.h>\nuint64_t pg_ticks(void);\n")
    (directory / "pgtest_usdt.h").write_text(render_header(load_catalog(catalog_path)))
    return catalog_path


def build_pgtest(arch: str, directory: Path, name: str, *defines, usdt: bool = True,
                 semaphores: bool = True, sdt: Path | None = None) -> Path:
    """tests/c/elf_verify.c built against the generated header."""
    src_dir = directory / ("src" if semaphores else "src-nosem")
    if not (src_dir / "probes.yaml").exists():
        write_pgtest(src_dir, semaphores)
    include_dirs = [src_dir] + ([sdt] if sdt else [])
    return compile_for(arch, [C_DIR / "elf_verify.c"], directory / name, include_dirs=include_dirs,
                       defines=(["PGTEST_USDT"] if usdt else []) + list(defines))
