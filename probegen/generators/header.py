"""The C header of USDT probe macros, backed by <sys/sdt.h>."""

from __future__ import annotations

from pathlib import Path

from probegen.catalog import Catalog
from probegen.ctypes import system_headers
from probegen.output import GeneratedFile
from probegen.render import render

TEMPLATE = "usdt.h.j2"


def context(catalog: Catalog) -> dict:
    header = catalog.header
    probes = []
    for probe in catalog.probes:
        macro = f"{header.typed_prefix}_{probe.upper}"
        locals_ = [f"_pg_{arg.name}" for arg in probe.args]
        passed = list(locals_)
        if catalog.arg0:
            passed.insert(0, f"(uint64_t)({header.clock})" if probe.ticks else "0")
        probes.append({
            "probe": probe,
            "macro": macro,
            "params": [arg.name for arg in probe.args],
            "declarations": [arg.ctype.declare(local) for arg, local in zip(probe.args, locals_)],
            "locals": locals_,
            "semaphore": f"{catalog.provider}_{probe.name}_semaphore",
            "sdt_macro": f"DTRACE_PROBE{len(passed)}" if passed else "DTRACE_PROBE",
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
