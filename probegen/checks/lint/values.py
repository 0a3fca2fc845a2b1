"""What the checker knows about a value in a script: its C type from the
catalog or a struct definition, and whether bpftrace holds it as a string."""

from __future__ import annotations

from dataclasses import dataclass

from probegen.catalog.ctype import CType


@dataclass(frozen=True)
class Value:
    describe: str  # for messages: "arg1 of nvmf_ctrlr_create (subnqn, const char *)"
    ctype: CType | None = None  # None: the C type is not known
    text: bool = False  # bpftrace holds the characters: str() result, char array
    struct: str | None = None  # the struct pointed to (or held), for member checks
    expression: str | None = None  # how the script reaches it: "arg1", "$nqn"
    path: str | None = None  # a struct held inside ``struct``: its member path there
