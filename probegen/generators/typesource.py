"""What script generators may learn from a built binary's debug info.

The DWARF reader (``probegen.dwarf``) provides an object of this shape;
the bpftrace and BCC generators take one optionally, so enum names and
struct members come from the binary rather than a hand-kept list. Neither
side imports the other.
"""

from __future__ import annotations

from typing import Protocol

from probegen.catalog.model import Enumerator
from probegen.catalog.ctype import CType


class TypeSource(Protocol):
    def enumerators(self, enum_name: str) -> tuple[Enumerator, ...] | None:
        """The enum's enumerators in declaration order, or None if absent."""

    def member_ctype(self, struct_name: str, member_path: str) -> CType:
        """Type of ``struct_name``'s member at ``member_path`` ("qid",
        "id.nsid"), as probegen.catalog.ctype models it (char arrays are STRING).
        Raises probegen.errors.InputError if there is no such member."""

    def definitions(self, struct_names: list[str]) -> str:
        """C definitions bpftrace 0.17 accepts for these structs and all
        they need, in dependency order."""
