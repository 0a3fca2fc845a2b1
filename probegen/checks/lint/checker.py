"""A parsed script walked with the catalog: where it drifted from it.

Each probe block is walked once per catalog probe it attaches to (``argN`` differs in each).
``$variables`` carry what was assigned to them; where if/else branches disagree, nothing.
Where a value's type is not known, nothing is said: a finding must be certain.
"""

import difflib
import fnmatch
import functools
import re

from probegen.catalog.model import Catalog, Probe
from probegen.catalog.ctype import Kind
from probegen.errors import Diagnostic, InputError, Location, NoSuchMember
from probegen.checks.lint import layout, parser as ast
from probegen.checks.lint.cdefs import struct_definitions
from probegen.checks.lint.formats import Value, mismatch, parse_format, suggest
from probegen.checks.lint.lexer import Token
from probegen.generators.typesource import member_ctype, spelling

# argN, N's leading zeros aside: int() refuses thousands of digits, and 19 are past any probe's arguments.
_ARG = re.compile(r"arg0*([0-9]+)\Z")
_WILDCARD = re.compile(r"[*?\[]")
# A field of an attach point: up to a ':' outside quotes (``uprobe:"/a:b":f`` has three).
_FIELD = re.compile(r'(?<![^:])(?:"[^"]*"|[^:"])*')
# Hints for conversions bpftrace 0.17 does not know.
_UNKNOWN_CONVERSION_HINTS = {"i": "use %d", "#": "write 0x%lx", "+": "drop the flag"}


def _merge(first: dict, second: dict) -> dict:
    """What both branches agree on, or what one alone set."""
    disagree = {name: None for name in first.keys() & second.keys() if first[name] != second[name]}
    return {**first, **second, **disagree}


def _not_an_address(ctype, struct: str) -> str | None:
    """Why a value of this C type is not a pointer to ``struct``, or None."""
    if ctype.is_integer_like and not ctype.pointer_sized:
        return "it is an integer, not an address"
    if ctype.kind is Kind.STRING:
        return "it is a string"
    if ctype.struct_name and ctype.struct_name != struct:
        return f"the catalog says it points to struct {ctype.struct_name}"
    return None


def _close(name: str, names) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class Checker:
    def __init__(self, catalog: Catalog, script: ast.Script, types, types_name: str | None):
        self.catalog, self.script = catalog, script
        self.types, self.types_name = types, types_name  # a probegen.dwarf.DwarfTypes, or None
        self.catalog_name = catalog.path.name
        self.structs = struct_definitions(script.definitions, script.path, catalog.typedefs,
                                          8 if types is None else types.pointer_size)
        self.findings: set[Diagnostic] = set()  # sorted at the end
        self.probe: Probe | None = None  # the probe the block is walked for

    def report(self, at: tuple[int, int], message: str, rule: str):
        self.findings.add(Diagnostic(Location(self.script.path, *at), message, rule=rule))

    def run(self) -> list[Diagnostic]:
        if self.types is not None:
            self.copied_structs()
        for block in self.script.blocks:
            probes = dict.fromkeys(probe for point in block.attach_points for probe in self.attach_point(point))
            for probe in probes or [None]:
                self.probe = probe
                self.statements((block.predicate, *block.body), {})  # the predicate None: nothing to check
        return sorted(self.findings)

    def attach_point(self, point: Token) -> list[Probe]:
        """The catalog probes a usdt attach point names, its name and provider checked."""
        fields = [(m[0].strip('"'), point.column + m.start()) for m in _FIELD.finditer(point.text)]
        if fields[0][0] not in ("usdt", "U") or len(fields) not in (3, 4):
            return []
        name, name_column = fields[-1]
        ours = self.catalog.provider  # a C name: no wildcard, so with no provider given it is not another
        provider, provider_column = fields[2] if len(fields) == 4 else (ours, 0)
        wildcard = _WILDCARD.search(name) is not None
        matched = [p for p in self.catalog.probes if fnmatch.fnmatchcase(p.name, name)]  # no wildcard: one or none
        if not fnmatch.fnmatchcase(ours, provider):  # another provider's probe is not this catalog's
            if matched and not wildcard:
                self.report((point.line, provider_column),
                            f"provider '{provider}' for probe '{name}': {self.catalog_name} says '{ours}'",
                            "wrong-provider")
            return [] if wildcard else matched
        if not matched:
            hint = "" if wildcard else _close(name, [p.name for p in self.catalog.probes])
            self.report((point.line, name_column), f"'{name}' matches no probe in {self.catalog_name}" if wildcard
                        else f"unknown probe '{name}': not in {self.catalog_name}{hint}", "unknown-probe")
        return matched

    def statements(self, statements, env: dict) -> dict:
        """``env`` (what is known of each $variable) as the statements leave it."""
        for statement in statements:
            if isinstance(statement, ast.Assign):
                value = self.value(statement.value, env)
                self.value(statement.target, env)  # a map's keys checked
                if isinstance(statement.target, ast.Name):
                    env[statement.target.name] = value if statement.op == "=" else None
            elif isinstance(statement, ast.If):  # the else's condition None: nothing to check
                branches = [self.statements((condition, *body), dict(env)) for condition, body in statement.branches]
                env.update(functools.reduce(_merge, branches))
            else:
                self.value(statement, env)
        return env

    def value(self, node, env: dict) -> Value | None:
        """What is known about an expression's value, its parts checked."""
        if isinstance(node, ast.Name) and (match := _ARG.match(node.name)):
            return self.argument(node, int(match[1][:19]))
        if isinstance(node, ast.Name):  # a $variable, or a builtin no assignment names
            known = env.get(node.name)
            return known and known._replace(describe=f"{node.name} ({known.describe})", expression=node.name)
        if isinstance(node, ast.Call):
            values = [self.value(arg, env) for arg in node.args]
            if node.name == "str" and node.args:
                return self.str_call(node, values[0])
            if node.name == "printf":
                self.printf(node, values)
            return None
        if isinstance(node, ast.Cast):
            return self.cast(node, self.value(node.operand, env))
        if isinstance(node, ast.Member):
            return self.member(node, self.value(node.base, env))
        for part in getattr(node, "parts", ()):  # operators and maps say nothing of their value
            self.value(part, env)
        return None

    def argument(self, node: ast.Name, index: int) -> Value | None:
        probe = self.probe
        if probe is None:
            return None
        count = len(probe.note_args)
        if index >= count:
            have = f"arg0..arg{count - 1}" if count else "no arguments"
            why = (" (arg0 is the leading 0 or tick count; the catalog's first argument is arg1)"
                   if self.catalog.arg0 else "")
            self.report((node.line, node.column), f"{node.name} is past the arguments of {probe.name}: "
                        f"it has {have}{why}", "arg-out-of-range")
            return None
        arg = probe.note_args[index]
        what = arg.doc if arg.passed else arg.name  # SPDK's arg0: "clock: ...", "always 0"
        return Value(f"{node.name} of {probe.name} ({what}, {arg.ctype.spelling})", arg.ctype,
                     struct=arg.ctype.struct_name, expression=node.name)

    def str_call(self, node: ast.Call, value: Value | None) -> Value:
        if value is None:
            return Value("str(...)", text=True)
        if not value.text and value.ctype is not None and value.ctype.kind is not Kind.STRING:
            self.report(ast.start(node.args[0]), f"str() of {value.describe}, which is not a string: "
                        f"print it with {suggest(value)}", "str-of-non-string")
            return Value(f"str({value.expression or '...'})", text=True)
        # A string the catalog gives a length (it is not NUL-terminated) read without it.
        # Only argument() makes a value whose expression is argN.
        match = _ARG.match(value.expression or "")
        arg = self.probe.note_args[int(match[1])] if match else None
        length = self.probe.arg(arg.length) if arg else None
        given = node.args[1] if len(node.args) > 1 else None
        if length is not None and getattr(given, "name", None) != f"arg{length.index}":
            self.report(ast.start(node), f"str({value.expression}) of '{arg.name}', which is not NUL-terminated: "
                        f"its length is '{length.name}' (arg{length.index}); print buf({value.expression}, "
                        f"arg{length.index}) with %r, or str({value.expression}, arg{length.index})",
                        "str-without-length")
        return Value(f"{value.describe} read by str()", text=True)

    def printf(self, node: ast.Call, values: list):
        if not node.args or not isinstance(node.args[0], ast.Str):
            return
        text = node.args[0]
        conversions, unknown = parse_format(text.raw)
        for bad in unknown:
            hint = _UNKNOWN_CONVERSION_HINTS.get(bad.text[-1] if bad.text[-1] == "i" else bad.text[1:2])
            self.report((text.line, text.column + 1 + bad.offset),
                        f"'{bad.text}' is not a conversion bpftrace knows: it prints as text and takes "
                        f"no argument" + (f"; {hint}" if hint else ""), "printf-conversion")
        if unknown:
            return  # the arguments no longer pair with conversions
        given = len(node.args) - 1
        if given != len(conversions):
            self.report(ast.start(node), f"printf format has {len(conversions)} conversion(s) but {given} "
                        f"argument(s) follow it", "printf-arg-count")
        for conversion, arg, value in zip(conversions, node.args[1:], values[1:]):
            if value is not None and (problem := mismatch(conversion, value)):
                self.report(ast.start(arg), problem, "printf-type")

    def cast(self, node: ast.Cast, value: Value | None) -> Value | None:
        if node.struct_name is None:
            ctype = ast.CAST_INTEGERS.get(node.type_text)
            return Value(f"({node.type_text}) value", ctype) if ctype else None
        if value is not None and value.ctype is not None and not value.text:
            if problem := _not_an_address(value.ctype, node.struct_name):
                self.report(ast.start(node.operand), f"cast of {value.describe} to '{node.type_text}': {problem}",
                            "cast")
        return Value(value.describe if value else "a pointer", struct=node.struct_name)

    def member(self, node: ast.Member, base: Value | None) -> Value | None:
        """Checked against the script's own copy of the struct (what bpftrace
        compiles against), else against the binary's debug info."""
        if base is None or base.struct is None:
            return None
        struct = base.struct
        definition = self.structs.get(struct)
        if definition is not None:
            info = definition.members.get(node.name)
            if info is None:
                self.report((node.line, node.column),
                            f"struct {struct} has no member '{node.name}' (defined at "
                            f"{definition.location}){_close(node.name, definition.members)}", "struct-member")
                return None
            return Value(f"{node.name} of struct {struct}", info.ctype, info.text, info.struct)
        if self.types is None:
            return None
        path = f"{base.path}.{node.name}" if base.path else node.name
        try:
            ctype = member_ctype(self.types, struct, path)
        except NoSuchMember as exc:  # the script's mistake, unlike what follows
            self.report((node.line, node.column), f"in the debug info of {self.types_name}: {exc}", "struct-member")
            return None
        except InputError:
            # No such struct in the binary (nothing to say), or a member scripts cannot
            # print (a struct held by value: the path from the outer struct reaches into it).
            return Value(f"{node.name} of struct {struct}", struct=struct, path=path)
        text = ctype.kind is Kind.STRING and "[" in ctype.spelling
        return Value(f"{path} of struct {struct}", None if text else ctype, text, ctype.struct_name)

    def copied_structs(self):
        """The script's copies of structs (SPDK's sched.bt keeps some by hand) against
        the binary: each member there, where the copy puts it, as big and read alike."""
        for definition in self.structs.values():
            for name, info in definition.members.items():
                at = (info.location.line, info.location.column)
                try:
                    member = self.types.member(definition.name, name)
                except NoSuchMember as exc:
                    self.report(at, f"member '{name}' of the script's copy of struct {definition.name} "
                                f"is not in {self.types_name}: {exc}", "struct-copy")
                    continue
                except InputError:
                    continue  # not in the binary at all (a kernel struct)
                if info.bit is None:
                    continue  # laid out no further than a declaration this cannot size
                if problem := layout.mismatch(info, member, spelling(member.type), self.types_name):
                    self.report(at, f"member '{name}' of the script's copy of struct {definition.name}: "
                                f"{problem}", "struct-layout")
