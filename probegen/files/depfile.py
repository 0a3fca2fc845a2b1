"""Make-syntax depfiles, so ninja and make know what a generated file was
made from and regenerate it when any of those change.

A generated file depends on its catalog and on probegen's own template for
it (a newer probegen may render differently). Ninja (``deps = gcc``) and
make both read the ``target: prerequisites`` form written here.
"""

import os


# Characters make and ninja read differently whatever the escape (checked
# with GNU make 4.3 and ninja 1.11): make starts a recipe at ';' (even
# after a backslash) and expands '*?[' as globs, or '%' as a pattern in a
# target, unless backslashed, while ninja splits at an unescaped ';*?' and
# keeps the backslash of a backslashed ';', '*', '?', '[' or '%' in the name.
_NO_ESCAPE = ";%*?[\\"


def escape(path: str) -> str:
    """A path as one word of a make rule, read alike by ninja.

    A control character would end the rule (and a tab start a recipe);
    the characters of _NO_ESCAPE have no form both read alike. Such a path
    is refused, as is one that is not UTF-8. ' ', '#' and ':' are
    backslashed, '$' doubled."""
    from probegen.errors import InputError, Location

    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF for c in path):
        raise InputError("a depfile cannot name a path with control characters", Location(path))
    bad = sorted({c for c in path if c in _NO_ESCAPE})
    if bad:
        raise InputError(f"a depfile cannot name a path with {' '.join(bad)} "
                         "(make and ninja read it differently; rename the file)", Location(path))
    return "".join("\\" + c if c in " #:" else "$$" if c == "$" else c for c in path)


def render(target: str, prerequisites: list[str]) -> str:
    """``target`` is named exactly as the build system passed it (ninja
    checks that the depfile mentions the output it asked for)."""
    words = " \\\n  ".join(escape(p) for p in prerequisites)
    return f"{escape(target)}: \\\n  {words}\n"


def write(depfile, target, catalog, template: str) -> None:
    """The depfile of ``target``, made from the catalog and probegen's template."""
    from pathlib import Path

    import probegen.templates
    from probegen.files.output import GeneratedFile, write_if_changed

    text = render(str(target), [str(catalog), os.path.join(os.path.dirname(probegen.templates.__file__), template)])
    write_if_changed(GeneratedFile(Path(depfile), text))
