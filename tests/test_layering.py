"""Layer boundaries: every "never" of ARCHITECTURE.md ("Repository layout"), checked without ruff.

- dialects/       never imports tilec.passes at module level (a lazy import inside a function,
                  as the canonicalization-pattern traits do, is allowed), nor the frontend, the
                  compiler or the targets anywhere;
- passes/         never imports the frontend, the compiler, tilec.jit or tilec.runtime;
- targets/        never imports the compiler, tilec.jit or tilec.runtime;
- tilec/language/ never imports tilec.passes.

"The compiler" includes the temporary re-exports of its old names (tilec.pipeline,
tilec.program). `test_rules_cover_every_never_of_the_architecture` reads the nevers from
../shared/ARCHITECTURE.md, where it exists, so a never added there fails here until it is checked.
"""

import ast
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = REPO_ROOT.parent / "shared" / "ARCHITECTURE.md"
FOLDER_PACKAGE = {
    "tilec": "tilec",
    "dialects": "tilec.dialects",
    "passes": "tilec.passes",
    "targets": "tilec.targets",
}

# The layers the nevers name, as the modules that make them up.
LAYERS = {
    "dialects": ("tilec.dialects",),
    "passes": ("tilec.passes",),
    "frontend": ("tilec.frontend",),
    "compiler": ("tilec.compiler", "tilec.pipeline", "tilec.program"),
    "targets": ("tilec.targets",),
    "jit": ("tilec.jit",),
    "runtime": ("tilec.runtime",),
    "language": ("tilec.language",),
}
FOLDERS = {"dialects": "dialects", "passes": "passes", "targets": "targets", "language": "tilec/language"}

# (folder layer, banned layer, module_level_only)
RULES = [
    ("dialects", "passes", True),
    ("dialects", "frontend", False),
    ("dialects", "compiler", False),
    ("dialects", "targets", False),
    ("passes", "frontend", False),
    ("passes", "compiler", False),
    ("passes", "jit", False),
    ("passes", "runtime", False),
    ("targets", "compiler", False),
    ("targets", "jit", False),
    ("targets", "runtime", False),
    ("language", "passes", False),
]


def package_of(rel: Path) -> list[str]:
    """The package a file (path relative to the repo root) belongs to, as name parts."""
    parts = [*FOLDER_PACKAGE[rel.parts[0]].split("."), *rel.parts[1:-1]]
    return parts


def imports(path: Path, rel: Path, module_level_only: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of each import; relative imports are resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = package_of(rel)
    nodes = _module_level(tree.body) if module_level_only else ast.walk(tree)
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _module_level(body):
    """Statements run at import: descends into if/try/with, not into defs or classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _module_level(getattr(node, field, None) or [])


def _within(name: str, banned: str) -> bool:
    return name == banned or name.startswith(banned + ".")


def violations(folder: str, banned: str, module_level_only: bool, root: Path = REPO_ROOT) -> list[str]:
    found = []
    for path in sorted((root / FOLDERS[folder]).rglob("*.py")):
        rel = path.relative_to(root)
        for line, name in imports(path, rel, module_level_only):
            if any(_within(name, module) for module in LAYERS[banned]):
                found.append(f"{rel}:{line}: imports {name}")
    return found


@pytest.mark.parametrize("folder, banned, module_level_only", RULES, ids=[f"{f}-never-{b}" for f, b, _ in RULES])
def test_layering(folder, banned, module_level_only):
    found = violations(folder, banned, module_level_only)
    where = "at module level" if module_level_only else "anywhere"
    assert not found, f"{FOLDERS[folder]}/ must not import {' or '.join(LAYERS[banned])} {where}:\n" + "\n".join(found)


def architecture_nevers(text: str) -> set[tuple[str, str]]:
    """(folder layer, banned layer) of each "X never imports A, B or C" in the Nevers paragraph."""
    paragraph = text.split("**Nevers**", 1)[1].split("\n\n", 1)[0]
    nevers = set()
    for clause in re.sub(r"\([^)]*\)", "", " ".join(paragraph.split())).split(";"):
        m = re.search(r"(\w+) never imports? (.*)", clause)
        if m is None:
            continue
        sentence = m.group(2).split(".")[0]
        for name in re.split(r",\s*|\s+or\s+|\s+and\s+", sentence):
            name = name.strip().removeprefix("the ").strip()
            if name:
                nevers.add((m.group(1), name))
    return nevers


@pytest.mark.skipif(not ARCHITECTURE.exists(), reason="../shared/ARCHITECTURE.md is absent")
def test_rules_cover_every_never_of_the_architecture():
    nevers = architecture_nevers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(nevers) >= 12, nevers  # the paragraph was found and read
    checked = {(folder, banned) for folder, banned, _ in RULES}
    assert nevers <= checked, f"nevers of ARCHITECTURE.md that no rule checks: {sorted(nevers - checked)}"


def test_architecture_nevers_are_read_from_the_paragraph():
    text = ("intro\n\n**Nevers** (checked): dialects never import passes, frontend or targets "
            "(lazily, see x); passes never import the frontend, jit or runtime; language never imports "
            "passes. A fact has one home.\n\nnext paragraph: foo never imports bar")
    assert architecture_nevers(text) == {("dialects", "passes"), ("dialects", "frontend"), ("dialects", "targets"),
                                         ("passes", "frontend"), ("passes", "jit"), ("passes", "runtime"),
                                         ("language", "passes")}


def test_a_violation_is_found(tmp_path):
    (tmp_path / "targets" / "cuda").mkdir(parents=True)
    (tmp_path / "targets" / "cuda" / "x.py").write_text("def f():\n    from tilec.compiler import cache\n")
    (tmp_path / "targets" / "y.py").write_text("from ..pipeline import lower_to_thread\n")
    found = violations("targets", "compiler", False, root=tmp_path)
    assert found == ["targets/cuda/x.py:2: imports tilec.compiler", "targets/cuda/x.py:2: imports tilec.compiler.cache",
                     "targets/y.py:1: imports tilec.pipeline", "targets/y.py:1: imports tilec.pipeline.lower_to_thread"]


def test_layering_checker_resolves_relative_and_lazy_imports(tmp_path):
    src = tmp_path / "x.py"
    src.write_text(
        "from .. import frontend\ntry:\n    import a\nexcept ImportError:\n    pass\n"
        "def f():\n    from .canonicalize import tile\n"
    )
    rel = Path("passes/x.py")
    everywhere = imports(src, rel, module_level_only=False)
    assert (1, "tilec.frontend") in everywhere
    assert (7, "tilec.passes.canonicalize.tile") in everywhere
    module_level = imports(src, rel, module_level_only=True)
    assert (3, "a") in module_level
    assert all(line != 7 for line, _ in module_level)
