"""No Python module may exceed 1,500 lines (STYLE.md section 7)."""

import os
import subprocess
from pathlib import Path

MAX_LINES = 1500
REPO_ROOT = Path(__file__).resolve().parent.parent


def python_modules() -> list[Path]:
    """Tracked `.py` files (plus untracked, not ignored ones), else a walk of the tree."""
    try:
        out = subprocess.run(
            [
                "git",
                "ls-files",
                "--cached",
                "--others",
                "--exclude-standard",
                "-z",
                "*.py",
            ],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [
            REPO_ROOT / p for p in out.split("\0") if p and (REPO_ROOT / p).is_file()
        ]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for root, dirs, files in os.walk(REPO_ROOT):
        dirs[:] = [
            d for d in dirs if not d.startswith(".") and d not in ("build", "dist")
        ]
        found += [Path(root) / f for f in files if f.endswith(".py")]
    return found


def test_no_module_exceeds_max_lines():
    modules = python_modules()
    assert modules, "found no Python modules"
    too_long = {}
    for path in modules:
        with open(path, encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            too_long[str(path.relative_to(REPO_ROOT))] = n
    assert not too_long, f"modules over {MAX_LINES} lines (split them): {too_long}"
