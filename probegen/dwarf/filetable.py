"""The file names of a unit's line table header, read from the bytes.

The type index tells types apart by the file that declares them, so it
needs every unit's file table; pyelftools parses each whole header with
construct (and ``probegen.dwarf.lines`` parses its start once more first,
to refuse headers that would make it loop): 0.4 ms a unit, a third of the
index on SPDK's 300 units. Here only the directory and file lists are
read, in the forms compilers write them (DWARF 2-4 strings; DWARF 5
DW_LNCT_path as a string, strp or line_strp, directory indexes as data1,
data2 or udata). Anything else returns None, and the caller asks
pyelftools: the result is always what pyelftools would have given.
"""

from __future__ import annotations

from elftools.dwarf.enums import ENUM_DW_FORM

from probegen.dwarf.scan import uleb

_DW_LNCT_PATH, _DW_LNCT_DIRECTORY_INDEX = 1, 2
_F = ENUM_DW_FORM
_SIZES = {_F["DW_FORM_data1"]: 1, _F["DW_FORM_data2"]: 2, _F["DW_FORM_data4"]: 4, _F["DW_FORM_data8"]: 8,
          _F["DW_FORM_data16"]: 16}
_STRING, _STRP, _LINE_STRP, _UDATA = (_F[n] for n in ("DW_FORM_string", "DW_FORM_strp", "DW_FORM_line_strp",
                                                      "DW_FORM_udata"))


class _Unsupported(Exception):
    """A form or layout left to pyelftools (and, if damaged, to its guard
    in probegen.dwarf.lines)."""


class _Reader:
    def __init__(self, data: bytes, pos: int, end: int, order: str, strings: dict[str, bytes]):
        self.data, self.pos, self.end, self.order, self.strings = data, pos, end, order, strings

    def fixed(self, size: int) -> int:
        if self.pos + size > self.end:
            raise _Unsupported
        value = int.from_bytes(self.data[self.pos:self.pos + size], self.order)
        self.pos += size
        return value

    def uleb(self) -> int:
        if self.pos >= self.end:
            raise _Unsupported
        value, self.pos = uleb(self.data, self.pos)
        if self.pos > self.end:
            raise _Unsupported
        return value

    def cstring(self) -> bytes:
        stop = self.data.find(b"\0", self.pos, self.end)
        if stop < 0:
            raise _Unsupported
        text = self.data[self.pos:stop]
        self.pos = stop + 1
        return text

    def form(self, form: int, offset_size: int):
        """The value of one attribute in ``form``: bytes for a string, int
        for a number."""
        if form == _STRING:
            return self.cstring()
        if form in (_STRP, _LINE_STRP):
            section = self.strings.get(".debug_str" if form == _STRP else ".debug_line_str")
            where = self.fixed(offset_size)
            if section is None or where >= len(section):
                raise _Unsupported
            stop = section.find(b"\0", where)
            if stop < 0:
                raise _Unsupported
            return section[where:stop]
        if form == _UDATA:
            return self.uleb()
        size = _SIZES.get(form)
        if size is None:
            raise _Unsupported
        return self.fixed(size)


def file_names(data: bytes, offset: int, little_endian: bool, strings: dict[str, bytes]) -> dict[int, str] | None:
    """DW_AT_decl_file index -> path for the line table at ``offset`` of
    .debug_line's bytes, or None if pyelftools must read it."""
    order = "little" if little_endian else "big"
    reader = _Reader(data, offset, len(data), order, strings)
    try:
        length = reader.fixed(4)
        offset_size = 4
        if length == 0xFFFFFFFF:
            length, offset_size = reader.fixed(8), 8
        reader.end = min(len(data), reader.pos + length)
        version = reader.fixed(2)
        if not 2 <= version <= 5:
            return None
        if version >= 5:
            reader.fixed(2)  # address and segment selector sizes
        header_length = reader.fixed(offset_size)
        reader.end = min(reader.end, reader.pos + header_length)
        reader.fixed(4 if version >= 4 else 3)  # minimum_instruction_length .. line_base
        reader.fixed(1)  # line_range
        opcode_base = reader.fixed(1)
        reader.pos += max(opcode_base - 1, 0)
        if version < 5:
            dirs, files = _lists_v4(reader)
        else:
            dirs = [entry.get(_DW_LNCT_PATH) for entry in _entries_v5(reader, offset_size)]
            files = [(entry.get(_DW_LNCT_PATH), entry.get(_DW_LNCT_DIRECTORY_INDEX))
                     for entry in _entries_v5(reader, offset_size)]
            if not dirs or not files or any(type(d) is not bytes for d in dirs):
                return None  # pyelftools' header then lacks a list: its own error
    except _Unsupported:
        return None
    return paths(version, [d.decode("utf-8", "replace") for d in dirs], files)


def paths(version: int, dirs: list[str], files: list[tuple[object, object]]) -> dict[int, str]:
    """DW_AT_decl_file index -> path, from a header's directory names and
    (file name, directory index) pairs as pyelftools gives them."""
    names = {}
    base = 0 if version >= 5 else 1  # DWARF 5 counts files from 0
    for i, (name, d) in enumerate(files):
        name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        d = d if type(d) is int else 0
        if version < 5:
            d -= 1  # DWARF 4: directory 0 is the unit's own, not in the list
        if 0 <= d < len(dirs) and not name.startswith("/"):
            name = f"{dirs[d]}/{name}"
        names[i + base] = name
    return names


def _lists_v4(reader: _Reader) -> tuple[list[bytes], list[tuple[bytes, int]]]:
    dirs = []
    while True:
        name = reader.cstring()
        if not name:
            break
        dirs.append(name)
    files = []
    while True:
        name = reader.cstring()
        if not name:
            break
        directory = reader.uleb()
        reader.uleb()  # modification time
        reader.uleb()  # length
        files.append((name, directory))
    return dirs, files


def _entries_v5(reader: _Reader, offset_size: int) -> list[dict[int, object]]:
    """One DWARF 5 entry list: its format, then its entries."""
    formats = [(reader.uleb(), reader.uleb()) for _ in range(reader.fixed(1))]
    count = reader.uleb()
    if count and not formats:
        raise _Unsupported  # entries of no bytes: lines.py refuses them (pyelftools would loop)
    if count > reader.end - reader.pos:
        raise _Unsupported  # more entries than bytes: lines.py refuses it
    entries = []
    for _ in range(count):
        start = reader.pos
        entries.append({content: reader.form(form, offset_size) for content, form in formats})
        if reader.pos == start:
            raise _Unsupported  # entries of no bytes, as above
    return entries
