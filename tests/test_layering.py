"""Layer boundaries (STYLE.md section 9), checked without ruff (pyproject has the TID rules).

- passes/   never imports tilec.frontend, anywhere in the file;
- dialects/ never imports tilec.passes at module level (a lazy import inside a function,
            as the canonicalization-pattern traits do, is allowed).
"""

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FOLDER_PACKAGE = {
    "tilec": "tilec",
    "dialects": "tilec.dialects",
    "passes": "tilec.passes",
    "targets": "tilec.targets",
}

# (folder, banned module, module_level_only)
RULES = [
    ("passes", "tilec.frontend", False),
    ("dialects", "tilec.passes", True),
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


@pytest.mark.parametrize("folder, banned, module_level_only", RULES)
def test_layering(folder, banned, module_level_only):
    violations = []
    for path in sorted((REPO_ROOT / folder).rglob("*.py")):
        rel = path.relative_to(REPO_ROOT)
        for line, name in imports(path, rel, module_level_only):
            if _within(name, banned):
                violations.append(f"{rel}:{line}: imports {name}")
    where = "at module level" if module_level_only else "anywhere"
    assert not violations, f"{folder}/ must not import {banned} {where}:\n" + "\n".join(
        violations
    )


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
