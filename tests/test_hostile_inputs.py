"""Inputs that used to hang, crash or eat memory (issue 12, section 5).

Every command that reads a catalog, a script or a binary is given special
files in its place: a FIFO nobody writes to, /dev/zero, /dev/null, a
directory, a pipe of endless zeros (``/dev/fd/N``) and a sparse 64 GiB file;
and catalogs built to blow up YAML loaders. Each run is a real probegen
process with a time limit and an address-space limit, so a hang, a
runaway read or a segfault fails the test. The outcome must be exit 2 and
one line naming the path. Pipes that carry real data are read.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from helpers.pgtest import build_pgtest, write_pgtest

TIMEOUT = 10  # seconds; every case here ends in well under one
MEMORY = 1 << 30  # address space of each probegen process

SCRIPT = "usdt:__EXE__:qpair_add { @adds = count(); }\n"


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def probegen(*argv, pass_fds=(), cwd=None) -> subprocess.CompletedProcess:
    """A probegen process, bounded in time and memory."""
    try:
        return subprocess.run([sys.executable, "-m", "probegen", *map(str, argv)], capture_output=True, text=True,
                              timeout=TIMEOUT, preexec_fn=_limit_memory, pass_fds=pass_fds, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"probegen {' '.join(map(str, argv))}: still running after {TIMEOUT} s")


@contextmanager
def pipe_of(data: bytes | None):
    """The read end of a pipe that a thread fills with ``data``, or with
    zeros without end when data is None; closed (ending the writer) after."""
    read_end, write_end = os.pipe()

    def feed():
        try:
            with os.fdopen(write_end, "wb") as out:
                if data is None:
                    zeros = bytes(1 << 16)
                    while True:
                        out.write(zeros)
                else:
                    out.write(data)
        except OSError:  # the reader is gone
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield read_end
    finally:
        os.close(read_end)
        writer.join(TIMEOUT)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A good catalog, script and binary, and the hostile files."""
    root = tmp_path_factory.mktemp("hostile")
    catalog = write_pgtest(root / "src")
    binary = build_pgtest("x86_64", root, "pgtest")
    script = root / "adds.bt"
    script.write_text(SCRIPT)
    fifo = root / "fifo"
    os.mkfifo(fifo)
    directory = root / "dir"
    directory.mkdir()
    sparse = root / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(64 << 30)
    return {"root": root, "catalog": catalog, "binary": binary, "script": script,
            "fifo": fifo, "dev/zero": Path("/dev/zero"), "dev/null": Path("/dev/null"),
            "directory": directory, "sparse": sparse}


HOSTILE = ("fifo", "dev/zero", "dev/null", "directory", "sparse", "zero pipe")

# (command line with X where the hostile file goes); C, S, B: the good catalog, script, binary.
COMMANDS = {
    "catalog": [
        ["header", "-c", "X", "-o", "{root}/out.h"],
        ["generate", "-c", "X"],
        ["check", "-c", "X"],
        ["docs", "-c", "X", "-o", "{root}/out.md"],
        ["bpftrace", "-c", "X", "-o", "{root}/bt"],
        ["bcc", "-c", "X", "-o", "{root}/bcc"],
        ["verify", "B", "-c", "X"],
        ["lint", "S", "-c", "X"],
    ],
    "script": [
        ["lint", "X", "-c", "C"],
        ["trace", "--dry-run", "{pid}", "X"],
    ],
    "binary": [
        ["list", "X"],
        ["verify", "X", "-c", "C"],
        ["import", "X", "--provider", "pgtest"],
        ["structs", "X", "-t", "qp"],
        ["structs", "B", "--debug-file", "X", "-t", "qp"],
        ["lint", "S", "-c", "C", "--binary", "X"],
        ["bpftrace", "-c", "C", "--binary", "X", "-o", "{root}/bt2"],
    ],
}


def _run_hostile(world, argv, kind) -> tuple[str, subprocess.CompletedProcess]:
    """probegen with the hostile file ``kind`` at X: (its path, the result)."""
    with ExitStack() as stack:
        fds = ()
        if kind == "zero pipe":
            fd = stack.enter_context(pipe_of(None))
            fds, path = (fd,), f"/dev/fd/{fd}"
        else:
            path = str(world[kind])
        named = {"X": path, "C": str(world["catalog"]), "S": str(world["script"]), "B": str(world["binary"])}
        line = [named.get(a, a.format(root=world["root"], pid=os.getpid())) for a in argv]
        return path, probegen(*line, pass_fds=fds)


def _problem(path: str, result: subprocess.CompletedProcess) -> str | None:
    """What is wrong with a run given a hostile file, or None."""
    err = result.stderr
    if result.returncode != 2:
        return f"exit {result.returncode}: {err[-500:]}"
    if "Traceback" in err or err.count("\n") != 1 or not err.startswith(f"{path}: error: "):
        return f"not one line naming the path: {err[-500:]!r}"
    return None


CASES = [(" ".join(argv), kind) for lines in COMMANDS.values() for argv in lines for kind in HOSTILE]


@pytest.fixture(scope="module")
def outcomes(world):
    """Every (command, hostile file) run, all at once: each is its own
    process, mostly start-up time, so they run side by side."""
    argvs = {" ".join(argv): argv for lines in COMMANDS.values() for argv in lines}
    with ThreadPoolExecutor((os.cpu_count() or 1) + 1) as pool:
        results = pool.map(lambda case: _run_hostile(world, argvs[case[0]], case[1]), CASES)
        return dict(zip(CASES, results))


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]} <- {case[1]}")
def test_special_files_are_refused_in_one_line(outcomes, case):
    path, result = outcomes[case]
    assert _problem(path, result) is None, _problem(path, result)


@pytest.mark.parametrize("argv,kind,message", [
    (["header", "-c", "X"], "fifo", "nothing to read: no process writes to this FIFO or pipe"),
    (["header", "-c", "X"], "dev/zero", "not a regular file (a character device)"),
    (["header", "-c", "X"], "directory", "is a directory, not a catalog file"),
    (["header", "-c", "X"], "sparse", "catalog file of 68719476736 bytes is larger than the 16 MiB limit"),
    (["header", "-c", "X"], "zero pipe", "catalog file is larger than the 16 MiB limit"),
    (["trace", "--dry-run", "{pid}", "X"], "dev/null", "not a regular file (a character device)"),
    (["structs", "X", "-t", "qp"], "fifo", "not a regular file (a FIFO or pipe)"),  # DWARF: regular files only
    (["list", "X"], "zero pipe", "not an ELF file (no ELF magic number)"),  # refused before it is copied
    (["list", "X"], "sparse", "not an ELF file (no ELF magic number)"),
], ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_messages_say_what_is_wrong(world, argv, kind, message):
    path, result = _run_hostile(world, argv, kind)
    assert _problem(path, result) is None, _problem(path, result)
    assert result.stderr == f"{path}: error: {message}\n"


def test_verify_without_a_readable_binary_reports_only_that(world):
    result = probegen("verify", world["fifo"], "-c", world["catalog"])
    assert result.returncode == 2
    assert result.stdout == ""  # no "has no site" findings about a binary never read
    assert result.stderr == f"{world['fifo']}: error: nothing to read: no process writes to this FIFO or pipe\n"


# -- pipes that carry real input ------------------------------------------------


def test_list_reads_a_binary_from_a_pipe(world):
    binary = world["binary"]
    expected = probegen("list", binary, "--format", "json")
    assert expected.returncode == 0, expected.stderr
    with pipe_of(binary.read_bytes()) as fd:
        piped = probegen("list", f"/dev/fd/{fd}", "--format", "json", pass_fds=(fd,))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == expected.stdout.replace(str(binary), f"/dev/fd/{fd}")
    assert "qpair_add" in piped.stdout


def test_verify_and_import_read_binaries_from_pipes(world):
    binary, catalog = world["binary"], world["catalog"]
    with pipe_of(binary.read_bytes()) as fd:
        verified = probegen("verify", f"/dev/fd/{fd}", "-c", catalog, pass_fds=(fd,))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with pipe_of(binary.read_bytes()) as fd:
        imported = probegen("import", f"/dev/fd/{fd}", "--provider", "pgtest", pass_fds=(fd,))
    assert imported.returncode == 0 and "name: qpair_add" in imported.stdout, imported.stderr


def test_a_fifo_with_a_writer_is_read(world, tmp_path):
    fifo = tmp_path / "binary.fifo"
    os.mkfifo(fifo)
    data = world["binary"].read_bytes()

    def write():
        with open(fifo, "wb") as out:  # blocks until probegen opens the FIFO
            out.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = probegen("list", fifo)
    writer.join(TIMEOUT)
    assert result.returncode == 0 and "qpair_add" in result.stdout, result.stderr


def test_catalog_and_script_from_pipes(world):
    catalog_text = world["catalog"].read_bytes()
    header = world["root"] / "piped.h"
    with pipe_of(catalog_text) as fd:
        result = probegen("header", "-c", f"/dev/fd/{fd}", "-o", header, pass_fds=(fd,))
    assert result.returncode == 0, result.stderr
    assert "PGTEST_USDT_H" in header.read_text()
    with pipe_of(SCRIPT.encode()) as fd:
        result = probegen("lint", f"/dev/fd/{fd}", "-c", world["catalog"], pass_fds=(fd,))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_binary_pipe_is_copied_only_up_to_the_limit(world):
    from probegen.files import inputs

    # An endless pipe: copied to a temporary file (not memory) and refused
    # at the bound. In-process, with a small bound, so that the test does
    # not write a gigabyte.
    with pipe_of(None) as fd:
        with pytest.raises(inputs.UnreadableInput, match="more than 1 MiB through a pipe"):
            inputs.open_seekable(f"/dev/fd/{fd}", "ELF binary", pipe_ok=True, limit=1 << 20)


# -- YAML built to blow up loaders ------------------------------------------------


def _alias_bomb() -> str:
    lines = ["x:", "  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        lines.append(f"  {level}: &{level} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines + ["provider: x", "probes: *i", ""])


# Each bomb and its line: refused with exit 2 and one positioned line. The
# words and the column are whoever stops it first (PyYAML 6.0.4 limits flow
# nesting itself; probegen checks depth, aliases and tags).
YAML_BOMBS = {
    "alias bomb": (_alias_bomb(), 3),
    "merge key": ("base: &b {group: g}\nprovider: x\nprobes:\n  - <<: *b\n    name: p\n", 4),
    "100,000 [": ("provider: x\nprobes: " + "[" * 100_000 + "\n", 2),
    "100,000 {": ("provider: x\nprobes: " + "{a: " * 100_000 + "\n", 2),
    "100,000 mixed": ("provider: x\nprobes: " + "[{a: " * 50_000 + "\n", 2),
    "1,000 balanced": ("provider: x\nprobes: " + "[" * 1000 + "]" * 1000 + "\n", 2),
    "deep block": ("provider: x\nprobes:\n" + "".join(" " * i + "- \n" for i in range(1, 3000)), None),
    "compact block": ("provider: x\nprobes:\n" + "- " * 20_000 + "x\n", 3),
    # Not bombs, but YAML that PyYAML's constructor would fail on (or, with
    # an unsafe loader, run): refused where the document is read.
    "python tag": ("provider: !!python/name:os.system x\nprobes: []\n", 1),
    "local tag": ("provider: !foo x\nprobes: []\n", 1),
    "complex key": ("provider: x\n? [a, b]\n: 1\nprobes: []\n", 2),
}


@pytest.mark.parametrize("name", YAML_BOMBS)
def test_yaml_bombs_end_in_one_error(world, name):
    text, line = YAML_BOMBS[name]
    catalog = world["root"] / f"{name.replace(' ', '_')}.yaml"
    catalog.write_text(text)
    result = probegen("header", "-c", catalog, "-o", world["root"] / "bomb.h")
    assert result.returncode == 2, result.stderr[-500:]
    first, summary = result.stderr.splitlines()
    position = re.fullmatch(re.escape(str(catalog)) + r":(\d+):\d+: error: .+", first)
    assert position and line in (None, int(position[1])), first
    assert summary == "1 error in catalog"


def test_anchors_alone_are_harmless(world):
    catalog = world["root"] / "anchored.yaml"
    catalog.write_text("provider: x\nprobes:\n  - &p {name: p, group: g, doc: d}\n")
    result = probegen("header", "-c", catalog, "-o", world["root"] / "anchored.h")
    assert result.returncode == 0, result.stderr


def test_check_does_not_read_a_fifo_in_place_of_an_output(world, tmp_path):
    catalog = tmp_path / "probes.yaml"
    catalog.write_text(world["catalog"].read_text() + "outputs:\n  header: out.h\n")
    os.mkfifo(tmp_path / "out.h")
    result = probegen("check", "-c", catalog)
    assert result.returncode == 1 and "out.h: stale" in result.stderr, result.stderr
    assert (tmp_path / "out.h").is_fifo()
