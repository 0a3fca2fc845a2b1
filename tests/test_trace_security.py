"""`probegen trace` runs as root a program built with names a traced
process chose: the files it maps. Here a process running as `nobody`
maps a library under hostile names, and `probegen trace` (dry run and a
real bpftrace 0.17 run as root) must either trace exactly the script's
probes, the name read back byte for byte by bpftrace's own parser, or
refuse in one line with the name escaped. Nothing injected may attach,
print, or read the root-only secret."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from probegen.bpftrace import attach_string
from probegen.runtime import trace
from helpers import compile_c, require_bpftrace
from helpers.tracing import Process, probegen_argv

LIBRARY = r"""
#include <sys/sdt.h>
void pgsec_fire(int value);
void pgsec_fire(int value) { DTRACE_PROBE1(pgsec, hit, value); }
"""

# dlopen()s the library named on its command line and fires its probe
# every 10 ms until killed.
LOADER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
	void *handle;
	void (*fire)(int);
	struct timespec tick = {0, 10 * 1000 * 1000};

	if (argc != 2)
		return 2;
	handle = dlopen(argv[1], RTLD_NOW);
	if (!handle) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	fire = (void (*)(int))dlsym(handle, "pgsec_fire");
	if (!fire)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	for (int i = 1;; i++) {
		fire(i);
		nanosleep(&tick, NULL);
	}
}
"""

# The markers also stand in a comment and a string, where they must stay
# as written (a quoted name there would end the string and become code).
SCRIPT = """#!/usr/bin/env bpftrace
// usdt:__EXE__:hit in a comment stays as written
BEGIN { printf("PG-BEGIN pid __PID__ usdt:__EXE__:hit\\n"); }
usdt:__EXE__:hit { printf("PG-HIT %d\\n", arg0); exit(); }
"""

INJECTED = b"PG-INJECTED"
SECRET = b"PG-SECRET-d41d8cd98f"
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]

# Library paths under the test directory ({area}) as a process could
# choose them; {secret} is a root-only file. The first is the attack seen
# in issue 12 (a 4-probe script attached 8 and printed the secret).
REFUSED = {
    "colon-injection": b'p:zz,interval:ms:700{printf("PG-INJECTED\\n");cat("{secret}");}uprobe:{area}/p',
    "newline": b'n\nBEGIN{printf("PG-INJECTED\\n");cat("{secret}")}\n/lib.so',
    "wildcard": b"s*t/lib.so",
}
TRACED = {
    "quotes-and-braces": b'q"},BEGIN{printf("PG-INJECTED\\n");cat("{secret}");}"/lib.so',
    "backslashes": b'b\\"{printf("PG-INJECTED\\n")}\\\\x\\n/lib.so',
    "spaces-and-markers": b"with space\tBPFTRACE_STRLEN=99999 __EXE__ __PID__ (x;y)/lib.so",
    "bytes": b"u\xff\xc3\xa9\x1b[31m\r$1'%#/lib.so",
}


def _fill(name: bytes, area: bytes, secret: bytes) -> bytes:
    return name.replace(b"{area}", area).replace(b"{secret}", secret)


@pytest.fixture(scope="module")
def area():
    """A directory the user nobody can read (pytest's own are 0700),
    holding the loader and the library, and a root-only secret; all
    removed at the end."""
    require_bpftrace()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not found (util-linux) to run the traced process as nobody")
    top = Path(tempfile.mkdtemp(prefix="probegen-hostile-"))
    private = Path(tempfile.mkdtemp(prefix="probegen-secret-"))  # 0700, root's
    try:
        top.chmod(0o755)
        (top / "lib.c").write_text(LIBRARY)
        (top / "loader.c").write_text(LOADER)
        library = compile_c([top / "lib.c"], top / "lib.so", extra=["-shared", "-fPIC"])
        loader = compile_c([top / "loader.c"], top / "loader", defines=["_POSIX_C_SOURCE=200809L"])
        secret = private / "secret"
        secret.write_bytes(SECRET + b"\n")
        secret.chmod(0o600)
        yield {"top": bytes(top), "secret": bytes(secret), "library": library, "loader": loader, "setpriv": setpriv}
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def _place(area, name: bytes) -> bytes:
    """The library copied to AREA/NAME, readable by nobody."""
    path = area["top"] + b"/" + _fill(name, area["top"], area["secret"])
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    shutil.copyfile(area["library"], path)
    os.chmod(path, 0o755)
    return path


def _start_as_nobody(area, library: bytes) -> Process:
    process = Process([area["setpriv"], *NOBODY, str(area["loader"]), os.fsdecode(library)])
    process.wait_line("READY", timeout=10)
    owner = os.stat(f"/proc/{process.pid}").st_uid
    assert owner == 65534, f"the traced process runs as uid {owner}, not nobody"
    return process


def _script(tmp_path) -> Path:
    path = tmp_path / "probe.bt"
    path.write_text(SCRIPT)
    return path


def _parsed_probes(program: bytes, pid: int, tmp_path) -> list[bytes] | None:
    """The attach points bpftrace 0.17's parser makes of a program (its
    `-d` AST), or None if it does not parse."""
    path = tmp_path / "parsed.bt"
    path.write_bytes(program)
    result = subprocess.run(["bpftrace", "-d", "-p", str(pid), str(path)], capture_output=True, timeout=30)
    # The parser's AST comes first, whatever later passes make of it.
    section = re.search(rb"AST after: parser\n-+\nProgram\n(.*?)(?:\n\n|\Z)", result.stdout, re.S)
    if section is None:
        return None
    return [line[1:] for line in section[1].split(b"\n") if line.startswith(b" ") and not line.startswith(b"  ")]


def _no_injection(*outputs: bytes) -> None:
    """No line printed by an injected action, and never the secret. (The
    names themselves, holding the actions' text, may be quoted.)"""
    for output in outputs:
        assert SECRET not in output, output
        assert INJECTED not in [line.strip() for line in output.splitlines()], output


def _one_line_naming(stderr: bytes, library: bytes) -> None:
    text = stderr.decode("ascii")  # escaped: printable ASCII only
    assert text.count("\n") == 1 and text.endswith("\n"), text
    assert text[:-1].isprintable(), text
    assert "probegen trace: error:" in text and "Traceback" not in text
    assert trace.shown(library) in text, text


@pytest.mark.parametrize("case", sorted(TRACED))
def test_hostile_library_name_is_quoted_and_traced(area, case, tmp_path):
    library = _place(area, TRACED[case])
    script = _script(tmp_path)
    process = _start_as_nobody(area, library)
    try:
        pid = process.pid
        target = b"/proc/%d/root" % pid + library

        # The name unquoted, as probegen did before: the program changes.
        naive = SCRIPT.replace("__PID__", str(pid)).encode().replace(b"usdt:__EXE__:hit {", b"usdt:" + library + b":hit {")
        assert _parsed_probes(naive, pid, tmp_path) != [b"BEGIN", b"usdt:" + target + b":hit"]

        dry = subprocess.run(probegen_argv("trace", "--dry-run", pid, script), capture_output=True, timeout=30)
        assert dry.returncode == 0, dry.stderr
        program = dry.stdout
        # bpftrace's own parser reads back exactly the script's two probes,
        # the target being the mapped file's name, byte for byte.
        assert _parsed_probes(program, pid, tmp_path) == [b"BEGIN", b"usdt:" + target + b":hit"]
        # Nothing else changed: not the comment, not the string.
        lines = program.decode("ascii").splitlines()
        assert lines[0] == "// usdt:__EXE__:hit in a comment stays as written"
        assert lines[1] == f'BEGIN {{ printf("PG-BEGIN pid {pid} usdt:__EXE__:hit\\n"); }}'
        assert lines[2] == f'usdt:{attach_string(target)}:hit {{ printf("PG-HIT %d\\n", arg0); exit(); }}'
        assert len(lines) == 3

        real = subprocess.run(probegen_argv("trace", pid, script), capture_output=True, timeout=30)
        assert real.returncode == 0, real.stderr
        out = real.stdout.splitlines()
        assert b"Attaching 2 probes..." in out, real.stdout
        assert f"PG-BEGIN pid {pid} usdt:__EXE__:hit".encode() in out, real.stdout
        assert any(re.fullmatch(rb"PG-HIT \d+", line) for line in out), real.stdout
        _no_injection(dry.stdout, dry.stderr, real.stdout, real.stderr)
    finally:
        process.kill()


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unnameable_library_is_refused_in_one_line(area, case, tmp_path):
    library = _place(area, REFUSED[case])
    script = _script(tmp_path)
    process = _start_as_nobody(area, library)
    try:
        pid = process.pid
        if case == "colon-injection":
            # The attack is real: unquoted, bpftrace parses injected probes.
            naive = SCRIPT.replace("__PID__", str(pid)).encode().replace(b"__EXE__:hit {", library + b":hit {")
            probes = _parsed_probes(naive, pid, tmp_path)
            assert probes is not None and len(probes) == 4 and b"interval:ms:700" in probes, probes

        dry = subprocess.run(probegen_argv("trace", "--dry-run", pid, script), capture_output=True, timeout=30)
        assert dry.returncode == 2 and dry.stdout == b"", dry.stdout
        _one_line_naming(dry.stderr, library)
        real = subprocess.run(probegen_argv("trace", pid, script), capture_output=True, timeout=30)
        assert real.returncode == 2 and b"Attaching" not in real.stdout, real.stdout
        _one_line_naming(real.stderr, library)
        _no_injection(dry.stdout, dry.stderr, real.stdout, real.stderr)
    finally:
        process.kill()


def test_bpftrace_reads_every_byte_back(tmp_path):
    """attach_string against bpftrace 0.17's lexer and attach-point
    parser, for every byte a file name can hold and probegen accepts."""
    require_bpftrace()
    refused = set(b"\0\n:*")
    names = [b"/t/" + bytes(b for b in range(256) if b not in refused),
             b'/\\', b'/\\\\"', b'/"\\', b"/\\x41\\101\\n"]
    program = "".join(f"usdt:{attach_string(name)}:p:n{i} {{ }}\n" for i, name in enumerate(names))
    assert all(line.isascii() and line.isprintable() for line in program.splitlines())
    probes = _parsed_probes(program.encode(), os.getpid(), tmp_path)
    assert probes == [b"usdt:" + name + b":p:n%d" % i for i, name in enumerate(names)]


def test_banner_shows_terminal_controls_in_script_names_as_escapes():
    """The banner a script without BEGIN gets names the scripts: a C1 control (CSI), a bidi
    override or a file name's undecodable byte is printed as a visible escape, '%' as itself."""
    program = trace.combine([trace.Script("a\x9b31m\u202eb\udcff  c%.bt", "")], [""], [])
    assert 'printf("Tracing (a\\\\x9b31m\\\\u202eb\\\\xff c%%). Hit Ctrl-C to end.\\n");' in program
    assert not {"\x9b", "\u202e", "\udcff"} & set(program)
