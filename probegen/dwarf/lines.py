"""A guard for DWARF 5 line table headers before pyelftools reads them.

A DWARF 5 header gives a count of directories and of file names, each
laid out by a list of (content, form) pairs. With an empty list, or one
of forms that take no bytes, each entry is zero bytes long, and a count
of 2^63 makes pyelftools build entries without end: a hang on ten bytes.
``check_line_header`` refuses such a header, reading it with pyelftools'
own structures up to each count.
"""

from __future__ import annotations

from elftools.construct import Struct

from probegen.dwarf.damage import Damaged

_NO_BYTES = frozenset(("DW_FORM_flag_present", "DW_FORM_implicit_const"))


def check_line_header(dwarfinfo, cu, stmt_list=None) -> None:
    """Damaged if the unit's DWARF 5 line table header has a directory or
    file name list that could not be as long as it says. ``stmt_list``:
    the unit's DW_AT_stmt_list where the caller has it (read from its top
    DIE otherwise)."""
    if stmt_list is None:
        attr = cu.get_top_DIE().attributes.get("DW_AT_stmt_list")
        stmt_list = attr.value if attr is not None else None
    section = dwarfinfo.debug_line_sec
    if section is None or type(stmt_list) is not int:
        return
    header = cu.structs.Dwarf_lineprog_header
    names = [sub.name for sub in header.subcons]
    if "directories" not in names or "file_names" not in names:
        return  # another pyelftools layout: nothing to check against
    stream = section.stream
    for formats, entries in (("directory_entry_format", "directories"),
                             ("file_name_entry_format", "file_names")):
        # Everything before the count, parsed as pyelftools parses it:
        # what precedes has been checked already.
        prefix = Struct("prefix", *header.subcons[:names.index(formats) + 1])
        stream.seek(stmt_list)
        fields = prefix.parse_stream(stream)
        if fields.version < 5:
            return
        count = cu.structs.Dwarf_uleb128("count").parse_stream(stream)
        if not count:
            continue
        if all(f.form in _NO_BYTES for f in fields[formats]):
            raise Damaged(f"line table at {stmt_list:#x}: {count} {entries} of no bytes each")
        if count > min(fields.header_length, section.size):
            raise Damaged(f"line table at {stmt_list:#x}: {count} {entries} in a header of "
                          f"{fields.header_length} bytes")
