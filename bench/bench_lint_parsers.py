#!/usr/bin/env python3
"""The lint parsers against the libraries that could replace them (run by
hand: .venv/bin/python bench/bench_lint_parsers.py; needs `pip install lark
pycparser`, which probegen itself does not use).

1. The hand-written bpftrace lexer and parser (checks/lint/lexer.py,
   parser.py) against a Lark LALR grammar of the same language
   (bench/bpftrace.lark): lines, start-up, parse time on the corpus (every
   valid script of tests/lint_corpus and scripts/bpf), where each refuses
   broken.bt and bad text, and deep nesting.
2. The C definition reader (checks/lint/cdefs.py) against pycparser on the
   corpus's struct definitions and on what scripts write that C does not
   know (typedefs from headers the script does not include, bpftrace's u64).

CPU times, best of several runs; start-up in fresh processes, over
`python -c 'import probegen.checks.lint'`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import PYTHON, REPO, Command, race  # noqa: E402

sys.path.insert(0, str(REPO))
from probegen.checks.lint import cdefs, parser  # noqa: E402
from probegen.checks.lint.lexer import CDEF, Token  # noqa: E402

GRAMMAR = Path(__file__).with_name("bpftrace.lark")
LARK = f"lark.Lark(open({str(GRAMMAR)!r}).read(), parser='lalr', lexer='contextual', propagate_positions=True)"
PROBE = "usdt:/x:spdk:a"
# What a C file would get from <stdint.h> and <stdbool.h>.
STDINT = "".join(f"typedef int {t};" for t in ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                                               "uint32_t", "uint64_t", "size_t", "bool"))


def best_ms(action, rounds: int = 10) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return min(times) * 1000


def outcome(action) -> str:
    try:
        action()
        return "parsed"
    except RecursionError:
        return "RecursionError"
    except Exception as error:  # each library's own error type
        return " ".join(str(error).split())[:110]


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip() and not line.strip().startswith(("#", "//")))


def corpus() -> dict[str, str]:
    paths = sorted((REPO / "tests" / "lint_corpus").glob("*.bt")) + sorted((REPO / "scripts" / "bpf").rglob("*.bt"))
    return {p.name: p.read_text().replace("__EXE__", "/x") for p in paths}


def startup() -> None:
    codes = {"lint": "import probegen.checks.lint", "lark": "import probegen.checks.lint, lark",
             "grammar": f"import probegen.checks.lint, lark; {LARK}",
             "pycparser": "import probegen.checks.lint, pycparser; pycparser.CParser()"}
    commands = {k: Command(k, [PYTHON, "-c", code], env=None) for k, code in codes.items()}
    race(list(commands.values()), rounds=7)
    base = commands["lint"].best_cpu_ms
    print(f"   start-up over importing the linter: import lark {commands['lark'].best_cpu_ms - base:.0f} ms, "
          f"and build the grammar {commands['grammar'].best_cpu_ms - base:.0f} ms; "
          f"pycparser and its parser {commands['pycparser'].best_cpu_ms - base:.0f} ms")


def bench_lark(scripts: dict[str, str]) -> None:
    import lark

    grammar = lark.Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual", propagate_positions=True)
    valid = {name: text for name, text in scripts.items() if name != "broken.bt"}
    hand_lines = lines(REPO / "probegen" / "checks" / "lint" / "lexer.py") + lines(REPO / "probegen" / "checks" / "lint" / "parser.py")
    print(f"1. bpftrace: hand lexer+parser {hand_lines} lines of code (AST with positions, depth limit, messages); "
          f"Lark grammar {lines(GRAMMAR)} lines (a parse tree only)")
    # The committed scripts change with the generator; the grammar was
    # written for the corpus of its day, so time both on what it parses.
    parsed = [t for t in valid.values() if outcome(lambda t=t: grammar.parse(t)) == "parsed"]
    print(f"   {len(valid)} valid scripts: Lark parses {len(parsed)}")
    hand = best_ms(lambda: [parser.parse(t) for t in parsed])
    tree = best_ms(lambda: [grammar.parse(t) for t in parsed])
    print(f"   parse those {len(parsed)}: hand {hand:.1f} ms (to the AST), Lark {tree:.1f} ms (to a tree): {tree / hand:.2f}x")
    cases = {
        "broken.bt": scripts["broken.bt"],
        "string never closed": f'{PROBE} {{ printf("x); }}',
        "'+' in an attach point": "usdt:/opt/a+b:spdk:a { }",
        "600 nested parentheses": f"{PROBE} {{ $x = {'(' * 600}1{')' * 600}; }}",
    }
    for name, text in cases.items():
        print(f"   {name}:\n      hand: {outcome(lambda: parser.parse(text, name))}\n      Lark: {outcome(lambda: grammar.parse(text))}")


def bench_pycparser(scripts: dict[str, str]) -> None:
    from pycparser import c_parser

    c = c_parser.CParser()
    definitions = [d for name, text in scripts.items() if name != "broken.bt" for d in parser.parse(text).definitions]
    print(f"2. C definitions: cdefs.py {lines(REPO / 'probegen' / 'checks' / 'lint' / 'cdefs.py')} lines; "
          f"{len(definitions)} in the corpus, pycparser parses "
          f"{sum(outcome(lambda d=d: c.parse(d.text)) == 'parsed' for d in definitions)} as written, "
          f"{sum(outcome(lambda d=d: c.parse(STDINT + d.text)) == 'parsed' for d in definitions)} after stdint typedefs")
    ours = best_ms(lambda: cdefs.struct_definitions(definitions, "c.bt"), 50)
    theirs = best_ms(lambda: [outcome(lambda d=d: c.parse(STDINT + d.text)) for d in definitions], 50)
    print(f"   read them: cdefs.py {ours:.2f} ms (members, types, positions), pycparser {theirs:.2f} ms (a tree): "
          f"{theirs / ours:.1f}x")
    for name, text in {"a typedef from a header": "struct a { spdk_msg_fn fn; pid_t pid; };",
                       "bpftrace's u64": "struct a { u64 x; };",
                       "5,000 nested structs": "struct a { " + "struct b { " * 5000 + "int x;" + "} y;" * 5000 + " };"}.items():
        print(f"   {name}:\n      cdefs.py:  {outcome(lambda: cdefs.struct_definitions([Token(CDEF, text, 1, 1)], 'c.bt'))}"
              f"\n      pycparser: {outcome(lambda: c.parse(STDINT + text))}")


def main() -> None:
    scripts = corpus()
    bench_lark(scripts)
    bench_pycparser(scripts)
    startup()


if __name__ == "__main__":
    main()
