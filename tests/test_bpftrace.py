"""Generated bpftrace scripts, run for real against programs firing every
probe with known values (through `probegen trace`)."""

from __future__ import annotations

import os
import re
import stat
import subprocess

import pytest

from probegen.catalog import load_catalog
from probegen.errors import InputError
from probegen.generators import bpftrace
from probegen.files.output import write_all
from helpers import CATALOGS, C_DIR, TESTS as REPO_TESTS, require_bpftrace
from helpers.tracing import LINE, build_program, expected_lines, probegen_argv, run_traced, tracer_lines, wait_attached

TYPES = CATALOGS / "tracing_types.yaml"
MOST_UNREADABLE = ("a6", "a7", "a8", "a9", "a10", "a11")


def bpftrace_view(line: str) -> str:
    """What bpftrace 0.17 prints of an expected line: arg6 and later as '?'
    (strings print whole, up to their max_len)."""
    if line.startswith("most "):
        for label in MOST_UNREADABLE:
            line = re.sub(rf"\b{label}=\S*", f"{label}=?", line)
    return line


@pytest.fixture(scope="module")
def types_run(tmp_path_factory):
    require_bpftrace()
    directory = tmp_path_factory.mktemp("bt_types")
    catalog = load_catalog(TYPES)
    scripts = directory / "scripts"
    write_all(bpftrace.render_files(catalog, scripts))
    binary = build_program(C_DIR / "tracing_types.c", TYPES, "tracing_types.h", directory, defines=["PGTEST_USDT"])
    names = ["all", "ints", "misc", "big", "counts"]
    groups = {g: {p.name for p in probes} for g, probes in catalog.groups.items()}

    def count(name, expected):
        if name == "counts":
            return 0
        probes = groups.get(name)
        return sum(1 for e in expected if probes is None or e.split()[0] in probes)

    program, tracers = run_traced(
        [binary],
        {n: (lambda pid, n=n: probegen_argv("trace", pid, scripts / f"{n}.bt", "-c", TYPES)) for n in names},
        count_done=count,
    )
    return catalog, scripts, program, tracers, groups


def test_every_value_printed_by_all_bt(types_run):
    _, scripts, program, tracers, _ = types_run
    assert "BPFTRACE_STRLEN" not in (scripts / "all.bt").read_text()  # bpftrace's default string size
    expected = [bpftrace_view(e) for e in expected_lines(program)]
    assert tracer_lines(tracers["all"].lines) == expected
    assert "Tracing 10 probes (all). Hit Ctrl-C to end." in tracers["all"].lines


def test_group_scripts_print_their_probes(types_run):
    _, scripts, program, tracers, groups = types_run
    for group in ("ints", "misc", "big"):
        expected = [bpftrace_view(e) for e in expected_lines(program) if e.split()[0] in groups[group]]
        assert tracer_lines(tracers[group].lines) == expected, group
    assert any(l.startswith("big_string ") and len(l) == len("big_string wide_bound=") + 100
               for l in tracer_lines(tracers["big"].lines))


def test_timestamps_are_seconds_and_microseconds(types_run):
    _, _, _, tracers, _ = types_run
    stamps = [tuple(map(int, re.match(r"(\d+)\.(\d{6}): ", l).groups()))
              for l in tracers["all"].lines if re.match(r"\d+\.\d{6}: ", l)]
    assert stamps == sorted(stamps)
    assert stamps[0][0] > 0


def test_counts_script_counts_every_probe(types_run):
    catalog, _, program, tracers, _ = types_run
    hits = {}
    for line in tracers["counts"].lines:
        match = re.match(r"@hits\[(\w+)\]: (\d+)$", line)
        if match:
            hits[match[1]] = int(match[2])
    fired = {}
    for line in expected_lines(program):
        fired[line.split()[0]] = fired.get(line.split()[0], 0) + 1
    assert hits == fired
    assert set(hits) == {p.name for p in catalog.probes}


def test_scripts_are_executable_with_shebang_and_docs(types_run):
    catalog, scripts, *_ = types_run
    for path in scripts.iterdir():
        text = path.read_text()
        assert text.startswith("#!/usr/bin/env bpftrace\n")
        assert path.stat().st_mode & stat.S_IXUSR
    text = (scripts / "ints.bt").read_text()
    # a doc with %, quotes and a trailing backslash is a comment and loaded (above)
    assert '// narrow: Widths up to 32 bits; doc with 100% "quotes" and a back\\slash \\ .' in text


def test_generation_is_deterministic(tmp_path):
    catalog = load_catalog(TYPES)
    first = bpftrace.render_files(catalog, tmp_path)
    again = bpftrace.render_files(load_catalog(TYPES), tmp_path)
    assert [(f.path, f.text) for f in first] == [(f.path, f.text) for f in again]
    assert sorted(f.path.name for f in first) == ["all.bt", "big.bt", "counts.bt", "ints.bt", "misc.bt"]


def test_group_named_all_is_an_error(tmp_path):
    text = TYPES.read_text().replace("group: big", "group: all")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match="group 'all' would overwrite"):
        bpftrace.render_files(load_catalog(path), tmp_path)


def test_enum_argument_named_t_does_not_take_the_clocks_variable(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("provider: app\nenums:\n  - {name: color, enumerators: [RED, GREEN]}\n"
                    "probes:\n  - name: paint\n    group: g\n    doc: d\n    args:\n"
                    "      - {name: t, type: enum color, doc: d}\n")
    (script,) = [f.text for f in bpftrace.render_files(load_catalog(path), tmp_path) if f.path.name == "g.bt"]
    assert "\t$t = nsecs;\n" in script and '$t_ = ""; if (arg0 == 0) { $t_ = "RED"; }' in script
    assert 'printf("%llu.%06llu: paint t=%s\\n", $t / 1000000000, $t % 1000000000 / 1000, $t_)' in script


def test_command_writes_scripts(tmp_path):
    out = tmp_path / "bt"
    result = subprocess.run(probegen_argv("bpftrace", "--catalog", TYPES, "-o", out), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (out / "all.bt").exists() and os.access(out / "all.bt", os.X_OK)
    again = subprocess.run(probegen_argv("bpftrace", "--catalog", TYPES, "-o", out), capture_output=True, text=True)
    assert "wrote" not in again.stdout
    missing = subprocess.run(probegen_argv("bpftrace", "--catalog", tmp_path / "nope.yaml", "-o", out),
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_spdk_catalog_scripts_print_what_spdk_passes(tmp_path):
    """The default SPDK catalog's all.bt and nvmf.bt against a program firing
    SPDK's probes as SPDK's sources do (untyped SPDK_DTRACE_PROBEn macros)."""
    from helpers.tracing import SPDK_CATALOG, build_spdk_program

    require_bpftrace()
    catalog = load_catalog(SPDK_CATALOG)
    scripts = tmp_path / "bpf"
    write_all(bpftrace.render_files(catalog, scripts))
    binary = build_spdk_program(tmp_path)
    nvmf = {p.name for p in catalog.groups["nvmf"]}
    program, tracers = run_traced([binary], {
        "all": lambda pid: probegen_argv("trace", pid, scripts / "all.bt"),
        "nvmf": lambda pid: probegen_argv("trace", pid, scripts / "nvmf.bt"),
    }, count_done=lambda name, expected: len(expected) if name == "all" else
        sum(1 for e in expected if e.split()[0] in nvmf))
    expected = expected_lines(program)
    assert {e.split()[0] for e in expected} == {p.name for p in catalog.probes}
    assert tracer_lines(tracers["all"].lines) == expected
    assert tracer_lines(tracers["nvmf"].lines) == [e for e in expected if e.split()[0] in nvmf]


LONG_PROBES = ("nvmf_subsystem_add_host", "nvmf_subsystem_add_listener", "nvmf_subsystem_create")


# "bpftrace -p" would show what the shebang shows: the same bpftrace, the same flags.
@pytest.mark.parametrize("way", ["probegen trace", "shebang", "SPDK's bpftrace.sh"])
def test_long_strings_whole_from_two_cpus(tmp_path, way):
    """SPDK's NQNs of up to 223 characters and addresses of 256, from two
    threads at once (tests/c/long_strings.c: every length around the
    63-character pieces, bytes after each NUL not NUL), through each way a
    script is run: every hit's line whole (through the script alone on
    bpftrace before 0.21: each string's first 63 characters), one line per
    hit, as many as were fired, and the tracer ends when the process does."""
    import collections
    from helpers import STUBS, spdk_config
    from helpers.tracing import SPDK_CATALOG, Process

    require_bpftrace()
    catalog = load_catalog(SPDK_CATALOG)
    script = tmp_path / "long.bt"
    script.write_text(bpftrace.render_script(catalog, "long", [p for p in catalog.probes if p.name in LONG_PROBES]))
    script.chmod(0o755)
    binary = build_program(C_DIR / "long_strings.c", SPDK_CATALOG, "spdk_internal/usdt.h", tmp_path,
                           include_dirs=[spdk_config(tmp_path / "config", usdt=True), STUBS], extra=["-pthread"])
    program = Process([binary], stdin=True)
    tracer = None
    try:
        program.wait_line("READY")
        expected = collections.Counter()
        for line, count in zip(program.lines[0::2], program.lines[1::2]):
            expected[line[len("EXPECT "):]] += int(count[len("COUNT "):])
        pid = program.pid
        argv = {"probegen trace": probegen_argv("trace", pid, script),
                "shebang": [script, "-p", pid],
                "SPDK's bpftrace.sh": [REPO_TESTS / "spdk_bpftrace.sh", pid, script]}[way]
        # Thousands of hits in a burst: room for them while a busy machine
        # keeps bpftrace from reading (64 pages a CPU lost some).
        tracer = Process(argv, env={**os.environ, "BPFTRACE_PERF_RB_PAGES": "1024"})
        # probegen trace prints once attached; bpftrace alone only "Attaching", before it attaches
        if way == "probegen trace":
            tracer.wait_line("Tracing ")
        else:
            wait_attached(pid, script.read_text())
        program.send("go\n")
        program.wait_line("DONE")
        assert tracer.proc.wait(60) == 0  # ends with the process
        tracer.drain()
    finally:
        program.kill()
        if tracer is not None:
            tracer.kill()
    assert sum(expected.values()) == 2400
    raw = tracer_lines(tracer.lines)
    others = [l for l in tracer.lines if l and not l.startswith(("Attaching ", "Tracing ")) and not LINE.match(l)]
    assert not others, others[:3]
    for line in raw:  # whole: one timestamp and one probe, at the start (the strings hold neither)
        assert len(re.findall(r"\d+\.\d{6}: ", line)) == 0 and len(re.findall("nvmf_subsystem_", line)) == 1, line
        assert line.split()[0] in LONG_PROBES, line
    from probegen.bpftrace import holds_big_strings

    if way == "probegen trace" or holds_big_strings("bpftrace"):
        assert collections.Counter(raw) == expected  # whole, one line per hit (joined by trace on bpftrace 0.17)
    else:  # the script alone on bpftrace before 0.21: each string's first 63 characters, as its header says
        assert "their first 63 characters before" in script.read_text()
        assert collections.Counter(raw) == collections.Counter(
            re.sub(r"=(\S{63})\S+", r"=\1", e) for e in expected.elements())
