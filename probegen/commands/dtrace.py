"""SystemTap's `dtrace` command line, as build systems run it: -h writes
the header of a provider file, -G the object file that defines its
semaphores. `./configure DTRACE=$(command -v probegen-dtrace)` or a meson
native file with `dtrace = 'probegen-dtrace'` swaps probegen in.

    probegen-dtrace -h -s FILE.d [-o FILE.h] [-C] [-I DIR] [-D NAME[=VALUE]]
    probegen-dtrace -G -s FILE.d [-o FILE.o] [OBJECT...]

-C runs the file through cpp ($CPP) first (a file with #if is, always);
-G compiles with $CC (default gcc) and $CFLAGS, as SystemTap's does; the
objects after -G are accepted and left alone, as SystemTap leaves them.
-k, --types, --no-pyparsing, -x OPTION, -32, -64, -fpic and -fPIC are
accepted and do nothing, as with SystemTap; any other option is refused
(exit 2).
"""

import sys

from probegen.errors import CommandError

HELP = "SystemTap dtrace's -h and -G, for build systems that run $DTRACE (also: probegen-dtrace)"
_FLAGS = {"-h", "-G", "-C", "-k", "--types", "--no-pyparsing", "-32", "-64", "-fpic", "-fPIC"}  # -k on: no effect


def main(argv: list[str]) -> int:
    if not argv or argv in (["--help"], ["-?"]):
        print(f"usage: probegen dtrace (or probegen-dtrace) -h|-G -s FILE.d [-o FILE] [-C] [-I DIR] "
              f"[-D NAME[=VALUE]] [OBJECT...]\n\n{__doc__}", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    mode, *options = _parse(argv)
    from probegen.importers import dtrace as front

    (front.write_header if mode == "-h" else front.write_object)(*options)
    return 0


def run(args) -> int:  # reached only through main
    return main([])


def _parse(argv: list[str]) -> tuple:
    """(-h or -G, the provider file, the output or None, cpp's options or None: no -C)"""
    flags, values, cpp = set(), {}, []
    words = iter(argv)
    for word in words:
        if word in ("-s", "-o", "-I", "-D", "-x"):
            value = values[word] = next(words, None)
            if value is None:
                raise CommandError(f"{word} needs a value")
            if word in ("-I", "-D"):
                cpp += [word, value]
        elif word.startswith(("-I", "-D")):  # -IDIR, -DNAME=VALUE
            cpp.append(word)
        elif word in _FLAGS:
            flags.add(word)
        elif word.startswith("-"):
            raise CommandError(f"unsupported option {word!r} (supported: -h, -G, -s, -o, -C, -I, -D, -x, -k, --types, "
                               "--no-pyparsing, -32, -64, -fpic, -fPIC)")
        # other words are the objects -G is given: SystemTap's -G leaves them alone
    modes = flags & {"-h", "-G"}
    if len(modes) != 1:
        raise CommandError("give one of -h (header) and -G (object file)")
    if "-s" not in values:
        raise CommandError("no provider file: give -s FILE.d")
    return modes.pop(), values["-s"], values.get("-o"), cpp if "-C" in flags else None
