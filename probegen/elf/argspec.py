"""Decoding the argument specs of ``.note.stapsdt`` notes.

<sys/sdt.h> records each probe argument as ``SIZE@OPERAND``: SIZE is the
byte count, negative for a signed type (newer sdt.h appends ``f`` for
floating point), and OPERAND is whatever the compiler printed for the asm
operand. So the operand grammar is the target assembler's, and the same
text means different things on different machines: ``5`` is the constant 5
on aarch64, s390x, mips and riscv but register 5 on powerpc (whose
constants are written ``i5``); ``$2`` is the constant 2 on x86 but
register 2 on mips. What gcc emits, per machine (see tests/test_argspec.py):

- x86 (AT&T): ``%eax``, ``$5``, ``$sym``, ``-8(%rbp)``, ``16(%rdi,%rcx,4)``,
  ``s_vals(,%rdi,8)``, ``40+sym(%rip)``, ``sym@GOTOFF(%ebx)``, ``sym+12``
  (absolute, i386 non-PIC), ``%fs:sym@tpoff``, ``%gs:(%eax)``
- aarch64: ``x1``, ``w0``, ``5``, ``[sp]``, ``[sp, 12]``, ``[x0, -8]``,
  ``[x0, #:lo12:.LANCHOR1]``
- arm: ``r0``, ``lr``, ``#5``, ``#1.5e+0``, ``#.LANCHOR0+40`` (an address),
  ``[r7, #6]``, ``[r0, #-4]``, ``[r1, r2]``, ``[r2, r0, lsl #2]``
- s390x: ``%r2``, ``5``, ``160(%r15)``, ``0(%r2,%r4)`` (index, then base)
- powerpc: ``8`` (register r8), ``%r8`` (-mregnames), ``i5``, ``0(10)``,
  ``7,3`` (indexed: r7 + r3)
- mips: ``$2``, ``$sp``, ``5``, ``32($fp)``, ``%tprel_lo(sym)($2)``
- riscv: ``a0``, ``s0``, ``5``, ``-24(s0)``, ``%lo(sym)(a4)``

An operand this module does not know is kept as :class:`Unknown` with its
raw text: shown, never fatal. Only text that is not an argument list at all
(no ``SIZE@``, non-printable bytes) is rejected, by the note reader.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Register:
    """A register, named as the target's assembler names it, without the
    '%' of AT&T and s390 syntax; powerpc's bare numbers become 'r8', mips
    keeps its '$' ('$2', '$sp') so a register never reads as a number."""

    name: str

    kind = "register"

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Constant:
    """A literal: an int, or a float for a floating-point literal (arm
    writes ``#1.5e+0``)."""

    value: int | float

    kind = "constant"

    def describe(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Address:
    """A link-time constant that is an address: ``$sym`` (x86),
    ``#.LANCHOR0+40`` (arm). The value is ``&symbol + offset``."""

    symbol: str
    offset: int = 0
    relocation: str | None = None

    kind = "address"

    def describe(self) -> str:
        return "&" + _symbol_text(self.symbol, self.relocation, self.offset)


@dataclass(frozen=True)
class Memory:
    """``[segment: base + index*scale + symbol + offset]``; parts may be
    absent. ``relocation`` is the operator the assembler applies to the
    symbol: 'GOTOFF', 'tpoff' (x86 ``sym@GOTOFF``), 'lo12' (aarch64
    ``#:lo12:sym``), 'lo', 'tprel_lo' (mips, riscv ``%lo(sym)``)."""

    base: str | None
    offset: int = 0
    index: str | None = None
    scale: int = 1
    symbol: str | None = None
    relocation: str | None = None
    segment: str | None = None  # x86 %fs / %gs

    kind = "memory"

    def describe(self) -> str:
        parts = []
        if self.base:
            parts.append(self.base)
        if self.index:
            parts.append(f"{self.index}*{self.scale}" if self.scale != 1 else self.index)
        if self.symbol:
            parts.append(_symbol_text(self.symbol, self.relocation, 0))
        text = "+".join(parts) or "0"
        if self.offset:
            text += f"{self.offset:+d}" if parts else str(self.offset)
        return f"[{self.segment + ':' if self.segment else ''}{text}]"


@dataclass(frozen=True)
class Unknown:
    text: str

    kind = "unknown"

    def describe(self) -> str:
        return self.text


Operand = Register | Constant | Address | Memory | Unknown


def _symbol_text(symbol: str, relocation: str | None, offset: int) -> str:
    text = f"{symbol}@{relocation}" if relocation else symbol
    return text + (f"{offset:+d}" if offset else "")


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

# --- numbers and address expressions, common to all assemblers --------------

_NUMBER = r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)"
_INT = re.compile(r"(?P<sign>[-+]?)(?P<digits>" + _NUMBER + r")\Z")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
# gas symbols: letters, digits, '_', '.', '$' (not first: '$' starts an x86
# immediate and a mips register).
_SYMBOL = r"[A-Za-z_.][A-Za-z0-9_.$]*"
_TERM = re.compile(
    r"(?P<sign>[-+]?)(?:(?P<number>" + _NUMBER + r")(?![A-Za-z0-9_.$])"
    r"|%(?P<operator>[a-z][a-z0-9_]*)\((?P<inner>[^()]*)\)"  # %lo(sym+4)
    r"|(?P<symbol>" + _SYMBOL + r")(?P<relocations>(?:@[A-Za-z][A-Za-z0-9_]*)*))"
)


# 0b and 64 binary digits: the longest spelling of a 64-bit value. Longer
# digit strings are no value a note can hold (and Python refuses to convert
# more than 4300 decimal digits).
_MAX_DIGITS = 66
_OCTAL_DIGITS = frozenset("01234567")


def _int(text: str) -> int | None:
    """An assembler integer as gas reads it: decimal, 0x hex, 0b binary,
    0-prefixed octal; None for anything else."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits or len(digits) > _MAX_DIGITS:
        return None
    if digits.isascii() and digits.isdigit():  # the common case, without a regex
        if digits[0] != "0" or len(digits) == 1:
            value = int(digits)
        elif set(digits) <= _OCTAL_DIGITS:
            value = int(digits, 8)
        else:
            return None
    elif _INT.match(text):  # int() alone would also take '_' and spaces
        value = int(digits[2:], 16 if digits[1] in "xX" else 2)
    else:
        return None
    return -value if text[0] == "-" else value


class _Displacement(NamedTuple):
    offset: int = 0
    symbol: str | None = None
    relocation: str | None = None


def _displacement(text: str) -> _Displacement | None:
    """A sum of numbers and at most one symbol, in any order, as gcc prints
    address constants: '', '-8', 'sym', 'sym+16', '40+sym', '-4+sym',
    'sym-8', 'sym@GOTOFF', '12+sym@GOTOFF', 'sym@toc@l', '%lo(sym)',
    '%tprel_lo(sym+8)'. None when it is anything else (two symbols, a
    subtracted symbol, unknown characters)."""
    value = _int(text) if text else 0
    if value is not None:  # most displacements are a plain number
        return _Displacement(value)
    offset, symbol, relocation, at = 0, None, None, 0
    while at < len(text):
        term = _TERM.match(text, at)
        if not term or (at and not term["sign"]):
            return None
        at = term.end()
        negative = term["sign"] == "-"
        if term["number"] is not None:
            value = _int(term["number"])
            if value is None:
                return None
            offset += -value if negative else value
            continue
        if symbol is not None or negative:
            return None
        if term["operator"] is not None:
            inner = _displacement(term["inner"])
            if inner is None or inner.symbol is None or inner.relocation:
                return None
            symbol, relocation = inner.symbol, term["operator"]
            offset += inner.offset
        else:
            symbol = term["symbol"]
            relocation = term["relocations"][1:] or None
    return _Displacement(offset, symbol, relocation)


def _constant_or_address(text: str) -> Operand | None:
    """An immediate's text after its '$' or '#': a number, a float, or an
    address expression."""
    value = _int(text)
    if value is not None:
        return Constant(value)
    if _FLOAT.match(text) and len(text) <= _MAX_DIGITS and math.isfinite(float(text)):
        return Constant(float(text))  # finite: JSON has no infinity
    disp = _displacement(text)
    if disp is not None and disp.symbol is not None:
        return Address(disp.symbol, disp.offset, disp.relocation)
    return None


def _memory(disp_text: str, base: str | None, index: str | None = None, scale: int = 1,
            segment: str | None = None) -> Operand | None:
    disp = _displacement(disp_text)
    if disp is None:
        return None
    return Memory(base, disp.offset, index, scale, disp.symbol, disp.relocation, segment)


# --- x86 (i386 and x86_64), AT&T syntax ----------------------------------

_X86_REGISTER = re.compile(r"%(?P<name>[a-z][a-z0-9]*)\Z")
_X86_MEMORY = re.compile(
    r"(?:%(?P<segment>[c-gs]s):)?(?P<disp>[^()%]*)"
    r"(?:\((?:%(?P<base>[a-z][a-z0-9]*))?(?:,(?:%(?P<index>[a-z][a-z0-9]*))?(?:,(?P<scale>[1248]))?)?\))?\Z"
)


def _x86_operand(text: str) -> Operand | None:
    match = _X86_REGISTER.match(text)
    if match:
        return Register(match["name"])
    if text.startswith("$"):
        return _constant_or_address(text[1:])
    match = _X86_MEMORY.match(text)
    # Without parentheses the operand is an absolute address ('sym+12',
    # '%fs:0x28'); the parentheses may not be empty.
    if not match or not (match["disp"] or "(" in text) or text.endswith("()"):
        return None
    return _memory(match["disp"], match["base"], match["index"], int(match["scale"] or 1), match["segment"])


# --- aarch64 -------------------------------------------------------------------

_A64_REG = r"(?:[xw](?:[12]?[0-9]|30)|sp|wsp|xzr|wzr)"
_A64_REGISTER = re.compile(r"(?P<name>" + _A64_REG + r")\Z")
_A64_MEMORY = re.compile(r"\[(?P<base>" + _A64_REG + r")(?:, ?(?P<rest>[^\]]+?))?\]\Z")
_A64_INDEX = re.compile(
    r"(?P<index>" + _A64_REG + r")(?:, ?(?P<extend>lsl|[su]xt[wx]) ?#?(?P<shift>[0-3])?)?\Z"
)
_A64_RELOCATED = re.compile(r"#?:(?P<relocation>[a-z0-9_]+):(?P<expr>.+)\Z")


def _aarch64_operand(text: str) -> Operand | None:
    match = _A64_REGISTER.match(text)
    if match:
        return Register(match["name"])
    value = _int(text.removeprefix("#"))
    if value is not None:
        return Constant(value)
    match = _A64_MEMORY.match(text)
    if not match:
        return None
    base, rest = match["base"], match["rest"]
    if rest is None:
        return Memory(base)
    value = _int(rest.removeprefix("#"))
    if value is not None:
        return Memory(base, value)
    index = _A64_INDEX.match(rest)
    if index:
        return Memory(base, index=index["index"], scale=1 << int(index["shift"] or 0))
    relocated = _A64_RELOCATED.match(rest)
    if relocated:
        disp = _displacement(relocated["expr"])
        if disp is not None and disp.symbol is not None and disp.relocation is None:
            return Memory(base, disp.offset, symbol=disp.symbol, relocation=relocated["relocation"])
    return None


# --- arm (32-bit) ----------------------------------------------------------------

_ARM_REG = r"(?:r1[0-5]|r[0-9]|sp|lr|pc|ip|fp|sl|sb)"
_ARM_REGISTER = re.compile(r"(?P<name>" + _ARM_REG + r")\Z")
_ARM_MEMORY = re.compile(r"\[(?P<base>" + _ARM_REG + r")(?:, ?(?P<rest>[^\]]+?))?\]\Z")
_ARM_INDEX = re.compile(r"(?P<minus>-?)(?P<index>" + _ARM_REG + r")(?:, ?lsl #?(?P<shift>[0-9]|[12][0-9]|3[01]))?\Z")


def _arm_operand(text: str) -> Operand | None:
    match = _ARM_REGISTER.match(text)
    if match:
        return Register(match["name"])
    if text.startswith("#"):
        return _constant_or_address(text[1:])
    match = _ARM_MEMORY.match(text)
    if not match:
        return None
    base, rest = match["base"], match["rest"]
    if rest is None:
        return Memory(base)
    value = _int(rest.removeprefix("#"))
    if value is not None:
        return Memory(base, value)
    index = _ARM_INDEX.match(rest)
    if index:
        scale = 1 << int(index["shift"] or 0)
        return Memory(base, index=index["index"], scale=-scale if index["minus"] else scale)
    return None


# --- the 'DISP(BASE)' family: s390x, powerpc, mips, riscv ----------------------

_PARENS = re.compile(r"(?P<disp>[^()]*(?:\([^()]*\)[^()]*)?)\((?P<inside>[^()]*)\)\Z")


def _parenthesised(text: str, register) -> Operand | None:
    """'DISP(REG)' with a register recognised by ``register`` (text ->
    name or None); DISP may hold '%lo(sym)', so the last group is the
    register."""
    match = _PARENS.match(text)
    if not match:
        return None
    base = register(match["inside"])
    return _memory(match["disp"], base) if base else None


def _s390_register(text: str) -> str | None:
    match = re.fullmatch(r"%(?P<name>[rfav](?:1[0-5]|[0-9]))", text)
    return match["name"] if match else None


def _s390_operand(text: str) -> Operand | None:
    name = _s390_register(text)
    if name:
        return Register(name)
    value = _int(text)
    if value is not None:  # s390 constants have no prefix: registers have '%'
        return Constant(value)
    match = _PARENS.match(text)
    if match and "," in match["inside"]:
        # D(X,B): index first, then base.
        index, _, base = match["inside"].partition(",")
        index, base = _s390_register(index), _s390_register(base)
        return _memory(match["disp"], base, index) if index and base else None
    return _parenthesised(text, _s390_register)


def _ppc_register(text: str) -> str | None:
    # gcc writes general registers as bare numbers, or '%r8' with -mregnames.
    match = re.fullmatch(r"(?:%?r)?(?P<number>[12]?[0-9]|3[01])", text)
    return f"r{match['number']}" if match else None


def _ppc_operand(text: str) -> Operand | None:
    name = _ppc_register(text)
    if name:
        return Register(name)
    if text.startswith("i"):  # sdt.h's %I: 'i' marks an immediate
        value = _int(text[1:])
        return Constant(value) if value is not None else None
    if "," in text and "(" not in text:
        # Indexed (X-form) 'RA,RB': the address is RA + RB.
        base, _, index = text.partition(",")
        base, index = _ppc_register(base), _ppc_register(index)
        return Memory(base, index=index) if base and index else None
    return _parenthesised(text, _ppc_register)


def _mips_register(text: str) -> str | None:
    return text if re.fullmatch(r"\$(?:[0-9]|[12][0-9]|3[01]|[a-z][a-z0-9]*)", text) else None


def _mips_operand(text: str) -> Operand | None:
    name = _mips_register(text)
    if name:
        return Register(name)
    value = _int(text)
    if value is not None:  # mips constants have no prefix: registers have '$'
        return Constant(value)
    return _parenthesised(text, _mips_register)


_RISCV_REGISTERS = frozenset(
    ["zero", "ra", "sp", "gp", "tp", "fp"]
    + [f"x{n}" for n in range(32)] + [f"f{n}" for n in range(32)]
    + [f"t{n}" for n in range(7)] + [f"s{n}" for n in range(12)] + [f"a{n}" for n in range(8)]
    + [f"ft{n}" for n in range(12)] + [f"fs{n}" for n in range(12)] + [f"fa{n}" for n in range(8)]
)


def _riscv_register(text: str) -> str | None:
    return text if text in _RISCV_REGISTERS else None


def _riscv_operand(text: str) -> Operand | None:
    name = _riscv_register(text)
    if name:
        return Register(name)
    value = _int(text)
    if value is not None:
        return Constant(value)
    return _parenthesised(text, _riscv_register)


# pyelftools' e_machine names; a machine not here gets Unknown operands.
_DECODERS = {
    "EM_X86_64": _x86_operand,
    "EM_386": _x86_operand,
    "EM_AARCH64": _aarch64_operand,
    "EM_ARM": _arm_operand,
    "EM_S390": _s390_operand,
    "EM_PPC64": _ppc_operand,
    "EM_PPC": _ppc_operand,
    "EM_MIPS": _mips_operand,
    "EM_MIPS_RS3_LE": _mips_operand,
    "EM_RISCV": _riscv_operand,
}


def decode_operand(text: str, machine: str) -> Operand:
    """The operand text of one argument on an e_machine; Unknown when the
    machine or the form is not one this module knows."""
    decode = _DECODERS.get(machine)
    operand = decode(text) if decode else None
    return operand if operand is not None else Unknown(text)


_SPLIT_MARKS = re.compile(r"[\[\]() ]")


def split_args(text: str) -> list[str]:
    """Split an argument string at spaces outside brackets and parentheses
    (aarch64 writes '[sp, 12]' with a space inside). Visits only the
    marks, not every character: big binaries have many notes."""
    args, depth, start = [], 0, 0
    for mark in _SPLIT_MARKS.finditer(text):
        char = mark.group()
        if char in "[(":
            depth += 1
        elif char in "])":
            depth = max(depth - 1, 0)
        elif depth == 0:
            if mark.start() > start:
                args.append(text[start:mark.start()])
            start = mark.end()
    if start < len(text):
        args.append(text[start:])
    return args


# The notes of one binary repeat the same few hundred argument strings, so
# decodings are cached (a NoteArg is frozen); only short strings, so that
# a crafted file's huge ones are not kept alive.
_CACHED_LENGTH = 512


def parse_arg(spec: str, machine: str) -> NoteArg:
    """Decode one 'SIZE@OPERAND'. Raises ArgSpecError without a size."""
    return _parse_arg_cached(spec, machine) if len(spec) <= _CACHED_LENGTH else _parse_arg(spec, machine)


def _parse_arg(spec: str, machine: str) -> NoteArg:
    match = _SIZE.match(spec)
    if not match:
        shown = spec if len(spec) <= 60 else spec[:57] + "..."
        raise ArgSpecError(f"argument '{shown}' is not of the form SIZE@OPERAND (SIZE 1, 2, 4 or 8, '-' when signed)")
    return NoteArg(
        spec=spec,
        size=int(match["size"]),
        signed=bool(match["sign"]),
        operand=decode_operand(match["operand"], machine),
        floating=bool(match["float"]),
    )


_parse_arg_cached = functools.lru_cache(maxsize=1 << 16)(_parse_arg)


def parse_args(text: str, machine: str) -> tuple[NoteArg, ...]:
    """Decode a note's whole argument string for an ELF e_machine name."""
    if len(text) <= _CACHED_LENGTH:
        return _parse_args_cached(text, machine)
    return _parse_args(text, machine)


def _parse_args(text: str, machine: str) -> tuple[NoteArg, ...]:
    return tuple(parse_arg(spec, machine) for spec in split_args(text))


_parse_args_cached = functools.lru_cache(maxsize=1 << 14)(_parse_args)
