"""`probegen trace`: markers resolved per process (a probe in a shared
library), bpftrace run on the result, and clear errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from probegen.bpftrace import attach_string
from probegen.runtime import trace
from probegen.errors import InputError
from helpers import C_DIR, compile_c, require_bpftrace
from helpers.tracing import Process, expected_lines, probegen_argv, run_traced, tracer_lines

SCRIPT = """#!/usr/bin/env bpftrace
BEGIN { printf("Tracing 1 probe. pid __PID__\\n"); }
usdt:__EXE__:lib_hit { printf("%llu.%06llu: lib_hit value=%d\\n", nsecs / 1000000000, nsecs % 1000000000 / 1000, arg0); }
"""


@pytest.fixture(scope="module")
def lib_program(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trace_lib")
    library = compile_c([C_DIR / "tracing_lib.c"], directory / "libtracing_lib.so", extra=["-shared", "-fPIC"])
    binary = compile_c([C_DIR / "tracing_lib_main.c", library], directory / "tracing_lib_main",
                       extra=[f"-Wl,-rpath,{directory}"])
    script = directory / "lib.bt"
    script.write_text(SCRIPT)
    return library, binary, script


def test_probe_in_shared_library_is_traced(lib_program):
    require_bpftrace()
    library, binary, script = lib_program
    program, tracers = run_traced([binary], {"bt": lambda pid: probegen_argv("trace", pid, script)})
    assert tracer_lines(tracers["bt"].lines) == expected_lines(program) == ["lib_hit value=-42"]
    assert f"Tracing 1 probe. pid {program.pid}" in tracers["bt"].lines


def test_dry_run_names_the_library_and_pid(lib_program):
    library, binary, script = lib_program
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        result = subprocess.run(probegen_argv("trace", program.pid, script, "--dry-run"),
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        target = attach_string(f"/proc/{program.pid}/root{library}".encode())
        assert f"usdt:{target}:lib_hit" in result.stdout
        assert f"pid {program.pid}" in result.stdout
        assert "#!" not in result.stdout
        exe_script = script.parent / "exe.bt"
        exe_script.write_text("uprobe:__EXE__:main { }\nuretprobe:__EXE__:main { }\n")
        exe_target = attach_string(f"/proc/{program.pid}/root{binary}".encode())
        # a script without BEGIN gets the banner that says the probes are attached
        assert trace.program_for(program.pid, [exe_script]) == (
            f"uprobe:{exe_target}:main {{ }}\nuretprobe:{exe_target}:main {{ }}\n"
            '\nBEGIN\n{\n\tprintf("Tracing (exe). Hit Ctrl-C to end.\\n");\n}\n')
        exe_script.write_text("BEGIN { }\nuprobe:__EXE__:main { }\n")
        assert trace.program_for(program.pid, [exe_script]) == f"BEGIN {{ }}\nuprobe:{exe_target}:main {{ }}\n"
        with pytest.raises(InputError, match="has no probe nope"):
            missing = trace.Script("x.bt", "usdt:__EXE__:nope { }")
            trace.resolve(missing, program.pid, trace.probe_holders(program.pid, {(None, "nope")}), lambda: "")
        with pytest.raises(InputError, match="each have a BEGIN block"):
            trace.combine([trace.Script("a", "BEGIN {}"), trace.Script("b", "BEGIN {}")], ["", ""], set())
    finally:
        program.kill()


def test_dead_pid_is_exit_2(lib_program, tmp_path):
    _, _, script = lib_program
    dead = subprocess.Popen(["true"])
    dead.wait()
    result = subprocess.run(probegen_argv("trace", dead.pid, script), capture_output=True, text=True)
    assert result.returncode == 2
    assert f"no process with pid {dead.pid}" in result.stderr and "Traceback" not in result.stderr
    missing = subprocess.run(probegen_argv("trace", os.getpid(), tmp_path / "no.bt"), capture_output=True, text=True)
    assert missing.returncode == 2 and "no such script" in missing.stderr


def test_a_script_not_in_utf8_is_refused_naming_it(tmp_path):
    script = tmp_path / "latin1.bt"
    script.write_bytes(b"// caf\xe9\n")
    with pytest.raises(InputError) as caught:
        trace.read_scripts([script])
    assert str(caught.value).startswith(f"{script}: error: cannot read: 'utf-8' codec can't decode byte 0xe9")


def test_missing_bpftrace_is_exit_2(lib_program, tmp_path):
    _, _, script = lib_program
    env = dict(os.environ, PATH=str(tmp_path))  # no bpftrace there
    result = subprocess.run(probegen_argv("trace", os.getpid(), script), capture_output=True, text=True, env=env)
    if os.geteuid() != 0:
        assert result.returncode == 2 and "needs root" in result.stderr
        return
    assert result.returncode == 2
    assert "bpftrace not found on PATH" in result.stderr and "Traceback" not in result.stderr


def test_non_root_is_exit_2(lib_program):
    _, _, script = lib_program
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is None:
        pytest.skip("setpriv not found (util-linux) to drop root")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    result = subprocess.run(prefix + probegen_argv("trace", os.getpid(), script), capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "needs root" in result.stderr and "Traceback" not in result.stderr


def test_output_file_is_opened_by_probegen_not_by_bpftrace(lib_program, tmp_path):
    """bpftrace runs as root and would follow any link at -o: probegen
    opens the path under its own checks and hands bpftrace the descriptor."""
    require_bpftrace()
    library, binary, script = lib_program
    out = tmp_path / "trace.out"
    out.write_text("old content that must go\n")
    program = Process([binary], stdin=True)
    tracer = None
    try:
        program.wait_line("READY")
        tracer = Process(probegen_argv("trace", program.pid, script, "-o", out))
        # bpftrace buffers a file's output until it ends: wait instead until
        # it holds its uprobe (a perf event) and BEGIN had time to run.
        deadline = time.monotonic() + 30
        while not _holds_perf_event(tracer.pid):
            assert tracer.proc.poll() is None, tracer.stderr
            assert time.monotonic() < deadline, "bpftrace never attached"
            time.sleep(0.1)
        time.sleep(0.5)
        program.send("go\n")
        program.wait_line("DONE")
        assert program.proc.wait(10) == 0
        assert tracer.proc.wait(30) == 0, tracer.stderr
        text = out.read_text()
        assert "old content" not in text
        assert "lib_hit value=-42" in text
    finally:
        program.kill()
        if tracer is not None:
            tracer.kill()


def _holds_perf_event(pid: int) -> bool:
    """True when pid or one of its children has a perf event open."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return False
    for process in [str(pid), *children]:
        try:
            fds = list(Path(f"/proc/{process}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if "perf_event" in os.readlink(fd):
                    return True
            except OSError:
                pass
    return False


def test_output_link_planted_by_another_user_is_refused(lib_program, tmp_path):
    library, binary, script = lib_program
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    link = shared / "trace.out"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)  # nobody
    program = Process([binary], stdin=True)
    try:
        program.wait_line("READY")
        result = subprocess.run(probegen_argv("trace", program.pid, script, "-o", link),
                                capture_output=True, text=True, timeout=60)
    finally:
        program.kill()
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "symbolic link owned by another user" in result.stderr
    assert victim.read_text() == "root's file\n"


# -- enum names from the traced binary's debug info --------------------------
@pytest.fixture(scope="module")
def drift_program(tmp_path_factory):
    """drift_spdk.c at two versions, and the catalog's tgt.bt (made from the
    catalog, which numbers the states as "master" does)."""
    from helpers.drift import DRIFT_CATALOG, build_drift
    from probegen.catalog import load_catalog
    from probegen.generators.bpftrace import render_script

    directory = tmp_path_factory.mktemp("trace_drift")
    binaries = build_drift(directory)
    catalog = load_catalog(DRIFT_CATALOG)
    script = directory / "tgt.bt"
    script.write_text(render_script(catalog, "tgt", catalog.groups["tgt"]))
    return binaries, script


def test_trace_prints_the_traced_binarys_enum_names(drift_program):
    """v25.09 numbers FINI_STOP_LISTEN and FINI_STOP_SUBSYSTEMS the other way
    round: the catalog's script prints them swapped there unless the names
    come from the binary, as trace takes them (and says so)."""
    from helpers.drift import DRIFT_CATALOG

    require_bpftrace()
    binaries, script = drift_program
    for version in ("v25_09", "master"):
        program, tracers = run_traced([binaries[version]], {
            "bt": lambda pid: probegen_argv("trace", pid, script, "-c", DRIFT_CATALOG)})
        expected = expected_lines(program)
        assert "tgt_state state=FINI_STOP_LISTEN" in expected
        assert tracer_lines(tracers["bt"].lines) == expected, version
        assert any(f"enum names from the debug info of '{binaries[version]}': nvmf_tgt_state" in line
                   for line in tracers["bt"].stderr), tracers["bt"].stderr
    program, tracers = run_traced([binaries["v25_09"]], {
        "bt": lambda pid: probegen_argv("trace", pid, script, "-c", DRIFT_CATALOG, "--no-debug-info")})
    swapped = {"state=FINI_STOP_LISTEN": "state=FINI_STOP_SUBSYSTEMS", "state=FINI_STOP_SUBSYSTEMS": "state=FINI_STOP_LISTEN"}
    assert tracer_lines(tracers["bt"].lines) == [
        line.replace(line.split()[-1], swapped.get(line.split()[-1], line.split()[-1]))
        for line in expected_lines(program)]


def test_trace_enum_names_source_without_debug_info(drift_program, tmp_path):
    """A dry run shows the names replaced where they stood; a stripped
    binary keeps the script's names, and stderr says why."""
    from helpers.drift import DRIFT_CATALOG

    binaries, script = drift_program
    stripped = tmp_path / "v25_09_stripped"
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("strip (binutils) is not installed: no binary without debug info")
    subprocess.run([strip, "-g", "-o", stripped, binaries["v25_09"]], check=True)
    for binary, names, source in (
            (binaries["v25_09"], ["INIT_NONE", "RUNNING", "FINI_STOP_LISTEN", "FINI_STOP_SUBSYSTEMS", "STOPPED"],
             f"enum names from the debug info of '{binaries['v25_09']}': nvmf_tgt_state (differs from the catalog's)"),
            (stripped, ["INIT_NONE", "RUNNING", "FINI_STOP_SUBSYSTEMS", "FINI_STOP_LISTEN", "STOPPED"],
             f"enum names of nvmf_tgt_state from the catalog drift.yaml: "
             f"'{stripped}' has no debug info")):
        program = Process([binary], stdin=True)
        try:
            program.wait_line("READY")
            result = subprocess.run(probegen_argv("trace", program.pid, script, "-c", DRIFT_CATALOG, "--dry-run"),
                                    capture_output=True, text=True)
        finally:
            program.kill()
        assert result.returncode == 0, result.stderr
        assert result.stderr.splitlines() == [f"probegen trace: {source}"]
        # The names as the program writes them, in either form (bpftrace 0.21+: one ternary; older: if rows).
        written = re.findall(r'== (\d+)(?:\) \{ \$\w+ =| \?) "(\w+)"', result.stdout)
        assert written == [(str(v), n) for v, n in zip((0, 4, 5, 6, 10), names)]


def test_enum_names_from_a_traced_binary_cannot_add_code(tmp_path):
    """The traced binary writes its DWARF, so its enumerator names are
    untrusted: written into the program bpftrace runs as root, each stays
    one string literal, cut to the 63 bytes a literal holds on bpftrace
    0.17 (a longer one would stop the whole script from loading). bpftrace
    runs the generated lookup and prints every name as it is, up to that
    length; nothing the names carry runs."""
    require_bpftrace()
    from dataclasses import replace

    from helpers.drift import DRIFT_CATALOG
    from probegen.catalog import load_catalog
    from probegen.generators.bpftrace import whole_body
    from probegen.generators.lines import EnumTable, probe_line

    catalog = load_catalog(DRIFT_CATALOG)
    marker = tmp_path / "ran"
    hostile = (
        f'X"; }} BEGIN {{ system("touch {marker}"); }} //',
        "back\\slash\\",
        "new\nline }",
        "tab\tand\x01control",
        '%s%n "quoted"',
        '"; } printf("INJECTED\\n"); if (1) { $x = "',
    )
    line = probe_line(catalog, catalog.probe("tgt_state"))
    table = EnumTable("nvmf_tgt_state", tuple(enumerate(hostile)), False)
    line = replace(line, fields=(replace(line.fields[0], enum=table),))
    lookup = next(row for row in whole_body(line) if row.startswith('$state = ""; '))
    prints = "".join(f'\t$v = {value};\n\t{lookup.replace("arg0", "$v")}\n\tprintf("<%s>\\n", $state);\n'
                     for value in range(len(hostile)))
    script = tmp_path / "names.bt"
    script.write_text("BEGIN\n{\n" + prints + "\texit();\n}\n")
    result = subprocess.run(["bpftrace", str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    printed = re.findall(r"<(.*?)>\n", result.stdout, re.S)
    assert printed == [name.encode()[:63].decode() for name in hostile]
    assert len(printed[0]) == 63 and printed[0].startswith('X"; } BEGIN { system(')
    assert not marker.exists() and result.stdout.count("INJECTED") == 1  # only inside the printed name


@pytest.mark.parametrize("big_strings", [None, False], ids=["committed form", "pieces form"])
def test_long_enum_names_load_and_print(drift_program, tmp_path, big_strings):
    """Enumerator names of 32 to 60 characters (real ones are that long;
    from a catalog or a traced binary's DWARF) take no more stack than short
    ones: the probe loads in bpftrace 0.17 and prints each name whole, in
    the committed scripts' form and in trace's pieces form."""
    from dataclasses import replace

    from helpers.drift import DRIFT_CATALOG
    from probegen.catalog import load_catalog
    from probegen.generators.bpftrace import render_lines
    from probegen.generators.lines import EnumTable, probe_line

    require_bpftrace()
    binaries, _ = drift_program
    catalog = load_catalog(DRIFT_CATALOG)
    short = {0: "INIT_NONE", 4: "RUNNING", 5: "FINI_STOP_SUBSYSTEMS", 6: "FINI_STOP_LISTEN", 10: "STOPPED"}
    long = {value: (name + "_OF_A_VERY_LONG_ENUMERATOR_NAME_" * 2)[:32 + 7 * n]
            for n, (value, name) in enumerate(short.items())}
    assert sorted(map(len, long.values())) == [32, 39, 46, 53, 60]
    line = probe_line(catalog, catalog.probe("tgt_state"))
    line = replace(line, fields=(replace(line.fields[0], enum=EnumTable("nvmf_tgt_state", tuple(long.items()), False)),))
    script = tmp_path / "long_names.bt"
    script.write_text(render_lines(catalog, "tgt", [line], big_strings=big_strings)
                      + 'BEGIN { printf("Tracing 1 probe\\n"); }\n')
    program, tracers = run_traced([binaries["master"]], {"bt": lambda pid: ["bpftrace", "-p", pid, script]})
    renamed = {f"state={name}": f"state={long[value]}" for value, name in short.items()}
    expected = [" ".join(renamed.get(word, word) for word in e.split()) for e in expected_lines(program)]
    assert tracer_lines(tracers["bt"].lines) == expected


def test_pid_by_option_or_first_or_after_count(drift_program):
    """`trace -p PID`, as bpftrace and BCC take it; `trace PID` still; and
    `trace --count PID`, where --count used to take the PID for a probe."""
    from helpers.drift import DRIFT_CATALOG

    binaries, _ = drift_program
    program = Process([binaries["master"]], stdin=True)
    try:
        program.wait_line("READY")
        pid = str(program.pid)
        runs = [subprocess.run(probegen_argv("trace", "-c", DRIFT_CATALOG, "--dry-run", *argv),
                               capture_output=True, text=True)
                for argv in (["-p", pid, "--count"], [pid, "--count"], ["--count", pid], ["--count", "-p", pid])]
        none = subprocess.run(probegen_argv("trace", "-c", DRIFT_CATALOG, "--count"), capture_output=True, text=True)
    finally:
        program.kill()
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert len({r.stdout for r in runs}) == 1 and '@hits["tgt_state"] = count();' in runs[0].stdout
    assert none.returncode == 2 and "give -p PID" in none.stderr
