"""probegen on binaries it has never seen: USDT notes from Debian 12
packages for seven architectures (see helpers.debian.BINARIES for the list
and what each provides).

- ``list`` agrees with binutils' ``readelf -n`` note for note and argument
  for argument;
- every decoded argument agrees with BCC on x86_64 (``tplist-bpfcc -vv``),
  and everywhere with the register, constant or memory operand read off the
  spec string by the small decoder below, written apart from probegen's;
- ``import`` writes a catalog that ``verify`` passes on the same binaries,
  for every provider, and for one program built for three architectures.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from helpers import note_count, readelf_notes, require, run_cli
from helpers.debian import BINARIES, binary_path, case_id, cases, fetch_all


@pytest.fixture(scope="session")
def debian_root():
    return fetch_all()


CASES = [pytest.param(case, id=case_id(case)) for case in cases()]


def list_json(capsys, path: Path) -> dict:
    code, out, err = run_cli(capsys, "list", "--format", "json", path)
    assert code == 0 and not err, err
    data = json.loads(out)
    assert not data["errors"] and len(data["binaries"]) == 1
    return data["binaries"][0]


def sites_of(binary: dict) -> dict:
    """(provider, name, address) -> the site of probegen list's JSON."""
    sites = {}
    for probe in binary["probes"]:
        for site in probe["sites"]:
            key = (probe["provider"], probe["name"], site["address"])
            assert key not in sites, f"two sites at {key}"
            sites[key] = site
    return sites


def split_arg_text(text: str) -> list[str]:
    """readelf's Arguments text split into SIZE@OPERAND items; an operand in
    brackets ('[sp, 36]', '[r4, #-32]') may hold a space."""
    items = re.findall(r"\S*?@(?:\[[^\]]*\]|[^\s\[])+", text)
    assert " ".join(items) == text.strip(), f"cannot split {text!r}"
    return items


def stapsdt_base_address(path: Path) -> int | None:
    with open(path, "rb") as stream:
        section = ELFFile(stream).get_section_by_name(".stapsdt.base")
        return section["sh_addr"] if section else None


@pytest.mark.parametrize("case", CASES)
def test_list_equals_readelf(case, debian_root, capsys):
    path = binary_path(debian_root, *case)
    notes = readelf_notes(path)
    assert notes and len(notes) == note_count(path), f"readelf's stapsdt notes in {path} not all read"
    binary = list_json(capsys, path)
    assert isinstance(binary["machine"], str) and not binary["machine"].isdigit()
    sites = sites_of(binary)
    assert len(sites) == len(notes)
    actual_base = stapsdt_base_address(path)
    for note in notes:
        # Tracers move a note's address by how far .stapsdt.base moved (prelink).
        address = note["address"] + (actual_base - note["base"] if actual_base is not None else 0)
        key = (note["provider"], note["name"], address)
        assert key in sites, f"readelf's note {key} missing from probegen list"
        site = sites[key]
        assert site["base"] == note["base"]
        assert (site["semaphore"] or 0) == note["semaphore"]
        assert site["args_text"] == note["args"]
        specs = split_arg_text(note["args"])
        assert [arg["spec"] for arg in site["args"]] == specs, key


# --- an operand decoder of the test's own -------------------------------
# Per architecture, the assembler syntax gcc writes into the notes, read
# into {'location': ..., fields as probegen list --format json names them}.

NUMBER = r"[-+]?(?:0x[0-9a-fA-F]+|\d+)"


def number(text: str) -> int:
    return int(text, 0) if not re.fullmatch(r"[-+]?0\d+", text) else int(text, 8)


def x86_displacement(text: str) -> tuple[int, str | None, str | None]:
    """'40+CheckpointStats@GOTOFF' -> (40, 'CheckpointStats', 'GOTOFF'): the
    numbers summed, the one symbol and the relocation operator after '@'."""
    offset, symbols = 0, []
    for sign, term in re.findall(r"([-+]?)([^-+]+)", text):
        if re.fullmatch(NUMBER, term):
            offset += -number(term) if sign == "-" else number(term)
        else:
            assert sign != "-", f"negated symbol in {text!r}"
            symbols.append(term)
    assert len(symbols) <= 1, text
    if not symbols:
        return offset, None, None
    symbol, _, relocation = symbols[0].partition("@")
    return offset, symbol, relocation or None


def decode_x86(op: str) -> dict:
    if m := re.fullmatch(r"%(\w+)", op):
        return {"location": "register", "register": m[1]}
    if m := re.fullmatch(r"\$(" + NUMBER + ")", op):
        return {"location": "constant", "value": number(m[1])}
    m = re.fullmatch(r"([^(]*)\((?:%(\w+))?(?:,%(\w+)(?:,(\d))?)?\)", op)
    assert m, f"x86 operand {op!r}"
    offset, symbol, relocation = x86_displacement(m[1])
    return {"location": "memory", "base": m[2], "index": m[3], "scale": int(m[4] or 1),
            "offset": offset, "symbol": symbol, "relocation": relocation}


def memory(offset: int) -> dict:
    """The fields of a memory operand without index or symbol, besides its base."""
    return {"index": None, "scale": 1, "offset": offset, "symbol": None, "relocation": None}


def decode_arm(op: str) -> dict:
    """aarch64 and 32-bit ARM: 'x0', 'r5', '#0' or '0', '[sp, 36]', '[r4, #-32]'."""
    if m := re.fullmatch(r"#?(" + NUMBER + ")", op):
        return {"location": "constant", "value": number(m[1])}
    if m := re.fullmatch(r"\[(\w+)(?:, #?(" + NUMBER + r"))?\]", op):
        return {"location": "memory", "base": m[1], **memory(number(m[2] or "0"))}
    assert re.fullmatch(r"[a-z]+\d*", op), f"ARM operand {op!r}"
    return {"location": "register", "register": op}


def decode_s390x(op: str) -> dict:
    if re.fullmatch(NUMBER, op):
        return {"location": "constant", "value": number(op)}
    if m := re.fullmatch(r"%(r\d+)", op):
        return {"location": "register", "register": m[1]}
    m = re.fullmatch(r"(" + NUMBER + r")\(%(r\d+)\)", op)
    assert m, f"s390x operand {op!r}"
    return {"location": "memory", "base": m[2], **memory(number(m[1]))}


def decode_ppc(op: str) -> dict:
    """gcc for ppc64el writes bare register numbers: '3' is r3, 'i0' the constant 0."""
    if m := re.fullmatch(r"i(" + NUMBER + ")", op):
        return {"location": "constant", "value": number(m[1])}
    if re.fullmatch(r"\d+", op):
        return {"location": "register", "register": f"r{op}"}
    m = re.fullmatch(r"(" + NUMBER + r")\((\d+)\)", op)
    assert m, f"ppc64 operand {op!r}"
    return {"location": "memory", "base": f"r{m[2]}", **memory(number(m[1]))}


def decode_mips(op: str) -> dict:
    if re.fullmatch(NUMBER, op):
        return {"location": "constant", "value": number(op)}
    if re.fullmatch(r"\$\w+", op):
        return {"location": "register", "register": op}
    m = re.fullmatch(r"(" + NUMBER + r")\((\$\w+)\)", op)
    assert m, f"mips operand {op!r}"
    return {"location": "memory", "base": m[2], **memory(number(m[1]))}


DECODERS = {"amd64": decode_x86, "i386": decode_x86, "arm64": decode_arm, "armhf": decode_arm,
            "s390x": decode_s390x, "ppc64el": decode_ppc, "mips64el": decode_mips}

# Other spellings of one register, so the check does not depend on which
# name probegen prints (ppc64 '3' / 'r3' / '%r3'; MIPS '$29' / '$sp' / 'sp').
ARM_ALIASES = {"sb": "r9", "sl": "r10", "fp": "r11", "ip": "r12", "sp": "r13", "lr": "r14", "pc": "r15"}
MIPS_NAMES = (["zero", "at", "v0", "v1"] + [f"a{i}" for i in range(8)] + [f"t{i}" for i in range(4)]
              + [f"s{i}" for i in range(8)] + ["t8", "t9", "k0", "k1", "gp", "sp", "fp", "ra"])


def same_register(arch: str, name: str | None) -> str | None:
    if name is None:
        return None
    name = name.lower().lstrip("%")
    if arch == "armhf":
        return ARM_ALIASES.get(name, name)
    if arch == "ppc64el":
        return "r" + name.lstrip("r")
    if arch == "mips64el":
        name = name.lstrip("$")
        name = "fp" if name == "s8" else name
        return str(MIPS_NAMES.index(name)) if name in MIPS_NAMES else name
    return name


def decoded(arch: str, arg: dict) -> dict:
    """The fields of probegen's decoded argument the expectation names."""
    out = {"location": arg["location"]}
    if arg["location"] == "register":
        out["register"] = same_register(arch, arg["register"])
    elif arg["location"] == "constant":
        out["value"] = arg["value"]
    elif arg["location"] == "memory":
        out.update(base=same_register(arch, arg["base"]), index=same_register(arch, arg["index"]),
                   scale=arg["scale"], offset=arg["offset"], symbol=arg["symbol"],
                   relocation=arg["relocation"])
        if arg["segment"]:  # none of these binaries addresses through %fs or %gs
            out["segment"] = arg["segment"]
    else:
        out["text"] = arg.get("text")
    return out


def expected(arch: str, spec: str) -> dict:
    m = re.fullmatch(r"(-?)([1248])(f?)@(.+)", spec)
    assert m, spec
    want = {"size": int(m[2]), "signed": m[1] == "-", "float": m[3] == "f"}
    operand = DECODERS[arch](m[4])
    for key in ("register", "base", "index"):
        if key in operand:
            operand[key] = same_register(arch, operand[key])
    return {**want, **operand}


@pytest.mark.parametrize("case", CASES)
def test_every_argument_decoded(case, debian_root, capsys):
    path = binary_path(debian_root, *case)
    arch = case[1]
    wrong = []
    count = 0
    for key, site in sites_of(list_json(capsys, path)).items():
        for arg in site["args"]:
            count += 1
            got = {"size": arg["size"], "signed": arg["signed"], "float": arg["float"], **decoded(arch, arg)}
            want = expected(arch, arg["spec"])
            if got != want:
                wrong.append(f"{key[1]} {arg['spec']}: probegen {got}, expected {want}")
    assert count
    assert not wrong, f"{len(wrong)} of {count} arguments decoded wrongly:\n" + "\n".join(wrong[:20])


# --- x86_64 against BCC -----------------------------------------------------

X86_FAMILIES = {}
for _family, _names in {"ax": "rax eax ax al ah", "bx": "rbx ebx bx bl bh", "cx": "rcx ecx cx cl ch",
                        "dx": "rdx edx dx dl dh", "si": "rsi esi si sil", "di": "rdi edi di dil",
                        "bp": "rbp ebp bp bpl", "sp": "rsp esp sp spl", "ip": "rip eip ip"}.items():
    X86_FAMILIES.update(dict.fromkeys(_names.split(), _family))
for _n in range(8, 16):
    X86_FAMILIES.update(dict.fromkeys([f"r{_n}", f"r{_n}d", f"r{_n}w", f"r{_n}b"], f"r{_n}"))


def bcc_register(name: str) -> str:
    """BCC names x86 registers by their pt_regs slot: %eax and %rax are 'ax'."""
    return X86_FAMILIES.get(name, name)


def bcc_text(arg: dict) -> str:
    """How tplist-bpfcc -vv prints an argument BCC decoded the way probegen did."""
    where = arg["location"]
    if where == "constant":
        operand = str(arg["value"])
    elif where == "register":
        operand = bcc_register(arg["register"])
    elif where == "memory" and not arg["symbol"]:
        index = f" + {bcc_register(arg['index'])}" if arg["index"] else ""
        index += f" * {arg['scale']}" if arg["index"] and arg["scale"] != 1 else ""
        sign = "+" if arg["offset"] >= 0 else "-"
        operand = f"*({bcc_register(arg['base'])} {sign} {abs(arg['offset'])}{index})"
    else:
        operand = f"{where} {arg}"
    return f"{arg['size']} {'signed  ' if arg['signed'] else 'unsigned'} bytes @ {operand}"


def tplist_arguments(path: Path) -> dict:
    """(provider, name, address) -> argument lines of tplist-bpfcc -vv."""
    out = subprocess.run([require("tplist-bpfcc", "bpfcc-tools"), "-vv", "-l", str(path)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip(f"tplist-bpfcc could not read {path.name}: {(out.stderr or out.stdout).strip()[-300:]}")
    found, probe, key = {}, None, None
    for line in out.stdout.splitlines():
        if m := re.fullmatch(r"(\S+):(\S+) \[sema 0x[0-9a-f]+\]", line):
            probe = (m[1], m[2])
        elif m := re.fullmatch(r"  location #\d+ .* 0x([0-9a-f]+)", line):
            key = (*probe, int(m[1], 16))
            found[key] = []
        elif m := re.fullmatch(r"    argument #\d+ (.*)", line):
            found[key].append(m[1])
        else:
            raise AssertionError(f"unexpected tplist-bpfcc line {line!r}")
    return found


# tplist-bpfcc cannot print a symbol-relative operand ('unrecognized argument
# format'); BCC's Python binding, which tplist uses, gives its fields.
BCC_SYMBOLIC = """
import json, sys
from bcc import USDT
reader = USDT(path=sys.argv[1])
out = {}
for probe in reader.enumerate_probes():
    for i in range(probe.num_locations):
        location = probe.get_location(i)
        args = [location.get_argument(j) for j in range(location.num_arguments)]
        out["%s:%s:%d" % (probe.provider.decode(), probe.name.decode(), location.address)] = [
            [a.base_register_name.decode(), a.deref_offset, a.deref_ident.decode()]
            if hasattr(a, "deref_ident") else None for a in args]
print(json.dumps(out))
"""


def bcc_symbolic(path: Path) -> dict:
    python = Path("/usr/bin/python3")
    out = subprocess.run([str(python), "-c", BCC_SYMBOLIC, str(path)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        pytest.skip(f"BCC's Python binding (python3-bpfcc) failed on {path.name}: {out.stderr.strip()[-300:]}")
    return {tuple(k.rsplit(":", 2)[:2]) + (int(k.rsplit(":", 1)[1]),): v for k, v in json.loads(out.stdout).items()}


X86_64_CASES = [p for p in CASES if p.values[0][1] == "amd64"]


@pytest.mark.parametrize("case", X86_64_CASES)
def test_x86_64_arguments_match_bcc(case, debian_root, capsys):
    path = binary_path(debian_root, *case)
    bcc = tplist_arguments(path)
    sites = sites_of(list_json(capsys, path))
    assert set(bcc) == set(sites)
    symbolic = None
    wrong = []
    for key, site in sites.items():
        assert len(bcc[key]) == len(site["args"]), key
        for number_, (arg, line) in enumerate(zip(site["args"], bcc[key])):
            if "unrecognized argument format" in line:
                symbolic = symbolic if symbolic is not None else bcc_symbolic(path)
                base, offset, ident = symbolic[key][number_]
                got = (arg["location"], bcc_register(arg.get("base") or ""), arg.get("offset"), arg.get("symbol"))
                if got != ("memory", base, offset, ident):
                    wrong.append(f"{key[1]} {arg['spec']}: probegen {got}, BCC {('memory', base, offset, ident)}")
            elif bcc_text(arg) != line:
                wrong.append(f"{key[1]} {arg['spec']}: probegen {bcc_text(arg)!r}, BCC {line!r}")
    assert not wrong, "\n".join(wrong[:20])


# --- import, then verify ------------------------------------------------------

def import_then_verify(capsys, catalog: Path, provider: str, binaries) -> None:
    code, out, err = run_cli(capsys, "import", *binaries, "--provider", provider, "-o", catalog)
    assert code == 0, f"import --provider {provider} exit {code}: {err}{out}"
    for binary in binaries:
        code, out, err = run_cli(capsys, "verify", binary, "-c", catalog)
        assert code == 0, f"verify {binary} -c {catalog.name} exit {code}:\n{out}{err}"


@pytest.mark.parametrize("case", CASES)
def test_import_then_verify(case, debian_root, capsys, tmp_path):
    path = binary_path(debian_root, *case)
    providers = sorted({note["provider"] for note in readelf_notes(path)})
    assert set(providers) == set(case[0].providers)
    for provider in providers:
        import_then_verify(capsys, tmp_path / f"{provider}.yaml", provider, [path])


MULTI_ARCH = ("amd64", "i386", "arm64")


@pytest.mark.parametrize("binary", [b for b in BINARIES if set(MULTI_ARCH) <= set(b.architectures)],
                         ids=lambda b: b.package)
def test_import_three_architectures_then_verify_each(binary, debian_root, capsys, tmp_path):
    """One catalog from the 64-bit x86, 32-bit x86 and aarch64 builds: pointers
    must not be inferred as 8-byte integers the i386 build then fails."""
    paths = [binary_path(debian_root, binary, arch) for arch in MULTI_ARCH]
    for provider in binary.providers:
        import_then_verify(capsys, tmp_path / f"{provider}.yaml", provider, paths)
