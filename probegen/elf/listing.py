"""What ``probegen list`` prints: a table for people, JSON for programs (its
shape: doc/verify-import.md, "probegen list")."""

import re

from probegen.elf.argspec import NoteArg
from probegen.elf.notes import Binary, ElfError
from probegen.errors import printable

# The keys of each operand kind, in the order the JSON has always had (a register's is its name).
_KEYS = {"register": ("register",), "unknown": ("text",), "constant": ("value",),
         "address": ("symbol", "offset", "relocation"),
         "memory": ("base", "index", "scale", "offset", "symbol", "relocation", "segment")}


def arg_json(arg: NoteArg) -> dict:
    operand = arg.operand
    out = {"spec": arg.spec, "size": arg.size, "signed": arg.signed, "float": arg.floating,
           "type": arg.type_name, "location": operand.kind}
    out.update((key, getattr(operand, "name" if key == "register" else key)) for key in _KEYS[operand.kind])
    return out


def binary_json(binary: Binary) -> dict:
    return {
        "path": binary.path, "class": binary.elf_class, "machine": binary.arch, "type": binary.elf_type,
        "stapsdt_base": binary.stapsdt_base,
        "probes": [{"provider": probe.provider, "name": probe.name,
                    "sites": [{"address": site.address, "semaphore": site.semaphore or None, "base": site.base,
                               "args_text": site.args_text, "args": [arg_json(a) for a in site.args]}
                              for site in probe.sites]}
                   for probe in binary.probes],
    }


def listing_json(binaries: list[Binary], errors: list[ElfError]) -> dict:
    return {
        "version": 1,
        "binaries": [binary_json(b) for b in binaries],
        "errors": [{"path": e.location.path, "message": e.message} for e in errors],
    }


def listing_text(binary: Binary) -> str:
    """One block per probe: its sites, and each argument decoded."""
    unnamed = re.fullmatch(r"EM_([0-9]+)", binary.arch)
    what = f"[{f'unknown machine {unnamed[1]}' if unnamed else binary.arch}, ELF{binary.elf_class} {binary.elf_type}]"
    count = f"{len(binary.probes)} probe(s), {sum(len(probe.sites) for probe in binary.probes)} site(s)"
    count = count if binary.has_notes else "no .note.stapsdt section (no USDT probes)"
    lines = [f"{printable(binary.path)}: {count} {what}"]
    address = f"0{2 * binary.pointer_size}x"
    for probe in binary.probes:
        lines.append(f"  {probe.provider}:{probe.name}")
        for site in probe.sites:
            semaphore = "0x" + format(site.semaphore, address) if site.semaphore else "none"
            lines.append(f"    site 0x{format(site.address, address)}  semaphore {semaphore}")
            width = max((len(arg.spec) for arg in site.args), default=0)
            lines.extend(f"      arg{index:<2} {arg.spec:<{width}}  {arg.type_name:<4} {arg.operand.kind:<8} "
                         f"{arg.operand.describe()}" for index, arg in enumerate(site.args))
    return "\n".join(lines) + "\n"
