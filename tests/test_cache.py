"""probegen's cache (the DWARF type index, as JSON): attacks through a
cache directory someone else controls, run against the real CLI on a real
gcc -g binary, and a cache of one's own that is reused, and whose damaged
entries are misses, never errors."""

from __future__ import annotations

import json
import os
import pickle
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import C_DIR
from helpers.dwarf import gcc
from probegen.files import cache
from probegen.dwarf import DwarfTypes
from probegen.generators.structs import render_definitions

REPO = Path(__file__).resolve().parent.parent
TYPES = ["cacheline", "zero_len"]
WARNING = re.compile(r"probegen: warning: running without the cache \(slower\): .+; "
                     r"PROBEGEN_NO_CACHE=1 turns it off\n")


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    path = tmp_path_factory.mktemp("bin") / "types"
    gcc(C_DIR / "dwarf_types.c", path, "-g", "-O0")
    return path


def probegen(*argv, xdg: Path | None = None, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "PROBEGEN_NO_CACHE")}
    if xdg is not None:
        environ["XDG_CACHE_HOME"] = str(xdg)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "probegen", *argv], env=environ, capture_output=True,
                          text=True, timeout=120)


def structs(binary: Path, **kw) -> subprocess.CompletedProcess:
    return probegen("structs", str(binary), *(a for t in TYPES for a in ("-t", t)), **kw)


@pytest.fixture(scope="module")
def expected(binary, tmp_path_factory):
    """Outputs of runs with no cache at all, and a valid index entry."""
    out = tmp_path_factory.mktemp("expected")
    shutil.copy(REPO / "probes.yaml", out / "probes.yaml")
    header = probegen("header", "-c", str(out / "probes.yaml"), "-o", "-", PROBEGEN_NO_CACHE="1")
    uncached = structs(binary, PROBEGEN_NO_CACHE="1")
    assert header.returncode == 0 and uncached.returncode == 0, header.stderr + uncached.stderr
    xdg = out / "xdg"
    assert structs(binary, xdg=xdg).stdout == uncached.stdout
    [entry] = (xdg / "probegen" / "types").iterdir()
    return {"catalog": out / "probes.yaml", "header": header.stdout, "structs": uncached.stdout,
            "entry_name": entry.name, "entry": json.loads(entry.read_bytes())}


class Payload:
    """Unpickling this runs `touch MARKER`."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def lying_entry(expected) -> bytes:
    """A well-formed index entry that maps each type name to the other's
    definition: used, it would make `structs` print the wrong types."""
    entry = json.loads(json.dumps(expected["entry"]))
    names = entry["names"]
    names[TYPES[0]], names[TYPES[1]] = names[TYPES[1]], names[TYPES[0]]
    return json.dumps(entry).encode()


def plant(where: Path, expected, marker: Path) -> None:
    """Entries an attacker would leave: a lying index under the name
    probegen reads, pickles under every earlier cache's kind and name."""
    payload = pickle.dumps(Payload(marker))
    (where / "types").mkdir(parents=True, exist_ok=True)
    (where / "types" / expected["entry_name"]).write_bytes(lying_entry(expected))
    (where / "types" / expected["entry_name"].replace(".json", ".idx")).write_bytes(payload)
    for kind in ("catalogs", "templates", "stamps"):
        (where / kind).mkdir(exist_ok=True)
        for name in ("entry", "__jinja2_header.h.j2.cache", "0" * 64):
            (where / kind / name).write_bytes(payload)


def chown_tree(top: Path, uid: int) -> None:
    for path in [top, *top.rglob("*")]:
        os.lchown(path, uid, uid)


def snapshot(top: Path) -> dict:
    return {str(p): (p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_mtime_ns,
                     p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(top.rglob("*"))}


def nobody() -> int:
    if os.geteuid() != 0:
        pytest.skip("needs root: the attack gives the cache directory to another user (chown)")
    return pwd.getpwnam("nobody").pw_uid


# Each builds a cache probegen must refuse and returns (env, reason shown).
def owned_by_nobody(tmp: Path, expected, marker):
    uid = nobody()
    top = tmp / "xdg" / "probegen"
    plant(top, expected, marker)
    chown_tree(top, uid)
    return {"xdg": tmp / "xdg"}, f"{top} belongs to uid {uid}, not to you (uid 0)"


def world_writable(tmp: Path, expected, marker):
    top = tmp / "xdg" / "probegen"
    plant(top, expected, marker)
    top.chmod(0o777)
    return {"xdg": tmp / "xdg"}, f"{top} is writable by group or others (mode 777"


def group_writable_kind(tmp: Path, expected, marker):
    top = tmp / "xdg" / "probegen"
    plant(top, expected, marker)
    top.chmod(0o700)
    (top / "types").chmod(0o770)
    return {"xdg": tmp / "xdg"}, f"{top / 'types'} is writable by group or others (mode 770"


def symlinked(tmp: Path, expected, marker):
    elsewhere = tmp / "elsewhere"  # ours and private: the link alone is refused
    plant(elsewhere, expected, marker)
    elsewhere.chmod(0o700)
    (tmp / "xdg").mkdir()
    (tmp / "xdg" / "probegen").symlink_to(elsewhere)
    return {"xdg": tmp / "xdg"}, f"{tmp / 'xdg' / 'probegen'} is a symbolic link"


def sudo_e_user_cache(tmp: Path, expected, marker):
    """`sudo -E`: root with a user's HOME and no XDG_CACHE_HOME."""
    uid = nobody()
    home = tmp / "home"
    plant(home / ".cache" / "probegen", expected, marker)
    chown_tree(home, uid)
    return {"HOME": str(home)}, f"{home / '.cache' / 'probegen'} belongs to uid {uid}"


def sudo_e_fresh_user_home(tmp: Path, expected, marker):
    """`sudo -E` for a user with no cache yet: root must not create one in
    the user's home (it would be in the user's way, owned by root)."""
    uid = nobody()
    home = tmp / "home"
    home.mkdir()
    os.chown(home, uid, uid)
    return {"HOME": str(home)}, f"{home}/.cache/probegen would be created in {home}, which belongs to uid {uid}"


HOSTILE = [owned_by_nobody, world_writable, group_writable_kind, symlinked, sudo_e_user_cache,
           sudo_e_fresh_user_home]


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.__name__ for h in HOSTILE])
def test_cache_someone_else_controls_is_refused(hostile, binary, expected, tmp_path):
    marker = tmp_path / "MARKER"
    env, reason = hostile(tmp_path, expected, marker)
    xdg = env.pop("xdg", None)
    before = snapshot(tmp_path)
    for _ in range(2):
        header = probegen("header", "-c", str(expected["catalog"]), "-o", "-", xdg=xdg, **env)
        assert (header.returncode, header.stderr) == (0, "")  # header uses no cache at all
        assert header.stdout == expected["header"]
        result = structs(binary, xdg=xdg, **env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected["structs"]
        assert WARNING.fullmatch(result.stderr), result.stderr  # one line, once
        assert reason in result.stderr
    assert not marker.exists()
    assert snapshot(tmp_path) == before  # nothing read as code, nothing written there


def test_planted_entries_are_potent(binary, expected, tmp_path):
    """The attacks above are real: the pickle runs its command when
    unpickled, and the lying entry, in a cache of one's own, changes what
    structs prints."""
    marker = tmp_path / "MARKER"
    pickle.loads(pickle.dumps(Payload(marker)))
    assert marker.exists()
    top = tmp_path / "xdg" / "probegen"
    plant(top, expected, tmp_path / "unused")
    result = structs(binary, xdg=tmp_path / "xdg")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout != expected["structs"]


def test_index_is_private_json_reused_on_the_next_run(binary, expected, tmp_path):
    xdg = tmp_path / "xdg"
    first = structs(binary, xdg=xdg)
    assert (first.returncode, first.stderr, first.stdout) == (0, "", expected["structs"])
    types_dir = xdg / "probegen" / "types"
    [entry] = types_dir.iterdir()
    assert entry.name == expected["entry_name"]
    assert [p.stat().st_mode & 0o777 for p in (xdg / "probegen", types_dir, entry)] == [0o700, 0o700, 0o600]
    stored = json.loads(entry.read_bytes())
    assert stored["format"] == 3 and TYPES[0] in stored["names"]
    written = entry.stat().st_mtime_ns
    second = structs(binary, xdg=xdg)
    assert (second.returncode, second.stderr, second.stdout) == (0, "", expected["structs"])
    assert entry.stat().st_mtime_ns == written  # a hit: nothing stored again


def own_entry(tmp_path, monkeypatch, expected) -> Path:
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.delenv("PROBEGEN_NO_CACHE", raising=False)
    (xdg / "probegen" / "types").mkdir(parents=True)
    (xdg / "probegen").chmod(0o700)
    (xdg / "probegen" / "types").chmod(0o700)
    return xdg / "probegen" / "types" / expected["entry_name"]


def render(binary) -> tuple[str, bool]:
    """What structs would print, and whether the index came from the cache."""
    with DwarfTypes.open(binary) as types:
        hit = types._dwarf is None  # the index scan reads the DWARF
        return render_definitions(types, TYPES), hit


def reshaped(valid: dict, change) -> bytes:
    entry = json.loads(json.dumps(valid))
    change(entry)
    return json.dumps(entry).encode()


def _set(path, value):
    def change(entry):
        *outer, last = path
        target = entry
        for key in outer:
            target = target[key]
        target[last] = value
    return change


BAD_ENTRIES = {
    "empty": lambda e: b"",
    "not JSON": lambda e: b"{\"format\": 3, ",
    "not UTF-8": lambda e: b"\xff\xfe\x00",
    "nested too deep": lambda e: b"[" * 200_000,
    "a pickle": lambda e: pickle.dumps({"format": 3}),
    "a list": lambda e: b"[3, [], {}]",
    "extra key": lambda e: reshaped(e, _set(["extra"], 1)),
    "old format": lambda e: reshaped(e, _set(["format"], 2)),
    "format as list": lambda e: reshaped(e, _set(["format"], [3])),
    "another file's stamp": lambda e: reshaped(e, _set(["stamp", 1], e["stamp"][1] + 1)),
    "names a list": lambda e: reshaped(e, _set(["names"], [])),
    "rows a dict": lambda e: reshaped(e, _set(["names", TYPES[0]], {})),
    "no rows": lambda e: reshaped(e, _set(["names", TYPES[0]], [])),
    "row too short": lambda e: reshaped(e, _set(["names", TYPES[0], 0], ["struct", 0, 1])),
    "kind unhashable": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 0], ["struct"])),
    "unknown kind": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 0], "class")),
    "offset a string": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 2], "12")),
    "offset a float": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 2], 12.0)),
    "offset a bool": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 1], True)),
    "offset negative": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 2], -5)),
    "size null": lambda e: reshaped(e, _set(["names", TYPES[0], 0, 3], None)),
}


@pytest.mark.parametrize("bad", list(BAD_ENTRIES))
def test_damaged_entry_is_a_miss_and_is_replaced(bad, binary, expected, tmp_path, monkeypatch):
    entry = own_entry(tmp_path, monkeypatch, expected)
    entry.write_bytes(BAD_ENTRIES[bad](expected["entry"]))
    assert render(binary) == (expected["structs"], False)
    assert json.loads(entry.read_bytes()) == expected["entry"]  # stored afresh
    assert render(binary) == (expected["structs"], True)


def test_damaged_entry_through_the_cli(binary, expected, tmp_path):
    marker = tmp_path / "MARKER"
    top = tmp_path / "xdg" / "probegen"
    (top / "types").mkdir(parents=True)
    (top / "types" / expected["entry_name"]).write_bytes(pickle.dumps(Payload(marker)))
    result = structs(binary, xdg=tmp_path / "xdg")
    assert (result.returncode, result.stderr, result.stdout) == (0, "", expected["structs"])
    assert not marker.exists()


def test_entry_that_is_not_a_private_file_of_ours_is_a_miss(binary, expected, tmp_path, monkeypatch):
    entry = own_entry(tmp_path, monkeypatch, expected)
    lie = lying_entry(expected)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(lie)
    entry.symlink_to(elsewhere)
    assert render(binary) == (expected["structs"], False)  # the link is replaced by a real entry
    assert not entry.is_symlink() and json.loads(entry.read_bytes()) == expected["entry"]

    entry.write_bytes(lie)
    entry.chmod(0o664)
    assert render(binary) == (expected["structs"], False)

    entry.unlink()
    os.mkfifo(entry)  # a FIFO is neither read (no hang) nor trusted
    start = time.monotonic()
    assert render(binary) == (expected["structs"], False)
    assert time.monotonic() - start < 30
    assert entry.is_file() and json.loads(entry.read_bytes()) == expected["entry"]


def test_entry_of_another_user_is_a_miss(binary, expected, tmp_path, monkeypatch):
    uid = nobody()
    entry = own_entry(tmp_path, monkeypatch, expected)
    entry.write_bytes(lying_entry(expected))
    entry.chmod(0o600)
    os.chown(entry, uid, uid)
    assert render(binary) == (expected["structs"], False)


def test_no_cache_variable_uses_and_creates_nothing(binary, expected, tmp_path):
    result = structs(binary, xdg=tmp_path / "xdg", PROBEGEN_NO_CACHE="1")
    assert (result.returncode, result.stderr, result.stdout) == (0, "", expected["structs"])
    assert not (tmp_path / "xdg").exists()


def test_unusable_cache_says_why_once(binary, expected, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = structs(binary, xdg=blocker)
    assert (result.returncode, result.stdout) == (0, expected["structs"])
    assert WARNING.fullmatch(result.stderr) and "Not a directory" in result.stderr


def test_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.location() == str(tmp_path / ".cache" / "probegen")


def test_old_entries_and_stale_temporaries_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    where = tmp_path / "probegen" / "test"
    for i in range(cache.KEEP + 5):
        cache.write("test", f"entry{i:03}", b"x")
        os.utime(where / f"entry{i:03}", ns=(i, i))
    stale, fresh = where / ".entry.1.tmp", where / ".entry.2.tmp"
    stale.write_bytes(b"left by a killed writer")
    fresh.write_bytes(b"being written")
    os.utime(stale, (time.time() - 2 * cache.STALE_TMP_SECONDS,) * 2)
    cache.write("test", "last", b"y")
    names = sorted(p.name for p in where.iterdir())
    assert len([n for n in names if not n.startswith(".")]) == cache.KEEP
    assert "entry000" not in names and "last" in names and fresh.name in names and stale.name not in names
    assert cache.read("test", "last") == b"y"


def test_no_cache_entry_can_be_code():
    """No module of probegen loads pickles, marshal data or compiled templates."""
    code = re.compile(r"\b(import (pickle|marshal|shelve|dill)|from (pickle|marshal|shelve) import|"
                      r"bytecode_cache|BytecodeCache)\b")
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in (REPO / "probegen").rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1) if code.search(line)]
    assert offenders == []
