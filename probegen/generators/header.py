"""The C header of USDT probe macros, backed by <sys/sdt.h>."""

from __future__ import annotations

import re
from pathlib import Path

from probegen.catalog import Catalog
from probegen.ctypes import system_headers
from probegen.output import GeneratedFile
from probegen.render import render

TEMPLATE = "usdt.h.j2"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def context(catalog: Catalog) -> dict:
    header = catalog.header
    probes = []
    for probe in catalog.probes:
        macro = f"{header.typed_prefix}_{probe.upper}"
        semaphore = f"{catalog.provider}_{probe.name}_semaphore"
        locals_ = [f"_pg_{arg.name}" for arg in probe.args]
        passed = list(locals_)
        if catalog.arg0:
            passed.insert(0, f"(uint64_t)({header.clock})" if probe.ticks else "0")
        sdt_macro = f"DTRACE_PROBE{len(passed)}" if passed else "DTRACE_PROBE"
        # A parameter named like a word of the expansion (an argument named
        # after its enum tag, the provider, the clock) would be substituted
        # there too; such parameters get a trailing underscore.
        taken = set(_IDENTIFIER.findall(" ".join(
            [catalog.provider, probe.name, semaphore, sdt_macro, macro, *passed[:1],
             *(arg.ctype.spelling for arg in probe.args)])))
        params = []
        for arg in probe.args:
            param = arg.name
            while param in taken:
                param += "_"
            params.append(param)
        probes.append({
            "probe": probe,
            "macro": macro,
            "params": params,
            "declarations": [arg.ctype.declare(local) for arg, local in zip(probe.args, locals_)],
            "locals": locals_,
            "semaphore": semaphore,
            "sdt_macro": sdt_macro,
            "sdt_args": passed,
            "guarded": probe.ticks and catalog.arg0 and header.semaphores,
            "first_index": catalog.arg_offset,
        })
    catalog_name = catalog.path.name
    # <stdint.h> always: the clock is cast to uint64_t.
    return {
        "catalog": catalog,
        "header": header,
        "catalog_name": catalog_name,
        "probes": probes,
        "system_headers": sorted({"stdint.h", *system_headers(a.ctype for p in catalog.probes for a in p.args)}),
        "compat_arities": range(1, catalog.max_args + 1),
    }


def render_header(catalog: Catalog) -> str:
    return render(TEMPLATE, **context(catalog))


def render_files(catalog: Catalog, output: Path) -> list[GeneratedFile]:
    return [GeneratedFile(Path(output), render_header(catalog))]
