"""probegen.elf and `probegen list`: notes read from real ELF files agree
with binutils' readelf, argument specs decode on x86_64, aarch64 and i686,
and bad files give one-line errors."""

from __future__ import annotations

import json
import re
import shutil
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import (
    C_DIR, LIBJVM, LIBSTDCXX, PYTHON311, compile_for, examples, note_count, readelf_notes, require_file, run_cli,
    sdt_include_dir,
)
from probegen.elf.argspec import Constant, Memory, Register, Unknown
from probegen.elf.notes import ElfError, read_binary


def flat_sites(binary):
    return [(p, s) for p in binary.probes for s in p.sites]


def assert_agrees_with_readelf(path):
    expected = readelf_notes(path)
    binary = read_binary(path)
    ours = flat_sites(binary)
    assert len(ours) == len(expected) == note_count(path)
    by_key = {(p.provider, p.name, s.address): s for p, s in ours}
    assert len(by_key) == len(ours), "two notes at one address"
    for note in expected:
        site = by_key[(note["provider"], note["name"], note["address"])]
        assert site.base == note["base"]
        assert site.semaphore == note["semaphore"]
        assert site.args_text == note["args"]
        # Independent of the reader's splitter: a bracketed aarch64 operand
        # ('[sp, 12]') holds a space, everything else is space-separated.
        specs = re.findall(r"-?\d+f?@(?:\[[^\]]*\]|\S+)", note["args"])
        assert " ".join(specs) == note["args"]
        assert [a.spec for a in site.args] == specs
        for arg, spec in zip(site.args, specs):
            size_text = spec.split("@", 1)[0]
            assert arg.size == abs(int(size_text)) and arg.signed == size_text.startswith("-")
            assert not isinstance(arg.operand, Unknown), spec
    return binary


@pytest.mark.parametrize("path,package,count", [
    (LIBJVM, "openjdk-17-jre-headless", 531),
    (LIBSTDCXX, "libstdc++6", 3),
    (PYTHON311, "python3.11-minimal", 8),
])
def test_real_binaries_agree_with_readelf(path, package, count):
    require_file(path, package)
    binary = assert_agrees_with_readelf(path)
    assert sum(len(p.sites) for p in binary.probes) == count


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """tests/c/elf_args.c for three targets, plus x86_64 PIE, non-PIE,
    -O0 and a shared object."""
    out = tmp_path_factory.mktemp("elf_args")
    sdt = sdt_include_dir(out / "sdt")
    src = [C_DIR / "elf_args.c"]
    return {
        "x86_64": compile_for("x86_64", src, out / "x86_64", include_dirs=[sdt], extra=["-fPIE", "-pie"]),
        "x86_64-nopie": compile_for("x86_64", src, out / "nopie", include_dirs=[sdt], extra=["-fno-PIE", "-no-pie"]),
        "x86_64-O0": compile_for("x86_64", src, out / "O0", include_dirs=[sdt], extra=["-O0"]),
        "x86_64-so": compile_for("x86_64", src, out / "lib.so", include_dirs=[sdt], extra=["-fPIC", "-shared"]),
        "aarch64": compile_for("aarch64", src, out / "aarch64", include_dirs=[sdt]),
        "i686": compile_for("i686", src, out / "i686", include_dirs=[sdt]),
    }


@pytest.mark.parametrize("build", ["x86_64", "x86_64-nopie", "x86_64-O0", "x86_64-so", "aarch64", "i686"])
def test_built_binaries_agree_with_readelf(builds, build):
    assert_agrees_with_readelf(builds[build])


EXPECTED_TYPES = {
    # probe -> (size, signed) per argument, from the C types in elf_args.c;
    # long is 4 bytes on i686.
    "fields": [(4, True), ("long", True), (4, True), (2, False), (1, True), (8, False)],
    "constants": [(4, True), (4, True), (4, True)],
    "globals": [(8, True), (4, True)],
    "none": [],
    "dup": [(4, True)],
}


@pytest.mark.parametrize("build,machine,pointer", [
    ("x86_64", "EM_X86_64", 8), ("aarch64", "EM_AARCH64", 8), ("i686", "EM_386", 4),
])
def test_argument_sizes_signs_and_operands(builds, build, machine, pointer):
    binary = read_binary(builds[build])
    assert binary.machine == machine and binary.pointer_size == pointer
    probes = {p.name: p for p in binary.probes if p.provider == "elfargs"}
    assert set(probes) == set(EXPECTED_TYPES)
    for name, types in EXPECTED_TYPES.items():
        for site in probes[name].sites:
            got = [(a.size, a.signed) for a in site.args]
            want = [(pointer if size == "long" else size, signed) for size, signed in types]
            assert got == want, (name, site.args_text)
    # The literal constants are decoded as constants with their values.
    (constants,) = probes["constants"].sites
    assert [a.operand for a in constants.args] == [Constant(0), Constant(-5), Constant(7)]
    # r->a goes through memory at offset 0 of a register (x86_64, aarch64:
    # r is in the first argument register; i686 loads it from the stack).
    first = probes["fields"].sites[0].args[0].operand
    assert isinstance(first, Memory) and first.offset == 0 and first.base
    # Two sites of one probe stay one probe.
    assert len(probes["dup"].sites) == 2
    for p, site in flat_sites(binary):
        for arg in site.args:
            assert isinstance(arg.operand, (Register, Constant, Memory)), arg.spec


def test_aarch64_memory_forms(builds):
    binary = read_binary(builds["aarch64"])
    fields = next(p for p in binary.probes if p.name == "fields").sites[0]
    by_spec = {a.spec: a.operand for a in fields.args}
    assert by_spec["-4@[x0]"] == Memory("x0")
    assert by_spec["-8@[x0, 8]"] == Memory("x0", 8)
    assert fields.args[3].operand == Register("x2")


def test_x86_memory_with_index(builds):
    binary = read_binary(builds["x86_64"])
    fields = next(p for p in binary.probes if p.name == "fields").sites[0]
    arr = fields.args[2].operand  # r->arr[i]: base + index*4 + 16
    assert isinstance(arr, Memory) and arr.index and arr.scale == 4 and arr.offset == 16


def test_pie_and_non_pie_addresses(builds):
    pie, nopie = read_binary(builds["x86_64"]), read_binary(builds["x86_64-nopie"])
    assert pie.elf_type == "ET_DYN" and nopie.elf_type == "ET_EXEC"
    assert min(s.address for _, s in flat_sites(nopie)) >= 0x400000
    assert min(s.address for _, s in flat_sites(pie)) < 0x400000


def _section_header_offset(path, name):
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        for index, section in enumerate(elf.iter_sections()):
            if section.name == name:
                return elf.header["e_shoff"] + index * elf.header["e_shentsize"]
    raise AssertionError(name)


def test_prelinked_addresses_are_adjusted(builds, tmp_path):
    """Prelink moves .stapsdt.base but not the addresses inside notes:
    tracers shift each pc by the difference, and so does the reader."""
    moved = tmp_path / "prelinked"
    shutil.copy(builds["x86_64"], moved)
    offset = _section_header_offset(moved, ".stapsdt.base") + 16  # Elf64_Shdr.sh_addr
    data = bytearray(moved.read_bytes())
    (addr,) = struct.unpack_from("<Q", data, offset)
    struct.pack_into("<Q", data, offset, addr + 0x10000)
    moved.write_bytes(bytes(data))
    original = [s.address for _, s in flat_sites(read_binary(builds["x86_64"]))]
    shifted = read_binary(moved)
    assert shifted.stapsdt_base == addr + 0x10000
    for p, site in flat_sites(shifted):
        raw = [n for n in readelf_notes(moved) if n["name"] == p.name]
        assert site.address - 0x10000 in {n["address"] for n in raw}
    assert sorted(s.address for _, s in flat_sites(shifted)) == sorted(a + 0x10000 for a in original)


# --- `probegen list` ------------------------------------------------------------

def test_list_text(builds, capsys):
    code, out, err = run_cli(capsys, "list", builds["aarch64"])
    assert code == 0 and not err
    assert "elfargs:fields" in out and "aarch64" in out
    assert "[sp" in out or "[x0" in out


def test_list_reads_a_file_named_twice_once(builds, capsys):
    once = run_cli(capsys, "list", builds["aarch64"])
    assert run_cli(capsys, "list", builds["aarch64"], builds["aarch64"]) == once
    code, out, _ = run_cli(capsys, "list", "--format", "json", builds["i686"], builds["i686"])
    assert code == 0 and len(json.loads(out)["binaries"]) == 1


def test_list_text_escapes_a_control_character_in_the_path(builds, capsys, tmp_path):
    """The path is the user's, but a file name can drive the terminal: shown escaped, as in messages."""
    hostile = tmp_path / "bin\x1b[2Jary"
    shutil.copyfile(builds["x86_64"], hostile)
    code, out, _ = run_cli(capsys, "list", str(hostile))
    assert code == 0 and "\x1b" not in out and out.startswith(f"{tmp_path}/bin\\x1b[2Jary: ")


def test_list_one_provider(builds, capsys):
    code, out, err = run_cli(capsys, "list", "--provider", "nosuch", builds["x86_64"])
    assert code == 0 and not err and out.startswith(f"{builds['x86_64']}: 0 probe(s), 0 site(s) [x86_64")
    code, out, _ = run_cli(capsys, "list", "--format", "json", "--provider", "elfargs", builds["x86_64"])
    assert {p["provider"] for p in json.loads(out)["binaries"][0]["probes"]} == {"elfargs"}


def test_list_json_shape(builds, capsys):
    code, out, _ = run_cli(capsys, "list", "--format", "json", builds["i686"], builds["x86_64"])
    assert code == 0
    data = json.loads(out)
    assert data["version"] == 1 and data["errors"] == []
    i686, x64 = data["binaries"]
    assert (i686["class"], i686["machine"], x64["machine"]) == (32, "i386", "x86_64")
    constants = next(p for p in i686["probes"] if p["name"] == "constants")
    args = constants["sites"][0]["args"]
    assert [a["value"] for a in args] == [0, -5, 7]
    assert args[0] == {"spec": "-4@$0", "size": 4, "signed": True, "float": False, "type": "s32",
                       "location": "constant", "value": 0}
    fields = next(p for p in x64["probes"] if p["name"] == "fields")
    kinds = {a["location"] for a in fields["sites"][0]["args"]}
    assert {"memory", "register"} <= kinds
    readelf = {(n["name"], n["address"]) for n in readelf_notes(builds["x86_64"])}
    assert {(p["name"], s["address"]) for p in x64["probes"] for s in p["sites"]} == readelf


def _with_header(source, directory, machine=None, elf_type=None):
    """A copy of an ELF file with another e_machine and/or e_type."""
    data = bytearray(source.read_bytes())
    if machine is not None:
        struct.pack_into("<H", data, 18, machine)  # Elf64_Ehdr.e_machine
    if elf_type is not None:
        struct.pack_into("<H", data, 16, elf_type)
    path = directory / f"machine-{machine}-type-{elf_type}"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("machine,text,json_name", [
    (12345, "unknown machine 12345", "EM_12345"),  # a number no one has assigned
    (43, "EM_SPARCV9", "EM_SPARCV9"),  # a machine with a name but no decoder
    (0, "EM_NONE", "EM_NONE"),
])
def test_every_machine_is_named_by_a_string(builds, tmp_path, capsys, machine, text, json_name):
    """pyelftools gives the bare number of a machine it has no name for:
    the text says so, the JSON has a string, and the operands are shown
    raw (a machine probegen cannot decode is not an error)."""
    path = _with_header(builds["x86_64"], tmp_path, machine=machine)
    code, out, err = run_cli(capsys, "list", path)
    assert code == 0 and not err
    assert f"[{text}, ELF64 ET_DYN]" in out.splitlines()[0]
    assert "unknown" in out and "$0" in out  # '-4@$0' shown as written
    code, out, _ = run_cli(capsys, "list", "--format", "json", path)
    (binary,) = json.loads(out)["binaries"]
    assert binary["machine"] == json_name
    args = [a for p in binary["probes"] for s in p["sites"] for a in s["args"]]
    assert args and {a["location"] for a in args} == {"unknown"}
    assert all(a["text"] == a["spec"].split("@", 1)[1] for a in args)


def test_unknown_elf_type_is_a_string(builds, tmp_path, capsys):
    path = _with_header(builds["x86_64"], tmp_path, elf_type=0x1234)
    code, out, _ = run_cli(capsys, "list", "--format", "json", path)
    assert code == 0
    (binary,) = json.loads(out)["binaries"]
    assert binary["type"] == "ET_4660" and binary["machine"] == "x86_64"


# --- bad input ---------------------------------------------------------------------

def _first_note_offset(path):
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        return ELFFile(f).get_section_by_name(".note.stapsdt")["sh_offset"]


def bad_files(builds, directory):
    good = builds["x86_64"].read_bytes()
    notes = _first_note_offset(builds["x86_64"])
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    files["missing"] = directory / "missing"
    files["directory"] = directory
    (directory / "empty").write_bytes(b"")
    files["empty"] = directory / "empty"
    (directory / "text").write_text("#!/bin/sh\necho not an ELF\n")
    files["text"] = directory / "text"
    (directory / "truncated").write_bytes(good[:40])
    files["truncated"] = directory / "truncated"
    past = bytearray(good)
    struct.pack_into("<I", past, notes + 4, 0x7FFFFFF0)  # n_descsz of the first note
    (directory / "past").write_bytes(bytes(past))
    files["past"] = directory / "past"
    garbage = bytearray(good)
    at = good.index(b"-4@$0", notes)
    garbage[at:at + 5] = b"\x01\x02\xff\x03\x04"
    (directory / "garbage").write_bytes(bytes(garbage))
    files["garbage"] = directory / "garbage"
    nosize = bytearray(good)
    nosize[at:at + 5] = b"hello"
    (directory / "nosize").write_bytes(bytes(nosize))
    files["nosize"] = directory / "nosize"
    return files


PROBLEMS = {
    "missing": "no such file",
    "directory": "is a directory",
    "empty": "empty file",
    "text": "not an ELF file",
    "truncated": "truncated or malformed ELF",
    "past": "point past the section",
    "garbage": "not ASCII",
    "nosize": "not of the form SIZE@OPERAND",
}


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_bad_file_one_line_error_and_others_still_listed(builds, tmp_path, capsys, kind):
    bad = bad_files(builds, tmp_path / "bad")[kind]
    with pytest.raises(ElfError) as info:
        read_binary(bad)
    assert PROBLEMS[kind] in str(info.value) and str(bad) in str(info.value)
    code, out, err = run_cli(capsys, "list", bad, builds["i686"])
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"{bad}: error: ") and PROBLEMS[kind] in err
    assert "Traceback" not in err
    assert "elfargs:constants" in out  # the good file is still listed


@pytest.fixture(scope="module")
def small_elf(builds):
    return builds["x86_64-O0"].read_bytes()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_elf_never_escapes_a_traceback(small_elf, tmp_path_factory, data):
    """Random byte changes anywhere in a real ELF, and more often in its
    headers and note section: reading gives probes or an ElfError, nothing
    else."""
    notes = small_elf.find(b"stapsdt")
    regions = st.one_of(
        st.integers(0, len(small_elf) - 1),
        st.integers(0, 64),
        st.integers(max(notes - 64, 0), min(notes + 512, len(small_elf) - 1)),
        st.integers(max(len(small_elf) - 2048, 0), len(small_elf) - 1),  # section headers
    )
    edits = data.draw(st.lists(st.tuples(regions, st.integers(0, 255)), min_size=1, max_size=8))
    mutated = bytearray(small_elf)
    for offset, value in edits:
        mutated[offset] = value
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(small_elf))))
    if cut is not None:
        mutated = mutated[:cut]
    path = tmp_path_factory.mktemp("fuzz", numbered=True) / "elf"
    path.write_bytes(bytes(mutated))
    try:
        binary = read_binary(path)
    except ElfError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
    else:
        for probe in binary.probes:
            for site in probe.sites:
                for arg in site.args:
                    assert arg.size in (1, 2, 4, 8)
