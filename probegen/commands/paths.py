"""Print where the files probegen ships for builds and editors are.

make: probegen.mk, to include from a Makefile; cmake: the directory of
probegenConfig.cmake, for find_package(probegen); schema: the catalog's
JSON Schema. With one option, print only that path (for scripts and
build files, e.g. ``include $(shell probegen paths --make)``).
"""

HELP = "print the paths of probegen.mk, the CMake module and the catalog's JSON Schema"


def configure(parser):
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--make", dest="which", action="store_const", const="make",
                       help="only probegen.mk")
    which.add_argument("--cmake-dir", dest="which", action="store_const", const="cmake",
                       help="only the directory for find_package(probegen) (-Dprobegen_DIR=...)")
    which.add_argument("--schema", dest="which", action="store_const", const="schema",
                       help="only the catalog's JSON Schema")


def run(args) -> int:
    from probegen import data

    paths = {"make": data.MAKE_FRAGMENT, "cmake": data.CMAKE_DIR, "schema": data.SCHEMA}
    print(paths[args.which] if args.which else "\n".join(f"{name}: {path}" for name, path in paths.items()))
    return 0
