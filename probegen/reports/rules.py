"""The kinds of findings each command reports, by rule id (verify's JSON ``check``, a Diagnostic's ``rule``):
each one a command reports is here, as SARIF results point at its ``reportingDescriptor`` by index."""

CATALOG_ERROR = {"catalog-error": "The catalog has an error, so nothing else was checked"}

RULES: dict[str, dict[str, str]] = {
    "verify": {
        "missing-probe": "A probe of the catalog has no site in the binaries",
        "undocumented-probe": "A probe of the catalog's provider in the binaries is not in the catalog",
        "arg-count": "A probe site has another number of arguments than the catalog says",
        "arg-type": "An argument at a probe site has another size or sign than its C type in the catalog",
        "arg0": "arg0 at a probe site is not the clock (ticks probes) or the literal 0 (the others)",
        "semaphore": "A probe the catalog gives a semaphore (ticks, enabled_check) has none in the binary",
        "no-notes": "A binary has no .note.stapsdt section: it was built without USDT",
        "unexpected-probe": "A build meant to have USDT off carries a probe of the provider",
        "enum-drift": "An enum of the catalog has other enumerators or values in the binary's debug info",
        "member-drift": "A struct member path of the catalog is not in the binary's debug info, or cannot be printed",
        **CATALOG_ERROR,
    },
    "lint": {
        "unknown-probe": "A usdt attach point names no probe of the catalog",
        "wrong-provider": "A usdt attach point names another provider than the catalog's",
        "arg-out-of-range": "argN past the probe's arguments",
        "str-of-non-string": "str() of an argument that is not a string",
        "str-without-length": "str() of a string that is not NUL-terminated, without its length argument",
        "printf-conversion": "A printf conversion that bpftrace does not know",
        "printf-arg-count": "printf has another number of arguments than its format has conversions",
        "printf-type": "A printf conversion does not fit its argument's type (or prints a string without str())",
        "cast": "A cast to a struct pointer of a value that is not that struct's address",
        "struct-member": "A struct member that the struct does not have",
        "struct-copy": "A member of the script's copy of a struct is not in the binary's struct",
        "struct-layout": "A member of the script's copy of a struct is at another offset, of another size or type "
                         "than in the binary",
        **CATALOG_ERROR,
    },
    "check": {
        "stale-file": "A generated file differs from what its catalog generates",
        "leftover-file": "A generated file in an output directory that its catalog no longer generates",
        **CATALOG_ERROR,
    },
}
