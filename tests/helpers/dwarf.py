"""For the probegen structs tests: compile C with gcc, check emitted
definitions against gcc's own layout and DWARF's, read pahole, run bpftrace.

Everything here drives real tools; nothing is mocked.
"""

from __future__ import annotations

import re
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

from helpers import require, require_bpftrace, run_compiler
from probegen.dwarf import model as m


def gcc(source, output, *flags, check=True) -> subprocess.CompletedProcess:
    """gcc with exactly these flags (no warnings added): DWARF test objects."""
    require("gcc", "gcc")
    return run_compiler(["gcc", *flags, "-o", output, source], check=check)


# ---- zip bombs ----------------------------------------------------------------


def zeros(mib: int) -> bytes:
    """A zlib stream of ``mib`` MiB of zeros, made without compressing them all."""
    chunk = b"\0" * (1 << 20)
    deflater = zlib.compressobj(9)
    first = deflater.compress(chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    again = deflater.compress(chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    adler = 1
    for _ in range(mib):
        adler = zlib.adler32(chunk, adler)
    return first + again * (mib - 1) + deflater.flush()[:-4] + struct.pack(">I", adler)


def zip_bomb(binary: Path, out: Path, legacy: bool, mib: int = 256, claim: int = 1 << 20,
             section: str = "info") -> Path:
    """``binary`` with .debug_SECTION replaced by ``mib`` MiB of zeros that
    claim to be ``claim`` bytes: GNU .zdebug_SECTION or SHF_COMPRESSED."""
    payload = out.with_suffix(".payload")
    head = b"ZLIB" + struct.pack(">Q", claim) if legacy else struct.pack("<IIQQ", 1, 0, claim, 1)
    payload.write_bytes(head + zeros(mib))
    name = f".zdebug_{section}" if legacy else f".debug_{section}"
    subprocess.run(["objcopy", f"--remove-section=.debug_{section}", f"--add-section={name}={payload}", binary, out],
                   check=True)
    if not legacy:  # objcopy cannot set SHF_COMPRESSED (0x800) itself
        from elftools.elf.elffile import ELFFile

        with open(out, "r+b") as f:
            elf = ELFFile(f)
            index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == name)
            at = elf["e_shoff"] + index * elf["e_shentsize"] + 8
            f.seek(at)
            flags = struct.unpack("<Q", f.read(8))[0]
            f.seek(at)
            f.write(struct.pack("<Q", flags | 0x800))
    return out


# ---- layout checks ----------------------------------------------------------


def _walk(t: m.Struct, prefix: str, base_bits: int, out: list):
    """(path, kind, expected) for every member, into inline anonymous types."""
    for member in t.members:
        path = f"{prefix}{member.name}" if member.name else prefix.rstrip(".")
        inner = m.unqualified(member.type)
        if member.bit_size is not None:
            if member.name:
                out.append((path, "bit", base_bits + member.bit_offset))
            continue
        if member.name:
            out.append((path, "offset", (base_bits + member.offset * 8) // 8))
            is_flexible = isinstance(inner, m.Array) and None in inner.counts
            if not is_flexible:
                out.append((path, "sizeof", m.unqualified(member.type).size))
        if isinstance(inner, m.Struct) and inner.name is None:
            _walk(inner, f"{path}." if path else "", base_bits + member.offset * 8, out)


def layout_checks(defined) -> list[tuple[m.Struct, str, str, int]]:
    """(type, path, what, DWARF's value) for every named struct/union."""
    checks = []
    for t in defined:
        if not isinstance(t, m.Struct):
            continue
        checks.append((t, "", "size", t.size))
        rows: list = []
        _walk(t, "", 0, rows)
        checks.extend((t, path, kind, value) for path, kind, value in rows)
    return checks


def checker_source(prelude: str, checks, spell) -> str:
    """A C program printing gcc's answer to every check, one per line."""
    lines = [
        "#include <stdio.h>", "#include <stddef.h>", "#include <string.h>",
        prelude,
        "static long bitpos(const unsigned char *p, size_t n) {",
        "  for (size_t i = 0; i < n * 8; i++) if (p[i / 8] >> (i % 8) & 1) return (long)i;",
        "  return -1; }",
        "int main(void) {",
    ]
    for t, path, kind, _ in checks:
        name = spell(t)
        label = f"{name}.{path}:{kind}"
        if kind == "size":
            expr = f"(long)sizeof({name})"
        elif kind == "offset":
            expr = f"(long)offsetof({name}, {path})"
        elif kind == "sizeof":
            expr = f"(long)sizeof((({name} *)0)->{path})"
        else:
            lines.append(f"  {{ {name} v; memset(&v, 0, sizeof v); v.{path} = -1;")
            lines.append(f'    printf("%s %ld\\n", "{label}", bitpos((const unsigned char *)&v, sizeof v)); }}')
            continue
        lines.append(f'  printf("%s %ld\\n", "{label}", {expr});')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def run_checker(tmp: Path, name: str, source: str) -> dict[str, int]:
    c = tmp / f"{name}.c"
    c.write_text(source)
    exe = tmp / name
    gcc(c, exe, "-w", "-O0")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}


# ---- pahole -------------------------------------------------------------------

_PAHOLE_MEMBER = re.compile(
    r"^\t(?!\t).*?\b(?P<name>[A-Za-z_]\w*)(?:\[[^\]]*\])*(?::\d+)?;\s*/\*\s*(?P<offset>\d+)(?::\s*\d+)?\s+(?P<size>\d+)\s*\*/"
)
_PAHOLE_SIZE = re.compile(r"/\* size: (\d+)")


def pahole_layout(binary: Path, name: str) -> tuple[int | None, dict[str, int]]:
    """(size, {member: offset}) for the members pahole prints at top level."""
    require("pahole", "dwarves")
    out = subprocess.run(["pahole", "-C", name, str(binary)], capture_output=True, text=True, check=True).stdout
    assert out.strip(), f"pahole found no {name} in {binary}"
    members: dict[str, int] = {}
    size = None
    for line in out.splitlines():
        match = _PAHOLE_MEMBER.match(line)
        if match:
            members[match["name"]] = int(match["offset"])
        sized = _PAHOLE_SIZE.search(line)
        if sized and line.startswith("\t/*"):
            size = int(sized.group(1))
    return size, members  # size is None for unions: pahole prints none


# ---- bpftrace --------------------------------------------------------------------


def run_bpftrace_with(script: str, program: list[str], tmp: Path, timeout: float = 60):
    """Start bpftrace on ``script``, then the traced program; bpftrace's
    output once the script exits (it must call exit())."""
    tracer = _start_bpftrace(script, tmp / "probe.bt")
    target = None
    try:
        deadline = time.monotonic() + timeout
        # bpftrace prints "Attaching N probes..." once attached.
        line = tracer.stdout.readline()
        if not line.startswith("Attaching"):
            tracer.wait(timeout=10)
            raise AssertionError(f"bpftrace did not attach:\n{line}{tracer.stdout.read()}\n{tracer.stderr.read()}")
        target = subprocess.Popen(program, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out, err = tracer.communicate(timeout=max(1.0, deadline - time.monotonic()))
        return line + out, err
    finally:
        for proc in (tracer, target):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()


def _start_bpftrace(script: str, path: Path) -> subprocess.Popen:
    require_bpftrace()
    path.write_text(script)
    return subprocess.Popen(
        ["bpftrace", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_raise_memlock,
    )


def _raise_memlock():
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass


def trace_first_line(script: str, program: list[str], tmp: Path, needle: str, timeout: float = 60) -> str:
    """Run a script that does not exit by itself; the first output line
    containing ``needle`` (bpftrace is then stopped), a hit printed in
    several lines joined into one (probegen.runtime.trace)."""
    from probegen.runtime.trace import HitJoiner

    tracer = _start_bpftrace(script, tmp / "trace.bt")
    target = None
    try:
        first = tracer.stdout.readline()
        if not first.startswith("Attaching"):
            tracer.kill()
            raise AssertionError(f"bpftrace did not attach:\n{first}{tracer.stdout.read()}\n{tracer.stderr.read()}")
        target = subprocess.Popen(program, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        seen = []
        joiner = HitJoiner()
        while time.monotonic() < deadline:
            line = tracer.stdout.readline()
            if not line:
                break
            seen.append(line)
            for shown in joiner.feed(line.rstrip("\n")):
                if needle in shown:
                    return shown
        raise AssertionError(f"no line with {needle!r} from bpftrace:\n{''.join(seen)}")
    finally:
        for proc in (tracer, target):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
