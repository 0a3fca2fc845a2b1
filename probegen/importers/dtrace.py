"""What SystemTap's `dtrace -h` and `dtrace -G` make from a provider file:
probegen's header (style dtrace, semaphores declared) and an object file
defining each semaphore once, for the link."""

import contextlib
import os
import shlex
import stat
import subprocess
import tempfile
from pathlib import Path

from probegen.errors import InputError, Location
from probegen.files.output import GeneratedFile, write_if_changed
from probegen.generators.header import render_header, semaphore_source
from probegen.importers.dfile import catalogs_of


def write_header(source, output=None, cpp: list[str] | None = None) -> None:
    """The build names the file, so it is replaced whoever wrote it (as
    dtrace does); it is rewritten only when its text changes."""
    output = output or Path(source).stem + ".h"
    text = "\n".join(render_header(c, extern_semaphores=True) for c in catalogs_of(source, output, cpp))
    write_if_changed(GeneratedFile(Path(output), text))


def write_object(source, output=None, cpp: list[str] | None = None) -> None:
    """Compiled with $CC and $CFLAGS (SystemTap's -G reads them too: a -m32
    build gets a 32-bit object); replaced only when its bytes change."""
    output = output or Path(source).stem + ".o"
    code = semaphore_source(catalogs_of(source, output, cpp))
    compiler = shlex.split(os.environ.get("CC") or "gcc")
    flags = shlex.split(os.environ.get("CFLAGS", "").replace("\\\n", " "))
    # Built beside the output, so that it replaces it in one step; the
    # compiler creates the file, with the mode it gives objects.
    directory = os.path.dirname(os.path.abspath(output))
    try:
        scratch_directory = tempfile.TemporaryDirectory(prefix=".probegen-dtrace.", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot create a file in {directory}: {exc.strerror}", Location(str(output))) from None
    with scratch_directory as scratch:
        temporary = os.path.join(scratch, "semaphores.o")
        command = [*compiler, *flags, "-fPIC", "-c", "-x", "c", "-", "-o", temporary]
        try:
            result = subprocess.run(command, input=code.encode(), capture_output=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"cannot run the compiler {compiler[0]!r}: {exc}", Location(str(output))) from None
        if result.returncode:
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(f"{compiler[0]} failed: {why[-1] if why else result.returncode}", Location(str(output)))
        mode = 0  # nothing there yet
        with contextlib.suppress(OSError):  # a FIFO or a device there is not read (it could block)
            mode = os.lstat(output).st_mode
            if stat.S_ISREG(mode) and Path(output).read_bytes() == Path(temporary).read_bytes():
                return  # unchanged: the link is not redone
        try:
            if stat.S_ISCHR(mode):  # /dev/null, say: written, as the header is (a rename would delete the device)
                Path(output).write_bytes(Path(temporary).read_bytes())
            else:
                os.replace(temporary, output)
        except OSError as exc:  # a directory there, say
            raise InputError(f"cannot write: {exc.strerror}", Location(str(output))) from None
