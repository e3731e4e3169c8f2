"""Packaging for tilec.

`import tilec` is the only top-level name installed. Three top-level folders are mapped
into it so the architecture is visible from the repository root:

    tilec/     -> tilec
    dialects/  -> tilec.dialects
    passes/    -> tilec.passes
    targets/   -> tilec.targets

Every subpackage (a folder with an ``__init__.py``) below those roots is found and mapped
explicitly, which both regular and editable (PEP 660) installs need.
"""

import os
import re

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = {
    "tilec": "tilec",
    "tilec.dialects": "dialects",
    "tilec.passes": "passes",
    "tilec.targets": "targets",
}


def _version() -> str:
    with open(os.path.join(HERE, "tilec", "_version.py"), encoding="utf-8") as f:
        return re.search(r'__version__\s*=\s*"([^"]+)"', f.read()).group(1)


def _packages() -> tuple[list[str], dict[str, str]]:
    """All packages under ROOTS, each mapped to its folder."""
    packages, package_dir = [], {}
    for root_pkg, folder in ROOTS.items():
        package_dir[root_pkg] = folder
        packages.append(root_pkg)
        for sub in find_packages(where=os.path.join(HERE, folder)):
            name = f"{root_pkg}.{sub}"
            if name in ROOTS:  # a mapped root is never a subfolder of another root
                continue
            packages.append(name)
            package_dir[name] = os.path.join(folder, *sub.split("."))
    return packages, package_dir


def _readme() -> str:
    path = os.path.join(HERE, "README.md")
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


PACKAGES, PACKAGE_DIR = _packages()

setup(
    name="tilec",
    version=_version(),
    description="A standalone tile-IR GPU compiler in Python with a TileLang-compatible surface",
    long_description=_readme(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    install_requires=["xdsl==0.75.0", "numpy", "llvmlite>=0.45", "ml_dtypes"],
    extras_require={
        "test": ["pytest", "pytest-xdist", "hypothesis", "filecheck", "torch", "einops"]
    },
    entry_points={"console_scripts": ["tilec=tilec.cli:main"]},
    zip_safe=False,
)
