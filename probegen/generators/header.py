"""The C header of USDT probe macros, backed by <sys/sdt.h>."""

from pathlib import Path
from types import SimpleNamespace

from probegen.catalog import Catalog
from probegen.catalog.names import ENABLED_SUFFIX, IDENTIFIER, LOCAL_PREFIX, no_semaphore_macro, typed_macro
from probegen.catalog.names import semaphore as semaphore_name
from probegen.catalog.ctype import system_headers
from probegen.files import marker
from probegen.files.output import GeneratedFile
from probegen.generators.render import render

KIND, WRITES_DIRECTORY = "header", False
TEMPLATE = "usdt.h.j2"


def render_header(catalog: Catalog, extern_semaphores: bool = False) -> str:
    """``extern_semaphores``: the object `probegen dtrace -G` writes defines the semaphores
    (else each object file carries a weak copy). Each probe's macros are an object, not a
    dict, with lists joined here, not in the template: a 2,000-probe header renders in half
    the time."""
    header, provider = catalog.header, catalog.provider
    # Style dtrace passes the arguments uncast, as dtrace -h's header does: a site's notes are the same.
    dtrace, no_semaphore = header.style == "dtrace", no_semaphore_macro(header)
    probes = []
    for probe in catalog.probes:
        macro = typed_macro(header, probe.name)
        enabled = macro + ENABLED_SUFFIX
        semaphore, has_semaphore = semaphore_name(provider, probe.name), catalog.has_semaphore(probe)
        arg0 = [arg.passed for arg in probe.note_args if arg.passed]  # SPDK's, passed by the macro itself
        sdt_macro = f"DTRACE_PROBE{len(arg0) + len(probe.args) or ''}"
        params = [arg.name for arg in probe.args]
        # A parameter named like a word of the expansion (an argument named after its enum tag,
        # the provider, the clock, the helper) would be substituted there too: it gets a trailing underscore.
        taken = {provider, probe.name, semaphore, sdt_macro, macro, enabled, no_semaphore,
                 *IDENTIFIER.findall(" ".join([*arg0, *(arg.ctype.spelling for arg in probe.args)]))}
        for i, param in enumerate(params):  # a renamed one must not meet another parameter either
            while param in taken or param in params[:i] + params[i + 1:]:
                param += "_"
            params[i] = param
        locals_ = [LOCAL_PREFIX + arg.name for arg in probe.args]
        passed = arg0 + (params if dtrace else locals_)
        probes.append(SimpleNamespace(
            probe=probe, macro=macro, enabled_macro=enabled, params=", ".join(params), semaphore=semaphore,
            has_semaphore=has_semaphore,  # else a weak 0 for the note
            enabled=f"(__builtin_expect({semaphore} != 0, 0) != 0)" if has_semaphore else "1",
            # (declaration of the typed local, parameter, local name); style dtrace has none
            locals=[] if dtrace else [(arg.ctype.declare(local), param, local)
                                      for arg, local, param in zip(probe.args, locals_, params)],
            passed_as_written=params if dtrace else [],
            sdt_call=f"{sdt_macro}({', '.join([provider, probe.name, *passed])})",
            guarded=probe.ticks and has_semaphore,  # reads the clock only when enabled
        ))
    return render(
        TEMPLATE, catalog=catalog, header=header, probes=probes, extern_semaphores=extern_semaphores,
        semaphores=any(p.has_semaphore for p in probes),  # <sys/sdt.h> then names one at every site
        no_semaphore=no_semaphore, compat_arities=range(1, catalog.max_args + 1),
        # <stdint.h> always: the clock is cast to uint64_t.
        system_headers=sorted({"stdint.h", *system_headers(a.ctype for p in catalog.probes for a in p.args)}),
    )


def semaphore_source(catalogs: list[Catalog]) -> str:
    """C defining each semaphore of the catalogs once (what `dtrace -G`'s object holds):
    hidden, so each binary or library keeps its own, in .probes as <sys/sdt.h> expects. Names
    are checked C identifiers."""
    names = [semaphore_name(c.provider, p.name) for c in catalogs for p in c.probes if c.has_semaphore(p)]
    hidden = '__attribute__((visibility("hidden"), section(".probes"), used))'
    lines = [f"__extension__ volatile unsigned short {name} {hidden};" for name in names]
    lines = lines or ["typedef int probegen_no_semaphores;  /* ISO C wants a declaration */"]
    return "\n".join([marker.LINES["c"], *lines]) + "\n"


def render_files(catalog: Catalog, output: Path, types=None) -> list[GeneratedFile]:
    return [GeneratedFile(output, render_header(catalog))]
