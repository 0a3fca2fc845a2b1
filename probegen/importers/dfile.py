"""SystemTap/DTrace provider files (``.d``) as ``dtrace -h`` reads them
(tests/d/shop.d has each form), and the catalogs made from them. Argument
types are checked with the catalog's C type reader, so those catalogs load.
"""

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, replace

from probegen.catalog.ctype import CTypeError, floating_type, integer_type, is_identifier, is_type_name, parse_ctype
from probegen.errors import InputError, Location, printable
from probegen.files.inputs import read_input
from probegen.importers.binaries import (ImportedArg, ImportedCatalog, ImportedProbe, infer_catalog, loaded,
                                         render_catalog)

# A directive starts a line and ends with it, lines joined by backslashes.
_TOKEN = re.compile(
    r"(?P<directive>^[ \t\r\f\v]*#(?:[^\n]*\\\n)*[^\n]*)|(?P<space>[ \t\r\f\v]+)|(?P<newline>\n)"
    r"|(?P<comment>/\*(?s:.*?)\*/)|(?P<unterminated>/\*)|(?P<line_comment>//[^\n]*)"
    r"|(?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)|(?P<number>[0-9][A-Za-z0-9_]*)"
    r"|(?P<punct>\.\.\.|[(){};,*:\[\]=])|(?P<other>.)", re.M
)
_LINE_MARKER = re.compile(r"#\s*(?:line\s+)?([0-9]+)\b")
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b", re.M)
_MAX_EXPANSION = 64  # nested #define expansions: far more than types need
_MAX_EXPANDED = 100_000  # tokens from #define expansions: macros that double each other would never end


@dataclass(frozen=True)
class Token:
    text: str
    kind: str  # ident, number, punct, eof
    line: int
    column: int
    doc: str = ""  # the /** ... */ comment before it


@dataclass(frozen=True)
class DArg:
    type: str  # as C writes it: "const char *"
    name: str | None  # the name the file gives, if any
    location: Location


@dataclass(frozen=True)
class DProbe:
    name: str
    args: tuple[DArg, ...]
    location: Location
    doc: str = ""  # from a /** ... */ comment before it, @param lines taken out
    param_docs: tuple[tuple[str, str], ...] = ()  # (name, doc) of its @param lines


@dataclass(frozen=True)
class DProvider:
    name: str
    probes: tuple[DProbe, ...]


@dataclass(frozen=True)
class ProviderFile:
    path: str
    providers: tuple[DProvider, ...]
    typedefs: tuple[tuple[str, str], ...]  # (name, C type) of the file's scalar typedefs
    typedef_types: dict  # name -> CType of each

    def provider(self, name: str | None) -> DProvider:
        names = [p.name for p in self.providers]
        if name is None and len(names) != 1:
            raise InputError(f"{len(names)} providers ({', '.join(names)}); "
                             "a catalog has one: give --provider NAME", Location(self.path))
        if name is None or name in names:
            return self.providers[0 if name is None else names.index(name)]
        raise InputError(f"no provider '{printable(name)}' (the file has: {', '.join(names)})", Location(self.path))


class _Lexer:
    """Tokens, #define macros expanded from their definition on, as cpp does."""

    def __init__(self, text: str, path: str):
        self.text, self.path = text, path
        self.macros: dict[str, list[tuple[str, str]]] = {}  # name -> (text, kind) of its tokens
        self.expanded = 0

    def fail(self, line: int, column: int, why: str):
        raise InputError(why, Location(self.path, line, column))

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        text, line, line_start, doc = self.text, 1, 0, None
        for match in _TOKEN.finditer(text):
            kind, start, end, found = match.lastgroup, match.start(), match.end(), match.group()
            column, marker = start - line_start + 1, None
            if kind == "directive":
                body = found.lstrip(" \t\r\f\v")
                self.directive(body, line, column + len(found) - len(body))
                marker = _LINE_MARKER.match(body)  # cpp's '# 12 "x.d"': the next line is line 12
            elif kind == "unterminated":
                self.fail(line, column, "unterminated comment /* (no */ before the end of the file)")
            elif kind == "other":
                self.fail(line, column, f"unexpected character {found!r}")
            elif kind == "comment" and found.startswith("/**") and len(found) > 4:
                doc = found  # a doc comment: the next token's (a probe's)
            elif kind in ("ident", "number", "punct"):
                self.emit(Token(found, kind, line, column, doc or ""), out, frozenset())
                doc = None
            newlines = found.count("\n")
            if newlines:
                line, line_start = line + newlines, text.rfind("\n", start, end) + 1
            if marker:
                line = int(marker[1]) - 1
        out.append(Token("", "eof", line, len(text) - line_start + 1))
        return out

    def emit(self, token: Token, out: list[Token], expanding: frozenset[str]) -> None:
        if expanding:  # every token an expansion gives counts, a macro's name too: one may expand to nothing
            self.expanded += 1
            if self.expanded > _MAX_EXPANDED:
                self.fail(token.line, token.column, f"#define expansions give more than {_MAX_EXPANDED:,} tokens")
        body = self.macros.get(token.text)  # a macro's name is an identifier: no number or punctuation is one
        if body is None or token.text in expanding:
            out.append(token)
            return
        if len(expanding) >= _MAX_EXPANSION:
            self.fail(token.line, token.column, f"#define '{token.text}' expands too deeply")
        for text, kind in body:  # the expansion is reported where the macro is used
            self.emit(Token(text, kind, token.line, token.column), out, expanding | {token.text})

    def directive(self, text: str, line: int, column: int) -> None:
        # A comment left open runs to the directive's end (as in cpp): each '/*' matches, so this is linear.
        body = re.sub(r"/\*.*?(?:\*/|\Z)|//.*", " ", text.replace("\\\n", " "), flags=re.S).strip()[1:].strip()
        word, rest = re.match(r"([A-Za-z_]*)(.*)", body, re.S).groups()
        if word == "undef":
            self.macros.pop(rest.strip(), None)
        if word != "define":
            return  # '#undef', or '# file: x.d' comments and the like, which dtrace -h skips too
        match = re.match(r"\s+([A-Za-z_][A-Za-z0-9_]*)(\(?)(.*)", rest, re.S)
        if not match:
            self.fail(line, column, "#define: expected a macro name")
        name, function_like, value = match.groups()
        if function_like:
            return  # a function-like macro: types never use one
        parts = [(part.group(), part.lastgroup) for part in _TOKEN.finditer(value)]
        if not any(kind in ("other", "directive") for _, kind in parts):  # else not a type: the probes cannot use it
            self.macros[name] = [(text, kind) for text, kind in parts if kind in ("ident", "number", "punct")]


class _Reader:
    def __init__(self, tokens: list[Token], path: str):
        self.tokens, self.path, self.pos = tokens, path, 0
        self.typedefs: dict[str, str] = {}  # as written, for the catalog
        self.typedef_types: dict = {}  # name -> CType, for checking the types that use them

    def loc(self, token: Token) -> Location:
        return Location(self.path, token.line, token.column)

    def fail(self, token: Token, why: str):
        raise InputError(why, self.loc(token))

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]  # the last is eof

    def take(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            self.pos += 1
        return token

    def expect(self, text: str, what: str = "") -> Token:
        token = self.take()
        if token.text != text:
            self.fail(token, f"expected '{text}'{what}, found {_shown(token)}")
        return token

    def identifier(self, what: str) -> Token:
        token = self.take()
        if token.kind != "ident":
            self.fail(token, f"expected {what}, found {_shown(token)}")
        return token

    def file(self) -> list[DProvider]:
        providers = []
        while (token := self.peek()).kind != "eof":
            if token.text == "provider":
                providers.append(self.provider())
            elif token.text == "typedef":
                self.typedef()
            elif token.text in ("struct", "union", "enum"):
                self.tag_declaration()
            elif token.text == ";":
                self.take()
            else:
                self.fail(token, f"expected 'provider', 'typedef' or a struct declaration, found {_shown(token)}")
        if not providers:
            raise InputError("no 'provider NAME { ... };' in the file", Location(self.path))
        return providers

    def provider(self) -> DProvider:
        start = self.take()
        name = self.identifier("the provider's name")
        if not is_identifier(name.text):
            self.fail(name, f"provider '{name.text}' is not a C identifier")
        self.expect("{", " after the provider's name")
        probes: dict[str, DProbe] = {}
        while (token := self.peek()).text != "}":
            if token.kind == "eof":
                self.fail(start, f"provider '{name.text}': no closing '}}'")
            if token.text != "probe":
                self.fail(token, f"expected 'probe' or '}}', found {_shown(token)}")
            probe = self.probe()
            if probe.name in probes:
                self.fail(token, f"probe '{probe.name}' is declared twice (first at {probes[probe.name].location})")
            probes[probe.name] = probe
        self.take()  # a ';' after the '}' is skipped as file() skips any
        return DProvider(name.text, tuple(probes.values()))

    def probe(self) -> DProbe:
        keyword = self.take()
        doc, params = _doc_comment(keyword.doc)
        name = self.identifier("the probe's name")
        if name.text.startswith("__") or "$" in name.text:
            self.fail(name, f"probe '{name.text}': a probe name is a C identifier not starting with '__'")
        self.expect("(", f" after probe '{name.text}'")
        args = self.parameters(name.text)
        if self.peek().text == ":":  # DTrace's translated types: the native ones above are what is passed
            self.take()
            self.expect("(", " of the translated argument types")
            self.parameters(name.text, check=False)
        self.expect(";", f" after probe '{name.text}'")
        return DProbe(name.text, tuple(args), self.loc(name), doc, params)

    def parameters(self, probe: str, check: bool = True) -> list[DArg]:
        for empty in ([")"], ["void", ")"]):
            if [t.text for t in self.tokens[self.pos:self.pos + len(empty)]] == empty:
                self.pos += len(empty)
                return []
        args: list[DArg] = []
        while True:
            words: list[Token] = []
            depth = 0
            while depth or self.peek().text not in (",", ")"):
                token = self.take()
                if token.kind == "eof" or token.text in (";", "{", "}"):
                    self.fail(token, f"probe '{probe}': expected ',' or ')' in the argument list, "
                                     f"found {_shown(token)}")
                depth += {"[": 1, "]": -1}.get(token.text, 0)
                words.append(token)
            if not words:  # nothing taken: the ',' or ')' is next
                self.fail(self.peek(), f"probe '{probe}': argument {len(args) + 1} has no type")
            if check:
                args.append(self.argument(probe, len(args) + 1, words))
            if self.take().text == ")":
                return args

    def argument(self, probe: str, index: int, words: list[Token]) -> DArg:
        texts = [w.text for w in words]
        array = "[" in texts  # an array parameter is a pointer, as in C
        texts = texts[:texts.index("[")] if array else texts
        # The words name the argument if the last one is a name the others are the type of.
        name = texts.pop() if len(texts) > 1 and is_identifier(texts[-1]) and not is_type_name(texts) else None
        spelling = _spelled([("char *" if t == "string" else t) for t in texts] + ["*"] * array)
        try:
            if not floating_type(spelling):  # float and double are for the header: a catalog refuses them
                parse_ctype(spelling, self.typedef_types)
        except CTypeError as exc:
            hint = ""
            if "unknown type" in str(exc):
                hint = (f"; declare it in the file with its real type ('typedef TYPE {texts[0]};', or "
                        f"'#define {texts[0]} TYPE' as `dtrace -C` expands it)")
            self.fail(words[0], f"probe '{probe}': argument {index}: {str(exc).split(': declare it')[0]}{hint}")
        return DArg(spelling, name, self.loc(words[0]))

    def typedef(self) -> None:
        start = self.take()
        if self.peek().text in ("struct", "union", "enum") and "{" in (self.peek(1).text, self.peek(2).text):
            self.take()
            if self.peek().kind == "ident":
                self.take()
            self.skip_braces()
            self.identifier("the typedef's name")
            self.expect(";", " after the typedef")
            return
        end = next((at for at in range(self.pos, len(self.tokens)) if self.tokens[at].text == ";"), None)
        if end is None:
            self.fail(start, "typedef: no ';' before the end of the file")
        words, self.pos = self.tokens[self.pos:end], end + 1
        if len(words) < 2 or not is_identifier(words[-1].text):
            self.fail(start, "typedef: expected 'typedef TYPE NAME;'")
        name = words[-1].text
        spelling = _spelled(w.text for w in words[:-1])
        if re.match(r"(?:(?:const|volatile) )*(?:struct|union)\b", spelling) and "*" not in spelling:
            return  # typedef [const] struct x x_t: only a pointer can pass it, as with any name not declared
        try:
            self.typedef_types[name] = parse_ctype(spelling, self.typedef_types)
        except CTypeError as exc:
            self.fail(words[0], f"typedef '{name}': {exc}")
        self.typedefs[name] = spelling

    def tag_declaration(self) -> None:
        self.take()
        self.identifier("a struct, union or enum tag")
        if self.peek().text == "{":
            self.skip_braces()
        self.expect(";", " after the declaration")

    def skip_braces(self) -> None:
        start = self.expect("{")
        depth = 1
        while depth:
            token = self.take()
            if token.kind == "eof":
                self.fail(start, "no closing '}' before the end of the file")
            depth += {"{": 1, "}": -1}.get(token.text, 0)


def _spelled(words) -> str:
    return re.sub(r"\*\s+(?=\*)", "*", " ".join(words))


def _shown(token: Token) -> str:
    return "the end of the file" if token.kind == "eof" else f"'{token.text}'"


def _doc_comment(comment: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A Javadoc-style comment's text and its @param lines; a tag's text runs to the next tag (other
    tags, @return or @since, are not carried)."""
    lines = [re.sub(r"^\s*\*+ ?", "", line) for line in comment[3:-2].splitlines()]
    text, *tags = re.split(r"(?:^|\n)[^\S\n]*(?=@)", "\n".join(lines))  # \s* would rescan blank lines
    params = [re.match(r"@param[^\S\n]+([A-Za-z_][A-Za-z0-9_]*)(.*)", tag, re.S) for tag in tags]
    return " ".join(text.split()), tuple((match[1], " ".join(match[2].split())) for match in params if match)


def parse_provider_file(text: str, path: str) -> ProviderFile:
    reader = _Reader(_Lexer(text, path).tokens(), path)
    providers = reader.file()
    return ProviderFile(path, tuple(providers), tuple(reader.typedefs.items()), reader.typedef_types)


def read_provider_file(path, cpp: list[str] | None = None) -> ProviderFile:
    """With ``cpp`` (-I and -D options), or when the file has #if, read
    through $CPP (else cpp), as `dtrace -C` reads it."""
    data = read_input(path, "provider file")
    if cpp is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = Location(str(path), data.count(b"\n", 0, exc.start) + 1)
            raise InputError(f"the file is not UTF-8 (byte 0x{data[exc.start]:02x})", where) from None
        if not _CONDITIONAL.search(text):
            return parse_provider_file(text, str(path))
    command = [*shlex.split(os.environ.get("CPP") or "cpp"), *(cpp or []),
               f"./{path}" if str(path).startswith("-") else str(path)]
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"cannot run the C preprocessor ({command[0]}): {exc}", Location(str(path))) from None
    if result.returncode:
        why = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"the C preprocessor failed: {why[0] if why else result.returncode}", Location(str(path)))
    return parse_provider_file(result.stdout.decode("utf-8", "replace"), str(path))


def imported_catalog(source: ProviderFile, provider_name: str | None = None, floats: bool = False):
    """``floats``: a float or double argument becomes an integer of its size
    (catalogs_of puts it back for the header), else it is an error."""
    provider = source.provider(provider_name)
    probes = []
    for probe in provider.probes:
        args, names, docs = [], set(), dict(probe.param_docs)
        for index, arg in enumerate(probe.args):
            floating = floating_type(arg.type)
            if floating and not floats:
                raise InputError(
                    f"probe '{probe.name}': argument {index + 1}: floating-point type "
                    f"'{arg.type}' is not supported in a catalog: bpftrace and BCC cannot read floating-point USDT "
                    "arguments (probegen header -s and probegen-dtrace read the file as it is)", arg.location)
            # The file's name where it can name a catalog argument, else argN, as bpftrace numbers it.
            name = arg.name
            if not name or name in names or name.startswith("_"):
                name = f"arg{index}"
            while name in names:
                name += "_"
            names.add(name)
            spelling = integer_type(floating.size, False) if floating else arg.type
            args.append(ImportedArg(name, spelling, doc=docs.get(arg.name or "", "")))
        probes.append(ImportedProbe(probe.name, tuple(args), doc=probe.doc))
    # The typedefs the probes use, and those these are written with.
    used = {word for probe in provider.probes for arg in probe.args for word in arg.type.split()}
    used |= {word for name, spelling in source.typedefs if name in used for word in spelling.split()}
    return ImportedCatalog(provider.name, arg0=False, semaphores=True, probes=tuple(probes), sources=(source.path,),
                           from_provider_file=True, typedefs=tuple(t for t in source.typedefs if t[0] in used))


def merged_catalog(source: ProviderFile, provider_name, binaries) -> tuple:
    """(ImportedCatalog, notes): names and docs from the file, each argument's
    type from what the binaries pass unless every site converts to the file's,
    and a note at the file's line for each difference. It passes verify."""
    declared = imported_catalog(source, provider_name)
    found = infer_catalog(binaries, declared.provider)
    inferred = {p.name: p for p in found.probes}
    notes, probes = [], []
    for probe, dprobe in zip(declared.probes, source.provider(provider_name).probes):
        where = f"{dprobe.location}: note: probe '{probe.name}'"
        site = inferred.pop(probe.name, None)
        if site is None:
            notes.append(f"{where} has no site in the binaries: left out of the catalog")
            continue
        if len(site.args) != len(probe.args):
            notes.append(f"{where}: the file gives {len(probe.args)} arguments, the binaries pass {len(site.args)}")
        args = []
        for index, (arg, darg, passed) in enumerate(zip(probe.args, dprobe.args, site.args)):
            covered = _covers(arg.type, passed.type, source.typedef_types)
            if not covered:
                notes.append(f"{darg.location}: note: probe '{probe.name}' argument {index} '{arg.name}': the file "
                             f"says {arg.type}, the binaries pass {passed.type}"
                             f"{'; ' + passed.note if passed.note else ''}: the catalog says {passed.type}")
            args.append(replace(arg, type=arg.type if covered else passed.type, note=passed.note))
        probes.append(replace(probe, args=(*args, *site.args[len(probe.args):])))
    for site in inferred.values():
        notes.append(f"{source.path}: note: probe '{site.name}' is in the binaries, not in the file: added with "
                     "the types they pass")
        probes.append(replace(site, enabled_check=False))
    if not found.semaphores:  # the file's catalog has them
        notes.append(f"{source.path}: note: no site in the binaries names a semaphore (a header with "
                     "_SDT_HAS_SEMAPHORES undefined): the catalog says semaphores: false")
    imported = replace(declared, probes=tuple(probes), semaphores=found.semaphores,
                       sources=(source.path, *found.sources))
    return imported, notes


def _covers(declared: str, passed: str, typedefs: dict) -> bool:
    """Whether every site of an argument the binaries pass as ``passed``
    (the widest type their sites convert to) is one of ``declared``."""
    want, got = parse_ctype(declared, typedefs), parse_ctype(passed)
    sizes = (4, 8) if got.pointer_sized else (8,)  # binaries of both pointer sizes, or one
    return all(want.carries(got.size_on(p), bool(got.signed), p) for p in sizes)


def catalogs_of(path, header_output=None, cpp: list[str] | None = None) -> list:
    """A catalog per provider, for a header (``header_output`` names the
    guards). float and double arguments are put back after it loads: the
    header names them only in comments, dtrace style passing them as written."""
    source = read_provider_file(path, cpp)
    catalogs = []
    for provider in source.providers:
        catalog = loaded(render_catalog(imported_catalog(source, provider.name, floats=True)), source.path,
                         f"provider '{provider.name}'", header_output, Location(str(source.path)))
        probes = []
        for probe, dprobe in zip(catalog.probes, provider.probes):
            args = tuple(replace(arg, ctype=floating_type(darg.type)) if floating_type(darg.type) else arg
                         for arg, darg in zip(probe.args, dprobe.args))
            probes.append(replace(probe, args=args) if args != probe.args else probe)
        catalogs.append(replace(catalog, probes=tuple(probes)))
    return catalogs
