"""What ``probegen list`` prints: a table for people, JSON for programs.

JSON shape (``"version": 1``)::

    {"version": 1,
     "binaries": [{"path": str, "class": 32|64, "machine": "x86_64"|"EM_12345",
                   "type": "ET_DYN", "stapsdt_base": int|null,
                   "probes": [{"provider": str, "name": str,
                               "sites": [{"address": int, "semaphore": int|null,
                                          "base": int, "args_text": str,
                                          "args": [ARG, ...]}]}]}],
     "errors": [{"path": str, "message": str}]}

    ARG = {"spec": "-4@%eax", "size": 4, "signed": true, "float": false,
           "type": "s32",
           "location": "register"|"constant"|"address"|"memory"|"unknown",
           # register: "register": "eax" (see argspec.Register for names)
           # constant: "value": int, or float for a floating-point literal
           # address:  "symbol": str, "offset": int, "relocation": str|null
           #           (a link-time address constant: x86 $sym, arm #sym+8)
           # memory:   "base", "index": str|null, "scale": int, "offset": int,
           #           "symbol", "relocation", "segment": str|null
           # unknown:  "text": str (the operand as written)
          }

"machine" is always a string: a short name ("x86_64", "i386", "aarch64",
"arm", "ppc64le", "s390x", "mips64el", "riscv64"), else the ELF name
("EM_SPARCV9"), "EM_<number>" for a machine pyelftools does not name.

Addresses are plain integers: the pc after the ``.stapsdt.base``
adjustment tracers make for prelinked files (equal to ``readelf -n``'s
Location otherwise); ``base`` is the note's own recorded base.
"""

from __future__ import annotations

import re

from probegen.elf.argspec import Address, Constant, Memory, NoteArg, Register
from probegen.elf.notes import Binary, ElfError

JSON_VERSION = 1


def arg_json(arg: NoteArg) -> dict:
    out = {
        "spec": arg.spec, "size": arg.size, "signed": arg.signed, "float": arg.floating,
        "type": arg.type_name, "location": arg.operand.kind,
    }
    operand = arg.operand
    if isinstance(operand, Register):
        out["register"] = operand.name
    elif isinstance(operand, Constant):
        out["value"] = operand.value
    elif isinstance(operand, Address):
        out.update(symbol=operand.symbol, offset=operand.offset, relocation=operand.relocation)
    elif isinstance(operand, Memory):
        out.update(base=operand.base, index=operand.index, scale=operand.scale,
                   offset=operand.offset, symbol=operand.symbol, relocation=operand.relocation,
                   segment=operand.segment)
    else:
        out["text"] = operand.describe()
    return out


def _args_json(args: tuple[NoteArg, ...], memo: dict) -> list[dict]:
    """Sites that repeat an argument string share its decoded tuple (see
    probegen.elf.notes): encoded once per tuple, by identity."""
    found = memo.get(id(args))
    if found is None:
        found = memo[id(args)] = [arg_json(a) for a in args]
    return found


def binary_json(binary: Binary) -> dict:
    memo: dict[int, list[dict]] = {}  # the tuples live as long as the binary, so ids are stable
    return {
        "path": binary.path,
        "class": binary.elf_class,
        "machine": binary.arch,
        "type": binary.elf_type,
        "stapsdt_base": binary.stapsdt_base,
        "probes": [
            {
                "provider": probe.provider,
                "name": probe.name,
                "sites": [
                    {
                        "address": site.address,
                        "semaphore": site.semaphore or None,
                        "base": site.base,
                        "args_text": site.args_text,
                        "args": _args_json(site.args, memo),
                    }
                    for site in probe.sites
                ],
            }
            for probe in binary.probes
        ],
    }


def listing_json(binaries: list[Binary], errors: list[ElfError]) -> dict:
    return {
        "version": JSON_VERSION,
        "binaries": [binary_json(b) for b in binaries],
        "errors": [{"path": e.path, "message": e.problem} for e in errors],
    }


def machine_text(binary: Binary) -> str:
    """'x86_64'; 'unknown machine 12345' for a number with no ELF name."""
    number = re.fullmatch(r"EM_([0-9]+)", binary.arch)
    return f"unknown machine {number[1]}" if number else binary.arch


def listing_text(binary: Binary) -> str:
    """One block per probe: its sites, and each argument decoded."""
    width = 2 * binary.pointer_size
    what = f"[{machine_text(binary)}, ELF{binary.elf_class} {binary.elf_type}]"
    lines = [f"{binary.path}: {len(binary.probes)} probe(s), {binary.site_count} site(s) {what}"]
    if not binary.has_notes:
        lines[0] = f"{binary.path}: no {'.note.stapsdt'} section (no USDT probes) {what}"
    address = f"0{width}x"
    args_text: dict[int, str] = {}  # by identity of the shared argument tuple (see _args_json)
    append = lines.append
    for probe in binary.probes:
        append(f"  {probe.provider}:{probe.name}")
        for site in probe.sites:
            semaphore = "0x" + format(site.semaphore, address) if site.semaphore else "none"
            append(f"    site 0x{format(site.address, address)}  semaphore {semaphore}")
            if site.args:
                text = args_text.get(id(site.args))
                if text is None:
                    text = args_text[id(site.args)] = _args_text(site.args)
                append(text)
    return "\n".join(lines) + "\n"


def _args_text(args: tuple[NoteArg, ...]) -> str:
    specw = max(len(a.spec) for a in args)
    return "\n".join(
        f"      arg{index:<2} {arg.spec:<{specw}}  {arg.type_name:<4} {arg.operand.kind:<8} {arg.operand.describe()}"
        for index, arg in enumerate(args)
    )
