"""The argument specs of ``.note.stapsdt`` notes: ``SIZE@OPERAND``, SIZE in
bytes, negative when signed, ``f`` after it for floating point; OPERAND in
the target assembler's syntax (tests/test_argspec.py: what gcc emits per
machine). An operand not known here is :class:`Unknown`: shown, never fatal.
"""

import functools
import math
import re
from dataclasses import dataclass


class _Operand:
    """An operand's kind is its class's name in lower case ('register', 'memory'): what list prints."""

    def __init_subclass__(cls):
        cls.kind = cls.__name__.lower()


@dataclass(frozen=True)
class Register(_Operand):
    """As the assembler names it, without AT&T's and s390's '%'; powerpc's
    bare numbers become 'r8'; mips keeps its '$' ('$2')."""

    name: str

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Constant(_Operand):
    """An int, or a float for a floating-point literal (arm's ``#1.5e+0``)."""

    value: int | float

    def describe(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Address(_Operand):
    """``&symbol + offset``: x86 ``$sym``, arm ``#.LANCHOR0+40``."""

    symbol: str
    offset: int = 0
    relocation: str | None = None

    def describe(self) -> str:
        return "&" + _symbol_text(self.symbol, self.relocation, self.offset)


@dataclass(frozen=True)
class Memory(_Operand):
    """``[segment: base + index*scale + symbol + offset]``, parts optional;
    ``relocation``: the operator on the symbol ('GOTOFF', 'lo12', 'tprel_lo')."""

    base: str | None
    offset: int = 0
    index: str | None = None
    scale: int = 1
    symbol: str | None = None
    relocation: str | None = None
    segment: str | None = None  # x86 %fs / %gs

    def describe(self) -> str:
        index = self.index and (f"{self.index}*{self.scale}" if self.scale != 1 else self.index)
        symbol = self.symbol and _symbol_text(self.symbol, self.relocation, 0)
        parts = [part for part in (self.base, index, symbol) if part]
        text = "+".join(parts) or "0"
        if self.offset:
            text += f"{self.offset:+d}" if parts else str(self.offset)
        return f"[{self.segment + ':' if self.segment else ''}{text}]"


@dataclass(frozen=True)
class Unknown(_Operand):
    text: str

    def describe(self) -> str:
        return self.text


Operand = Register | Constant | Address | Memory | Unknown


def _symbol_text(symbol: str, relocation: str | None, offset: int) -> str:
    text = f"{symbol}@{relocation}" if relocation else symbol
    return text + (f"{offset:+d}" if offset else "")


@dataclass(frozen=True)
class NoteArg:
    spec: str  # the raw text, e.g. '-4@%eax'
    size: int  # bytes: 1, 2, 4 or 8
    signed: bool
    operand: Operand
    floating: bool = False

    @property
    def type_name(self) -> str:
        """As tracers write it: s32, u64, f64."""
        letter = "f" if self.floating else ("s" if self.signed else "u")
        return f"{letter}{self.size * 8}"

    @property
    def literal(self) -> int | float | None:
        """The value a constant operand passes ('-4@$0'), else None."""
        return self.operand.value if isinstance(self.operand, Constant) else None

    def describe(self) -> str:
        """'-4@%eax (4 bytes, signed)'."""
        sign = "floating point" if self.floating else ("signed" if self.signed else "unsigned")
        return f"{self.spec} ({self.size} byte{'s' if self.size != 1 else ''}, {sign})"


class ArgSpecError(ValueError):
    """Text that is not a list of SIZE@OPERAND arguments."""


_SIZE = re.compile(r"(?P<sign>-?)(?P<size>[1248])(?P<float>f?)@(?P<operand>.+)\Z", re.S)
# gas integers: 0x hex, 0b binary, 0-prefixed octal, decimal.
_INT = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")
_BASES = {"x": 16, "X": 16, "b": 2, "B": 2}
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
# gas symbols: '$' may not come first (it starts an x86 immediate, a mips register).
_SYMBOL = r"[A-Za-z_.][A-Za-z0-9_.$]*"
_TERM = re.compile(
    r"(?P<sign>[-+]?)(?:(?P<number>[0-9][0-9A-Za-z]*)(?![A-Za-z0-9_.$])"
    r"|%(?P<operator>[a-z][a-z0-9_]*)\((?P<inner>[^()]*)\)"  # %lo(sym+4)
    r"|(?P<symbol>" + _SYMBOL + r")(?P<relocations>(?:@[A-Za-z][A-Za-z0-9_]*)*))"
)
# 0b and 64 binary digits: the longest spelling of a 64-bit value (and
# Python refuses to convert more than 4300 decimal digits).
_MAX_DIGITS = 66


def _int(text: str) -> int | None:
    match = _INT.match(text)
    if not match or len(match[1]) > _MAX_DIGITS:
        return None
    digits = match[1]
    value = int(digits, _BASES.get(digits[1:2], 8 if digits[0] == "0" else 10))
    return -value if text[0] == "-" else value


def _displacement(text: str) -> Address | None:
    """A sum of numbers and at most one symbol, as gcc prints address
    constants ('', '-8', '40+sym', '12+sym@GOTOFF', 'sym@toc@l', '%lo(sym+8)');
    None for anything else (two symbols, a subtracted one, other characters)."""
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
    return Address(symbol, offset, relocation)


def _machine(register: str, *memory: str, immediate: str = "", addresses: bool = False, bare: bool = True,
             name=lambda text: text):
    """One assembler's operand decoder: a register (``register``, named by
    ``name``), a literal (an int after ``immediate``, with ``addresses`` a
    float or address too; ``bare``: an int alone), or memory in the first
    ``memory`` form that reads it, its groups naming the parts ({R}: a
    register). re compiles them on first use (and caches them): a binary
    needs one machine's, and all eight take 3 ms."""
    forms = [form.replace("{R}", register) for form in memory]

    def decode(text: str) -> Operand | None:
        if re.fullmatch(register, text):
            return Register(name(text))
        if immediate and text.startswith(immediate):
            text = text[len(immediate):]
            if (value := _int(text)) is not None:
                return Constant(value)
            if not addresses:
                return None
            if _FLOAT.match(text) and len(text) <= _MAX_DIGITS and math.isfinite(float(text)):
                return Constant(float(text))  # finite: JSON has no infinity
            disp = _displacement(text)
            return disp if disp is not None and disp.symbol is not None else None
        if bare and (value := _int(text)) is not None:
            return Constant(value)
        for form in forms:
            match = re.fullmatch(form, text)
            if match and (operand := _memory(match.groupdict(), name)):
                return operand
        return None

    return decode


def _memory(parts: dict, name) -> Memory | None:
    base, index = (name(parts[key]) if parts.get(key) else None for key in ("base", "index"))
    scale = int(parts["scale"]) if parts.get("scale") else 1 << int(parts.get("shift") or 0)
    if "offset" in parts:
        value = _int(parts["offset"])
        return Memory(base, value) if value is not None else None
    if "expr" in parts:  # aarch64's [x0, #:lo12:sym]
        disp = _displacement(parts["expr"])
        ok = disp is not None and disp.symbol is not None and disp.relocation is None
        return Memory(base, disp.offset, symbol=disp.symbol, relocation=parts["relocation"]) if ok else None
    disp = _displacement(parts.get("disp") or "")
    if disp is None:
        return None
    return Memory(base, disp.offset, index, -scale if parts.get("minus") else scale, disp.symbol, disp.relocation,
                  parts.get("segment"))


_BRACKETED = (r"\[(?P<base>{R})\]", r"\[(?P<base>{R}), ?#?(?P<offset>[^\]]+?)\]")
_DISP = r"(?P<disp>[^()]*(?:\([^()]*\)[^()]*)?)"  # may hold one '%lo(sym)'
# pyelftools' e_machine names; a machine not here gets Unknown operands.
_DECODERS = {
    **dict.fromkeys(("EM_X86_64", "EM_386"), _machine(
        r"%[a-z][a-z0-9]*",
        # 'DISP(BASE,INDEX,SCALE)', parts optional but not all; without
        # parentheses an absolute address ('sym+12', '%fs:0x28').
        r"(?:%(?P<segment>[c-gs]s):)?(?P<disp>[^()%]*)"
        r"\((?!\))(?P<base>{R})?(?:,(?P<index>{R})?(?:,(?P<scale>[1248]))?)?\)",
        r"(?:%(?P<segment>[c-gs]s):)?(?P<disp>[^()%]+)",
        immediate="$", addresses=True, bare=False, name=lambda text: text[1:])),
    "EM_AARCH64": _machine(
        r"(?:[xw](?:[12]?[0-9]|30)|sp|wsp|xzr|wzr)", *_BRACKETED,
        r"\[(?P<base>{R}), ?(?P<index>{R})(?:, ?(?:lsl|[su]xt[wx]) ?#?(?P<shift>[0-3])?)?\]",
        r"\[(?P<base>{R}), ?#?:(?P<relocation>[a-z0-9_]+):(?P<expr>[^\]]+?)\]",
        immediate="#"),
    "EM_ARM": _machine(
        r"(?:r1[0-5]|r[0-9]|sp|lr|pc|ip|fp|sl|sb)", *_BRACKETED,
        r"\[(?P<base>{R}), ?(?P<minus>-?)(?P<index>{R})(?:, ?lsl #?(?P<shift>[0-9]|[12][0-9]|3[01]))?\]",
        immediate="#", addresses=True, bare=False),
    "EM_S390": _machine(r"%[rfav](?:1[0-5]|[0-9])", _DISP + r"\((?P<index>{R}),(?P<base>{R})\)",
                        _DISP + r"\((?P<base>{R})\)", name=lambda text: text[1:]),
    **dict.fromkeys(("EM_PPC64", "EM_PPC"), _machine(
        r"(?:%?r)?(?:[12]?[0-9]|3[01])",  # general registers as gcc writes them, or '%r8' (-mregnames)
        r"(?P<base>{R}),(?P<index>{R})",  # indexed (X-form): RA + RB
        _DISP + r"\((?P<base>{R})\)",
        immediate="i", bare=False, name=lambda text: "r" + text.lstrip("%r"))),
    **dict.fromkeys(("EM_MIPS", "EM_MIPS_RS3_LE"), _machine(
        r"\$(?:[0-9]|[12][0-9]|3[01]|[a-z][a-z0-9]*)", _DISP + r"\((?P<base>{R})\)")),
    "EM_RISCV": _machine(
        r"zero|ra|sp|gp|tp|fp|[xf](?:[12]?[0-9]|3[01])|t[0-6]|s(?:1[01]|[0-9])|a[0-7]|f[ts](?:1[01]|[0-9])|fa[0-7]",
        _DISP + r"\((?P<base>{R})\)"),
}


def decode_operand(text: str, machine: str) -> Operand:
    """Unknown for a machine or a form not known here (an operand is never false)."""
    return _DECODERS.get(machine, lambda _: None)(text) or Unknown(text)


_SPLIT_MARKS = re.compile(r"[\[\]() ]")


def split_args(text: str) -> list[str]:
    """Split at spaces outside brackets and parentheses (aarch64: '[sp, 12]')."""
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


def parse_arg(spec: str, machine: str) -> NoteArg:
    """ArgSpecError without a size. Binaries repeat a few hundred specs: short
    ones are cached (reading 20,000 sites takes 12% longer without), a crafted
    file's huge ones not kept alive."""
    return _parse_arg_cached(spec, machine) if len(spec) <= 512 else _parse_arg(spec, machine)


def _parse_arg(spec: str, machine: str) -> NoteArg:
    match = _SIZE.match(spec)
    if not match:
        shown = spec if len(spec) <= 60 else spec[:57] + "..."
        raise ArgSpecError(f"argument '{shown}' is not of the form SIZE@OPERAND (SIZE 1, 2, 4 or 8, '-' when signed)")
    return NoteArg(spec, int(match["size"]), bool(match["sign"]), decode_operand(match["operand"], machine),
                   bool(match["float"]))


_parse_arg_cached = functools.lru_cache(maxsize=1 << 16)(_parse_arg)


def parse_args(text: str, machine: str) -> tuple[NoteArg, ...]:
    """A note's argument string, on an ELF e_machine (pyelftools' name)."""
    return tuple(parse_arg(spec, machine) for spec in split_args(text))
