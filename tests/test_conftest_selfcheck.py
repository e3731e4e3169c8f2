"""Unit tests of the `.mlir` collector helpers (tests/_mlir_lit.py)."""

import shlex
import subprocess
import sys
from pathlib import Path

import _mlir_lit as lit
import pytest

TOOLS = {"tilec": "PY -m tilec.cli", "filecheck": "FC"}


def test_parse_run_lines_multiple_and_continuation():
    text = (
        "// RUN: tilec opt %s -p canonicalize | filecheck %s\n"
        "// RUN: tilec opt %s --split-input-file \\\n"
        "// RUN:   --verify-diagnostics\n"
        "func.func @f() {}\n"
    )
    assert lit.parse_run_lines(text) == [
        "tilec opt %s -p canonicalize | filecheck %s",
        "tilec opt %s --split-input-file --verify-diagnostics",
    ]


def test_parse_run_lines_none():
    assert lit.parse_run_lines("// CHECK: x\n") == []


def test_substitute_path_and_tools():
    cmd = "tilec opt %s -p tile-infer-layout | filecheck %s"
    assert lit.substitute(cmd, "/a b/x.mlir", TOOLS) == (
        "PY -m tilec.cli opt '/a b/x.mlir' -p tile-infer-layout | FC '/a b/x.mlir'"
    )


@pytest.mark.parametrize(
    "cmd, expected",
    [
        ("not tilec opt %s", "not PY -m tilec.cli opt F"),
        (
            "tilec opt %s && tilec opt %s",
            "PY -m tilec.cli opt F && PY -m tilec.cli opt F",
        ),
        ("echo tilec | filecheck %s", "echo tilec | FC F"),  # only leading words
        ("tilecx %s; tilec.sh", "tilecx F; tilec.sh"),
        ("printf '%%d'", "printf '%d'"),
    ],
)
def test_substitute_only_stage_leading_words(cmd, expected):
    assert lit.substitute(cmd, "F", TOOLS) == expected


def test_default_tools_use_this_interpreter():
    tools = lit.tool_commands()
    assert tools["tilec"] == f"{shlex.quote(sys.executable)} -m tilec.cli"
    assert "filecheck" in tools["filecheck"]


@pytest.mark.parametrize(
    "cmd, status", [("not false", 0), ("not true", 1), ("false | cat", 1)]
)
def test_bash_prelude_not_and_pipefail(cmd, status):
    assert (
        subprocess.run(["bash", "-c", lit.bash_script(cmd)], check=False).returncode
        == status
    )


VALID = """\
// CHECK-LABEL: func @f
// CHECK: tile.copy
// CHECK-NEXT: %[[X:.*]] = arith.addi
// CHECK-SAME: {foo}
// CHECK-NOT: tile.fill
// CHECK-DAG: arith.constant
// CHECK-EMPTY:
// CHECK-COUNT-2: gpu.barrier
//CHECK: no space is fine
// expected-error@+1 {{T.copy shapes differ}}
// expected-warning @below? no: see invalid list
// expected-note@-2 {{first use here}}
// expected-error@above {{x}}
// expected-remark {{y}}
// NOTE: ordinary comment
// TODO(#12): ordinary comment
// Check that the pass declines here; expected output is unchanged.
// -----
"""


def test_lint_accepts_valid_directives():
    text = VALID.replace("// expected-warning @below? no: see invalid list\n", "")
    assert lit.lint_directives(text) == []


@pytest.mark.parametrize(
    "line",
    [
        "// expected-err@+1 {{oops}}",
        "// expected-error@+1 oops",
        "// expected-error@1 {{absolute line is not supported}}",
        "// expected-warning @below? no",
        "// CHECK-NEXt: x",
        "// CHEK: x",
        "// CHECK : x",
        "// CHECK x",
        "// CHECKS: x",
        "// CHECK-LABLE: @f",
        "// check: x",
        "// check-next: x",
        "%0 = arith.addi %a, %b : i32 // CHCK: x",
    ],
)
def test_lint_rejects_misspelled_directive(line):
    errors = lit.lint_directives(f"// RUN: true\n{line}\n")
    assert [n for n, _ in errors] == [2], errors


def test_lint_custom_check_prefixes():
    runs = ["tilec opt %s | filecheck %s --check-prefixes=CHECK,SM90"]
    prefixes = lit.check_prefixes(runs)
    assert prefixes == {"CHECK", "SM90"}
    assert lit.lint_directives("// SM90-NEXT: wgmma\n", prefixes) == []
    assert len(lit.lint_directives("// SM90-NEXt: wgmma\n", prefixes)) == 1


def test_lit_collector_runs_mlir_file(pytester):
    """The conftest collector end to end, on scratch .mlir files."""
    here = Path(__file__).parent
    pytester.makeconftest((here / "conftest.py").read_text())
    pytester.makepyfile(_mlir_lit=(here / "_mlir_lit.py").read_text())
    pytester.makefile(
        ".mlir",
        good="// RUN: echo hello | filecheck %s\n// CHECK: hello\n",
        bad="// RUN: echo bye | filecheck %s\n// CHECK: hello\n",
        typo="// RUN: echo hello | filecheck %s\n// CHEK: hello\n",
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-p", "no:xdist")
    # typo.mlir's CHECK line is ignored by filecheck too ("no check strings"): 3 failures.
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED bad.mlir::run1*",
            "FAILED typo.mlir::directives*",
            "*typo.mlir:2: misspelled*",
        ]
    )
