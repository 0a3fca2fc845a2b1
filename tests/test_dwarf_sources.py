"""Where probegen structs takes DWARF from, and what it refuses there: real
gcc binaries of every architecture with a cross compiler here, DWARF 4 and
5, compressed (-gz); zip bombs built for real (a section inflating far
beyond the size it claims); separate debug files found by build id or by a
debug link, and debug links that name other files (issue 23: root read
any file a traced binary pointed to).
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from helpers import C_DIR, COMPILERS, compile_for, require, run_cli
from helpers.dwarf import gcc, zip_bomb

SOURCE = C_DIR / "dwarf_types.c"
TYPES = ("-t", "spdk_nvmf_qpair", "-t", "packed_bits", "--annotate")


def one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    return err


@pytest.mark.parametrize("arch", sorted(COMPILERS))
@pytest.mark.parametrize("flags", [["-gdwarf-4"], ["-gdwarf-5", "-gz"]], ids=["dwarf4", "dwarf5-gz"])
def test_every_architecture_and_dwarf_version(arch, flags, tmp_path, capsys):
    binary = compile_for(arch, [SOURCE], tmp_path / "types", extra=[*flags, "-O0", "-Wno-error"])
    pointer = 8 if "64" in arch or arch == "s390x" else 4
    code, out, err = run_cli(capsys, "structs", binary, *TYPES)
    assert (code, err) == (0, "")
    assert f"struct spdk_nvmf_tgt *tgt;\t/*     0    {pointer} */" in out
    assert "unsigned char d;\t/*     5    1 */\n\t/* size: 6, members: 4 */" in out  # packed bitfields


# ---- zip bombs ----------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_binaries(tmp_path_factory):
    require("objcopy", "binutils")
    require("g++", "g++")
    out = tmp_path_factory.mktemp("bombs")
    gcc(SOURCE, out / "c", "-g", "-O0")
    subprocess.run(["g++", "-g", "-O0", "-o", str(out / "cxx"), str(C_DIR / "cxx_types.cpp")], check=True)
    return out


@pytest.mark.parametrize("legacy", [True, False], ids=["zdebug", "shf-compressed"])
@pytest.mark.parametrize("language, name, section", [("c", "holder", "info"), ("cxx", "Holder", "info"),
                                                     ("cxx", "Holder", "aranges")])
def test_zip_bomb_lying_about_its_size_is_refused(plain_binaries, tmp_path, capsys, legacy, language, name, section):
    """256 MiB of zeros claiming 1 MiB: elfutils (under drgn) inflates no
    more than the claim; pyelftools (C++ types) inflates every debug
    section whole, .debug_aranges too, which drgn does not read: probegen
    inflates each first, within its claim, and refuses it."""
    bomb = zip_bomb(plain_binaries / language, tmp_path / "bomb", legacy, section=section)
    err = one_error(*run_cli(capsys, "structs", bomb, "-t", name))
    assert err.startswith(f"{bomb}: error: damaged or truncated ELF/DWARF")
    if section == "aranges":
        assert "inflates to more than the 1048576 bytes it claims" in err


def test_zip_bomb_claiming_too_much_is_refused(plain_binaries, tmp_path, capsys):
    bomb = zip_bomb(plain_binaries / "c", tmp_path / "bomb", legacy=True, mib=1, claim=1 << 40)
    err = one_error(*run_cli(capsys, "structs", bomb, "-t", "holder"))
    assert "claims 1099511627776 bytes uncompressed" in err


# ---- separate debug files -------------------------------------------------------


def _split(tmp_path: Path, *link_flags: str) -> tuple[Path, Path]:
    """(stripped binary with a debug link, its debug file) in tmp_path/bin."""
    require("objcopy", "binutils")
    where = tmp_path / "bin"
    where.mkdir()
    full = where / "full"
    gcc(SOURCE, full, "-g", "-O0", *link_flags)
    debug = where / "types.debug"
    subprocess.run(["objcopy", "--only-keep-debug", full, debug], check=True)
    binary = where / "types"
    subprocess.run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", full, binary], check=True, cwd=where)
    full.unlink()
    return binary, debug


def _relink(binary: Path, name: bytes, crc: int) -> None:
    """Give ``binary`` a .gnu_debuglink naming ``name`` with ``crc``."""
    body = name + b"\0" * (4 - len(name) % 4) + struct.pack("<I", crc)
    link = binary.with_suffix(".link")
    link.write_bytes(body)
    subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", f"--add-section=.gnu_debuglink={link}",
                    binary], check=True)


@pytest.mark.parametrize("build_id", [True, False], ids=["build-id", "crc"])
def test_debug_link_in_the_binarys_directory(tmp_path, capsys, build_id):
    binary, _ = _split(tmp_path, *([] if build_id else ["-Wl,--build-id=none"]))
    code, out, err = run_cli(capsys, "structs", binary, "-t", "holder")
    assert (code, err) == (0, "") and "struct holder {" in out


def test_debug_link_with_a_path_is_not_followed(tmp_path, capsys):
    """A traced binary's debug link naming another file (absolute, or
    with ..): root must not print that file's types."""
    binary, debug = _split(tmp_path, "-Wl,--build-id=none")
    crc = zlib.crc32(debug.read_bytes())
    elsewhere = tmp_path / "secret.debug"
    debug.rename(elsewhere)
    for name in (str(elsewhere).encode(), b"../secret.debug"):
        _relink(binary, name, crc)
        err = one_error(*run_cli(capsys, "structs", binary, "-t", "holder"))
        assert "has no DWARF debug info" in err


def test_debug_link_to_another_file_is_refused(tmp_path, capsys):
    """A file of the linked name is used only if it is this binary's:
    same build id, or where there is none the CRC the link gives."""
    binary, debug = _split(tmp_path, "-Wl,--build-id=none")
    other = tmp_path / "other"
    gcc(C_DIR / "dwarf_dup_a.c", other, "-g", "-c")  # any DWARF, another file
    debug.write_bytes(other.read_bytes())
    err = one_error(*run_cli(capsys, "structs", binary, "-t", "holder"))
    assert "has no DWARF debug info" in err


def test_debug_link_too_long_for_a_file_name_is_no_file(tmp_path, capsys):
    """A name longer than the file system allows (ENAMETOOLONG, not ENOENT) is a place with no debug file."""
    binary, _ = _split(tmp_path, "-Wl,--build-id=none")
    _relink(binary, b"a" * 300, 0)
    err = one_error(*run_cli(capsys, "structs", binary, "-t", "holder"))
    assert "has no DWARF debug info" in err


def test_debug_file_given_is_checked_by_the_links_crc(tmp_path, capsys):
    """Without build ids, a --debug-file given is used only if its CRC-32 is the one the binary's link gives."""
    binary, debug = _split(tmp_path, "-Wl,--build-id=none")
    code, out, err = run_cli(capsys, "structs", binary, "--debug-file", debug, "-t", "holder")
    assert (code, err) == (0, "") and "struct holder {" in out
    other = tmp_path / "other.debug"
    gcc(C_DIR / "dwarf_dup_a.c", other, "-g", "-c")  # DWARF of another build
    crc, actual = zlib.crc32(debug.read_bytes()), zlib.crc32(other.read_bytes())
    err = one_error(*run_cli(capsys, "structs", binary, "--debug-file", other, "-t", "holder"))
    assert err == f"{other} is not the debug file of {binary}: CRC-32 {actual:08x} is not the debug link's {crc:08x}\n"


def test_type_name_drgn_cannot_parse_is_no_such_type(tmp_path, capsys):
    """Not "damaged or truncated ELF/DWARF": the name is wrong, not the binary."""
    binary = tmp_path / "types"
    gcc(SOURCE, binary, "-g", "-c")
    for name in ("int*", "unsigned int", "struct"):
        err = one_error(*run_cli(capsys, "structs", binary, "-t", name))
        assert err == f"{binary}: no struct, union, enum or typedef named '{name}' in the debug info\n"
