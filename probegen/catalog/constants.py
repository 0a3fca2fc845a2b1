"""Enumerator values as C writes integer constants, and the range scripts
read them in: enum arguments are 4 bytes in every generated file, as the
note records an enum whose values fit int or unsigned int (INT_MIN through
UINT32_MAX print by name with bpftrace 0.17 and BCC); a larger value makes
the compiler widen the enum to 8 bytes, which scripts would misread.
"""

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1


def c_integer(text: str) -> int:
    """The value of a C integer constant with an optional sign, in a form
    the schema's enumerator pattern allows; ValueError for octal digits
    past 7."""
    digits = text.strip().rstrip("uUlL")
    negative = digits.startswith("-")
    digits = digits.lstrip("+-").lstrip()
    octal = digits[0] == "0" and len(digits) > 1 and digits[1] not in "xXbB"
    if octal and not set(digits) <= set("01234567"):
        raise ValueError(f"'{digits}' is not an octal constant (a leading 0 means octal in C)")
    value = int(digits, 8 if octal else 0)
    return -value if negative else value


def range_problem(value: int) -> str | None:
    """Why an enumerator value cannot be read as a 4-byte enum, or None."""
    if INT32_MIN <= value <= UINT32_MAX:
        return None
    return (f"{value} is outside {INT32_MIN}..{UINT32_MAX}: probegen reads enums as 4 bytes "
            "(int or unsigned int)")


def mixed_problem(values: list[int]) -> str | None:
    """A 4-byte enum holds negative values or values above INT_MAX, not both."""
    if values and min(values) < 0 and max(values) > INT32_MAX:
        return (f"has negative values and {max(values)} (above {INT32_MAX}): the compiler would make it "
                "8 bytes, which probegen does not read")
    return None
