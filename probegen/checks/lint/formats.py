"""bpftrace printf conversions, and which ones fit which values.

What bpftrace 0.17 does, observed on this project's machines (not taken
from documentation):

* A conversion is ``%`` [``-``] [``0``] [width] [``.``precision]
  [length: ``hh h l ll j z t``] then one of ``d u x X o c s p``, or ``r``,
  ``rx``, ``rh`` for buffers. Anything else after ``%`` (``%i``, ``%#x``,
  ``%+d``, ``%f``) is printed literally and takes no argument, so the
  argument count no longer matches and bpftrace refuses the script. Such
  a sequence is a finding; a ``%`` followed by a space, an escape or the
  end of the string is taken as a percent sign meant as text.
* The length modifier decides how many bits are printed, as in C:
  ``%d``/``%u``/``%x`` read 32 bits (``printf("%d", 5000000000)`` prints
  705032704), ``%hd`` 16, ``%hhd`` 8, ``%ld``/``%lld``/``%jd``/``%zd``/
  ``%td`` 64. ``%p`` always prints 64 bits.

The rules the linter applies to a value whose C type it knows:

1. A conversion narrower than the value truncates it: finding
   (``%d`` for a uint64_t thread id, ``%x`` for a pointer).
2. A signed conversion (``%d``) for an unsigned 64-bit value (uint64_t,
   size_t, a pointer): finding; values from 2^63 print negative.
   For narrower unsigned values (uint16_t, uint32_t) ``%d`` is accepted:
   it is what scripts write, and the value fits unless it uses the top bit.
3. ``%u`` for a signed value as wide as the conversion: finding; negative
   values (-ENOMEM, -1) print as huge numbers. ``%x``/``%o`` show bit
   patterns and are accepted for any integer.
4. ``%p`` is for pointers; for an integer or enum it is a finding.
5. ``%s`` needs a string bpftrace has read: ``str(argN)`` or a char array
   member. A string argument printed raw (``%s`` with ``argN``), an
   integer, enum or pointer with ``%s``: finding. A string argument with
   an integer conversion prints its address: finding, except ``%p`` and
   64-bit hex, which print the address on purpose.
6. A string with an integer conversion (``%d`` for ``str(arg1)``): finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from probegen.catalog.ctype import CType, Kind
from probegen.bpftrace import conversion
from probegen.generators.lines import style_of

_CONVERSION = re.compile(
    r"%(?P<flags>[-0]*)(?P<width>[0-9]*)(?:\.(?P<precision>[0-9]+))?"
    r"(?P<length>hh|h|ll|l|j|z|t)?(?P<conv>r[xh]?|[duxXocsp])"
)
_INTENDED = re.compile(r"%[-+#0-9.]*(?:hh|h|ll|l|L|q|j|z|t)?[A-Za-z]")
_LENGTH_BYTES = {None: 4, "hh": 1, "h": 2, "l": 8, "ll": 8, "j": 8, "z": 8, "t": 8}
_INTEGER_CONVERSIONS = frozenset("duxXoc")


@dataclass(frozen=True)
class Value:
    """What the checker knows about a value in a script."""
    describe: str  # for messages: "arg1 of nvmf_ctrlr_create (subnqn, const char *)"
    ctype: CType | None = None  # None: the C type is not known
    text: bool = False  # bpftrace holds the characters: str() result, char array
    struct: str | None = None  # the struct pointed to (or held), for member checks
    expression: str | None = None  # how the script reaches it: "arg1", "$nqn"
    path: str | None = None  # a struct held inside ``struct``: its member path there


@dataclass(frozen=True)
class Conversion:
    text: str  # "%lu"
    conv: str  # "u"
    length: str | None
    offset: int  # in the raw format string

    @property
    def bytes(self) -> int:
        """How many bytes of the value the conversion prints."""
        return 8 if self.conv == "p" else _LENGTH_BYTES[self.length]


@dataclass(frozen=True)
class UnknownConversion:
    text: str  # "%i"
    offset: int


def parse_format(raw: str) -> tuple[list[Conversion], list[UnknownConversion]]:
    """Conversions of a format string as written between the quotes."""
    conversions, unknown = [], []
    pos = 0
    while True:
        pos = raw.find("%", pos)
        if pos < 0:
            return conversions, unknown
        if raw.startswith("%%", pos):
            pos += 2
            continue
        match = _CONVERSION.match(raw, pos)
        if match:
            conversions.append(Conversion(match.group(), match["conv"], match["length"], pos))
            pos = match.end()
        else:
            # A '%' before a space, an escape or the end is a percent sign
            # meant as text ("busy:%2d% core"), not a conversion gone wrong.
            intended = _INTENDED.match(raw, pos)
            if intended:
                unknown.append(UnknownConversion(intended.group(), pos))
                pos = intended.end()
            else:
                pos += 1


def suggest(value: Value) -> str:
    """The conversion to write instead, in words."""
    ctype = value.ctype
    if value.text:
        return "%s"
    if ctype is None:
        return "a fitting conversion"
    if ctype.kind is Kind.STRING:
        return f"%s with str({value.expression})" if value.expression else "%s with str()"
    if ctype.kind is Kind.ENUM:
        return "%d, or %s with a map of the enum's names"
    return conversion(style_of(ctype).value, ctype.size)


def mismatch(conversion: Conversion, value: Value) -> str | None:
    """Why the conversion does not fit the value, or None if it does or
    the value's type is unknown."""
    conv, what = conversion.text, value.describe
    if conversion.conv.startswith("r"):
        if value.text or value.ctype is not None:
            return f"{conv} prints a buffer (buf()), not {what}"
        return None
    if value.text:
        if conversion.conv == "s":
            return None
        return f"{conv} for {what}, a string: use %s"
    ctype = value.ctype
    if ctype is None:
        return None
    size = ctype.size_on(8)
    if ctype.kind is Kind.STRING:
        if conversion.conv == "s":
            return f"{what} is a string printed without str(): use str({value.expression or '...'})"
        if conversion.conv == "p" or (conversion.conv in "xX" and conversion.bytes == 8):
            return None  # the address, on purpose
        return f"{conv} for {what}, a string: use {suggest(value)}"
    if conversion.conv == "s":
        if ctype.kind is Kind.ENUM:
            return (f"%s for {what}, an enum: bpftrace has no names for its values; "
                    f"use {suggest(value)}")
        return f"%s for {what}, not a string: use {suggest(value)}"
    if conversion.conv == "p":
        if ctype.is_address:
            return None
        return f"%p for {what}, an integer: use {suggest(value)}"
    if conversion.conv == "c":
        return None
    if conversion.bytes < size:
        return (f"{conv} prints {conversion.bytes * 8} of the {size * 8} bits of {what}: "
                f"use {suggest(value)}")
    if conversion.conv == "d" and not ctype.signed_on_x86 and size == 8:
        return (f"{conv} is a signed conversion for {what}, an unsigned 64-bit value "
                f"(values from 2^63 print negative): use {suggest(value)}")
    if conversion.conv == "u" and ctype.signed is True and conversion.bytes == size:
        return (f"{conv} is an unsigned conversion for {what}, a signed value "
                f"(negative values print huge): use {suggest(value)}")
    return None
