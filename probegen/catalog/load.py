"""A catalog file as the model, with every problem reported at once: libyaml
composes nodes (they keep line and column), schema_check turns them into JSON
data checked against the schema, and the builder checks the meaning (C names,
types, counts, duplicates) as it models them.
"""

import functools
import gc
import re
from pathlib import Path

import yaml

from probegen.bpftrace import KEYWORDS
from probegen.catalog.ctype import C_KEYWORDS, INT32_MAX, INT32_MIN, UINT32_MAX, CTypeError, Kind, enum_size
from probegen.catalog.ctype import is_identifier, parse_ctype, shown
from probegen.catalog.cvalidate import CExpressionError, clock_expression, include_problem
from probegen.catalog.model import (
    MAX_NAMED_ENUMS, SDT_MAX_ARGS, Arg, Catalog, EnumDecl, Enumerator, HeaderConfig, Probe, spdk_arg0,
)
from probegen.catalog.names import HEADER_NAMES, SCRIPT_NAMES, default_guard
from probegen.catalog.names import problems as name_problems
from probegen.catalog.outputs import output_paths
from probegen.catalog.schema_check import STR, Refused, plain, structure_problems
from probegen.catalog.spans import build_spans
from probegen.errors import CatalogError, Diagnostic, Location

# C++ keywords that C headers define as macros (before C23); bool, true
# and false are refused with the other system macros (catalog.names).
_KEYWORD_MACROS = {"alignas": "<stdalign.h>", "alignof": "<stdalign.h>", "static_assert": "<assert.h>",
                   "thread_local": "<threads.h>"}
# Members of the struct itself, through nested and anonymous members; not
# through pointers ("->"), which the scripts would have to read again.
_MEMBER_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
# Tags that mean something only to PyYAML's constructor ('<<' merges, '='):
# in a catalog they are text.
_CONSTRUCTOR_TAGS = frozenset(("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"))


@functools.lru_cache(maxsize=256)
def _resolve(kind, value, implicit, _resolver=yaml.resolver.Resolver()):
    """The tag of an untagged node; catalogs repeat keys, types and flags, so
    the cache answers 95% of the calls for SPDK's probes."""
    tag = _resolver.resolve(kind, value, implicit)
    return STR if tag in _CONSTRUCTOR_TAGS else tag


class _Loader(yaml.CSafeLoader):
    """libyaml composes (up to 1,000 levels deep); aliases stay shared nodes,
    never expanded, for schema_check.plain to refuse."""

    resolve = staticmethod(_resolve)


def parse_catalog(data: bytes, path: Path, header_output=None) -> Catalog:
    """``path`` names the catalog in messages and anchors its outputs;
    ``header_output`` (header -o) names the guard the catalog does not set."""
    # The collector would walk the growing node tree again and again: 10,000
    # SPDK-shaped probes compose in 0.18 s of CPU without it, 1.1 s with it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        root = _compose(data, str(path))
        builder = _Builder(str(path), path.resolve(), header_output)
        try:
            walked = plain(root, marked=b"&" in data or b"!" in data)
        except Refused as exc:
            node, message = exc.args
            raise CatalogError([Diagnostic(builder.loc(node), message)]) from None
        catalog = builder.build(root, *walked)
    finally:
        if collecting:
            gc.enable()
    if builder.diagnostics:
        raise CatalogError(builder.diagnostics)
    return catalog


def _compose(data: bytes, shown_path: str) -> yaml.Node:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError([Diagnostic(
            _location(shown_path, data, exc.start),
            f"file is not UTF-8 (byte 0x{data[exc.start]:02x}); save the catalog as UTF-8",
        )]) from None
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:  # libyaml's scanner, parser and composer mark every problem
        where = Location(shown_path, exc.problem_mark.line + 1, exc.problem_mark.column + 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise CatalogError([Diagnostic(where, f"YAML syntax: {problem}")]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses, at its index in the text
        raise CatalogError([Diagnostic(_location(shown_path, text, exc.position),
                                       f"YAML: unacceptable character #x{exc.character:04x}: {exc.reason}")]) from None
    finally:
        loader.dispose()
    if root is None:
        raise CatalogError([Diagnostic(Location(shown_path, 1, 1),
                                       "empty catalog: expected 'provider:' and 'probes:'")])
    return root


def _c_integer(text: str) -> int:
    """A C integer constant with an optional sign, as the schema's enumerator
    pattern allows; ValueError for octal digits past 7."""
    sign, digits = re.fullmatch(r"([-+]?)\s*(\w+?)[uUlL]*", text).groups()
    octal = re.fullmatch("0[0-9]+", digits)
    if octal and not set(digits) <= set("01234567"):
        raise ValueError(f"'{digits}' is not an octal constant (a leading 0 means octal in C)")
    return int(sign + digits, 8 if octal else 0)


def _location(shown_path: str, text: str | bytes, index: int) -> Location:
    newline = "\n" if isinstance(text, str) else b"\n"
    return Location(shown_path, text.count(newline, 0, index) + 1, index - text.rfind(newline, 0, index))


class _Builder:
    def __init__(self, shown_path: str, path: Path, header_output=None):
        self.header_output = None if header_output is None or str(header_output) == "-" else Path(header_output)
        self.shown = shown_path
        self.path = path
        self.diagnostics: list[Diagnostic] = []
        self._ctypes: dict = {}  # spelling -> CType
        self._reported: set[tuple[int, int]] = set()  # (line, column) of each problem
        self._header_nodes: dict[str, yaml.Node] = {}  # 'header:' key (or 'provider') -> value node

    def loc(self, node: yaml.Node) -> Location:
        return Location(self.shown, node.start_mark.line + 1, node.start_mark.column + 1)

    def error(self, node: yaml.Node, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.loc(node), message))
        self._reported.add((node.start_mark.line, node.start_mark.column))

    def reported(self, node: yaml.Node) -> bool:  # by the schema, say
        return (node.start_mark.line, node.start_mark.column) in self._reported

    def fields(self, node: yaml.MappingNode) -> dict[str, yaml.Node]:
        return {k.value: v for k, v in node.value}

    def entries(self, node, data):
        """(node, fields, values, name) of each mapping in the list ``node``
        (enums, probes, arguments and spans all have a name), which drops
        each once modelled: nodes are most of a big catalog's memory."""
        if not isinstance(node, yaml.SequenceNode):
            return
        for index, (item, values) in enumerate(zip(node.value, data)):
            node.value[index] = data[index] = None
            if isinstance(item, yaml.MappingNode):
                yield item, self.fields(item), values, values.get("name")

    def build(self, root: yaml.Node, data, problems) -> Catalog | None:
        if not isinstance(root, yaml.MappingNode):
            self.error(root, "catalog: expected a mapping")
            return None
        top = self.fields(root)
        # Check every part, even when another part is broken, to report all.
        for node, message in [*problems, *structure_problems(root, data)]:
            self.error(node, message)
        # Where these are not a string and a list, the schema said so.
        if not all(isinstance(top.get(k), (yaml.ScalarNode, yaml.SequenceNode)) for k in ("provider", "probes")):
            return None
        provider = data["provider"] if isinstance(data["provider"], str) else ""  # else the schema said so
        self.keyword_check(top.get("provider"), provider, "provider")
        arg0 = data.get("arg0") is True
        typedefs = self.build_typedefs(top.get("typedefs"))
        enums = self.build_enums(top.get("enums"), data.get("enums"))
        header = self.build_header(top.get("header"), data.get("header"), top.get("outputs"), provider)
        outputs = output_paths(self, top.get("outputs"), data.get("allow_outside_outputs") is True)
        probes = self.build_probes(top.get("probes"), data.get("probes"), typedefs, arg0, header.clock, enums)
        spans = build_spans(self, top.get("spans"), data.get("spans"), probes)
        if header.clock is None and arg0 and any(p.ticks for p in probes):
            self.error(top.get("header") or root,
                       "ticks probes need 'clock:' under 'header:' (the C expression for arg0, e.g. spdk_get_ticks())")
        catalog = Catalog(
            path=self.path, provider=provider, arg0=arg0, header=header, probes=tuple(probes),
            enums=tuple(enums.values()), typedefs=typedefs, outputs=outputs, spans=spans,
        )
        if not self.diagnostics:  # names of a broken catalog would only repeat its problems
            self._header_nodes.setdefault("provider", top.get("provider"))
            for origin, message in name_problems(catalog):
                if header.guard_derived and self.header_output is not None and header.guard in message:
                    message += (f" (the include guard {header.guard} is made from the provider and "
                                f"'{self.header_output.name}'): set header.guard in the catalog")
                if isinstance(origin, str):  # a key under 'header:', or 'provider'
                    origin = self.loc(self._header_nodes.get(origin, top.get("header") or root))
                self.diagnostics.append(Diagnostic(origin, message))
        return catalog

    def keyword_check(self, node, name, what) -> bool:
        """Whether ``name`` (the schema refused any that is no identifier) can
        name a ``what``, reporting a keyword. A probe may be one (libstdc++'s
        throw and catch: sdt.h pastes it into symbols), not a standard macro."""
        if node is None or not isinstance(name, str):
            return False
        if name in C_KEYWORDS and what != "probe":
            article = "an" if what[0] in "ae" else "a"  # an argument, an enum, an enable_macro
            self.error(node, f"{what}: '{name}' is a C keyword and cannot name {article} {what}")
            return False
        if name in _KEYWORD_MACROS:
            self.error(node, f"probe: '{name}' is a macro in C ({_KEYWORD_MACROS[name]} defines it) "
                             "and cannot name a probe")
            return False
        return name.isascii() and name.isidentifier()  # a keyword here is a probe's name

    def unique(self, fields, name, what, seen: dict[str, yaml.Node]) -> bool:
        """Whether ``name`` can name a ``what`` and is not yet in ``seen``
        (name -> its node), which it then joins."""
        if not self.keyword_check(fields.get("name"), name, what):
            return False
        if name in seen:
            self.error(fields["name"], f"duplicate {what} name '{name}' (first defined at {self.loc(seen[name])})")
            return False
        seen[name] = fields["name"]
        return True

    def build_typedefs(self, node) -> dict:
        typedefs = {}
        for key_node, value_node in node.value if isinstance(node, yaml.MappingNode) else ():
            name = key_node.value
            if not is_identifier(name):
                self.error(key_node, f"typedef: '{name}' is not a C identifier" if name not in C_KEYWORDS
                           else f"typedef: '{name}' is a C keyword")
            elif isinstance(value_node, yaml.ScalarNode):  # else the schema said so
                try:
                    typedefs[name] = parse_ctype(value_node.value, typedefs)
                except CTypeError as exc:
                    self.error(value_node, f"typedef '{name}': {exc}")
        return typedefs

    def build_enums(self, node, data) -> dict[str, EnumDecl]:
        enums: dict[str, EnumDecl] = {}  # by name: duplicates looked up, not scanned for (linear in a hostile catalog)
        for item, fields, values, name in self.entries(node, data):
            if not self.keyword_check(fields.get("name"), name, "enum"):
                continue
            if name in enums:
                self.error(fields["name"], f"enum '{name}' is declared twice")
                continue
            enumerators: list[Enumerator] = []  # duplicates too (reported), as the values go
            names: set[str] = set()
            next_value = 0
            listed = fields.get("enumerators")
            for entry in listed.value if isinstance(listed, yaml.SequenceNode) else ():
                if self.reported(entry):  # not 'NAME' or 'NAME = VALUE', the schema said
                    continue
                enumerator, equals, value = (part.strip() for part in entry.value.partition("="))
                if enumerator in C_KEYWORDS:
                    self.error(entry, f"enumerator '{enumerator}' is a C keyword")
                    continue
                if equals:
                    try:
                        next_value = _c_integer(value)
                    except ValueError as exc:  # octal digits past 7
                        self.error(entry, f"enum '{name}': enumerator '{enumerator}': {exc}")
                        continue
                if not INT32_MIN <= next_value <= UINT32_MAX:
                    self.error(entry, f"enum '{name}': enumerator '{enumerator}' = {next_value} is outside "
                                      f"{INT32_MIN}..{UINT32_MAX}: probegen reads enums as 4 bytes "
                                      "(int or unsigned int)")
                    break  # the values after it would all be out of range too
                if enumerator in names:
                    self.error(entry, f"enum '{name}': enumerator '{enumerator}' appears twice")
                names.add(enumerator)
                enumerators.append(Enumerator(enumerator, next_value, self.loc(entry)))
                next_value += 1
            # Enum arguments are 4 bytes in every generated file, as the note records an enum
            # whose values fit int or unsigned int (they print by name with bpftrace 0.17 and
            # BCC); a compiler widens any other to 8 bytes, which scripts would misread.
            if enum_size(e.value for e in enumerators) > 4:  # reported at the largest
                widest = max(enumerators, key=lambda e: e.value)
                self.diagnostics.append(Diagnostic(widest.location, (
                    f"enum '{name}' has negative values and {widest.value} (above {INT32_MAX}): the compiler "
                    "would make it 8 bytes, which probegen does not read")))
            enums[name] = EnumDecl(name, self.loc(item), values.get("strip_prefix", ""), tuple(enumerators))
        return enums

    def build_header(self, node, data, outputs_node, provider: str) -> HeaderConfig:
        fields = self.fields(node) if isinstance(node, yaml.MappingNode) else {}
        values = data if fields else {}
        for key in HEADER_NAMES:
            self.keyword_check(fields.get(key), values.get(key), key)
        self._header_nodes.update(fields)
        guard = values.get("guard")
        if guard is None:
            out = self.fields(outputs_node).get("header") if isinstance(outputs_node, yaml.MappingNode) else None
            if out is not None and self.header_output is None:
                self._header_nodes["guard"] = out  # the guard is made from this path
            written = self.header_output or (out.value if isinstance(out, yaml.ScalarNode) else "probes.h")
            guard = default_guard(provider, str(written))
        clock = None
        if isinstance(fields.get("clock"), yaml.ScalarNode):
            text = str(values["clock"])
            try:
                clock = clock_expression(text)  # rebuilt from its tokens
            except CExpressionError as exc:
                self.error(fields["clock"], f"clock: '{shown(text)}' is not a C expression probegen accepts ({exc}): "
                           "write names, numbers, calls, member access, casts and operators, e.g. spdk_get_ticks()")
                clock = "0"  # never written: the catalog is refused; no second error for ticks probes
        listed = fields.get("includes")
        # Each checked and all kept: a catalog with a bad one is refused.
        includes = tuple(map(str, values["includes"])) if isinstance(listed, yaml.SequenceNode) else ()
        for item, text in zip(listed.value if includes else (), includes):
            problem = include_problem(text) if isinstance(item, yaml.ScalarNode) else None  # else the schema said so
            if problem:
                self.error(item, f"includes: {problem}")
        dtrace = values.get("style") == "dtrace"
        return HeaderConfig(
            guard=guard, enable_macro=values.get("enable_macro", None if dtrace else "PROBEGEN_USDT"),
            disable_macro=values.get("disable_macro"), includes=includes,
            compat_prefix=values.get("compat_prefix"),
            typed_prefix=values.get("typed_prefix", provider.upper() if dtrace else "PROBE"), clock=clock,
            semaphores=bool(values.get("semaphores", True)), style="dtrace" if dtrace else "probegen",
            guard_derived=values.get("guard") is None,
        )

    def build_probes(self, node, data, typedefs, arg0: bool, clock: str | None, enums: dict) -> list[Probe]:
        probes: list[Probe] = []
        names: dict[str, yaml.Node] = {}
        max_args = SDT_MAX_ARGS - arg0
        for item, fields, values, name in self.entries(node, data):
            named = self.unique(fields, name, "probe", names)
            group = values.get("group")
            if self.keyword_check(fields.get("group"), group, "group") and group in SCRIPT_NAMES:
                self.error(fields["group"], f"group '{group}' would overwrite the generated '{group}' script "
                                            "(one per group, plus all and counts); rename the group")
            ticks = values.get("ticks") is True
            if ticks and not arg0:
                self.error(fields["ticks"], "'ticks: true' needs 'arg0: true' at the top: the clock is passed as arg0")
            arg_list = fields.get("args")
            args = self.build_args(arg_list, values.get("args"), typedefs, name, int(arg0))
            named_enums = [a for a in args if a.ctype.kind is Kind.ENUM and not a.hex]
            if len(named_enums) > MAX_NAMED_ENUMS:
                self.diagnostics.append(Diagnostic(
                    named_enums[MAX_NAMED_ENUMS].location,
                    f"probe '{name}' has {len(named_enums)} enum arguments printed by name; scripts print "
                    f"at most {MAX_NAMED_ENUMS} by name (each doubles the bpftrace probe's code): "
                    "mark the others 'hex: true'"))
            if len(args) > max_args and not self.reported(arg_list):  # with args, arg_list is a list
                why = " (one of <sys/sdt.h>'s 12 is arg0)" if arg0 else ""
                self.error(arg_list, f"probe '{name}' has {len(args)} arguments; at most {max_args} are allowed{why}")
            doc = values.get("doc", "")
            if named and isinstance(doc, str) and isinstance(group, str):
                where = self.loc(item)
                probes.append(Probe(name, group, doc, tuple(args), where, ticks,
                                    spdk_arg0(ticks, clock, where) if arg0 else None,
                                    enabled_check=values.get("enabled_check", False) is True))
                for arg in named_enums:
                    if arg.ctype.enum_name not in enums:
                        self.diagnostics.append(Diagnostic(arg.location, (
                            f"argument '{arg.name}' of '{name}' is 'enum {arg.ctype.enum_name}', "
                            "which is not declared under 'enums:' (scripts print enums by name)")))
        return probes

    def build_args(self, node, data, typedefs, probe_name, first_index: int) -> list[Arg]:
        args: dict[str, Arg] = {}
        lengths: list[tuple] = []  # (argument, the length it names, its node)
        for item, fields, values, name in self.entries(node, data):
            if not self.keyword_check(fields.get("name"), name, "argument"):
                continue
            if name in args:
                self.error(fields["name"], f"probe '{probe_name}': duplicate argument name '{name}'")
                continue
            spelled = values.get("type")
            if not isinstance(spelled, str):
                continue
            try:  # parsed once per spelling: catalogs repeat a few types
                ctype = self._ctypes.get(spelled) or self._ctypes.setdefault(spelled, parse_ctype(spelled, typedefs))
            except CTypeError as exc:
                self.error(fields["type"], f"argument '{name}': {exc}")
                continue
            hex_ = values.get("hex", False) is True
            if hex_ and not ctype.is_integer_like:
                self.error(fields["hex"], f"argument '{name}': 'hex' applies to integers, not {ctype.kind.value}s")
            for key in ("max_len", "length"):
                if values.get(key) is not None and ctype.kind is not Kind.STRING:
                    self.error(fields[key], f"argument '{name}': '{key}' applies to strings (char pointers)")
            member_nodes = fields["members"].value if isinstance(fields.get("members"), yaml.SequenceNode) else ()
            members = tuple(str(n.value) for n in member_nodes)
            if members and ctype.struct_name is None:
                self.error(fields["members"], f"argument '{name}': 'members' needs a struct or union pointer type")
            for member, member_node in zip(members, member_nodes):
                if not _MEMBER_PATH.fullmatch(member):
                    self.error(member_node, f"argument '{name}': member '{member}' is not a member path like 'qid' "
                                            "or 'id.nsid'")
                elif not KEYWORDS.isdisjoint(member.split(".")):
                    self.error(member_node, f"argument '{name}': member '{member}' has a bpftrace "
                                            "keyword in its path; bpftrace scripts cannot name it")
            max_len, length = values.get("max_len"), values.get("length")  # of another type: the schema said so
            if isinstance(length, str) and ctype.kind is Kind.STRING:
                lengths.append((name, length, fields["length"]))
            args[name] = Arg(
                name=name, ctype=ctype, location=self.loc(item), doc=str(values.get("doc", "")), hex=hex_,
                max_len=int(max_len) if isinstance(max_len, (int, float)) else None, length=length, members=members,
                index=first_index + len(args), member_locations=tuple(self.loc(n) for n in member_nodes),
            )
        for name, length, node in lengths:  # after the loop: a length may come later in the list
            target = args.get(length)
            if target is None or target.name == name or target.ctype.kind is not Kind.INTEGER:
                what = ("no argument of the probe" if target is None else
                        "the string itself" if target.name == name else f"a {target.ctype.kind.value}")
                self.error(node, f"argument '{name}': 'length' names '{length}', {what}: name the integer "
                                 f"argument of probe '{probe_name}' that holds the string's length")
        return list(args.values())
