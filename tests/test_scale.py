"""`list` and `verify` do work linear in the notes of a binary.

Counts work, not seconds (speed targets live in bench/bench_verify.py):
the Python lines executed (in any module) to read, list and verify real
binaries of 20, 200 and 2,000 probe sites, built with gcc from a generated
catalog and header (bench/make_probe_binary.py). Work linear in the notes
costs as many lines per added note from 200 to 2,000 as from 20 to 200
(fixed costs such as pyelftools reading the ELF headers cancel out); a
look-up that scans the catalog once per probe (as verify's did) costs ten
times as many.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import replace

import pytest

from helpers import REPO, require, require_sdt
from probegen.catalog import load_catalog
from probegen.elf.notes import read_binary
from probegen.elf.listing import listing_json, listing_text
from probegen.checks.verify import verify_binaries

sys.path.insert(0, str(REPO / "bench"))
import make_probe_binary  # noqa: E402

SIZES = (20, 200, 2_000)
# Lines per added note, 200 -> 2,000 over 20 -> 200: about 1 when linear
# (less: repeated strings are decoded once), about 10 when quadratic.
MAX_GROWTH = 2.0


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    require("gcc", "gcc")
    require_sdt()
    root = tmp_path_factory.mktemp("scale")
    return {notes: make_probe_binary.build(root / str(notes), notes) for notes in SIZES}


def lines_run(action) -> int:
    """How many Python lines run while ``action()`` runs (any module)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    threading.settrace(trace)
    try:
        action()
    finally:
        sys.settrace(previous)
        threading.settrace(previous)
    return count


def per_note_growth(lines: dict[int, int]) -> float:
    """Lines per note added between the two larger sizes, over those
    between the two smaller."""
    tiny, small, large = SIZES
    return ((lines[large] - lines[small]) / (large - small)) / ((lines[small] - lines[tiny]) / (small - tiny))


def growth(inputs, work) -> float:
    work(*inputs[SIZES[0]])  # once untraced: first-use costs (imports, compiled patterns) are no notes' work
    return per_note_growth({n: lines_run(lambda n=n: work(*inputs[n])) for n in SIZES})


def test_builds_have_the_notes_and_verify_passes(builds):
    for notes, (catalog, binary) in builds.items():
        read = read_binary(binary)
        assert sum(len(p.sites) for p in read.probes) == notes
        report = verify_binaries(load_catalog(catalog), [read])
        assert report.ok, [str(f) for f in report.findings[:5]]
        assert report.sites_checked == notes


def test_reading_notes_is_linear(builds):
    assert growth(builds, lambda catalog, binary: read_binary(binary)) <= MAX_GROWTH


def test_listing_is_linear(builds):
    def listing(catalog, binary):
        read = read_binary(binary)
        listing_text(read)
        json.dumps(listing_json([read], []))

    assert growth(builds, listing) <= MAX_GROWTH


def test_verify_is_linear(builds):
    """The catalog and the binary are read before counting: this is the
    comparison alone, where each binary probe is looked up in the catalog."""
    loaded = {n: (load_catalog(c), read_binary(b)) for n, (c, b) in builds.items()}
    assert growth(loaded, lambda catalog, binary: verify_binaries(catalog, [binary])) <= MAX_GROWTH


def test_verify_finds_undocumented_probes_in_linear_work(builds):
    """With half the catalog gone, every other binary probe is looked up
    and not found: the path that scanned the catalog each time."""
    loaded = {}
    for n, (catalog, binary) in builds.items():
        catalog = load_catalog(catalog)
        loaded[n] = (replace(catalog, probes=catalog.probes[: len(catalog.probes) // 2]), read_binary(binary))
    reports = {}

    def run(catalog, binary):
        reports[len(catalog.probes)] = verify_binaries(catalog, [binary])

    assert growth(loaded, run) <= MAX_GROWTH
    largest = reports[max(reports)]
    assert {f.check for f in largest.findings} == {"undocumented-probe"}
    assert len(largest.findings) == SIZES[-1] // 2 // 2  # two sites a probe, one finding a probe


def test_catalog_load_is_linear(builds):
    """verify reads the catalog first: one probe per two sites here."""
    assert growth(builds, lambda catalog, binary: load_catalog(catalog)) <= MAX_GROWTH
