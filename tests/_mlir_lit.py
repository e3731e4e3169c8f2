"""Pure helpers behind the `.mlir` test collector in tests/conftest.py (a tiny lit).

A `.mlir` test starts with one or more `// RUN: <shell pipeline>` lines; `%s` is the file's
path. Each pipeline runs under `bash -o pipefail`, with the leading word `tilec` of every
stage replaced by `<python> -m tilec.cli` and `filecheck` by the installed FileCheck clone,
so no PATH setup is needed. A line ending in `\\` continues on the next RUN line.

Directive lint: FileCheck and `--verify-diagnostics` silently ignore a misspelled directive
(`expected-err@+1` in MLIR's GPU invalid.mlir checks nothing), so any comment that looks
like a directive but is not a valid one is reported.
"""

import difflib
import re
import shlex
import shutil
import sys
from pathlib import Path

_RUN = re.compile(r"//\s*RUN:(?P<cmd>.*)$")

# A pipeline stage starts at the line start or after | ; & ( and may be prefixed by `not`.
_STAGE_START = r"(?P<pre>(?:^|\|\|?|&&|;|\()\s*(?:not\s+)?)"


def parse_run_lines(text: str) -> list[str]:
    """The RUN commands of a test file, with `\\` continuations joined."""
    commands, pending = [], None
    for line in text.splitlines():
        m = _RUN.search(line)
        if m is None:
            continue
        cmd = m.group("cmd").strip()
        cmd = cmd if pending is None else f"{pending} {cmd}"
        if cmd.endswith("\\"):
            pending = cmd[:-1].rstrip()
            continue
        pending = None
        commands.append(cmd)
    if pending is not None:
        commands.append(pending)
    return commands


def tool_commands(python: str = sys.executable) -> dict[str, str]:
    """How each tool word in a RUN line is invoked."""
    return {
        "tilec": f"{shlex.quote(python)} -m tilec.cli",
        "filecheck": filecheck_command(python),
    }


def filecheck_command(python: str = sys.executable) -> str:
    """The installed `filecheck` script next to `python`, else on PATH, else `python -m`."""
    beside = Path(python).parent / "filecheck"
    found = str(beside) if beside.is_file() else shutil.which("filecheck")
    return shlex.quote(found) if found else f"{shlex.quote(python)} -m filecheck"


def substitute(cmd: str, path: str, tools: dict[str, str] | None = None) -> str:
    """Expand `%s` (file path), `%S` (its folder) and `%%`, and resolve tool words."""
    tools = tool_commands() if tools is None else tools
    path_q, dir_q = shlex.quote(path), shlex.quote(str(Path(path).parent))
    cmd = re.sub(
        r"%[%sS]", lambda m: {"%%": "%", "%s": path_q, "%S": dir_q}[m.group()], cmd
    )
    for word, replacement in tools.items():
        pattern = _STAGE_START + rf"{re.escape(word)}(?=\s|$)"
        cmd = re.sub(pattern, lambda m, r=replacement: m.group("pre") + r, cmd)
    return cmd


# lit's `not`: succeed iff the command fails. Defined as a bash function so it can sit in
# any pipeline stage.
BASH_PRELUDE = 'set -o pipefail\nnot() { if "$@"; then return 1; else return 0; fi; }\n'


def bash_script(cmd: str) -> str:
    return BASH_PRELUDE + cmd + "\n"


# --- directive lint ---------------------------------------------------------------------

CHECK_SUFFIXES = ("", "-NEXT", "-SAME", "-NOT", "-LABEL", "-DAG", "-EMPTY")
_EXPECTED_OK = re.compile(
    r"//\s*expected-(?:error|warning|note|remark)"
    r"(?:@(?:[+-]\d+|above|below))?(?:\s+\d+)?\s*\{\{.*\}\}"
)
# Anything after `//` that starts like a directive: a word opening with two capitals
# (`CHECK-NEXt`, `CHEK`), or `check`/`expect…` in any case followed by `-`, `@`, `:` or `{{`.
_CANDIDATE = re.compile(
    r"//\s*(?:(?P<word>[A-Z]{2}[A-Za-z0-9_-]*)"
    r"|(?P<lower>(?i:check|expect)[\w-]*)\s*(?=[-@:{]))"
)


def check_prefixes(run_lines: list[str]) -> set[str]:
    """CHECK plus any prefix set with --check-prefix(es)= in the RUN lines."""
    prefixes = {"CHECK"}
    for cmd in run_lines:
        for m in re.finditer(r"--check-prefix(?:es)?[= ](\S+)", cmd):
            prefixes.update(p for p in m.group(1).strip("'\"").split(",") if p)
    return prefixes


def _looks_like_check(word: str) -> bool:
    head = word.split("-", 1)[0].upper()
    return (
        head.startswith("CHECK")
        or difflib.SequenceMatcher(None, head, "CHECK").ratio() >= 0.75
    )


def lint_directives(
    text: str, prefixes: set[str] | None = None
) -> list[tuple[int, str]]:
    """`(line number, message)` for every misspelled or malformed directive."""
    prefixes = {"CHECK"} if prefixes is None else prefixes
    valid_check = re.compile(
        r"//\s*(?:"
        + "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
        + r")(?:"
        + "|".join(re.escape(s) for s in CHECK_SUFFIXES)
        + r"|-COUNT-\d+):"
    )
    errors = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _CANDIDATE.search(line)
        if m is None or _RUN.search(line):
            continue
        word = m.group("word")
        directive_like = (
            word is None or _looks_like_check(word) or word.split("-")[0] in prefixes
        )
        if not (directive_like or word.lower().startswith("expect")):
            continue  # an ordinary comment: `// NOTE:`, `// TODO: ...`
        expected_like = (word or m.group("lower") or "").lower().startswith("expect")
        valid = _EXPECTED_OK if expected_like else valid_check
        if not valid.match(line, m.start()):
            errors.append(
                (lineno, f"misspelled or malformed directive: {line.strip()}")
            )
    return errors
