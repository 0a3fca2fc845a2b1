"""Make-syntax depfiles, so ninja and make know what a generated file was
made from and regenerate it when any of those change.

A generated file depends on its catalog and on probegen's own template for
it (a newer probegen may render differently). Ninja (``deps = gcc``) and
make both read the ``target: prerequisites`` form written here.
"""

from __future__ import annotations

import os


def escape(path: str) -> str:
    """A path as one word of a make rule (ninja's depfile parser agrees).

    make has no way to write a newline (or other control character) in a
    name: one would end the rule, and a following tab start a recipe that
    make runs. Such a path is refused, as is one that is not UTF-8."""
    from probegen.errors import InputError, printable

    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF for c in path):
        raise InputError(f"{printable(path)}: error: a depfile cannot name a path with control characters")
    out = []
    for char in path:
        if char in " #":
            out.append("\\" + char)
        elif char == "$":
            out.append("$$")
        else:
            out.append(char)
    return "".join(out)


def template_path(template: str) -> str:
    import probegen.templates
    return os.path.join(os.path.dirname(probegen.templates.__file__), template)


def render(target: str, prerequisites: list[str]) -> str:
    """``target`` is named exactly as the build system passed it (ninja
    checks that the depfile mentions the output it asked for)."""
    words = " \\\n  ".join(escape(p) for p in prerequisites)
    return f"{escape(target)}: \\\n  {words}\n"


def add_argument(parser) -> None:
    parser.add_argument(
        "--depfile", metavar="FILE",
        help="also write a make-syntax depfile listing what the output was made from "
        "(for meson custom_target(depfile:), ninja and make)",
    )


def write(depfile, target, catalog, template: str) -> None:
    from pathlib import Path

    from probegen.files.output import GeneratedFile, write_if_changed

    text = render(str(target), [str(catalog), str(template_path(template))])
    write_if_changed(GeneratedFile(Path(depfile), text))
