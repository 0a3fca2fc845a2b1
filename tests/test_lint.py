"""probegen lint: hand-written bpftrace scripts checked against the catalog.

The corpus (tests/lint_corpus/) was written for these tests in SPDK's
style. Each drift_*.bt marks every finding it must produce with a
``//! COLUMN text`` comment on the offending line; the test demands exactly
those findings, no more. clean_*.bt must produce none. bpftrace itself
(when installed) confirms that every corpus script parses except
broken.bt, so the linter's notion of the syntax is checked against the
real parser.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from probegen.catalog import load_catalog
from probegen.cli import main
from probegen.catalog.ctype import parse_ctype
from probegen.errors import InputError
from probegen.checks.lint import ScriptSyntaxError, lint_file, lint_text
from probegen.checks.lint.formats import Value, mismatch, parse_format
from probegen.checks.lint.parser import parse

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "lint_corpus"
CATALOG = ROOT / "probes.yaml"
DRIFT = sorted(CORPUS.glob("drift_*.bt"))
CLEAN = sorted(CORPUS.glob("clean_*.bt"))
_MARKER = re.compile(r"//!\s*(\d+)\s+(.*?)\s*(?=//!|$)")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


def expected_findings(path: Path) -> list[tuple[int, int, str]]:
    """(line, column, message fragment) from the script's //! markers."""
    expected = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        marker = line.find("//!")
        if marker >= 0:
            for column, text in _MARKER.findall(line[marker:]):
                expected.append((number, int(column), text))
    return expected


# -- the corpus -------------------------------------------------------------
def test_corpus_has_every_kind_of_drift():
    names = {p.name for p in DRIFT}
    assert {"drift_spdk.bt", "drift_sched.bt", "drift_names.bt", "drift_args.bt",
            "drift_printf.bt"} <= names
    assert CLEAN and (CORPUS / "broken.bt").exists()


def assert_findings(findings, expected, script):
    """Every expected (line, column, fragment) found once; nothing else."""
    unmatched = list(findings)
    for line, column, text in expected:
        match = next((d for d in unmatched if d.location.line == line and d.location.column == column
                      and text in d.message), None)
        assert match is not None, (
            f"{script.name}:{line}:{column}: expected a finding with {text!r}; got:\n"
            + "\n".join(map(str, findings)))
        unmatched.remove(match)
    assert not unmatched, "findings not marked in the script:\n" + "\n".join(map(str, unmatched))


@pytest.mark.parametrize("script", DRIFT, ids=lambda p: p.name)
def test_drift_script_findings_exactly_as_marked(script, catalog):
    expected = expected_findings(script)
    assert expected, f"{script.name} marks no finding"
    findings = lint_file(script, catalog)
    assert_findings(findings, expected, script)
    for finding in findings:
        assert str(finding).startswith(f"{script}:{finding.location.line}:{finding.location.column}: error: ")


@pytest.mark.parametrize("script", CLEAN, ids=lambda p: p.name)
def test_clean_script_has_no_findings(script, catalog):
    assert lint_file(script, catalog) == []


def test_spdk_listener_drift_reported_for_each_attached_probe(catalog):
    findings = lint_file(CORPUS / "drift_spdk.bt", catalog)
    at_line_8 = [d.message for d in findings if d.location.line == 8]
    assert len(at_line_8) == 2
    assert any("nvmf_subsystem_add_listener" in m and "use %s with str(arg1)" in m for m in at_line_8)
    assert any("nvmf_subsystem_remove_listener" in m for m in at_line_8)


def _bpftrace_verdict(script: Path) -> str:
    result = subprocess.run(["bpftrace", "-d", str(script)], capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    if "AST after: parser" in output:
        return "parsed"
    match = re.search(rf"{re.escape(str(script))}:(\d+):[^\n]*syntax error", output)
    if match:
        return f"syntax error at line {match.group(1)}"
    pytest.skip(f"bpftrace -d gave no parser verdict for {script.name}: {output[-300:]}")


@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="bpftrace is not installed")
def test_bpftrace_agrees_which_corpus_scripts_parse(catalog):
    for script in sorted(CORPUS.glob("*.bt")):
        verdict = _bpftrace_verdict(script)
        if script.name == "broken.bt":
            with pytest.raises(ScriptSyntaxError) as error:
                lint_file(script, catalog)
            assert verdict == f"syntax error at line {error.value.location.line}"
        else:
            assert verdict == "parsed", script.name
            lint_file(script, catalog)  # and the linter parses it too


@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="bpftrace is not installed")
def test_bpftrace_rejects_unquoted_plus_in_path_and_so_does_lint(tmp_path, catalog):
    script = tmp_path / "plus.bt"
    script.write_text("usdt:/usr/lib/libstdc++.so.6:libstdcxx:throw { @n = count(); }\n")
    assert _bpftrace_verdict(script) == "syntax error at line 1"
    with pytest.raises(ScriptSyntaxError, match=r"plus.bt:1:22: error: cannot parse: unexpected '\+'"):
        lint_file(script, catalog)


# -- struct members against a binary's DWARF (--binary) ----------------------
@pytest.fixture(scope="module")
def sched_binary(tmp_path_factory):
    """A binary whose DWARF has the scheduler structs as the C headers
    have them now (threads_count, not thread_count)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed: no binary with DWARF to check against")
    binary = tmp_path_factory.mktemp("lint") / "sched_types"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(binary), str(CORPUS / "sched_types.c")], check=True)
    return binary


@pytest.fixture(scope="module")
def sched_types(sched_binary):
    from probegen.dwarf import DwarfTypes

    with DwarfTypes.open(sched_binary) as types:
        yield types


def test_binary_agrees_with_clean_script_copies(catalog, sched_types, sched_binary):
    assert lint_file(CORPUS / "clean_sched.bt", catalog, sched_types, str(sched_binary)) == []


def test_binary_finds_the_stale_hand_copied_struct_member(catalog, sched_types, sched_binary):
    script = CORPUS / "drift_sched.bt"
    findings = lint_file(script, catalog, sched_types, str(sched_binary))
    expected = expected_findings(script) + [
        (9, 14, f"member 'thread_count' of the script's copy of struct spdk_scheduler_core_info "
                f"is not in {sched_binary}"),
        # The copy also lacks the two current_* members: lcore is 16 bytes off.
        (8, 14, f"member 'lcore' of the script's copy of struct spdk_scheduler_core_info: the copy has "
                f"uint32_t (4 bytes) at offset 16, {sched_binary} has unsigned int (4 bytes) at offset 32 (moved"),
    ]
    assert_findings(findings, expected, script)


def test_binary_types_members_of_structs_the_script_does_not_define(catalog, sched_types):
    text = """usdt:__EXE__:dynsched_core_info
{
    $core = (struct spdk_scheduler_core_info *)arg2;
    printf("%lu %u %p\\n", $core->total_idle_tsc, $core->threads_count, $core->thread_infos);
    printf("%d %u\\n", $core->total_idle_tsc, $core->thread_count);
    printf("%p\\n", $core->thread_infos->current_stats.busy_tsc);
    printf("%lu\\n", $core->thread_infos->total_stats.idle_tsc);
}
usdt:__EXE__:nvmf_ctrlr_create
{
    printf("%s\\n", ((struct spdk_nvmf_ctrlr *)arg1)->hostnqn);
}
"""
    findings = lint_text(text, "nodef.bt", catalog, sched_types, "sched_types")
    assert_findings(findings, [
        (5, 23, "%d prints 32 of the 64 bits of total_idle_tsc of struct spdk_scheduler_core_info"),
        (5, 53, "in the debug info of sched_types: struct spdk_scheduler_core_info has no member "
                "'thread_count'"),
        (6, 20, "%p for current_stats.busy_tsc of struct spdk_scheduler_thread_info, an integer"),
    ], Path("nodef.bt"))


def test_cli_binary(capsys, sched_binary, tmp_path):
    code, out, err = run_cli(capsys, str(CORPUS / "drift_sched.bt"), "--binary", str(sched_binary))
    assert code == 1 and out.splitlines()[-1] == "6 findings in 1 script"
    code, out, err = run_cli(capsys, str(CORPUS / "clean_sched.bt"), "--binary", str(tmp_path / "none"))
    assert code == 2 and err.count("\n") == 1 and str(tmp_path / "none") in err


# -- the command line -------------------------------------------------------
def run_cli(capsys, *argv):
    code = main(["lint", *argv, "--catalog", str(CATALOG)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_clean_exit_0(capsys):
    code, out, err = run_cli(capsys, *map(str, CLEAN))
    assert code == 0
    assert out.strip() == f"0 findings in {len(CLEAN)} scripts"
    assert err == ""


def test_cli_findings_exit_1_with_positions_and_summary(capsys):
    script = str(CORPUS / "drift_spdk.bt")
    code, out, err = run_cli(capsys, script)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{script}:8:50: error: %d for arg1 of nvmf_subsystem_add_listener")
    assert lines[-1] == "3 findings in 1 script"


def test_cli_broken_script_one_line_exit_2(capsys):
    script = str(CORPUS / "broken.bt")
    code, out, err = run_cli(capsys, script)
    assert code == 2
    assert err.splitlines() == [f"{script}:4:29: error: cannot parse: expected ',' or ')', found ';'"]
    assert "Traceback" not in out + err


def test_cli_checks_every_script_when_one_cannot_be_opened(capsys, tmp_path):
    missing = str(tmp_path / "gone.bt")
    drift = str(CORPUS / "drift_names.bt")
    code, out, err = run_cli(capsys, missing, drift, str(CORPUS / "broken.bt"))
    assert code == 2
    assert f"{missing}: error: no such script" in err
    assert "cannot parse" in err
    assert sum(line.startswith(drift) for line in out.splitlines()) == 3
    assert out.splitlines()[-1] == "3 findings in 1 script; 2 scripts could not be read or parsed"


def test_cli_missing_catalog_exit_2(capsys, tmp_path):
    code = main(["lint", str(CLEAN[0]), "--catalog", str(tmp_path / "none.yaml")])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("error: no such catalog file")


def test_cli_directory_and_binary_text_exit_2(capsys, tmp_path):
    binary = tmp_path / "bin.bt"
    binary.write_bytes(b"BEGIN { printf(\"\xff\"); }\n")
    code, out, err = run_cli(capsys, str(tmp_path), str(binary))
    assert code == 2
    assert "is a directory" in err and f"{binary}:1:17: error: cannot parse: not UTF-8" in err


# -- printf conversions -----------------------------------------------------
def _value(spelling: str, text: bool = False) -> Value:
    return Value(f"x ({spelling})", None if text else parse_ctype(spelling), text, expression="argN")


@pytest.mark.parametrize("conversion, spelling, problem", [
    ("%d", "uint16_t", None),            # fits: zero-extended into 32 bits
    ("%d", "uint32_t", None),            # accepted by rule 2 (what scripts write)
    ("%d", "int", None),
    ("%u", "uint32_t", None),
    ("%lu", "uint64_t", None),
    ("%llu", "uint64_t", None),
    ("%ld", "int64_t", None),
    ("%lx", "uint64_t", None),
    ("%x", "uint32_t", None),
    ("%x", "int", None),                  # bit pattern
    ("%ld", "int", None),                 # wider and signed: sign-extended
    ("%d", "enum nvmf_tgt_state", None),
    ("%u", "enum nvmf_tgt_state", None),
    ("%p", "void *", None),
    ("%p", "struct spdk_nvmf_qpair *", None),
    ("%lx", "void *", None),
    ("%p", "const char *", None),         # the address of a string, on purpose
    ("%d", "uint64_t", "prints 32 of the 64 bits"),
    ("%u", "uint64_t", "prints 32 of the 64 bits"),
    ("%x", "void *", "prints 32 of the 64 bits"),
    ("%hd", "uint32_t", "prints 16 of the 32 bits"),
    ("%ld", "uint64_t", "signed conversion"),
    ("%lld", "size_t", "signed conversion"),
    ("%ld", "void *", "signed conversion"),
    ("%u", "int", "unsigned conversion"),
    ("%p", "uint64_t", "%p for x (uint64_t), an integer: use %lu"),
    ("%p", "enum nvmf_tgt_state", "an integer"),
    ("%s", "uint32_t", "not a string: use %u"),
    ("%s", "enum nvmf_tgt_state", "an enum"),
    ("%s", "const char *", "printed without str(): use str(argN)"),
    ("%d", "const char *", "a string: use %s with str(argN)"),
    ("%r", "uint32_t", "buffer"),
])
def test_conversion_rules(conversion, spelling, problem):
    (parsed,), unknown = parse_format(conversion)
    assert not unknown
    found = mismatch(parsed, _value(spelling))
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_conversions_of_strings_bpftrace_has_read():
    (percent_s, percent_d), _ = parse_format("%-16s %d")
    assert mismatch(percent_s, _value("char[]", text=True)) is None
    assert "a string: use %s" in mismatch(percent_d, _value("char[]", text=True))


def test_format_parsing_matches_bpftrace_0_17():
    conversions, unknown = parse_format("%% %08lx %-5s %.3d %hhu %zu %jd %td %rx %i %#x %+d %f %Ld")
    assert [c.text for c in conversions] == ["%08lx", "%-5s", "%.3d", "%hhu", "%zu", "%jd", "%td", "%rx"]
    assert [u.text for u in unknown] == ["%i", "%#x", "%+d", "%f", "%Ld"]


def test_percent_signs_meant_as_text_are_not_findings(catalog):
    # As SPDK's sched.bt writes it: "busy:%2d% core:%2d%\n" has two
    # conversions; bpftrace prints the other '%' signs as they are.
    conversions, unknown = parse_format("busy:%2d% core:%2d%\\n 100%")
    assert [c.text for c in conversions] == ["%2d", "%2d"] and unknown == []
    text = 'usdt:__EXE__:dynsched_move { printf("core:%2d% busy:%2d%\\n", arg2, arg2); }'
    assert lint_text(text, "pct.bt", catalog) == []


# -- the parser -------------------------------------------------------------
def test_parser_reads_the_syntax_scripts_use(catalog):
    text = """
#define MAX 4
struct a { int x; };
BEGIN { @start = nsecs; }
usdt:__EXE__:nvmf_tgt_state, usdt:__EXE__:nvmf_create_poll_group /pid == $1 && (arg1 / 2) > 0/ {
    $i = 0;
    unroll (4) { $i++; }
    while ($i < 10) { $i += 1; if ($i == 5) { break; } }
    @by[tid, comm] = hist(nsecs - @start);
    @[probe] = sum(sizeof(struct a));
    $t = (arg1, arg0);
    $c = arg1 > 3 ? (uint32)arg1 : -1;
    printf("%d %s\\n", $c, @names[arg1] == "x" ? "y" : "z");
    delete(@by[tid, comm]);
    return
}
"""
    script = parse(text, "syntax.bt")
    assert [p.text for p in script.blocks[1].attach_points] == [
        "usdt:__EXE__:nvmf_tgt_state", "usdt:__EXE__:nvmf_create_poll_group"]
    assert script.preprocessor == ["#define MAX 4"]
    assert lint_text(text, "syntax.bt", catalog) == []


@pytest.mark.parametrize("text, position, message", [
    ("BEGIN { /* no end\n}", "1:9", "comment never closed"),
    ("BEGIN { printf(\"x\\n\");", "1:23", "block never closed"),
    ("kprobe:f /pid == 1 { }", "1:20", "predicate never closed"),
    ("BEGIN { $x = 1 $y = 2 }", "1:16", "expected ';' between statements"),
    ("BEGIN { 3 = 4; }", "1:9", "only $variables and @maps can be assigned"),
    ("BEGIN { printf(\"x); }", "1:16", "string never closed"),
    ("BEGIN { x ` y; }", "1:11", "unexpected character '`'"),
    ("}", "1:1", "'}' with no block open"),
    ("BEGIN { } struct late { int x; };", "1:11", "C definitions must come before the first probe"),
    ("usdt:a:b", "1:9", "expected '{' to open the probe's block"),
])
def test_parse_errors_are_one_line_with_position(text, position, message, catalog):
    with pytest.raises(ScriptSyntaxError) as error:
        lint_text(text, "bad.bt", catalog)
    assert str(error.value) == f"bad.bt:{position}: error: cannot parse: {message}" or (
        str(error.value).startswith(f"bad.bt:{position}: error: cannot parse: {message}"))
    assert "\n" not in str(error.value)


def test_mangled_scripts_never_raise_anything_but_input_errors(catalog):
    """Every prefix of a real script, and the script with each stretch cut
    out: findings or one InputError, never a traceback."""
    text = (CORPUS / "clean_nvmf.bt").read_text()
    for cut in range(0, len(text), 5):
        for variant in (text[:cut], text[:cut] + text[cut + 9:]):
            try:
                lint_text(variant, "mangled.bt", catalog)
            except InputError as exc:
                assert "\n" not in str(exc)


def test_variables_carry_types_and_branches_that_disagree_forget_them(catalog):
    text = """
usdt:__EXE__:nvmf_ctrlr_create {
    $ctrlr = arg1; $nqn = str(arg2); $tid = arg3;
    printf("%p %s %lu\\n", $ctrlr, $nqn, $tid);
    if (pid == 1) { $tid = arg2; }
    printf("%lu\\n", $tid);
    $nqn = 5;
    printf("%s\\n", $nqn);
}
"""
    assert lint_text(text, "vars.bt", catalog) == []
    findings = lint_text(text.replace("%p %s %lu", "%s %d %d"), "vars.bt", catalog)
    assert [(d.location.line, d.location.column) for d in findings] == [(4, 26), (4, 34), (4, 40)]


def test_scripts_probegen_generates_lint_clean(catalog):
    """The generator and the linter agree on how each argument prints."""
    from probegen.generators.bpftrace import render_script

    for group, probes in catalog.groups.items():
        text = render_script(catalog, group, probes)
        assert lint_text(text, f"{group}.bt", catalog) == [], group


# -- struct copies laid out and compared with the binary's DWARF --------------
LAYOUT_STRUCTS = """struct inner { char c; long l; };
struct mixed {
    short unsigned int qid;
    unsigned char __pad0[2];
    void *p __attribute__((packed));
    int b : 3;
    int c : 30;
    char name[224];
    struct { int x; long y; };
    union { int u; char v[9]; } un;
    struct inner in[2];
    int (*fn)(void *);
    char tail;
};
struct packed_outer { char c; struct mixed inner; } __attribute__((packed));
union choice { char c; long l; int i[3]; };
"""
LAYOUT_MEMBERS = {"mixed": ["qid", "p", "name", "x", "y", "un", "in", "fn", "tail"],
                  "packed_outer": ["c", "inner"], "choice": ["c", "l", "i"]}


def test_struct_copy_layout_is_gccs(tmp_path):
    """Offsets and sizes the linter works out for a script's struct copies
    equal gcc's (padding arrays, packed and aligned members, bitfields,
    anonymous members, unions, arrays of structs, a packed struct)."""
    from helpers import compile_c
    kinds = {"mixed": "struct", "packed_outer": "struct", "choice": "union"}
    prints = [f'printf("{n} %zu\\n", sizeof({kinds[n]} {n}));' for n in LAYOUT_MEMBERS] + [
        f'printf("{n}.{m} %zu\\n", offsetof({kinds[n]} {n}, {m}));' for n, ms in LAYOUT_MEMBERS.items() for m in ms]
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdio.h>\n" + LAYOUT_STRUCTS
                      + "int main(void)\n{\n" + "\n".join(prints) + "\nreturn 0;\n}\n")
    binary = compile_c([source], tmp_path / "layout")
    gcc = dict(line.split() for line in subprocess.run([binary], capture_output=True, text=True,
                                                       check=True).stdout.splitlines())
    from types import SimpleNamespace

    from probegen.checks.lint.cdefs import struct_definitions

    # Read as a script's C definitions are (bpftrace 0.17 and the linter's
    # lexer take no attribute after a struct's closing brace: not parsed).
    definition = SimpleNamespace(text=LAYOUT_STRUCTS, line=1, column=1)
    ours = {name: struct.layout for name, struct in struct_definitions([definition], "layout.bt").items()}
    members = {name: struct.members for name, struct in struct_definitions([definition], "layout.bt").items()}
    mine = {n: str(ours[n].shape(n).size) for n in LAYOUT_MEMBERS}
    mine.update({f"{n}.{m}": str(members[n][m].bit // 8) for n, ms in LAYOUT_MEMBERS.items() for m in ms})
    assert all(layout.complete for layout in ours.values())
    assert mine == gcc


@pytest.fixture(scope="module")
def drift_builds(tmp_path_factory):
    from helpers.drift import build_drift

    return build_drift(tmp_path_factory.mktemp("lint_drift"))


def test_binary_finds_a_moved_and_retyped_member_of_a_struct_copy(drift_builds, tmp_path):
    """qpair.bt made with --binary from the "master" build copies struct
    spdk_nvmf_qpair as master lays it out; on v25.09 qid moved and widened
    and ctrlr moved: each is a finding, with what the copy and the binary
    say. Against master, none."""
    from helpers import line_of
    from helpers.drift import DRIFT_CATALOG

    master, old = drift_builds["master"], drift_builds["v25_09"]
    assert main(["bpftrace", "-c", str(DRIFT_CATALOG), "--binary", str(master), "-o", str(tmp_path), "-q"]) == 0
    script = tmp_path / "qpair.bt"
    text = script.read_text()
    catalog = load_catalog(DRIFT_CATALOG)
    from probegen.dwarf import DwarfTypes

    with DwarfTypes.open(master) as types:
        assert lint_file(script, catalog, types, str(master)) == []
    with DwarfTypes.open(old) as types:
        findings = lint_file(script, catalog, types, str(old))
    struct = "member '{}' of the script's copy of struct spdk_nvmf_qpair"
    assert [(f.location.line, f.rule, f.message) for f in findings] == [
        (line_of(text, " qid;"), "struct-layout", struct.format("qid") + ": the copy has unsigned short "
         f"(2 bytes) at offset 0, {old} has unsigned int (4 bytes) at offset 8 (moved, resized: bpftrace would "
         "read other bytes)"),
        (line_of(text, " cntlid;"), "struct-copy", struct.format("cntlid") + f" is not in {old}: struct "
         "spdk_nvmf_qpair has no member 'cntlid' (members: ctrlr, ctrlr_id, qid)"),
        (line_of(text, "*ctrlr;"), "struct-layout", struct.format("ctrlr") + ": the copy has void * (8 bytes) "
         f"at offset 8, {old} has void * (8 bytes) at offset 0 (moved: bpftrace would read other bytes)"),
    ]
    code = main(["lint", str(script), "--catalog", str(DRIFT_CATALOG), "--binary", str(old)])
    assert code == 1


def test_binary_struct_copy_retyped_and_unsized(drift_builds, capsys):
    """A hand copy at the right offsets with a sign flipped is retyped; a
    pointer kept as an integer of its size reads the same; after a type the
    linter cannot size no offset is claimed."""
    from helpers.drift import DRIFT_CATALOG
    from probegen.dwarf import DwarfTypes

    catalog = load_catalog(DRIFT_CATALOG)
    text = """struct spdk_nvmf_qpair {
    uint64_t ctrlr;
    int qid;
    unsigned short ctrlr_id;
};
struct spdk_nvmf_tgt_copy { mystery_t a; uint32_t qid; };
BEGIN { }
"""
    with DwarfTypes.open(drift_builds["v25_09"]) as types:
        findings = lint_text(text, "copy.bt", catalog, types, "v25_09")
    assert [(f.location.line, f.rule, f.message) for f in findings] == [
        (3, "struct-layout", "member 'qid' of the script's copy of struct spdk_nvmf_qpair: the copy has int "
         "(4 bytes) at offset 8, v25_09 has unsigned int (4 bytes) at offset 8 (retyped: bpftrace would read "
         "other bytes)"),
    ]
