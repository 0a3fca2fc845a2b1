"""bpftrace 0.17's printf conversions, and which ones fit which values.

Anything after ``%`` that bpftrace does not know (``%i``, ``%#x``) prints as text and takes no
argument; so does a ``%`` before a space, an escape or the end. ``%d`` is accepted for unsigned
values narrower than 64 bits, ``%x``/``%o`` for any integer, and 64-bit hex or ``%p`` for a
string's address.
"""

import re
from collections import namedtuple

from probegen.catalog.ctype import Kind
from probegen.bpftrace import conversion
from probegen.generators.lines import style_of

# '%%'; a conversion; a sequence meant as one that bpftrace does not know; a '%' meant as text.
_FORMAT = re.compile(r"%%|(?P<known>%[-0]*[0-9]*(?:\.[0-9]+)?(?P<length>hh|h|ll|l|j|z|t)?(?P<conv>r[xh]?|[duxXocsp]))"
                     r"|(?P<unknown>%[-+#0-9.]*(?:hh|h|ll|l|L|q|j|z|t)?[A-Za-z])|%")
# The bytes a length prints, as in C (%p: always 8).
_LENGTH_BYTES = {None: 4, "hh": 1, "h": 2, "l": 8, "ll": 8, "j": 8, "z": 8, "t": 8}
# text: "%lu"; conv: "u" (None for an unknown one); offset: in the format string as written.
Conversion = namedtuple("Conversion", "text conv length offset")
# What the checker knows about a value. describe: for messages ("arg1 of nvmf_ctrlr_create
# (subnqn, const char *)"); ctype: None if not known; text: bpftrace holds the characters (str()'s
# result, a char array); struct: the one pointed to or held; expression: how the script reaches
# it ("arg1", "$nqn"); path: of a struct held inside ``struct``, its member path there.
Value = namedtuple("Value", "describe ctype text struct expression path", defaults=(None, False, None, None, None))


def parse_format(raw: str) -> tuple[list[Conversion], list[Conversion]]:
    """The conversions of a format string as written between its quotes, and the unknown ones."""
    found = [Conversion(match.group(), match["conv"], match["length"], match.start())
             for match in _FORMAT.finditer(raw) if match["known"] or match["unknown"]]
    return [c for c in found if c.conv], [c for c in found if not c.conv]


def suggest(value: Value) -> str:
    ctype = value.ctype  # mismatch() and the checker ask only of values of a known type that are not text
    if ctype.kind is Kind.STRING:
        return f"%s with str({value.expression})" if value.expression else "%s with str()"
    if ctype.kind is Kind.ENUM:
        return "%d, or %s with a map of the enum's names"
    return conversion(style_of(ctype).value, ctype.size)


def mismatch(conversion: Conversion, value: Value) -> str | None:
    """Why the conversion does not fit the value, or None (it fits, or the type is not known)."""
    conv, what = conversion.text, value.describe
    printed = 8 if conversion.conv == "p" else _LENGTH_BYTES[conversion.length]  # bytes of the value
    if conversion.conv.startswith("r"):
        return f"{conv} prints a buffer (buf()), not {what}" if value.text or value.ctype is not None else None
    if value.text:
        return None if conversion.conv == "s" else f"{conv} for {what}, a string: use %s"
    ctype = value.ctype
    if ctype is None:
        return None
    size = ctype.size_on(8)
    if ctype.kind is Kind.STRING:
        if conversion.conv == "s":
            return f"{what} is a string printed without str(): use str({value.expression or '...'})"
        if conversion.conv == "p" or (conversion.conv in "xX" and printed == 8):
            return None  # the address, on purpose
        return f"{conv} for {what}, a string: use {suggest(value)}"
    if conversion.conv == "s":
        why = "an enum: bpftrace has no names for its values;" if ctype.kind is Kind.ENUM else "not a string:"
        return f"%s for {what}, {why} use {suggest(value)}"
    if conversion.conv == "p":
        return None if ctype.is_address else f"%p for {what}, an integer: use {suggest(value)}"
    if conversion.conv == "c":
        return None
    if printed < size:
        return f"{conv} prints {printed * 8} of the {size * 8} bits of {what}: use {suggest(value)}"
    if conversion.conv == "d" and not ctype.signed_on_x86 and size == 8:
        return (f"{conv} is a signed conversion for {what}, an unsigned 64-bit value "
                f"(values from 2^63 print negative): use {suggest(value)}")
    if conversion.conv == "u" and ctype.signed is True and printed == size:
        return (f"{conv} is an unsigned conversion for {what}, a signed value "
                f"(negative values print huge): use {suggest(value)}")
    return None
