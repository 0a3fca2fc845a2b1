"""Decoding the argument specs of ``.note.stapsdt`` notes.

<sys/sdt.h> records each probe argument as ``SIZE@OPERAND``: SIZE is the
byte count, negative for a signed type (newer sdt.h may append ``f`` for
floating point), and OPERAND is whatever the compiler's assembler syntax
printed for the ``nor`` asm operand. So the operand grammar is the target
assembler's: AT&T syntax on x86 (``%eax``, ``$5``, ``-8(%rbp,%rax,8)``,
``sym(%rip)``), ARM syntax on aarch64 (``x1``, ``[sp, 12]``, ``[x0]``).

An operand this module does not know is kept as :class:`Unknown` with its
raw text: shown, never fatal. Only text that is not an argument list at all
(no ``SIZE@``, non-printable bytes) is rejected, by the note reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Register:
    name: str  # without the '%' of AT&T syntax

    kind = "register"

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Constant:
    value: int

    kind = "constant"

    def describe(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Memory:
    """``[base + index*scale + offset + symbol]``; parts may be absent."""

    base: str | None
    offset: int = 0
    index: str | None = None
    scale: int = 1
    symbol: str | None = None  # e.g. 'gi', 'gi@GOTOFF', '#:lo12:.LANCHOR0'

    kind = "memory"

    def describe(self) -> str:
        parts = []
        if self.base:
            parts.append(self.base)
        if self.index:
            parts.append(f"{self.index}*{self.scale}" if self.scale != 1 else self.index)
        if self.symbol:
            parts.append(self.symbol)
        text = "+".join(parts) or "0"
        if self.offset:
            text += f"{self.offset:+d}" if parts else str(self.offset)
        return f"[{text}]"


@dataclass(frozen=True)
class Unknown:
    text: str

    kind = "unknown"

    def describe(self) -> str:
        return self.text


Operand = Register | Constant | Memory | Unknown


@dataclass(frozen=True)
class NoteArg:
    """One argument of one probe site, as the note records it."""

    spec: str  # the raw text, e.g. '-4@%eax'
    size: int  # bytes: 1, 2, 4 or 8
    signed: bool
    operand: Operand
    floating: bool = False

    @property
    def type_name(self) -> str:
        """Short type as tracers see it: s32, u64, f64."""
        letter = "f" if self.floating else ("s" if self.signed else "u")
        return f"{letter}{self.size * 8}"

    def describe(self) -> str:
        """'-4@%eax (4 bytes, signed)' for messages."""
        sign = "floating point" if self.floating else ("signed" if self.signed else "unsigned")
        return f"{self.spec} ({self.size} byte{'s' if self.size != 1 else ''}, {sign})"


class ArgSpecError(ValueError):
    """Text that is not a list of SIZE@OPERAND arguments."""


_SIZE = re.compile(r"(?P<sign>-?)(?P<size>[1248])(?P<float>f?)@(?P<operand>.+)\Z", re.S)
_INT = r"[-+]?(?:0[xX][0-9a-fA-F]+|[0-9]+)"


def _int(text: str) -> int:
    """An assembler integer: decimal, 0x hex, or 0-prefixed octal as gas reads it."""
    digits = text.lstrip("+-")
    if digits[:2] in ("0x", "0X"):
        value = int(digits, 16)
    elif len(digits) > 1 and digits[0] == "0" and set(digits) <= set("01234567"):
        value = int(digits, 8)
    else:
        value = int(digits, 10)
    return -value if text.startswith("-") else value


# --- x86 (i386 and x86_64), AT&T syntax ----------------------------------

_X86_REG = r"%(?P<{0}>[a-z][a-z0-9]*)"
_X86_REGISTER = re.compile(_X86_REG.format("reg") + r"\Z")
_X86_IMMEDIATE = re.compile(r"\$(?P<value>" + _INT + r")\Z")
# disp(base,index,scale): disp is a number, a symbol expression, or absent.
_X86_MEMORY = re.compile(
    r"(?P<disp>[^()%$\s]*)\((?:" + _X86_REG.format("base") + r")?"
    r"(?:,(?:" + _X86_REG.format("index") + r")?(?:,(?P<scale>[1248]))?)?\)\Z"
)


def _split_displacement(disp: str) -> tuple[int, str | None]:
    """'-8' -> (-8, None); 'gi' -> (0, 'gi'); 'gi+16' -> (16, 'gi')."""
    if not disp:
        return 0, None
    if re.fullmatch(_INT, disp):
        return _int(disp), None
    match = re.fullmatch(r"(?P<sym>.*?[^-+])(?P<off>[-+](?:0[xX][0-9a-fA-F]+|[0-9]+))", disp)
    if match and not re.fullmatch(_INT, match["sym"]):
        return _int(match["off"]), match["sym"]
    return 0, disp


def _x86_operand(text: str) -> Operand:
    match = _X86_REGISTER.match(text)
    if match:
        return Register(match["reg"])
    match = _X86_IMMEDIATE.match(text)
    if match:
        return Constant(_int(match["value"]))
    match = _X86_MEMORY.match(text)
    if match and (match["base"] or match["index"] or match["disp"]):
        offset, symbol = _split_displacement(match["disp"])
        return Memory(match["base"], offset, match["index"], int(match["scale"] or 1), symbol)
    return Unknown(text)


# --- aarch64 ----------------------------------------------------------------

_A64_REG = r"(?:[xw](?:[12]?[0-9]|30)|sp|wsp|xzr|wzr)"
_A64_REGISTER = re.compile(r"(?P<reg>" + _A64_REG + r")\Z")
_A64_IMMEDIATE = re.compile(r"#?(?P<value>" + _INT + r")\Z")
_A64_MEMORY = re.compile(r"\[(?P<base>" + _A64_REG + r")(?:,\s*(?P<rest>[^\]]+?))?\s*\]\Z")


def _aarch64_operand(text: str) -> Operand:
    match = _A64_REGISTER.match(text)
    if match:
        return Register(match["reg"])
    match = _A64_IMMEDIATE.match(text)
    if match:
        return Constant(_int(match["value"]))
    match = _A64_MEMORY.match(text)
    if match:
        rest = match["rest"]
        if rest is None:
            return Memory(match["base"])
        offset = _A64_IMMEDIATE.match(rest)
        if offset:
            return Memory(match["base"], _int(offset["value"]))
        if re.fullmatch(_A64_REG, rest):
            return Memory(match["base"], index=rest)
        return Memory(match["base"], symbol=rest)
    return Unknown(text)


_DECODERS = {
    "EM_X86_64": _x86_operand,
    "EM_386": _x86_operand,
    "EM_AARCH64": _aarch64_operand,
}


def split_args(text: str) -> list[str]:
    """Split an argument string at spaces outside brackets and parentheses
    (aarch64 writes '[sp, 12]' with a space inside)."""
    args, depth, current = [], 0, []
    for char in text:
        if char in "[(":
            depth += 1
        elif char in "])":
            depth = max(depth - 1, 0)
        if char == " " and depth == 0:
            if current:
                args.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        args.append("".join(current))
    return args


def parse_arg(spec: str, machine: str) -> NoteArg:
    """Decode one 'SIZE@OPERAND'. Raises ArgSpecError without a size."""
    match = _SIZE.match(spec)
    if not match:
        raise ArgSpecError(f"argument '{spec}' is not of the form SIZE@OPERAND (SIZE 1, 2, 4 or 8, '-' when signed)")
    decode = _DECODERS.get(machine, Unknown)
    return NoteArg(
        spec=spec,
        size=int(match["size"]),
        signed=bool(match["sign"]),
        operand=decode(match["operand"]),
        floating=bool(match["float"]),
    )


def parse_args(text: str, machine: str) -> tuple[NoteArg, ...]:
    """Decode a note's whole argument string for an ELF e_machine name."""
    return tuple(parse_arg(spec, machine) for spec in split_args(text))
