"""Shrinks a failing kernel: deletes statements and lowers integer literals for as long as
the target still fails the same way against the interpreter.

    cd tests && python -m fuzz.minimize KERNEL.py --target sim [--configs '{"tilec.enable_mma": false}']

KERNEL.py is a module defining `main` (a fuzz case as fuzz_gpu.py saves it, or any kernel).
The failure is judged without a reference: both targets run on the same random inputs (every
tensor filled; T.dynamic sizes bound to 40) and the verdict is "mismatch" (a tensor differs
by more than 1e-2 of its scale, or in where it holds NaN), "refused:<message>" (the target
raises a TilecError while compiling a kernel the interpreter runs), "crash:<message>"
(one while running) or "internal:<exception type>".  A candidate is kept when its verdict
equals the original's, so a kernel made invalid by a deletion (the interpreter refuses it
too) is never kept.  Prints the smallest kernel found.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys

import numpy as np

from .harness import load_kernel

_SYMBOL_SIZE = 40


def _short(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first.split("error: ", 1)[-1][:60]


def verdict(source: str, target: str, configs: dict | None = None, seed: int = 0) -> str | None:
    """The failure signature of `source` on `target` (None: it passes, or it is invalid)."""
    import torch

    import tilec
    from tilec import TilecError

    try:
        prim = load_kernel(source)
        ki = tilec.compile(prim, target="interp")
    except Exception:  # noqa: BLE001 -- an invalid candidate
        return None
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for p in ki.params:
        shape = [d if isinstance(d, int) else _SYMBOL_SIZE for d in (p.shape or ())]
        inputs.append(torch.randn(shape, generator=gen).to(p.dtype.torch))
    ri = [x.clone() for x in inputs]
    try:
        ki(*ri)
    except Exception:  # noqa: BLE001
        return None
    try:
        kt = tilec.compile(prim, target=target, pass_configs=configs or None)
    except TilecError as e:
        return "internal:compile" if "internal compiler error" in str(e) else f"refused:{_short(str(e))}"
    except Exception as e:  # noqa: BLE001
        return f"internal:{type(e).__name__}"
    rt = [x.clone().to("cuda" if target not in ("sim", "interp") else "cpu") for x in inputs]
    try:
        kt(*rt)
    except TilecError as e:
        return "internal:run" if "internal compiler error" in str(e) else f"crash:{_short(str(e))}"
    except Exception as e:  # noqa: BLE001
        return f"internal:{type(e).__name__}"
    bad = []
    for p, a, b in zip(ki.params, ri, rt):
        a, b = a.double().cpu().numpy(), b.double().cpu().numpy()
        ok = ~np.isnan(a)
        scale = float(np.abs(a[ok]).max(initial=0.0)) + 1.0
        if not np.array_equal(np.isnan(a), np.isnan(b)) or np.abs(a[ok] - b[ok]).max(initial=0.0) > 1e-2 * scale:
            bad.append(p.name)
    return f"mismatch:{','.join(bad)}" if bad else None


def _statements(tree: ast.Module) -> list[tuple[list, int]]:
    """(body list, index) of every statement inside the kernel's `with T.Kernel` block."""
    out = []

    def walk(body):
        for i, stmt in enumerate(body):
            out.append((body, i))
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and not isinstance(stmt, ast.FunctionDef):
                    walk(inner)

    fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    kernel = next(n for n in ast.walk(fdef) if isinstance(n, ast.With))
    walk(kernel.body)
    return out


_WRITES_ARG = {"copy": 1, "fill": 0, "clear": 0, "gemm": 2, "cumsum": 1, "cummax": 1}


def _root(node) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _writes(stmt) -> set[str]:
    """The buffers and names a statement (and what it contains) writes."""
    out = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if _root(t):
                    out.add(_root(t))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, args = node.func.attr, node.args
            k = 1 if name.startswith("reduce_") else _WRITES_ARG.get(name)
            if name in ("cumsum", "cummax") and len(args) == 1:
                k = 0
            if k is not None and len(args) > k and _root(args[k]):
                out.add(_root(args[k]))
    return out


def _reads(stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}


def _deletions(source: str):
    """Sources with one statement deleted, together with every later statement that uses what
    it writes (so no candidate reads a buffer nobody wrote), last statements first."""
    n = len(_statements(ast.parse(source)))
    for k in reversed(range(n)):
        tree = ast.parse(source)
        stmts = _statements(tree)
        body, i = stmts[k]
        if len(body) == 1:
            continue  # its parent's deletion covers it
        doomed, dead = {id(body[i])}, _writes(body[i])
        for later_body, j in stmts[k + 1:]:
            s = later_body[j]
            if _reads(s) & dead and not _inside(s, doomed, stmts):
                doomed.add(id(s))
                dead |= _writes(s)
        for b, j in reversed(stmts):
            if id(b[j]) in doomed:
                del b[j]
        if any(not b for b, _ in _statements(tree)) or not _statements(tree):
            continue
        yield ast.unparse(tree)


def _inside(stmt, doomed: set, stmts) -> bool:
    """Whether `stmt` sits inside a statement already marked for deletion."""
    for body, j in stmts:
        if id(body[j]) in doomed and any(n is stmt for n in ast.walk(body[j])):
            return True
    return False


def _literal_shrinks(source: str):
    """Sources with every occurrence of one integer value > 1 replaced by a smaller one."""
    values = sorted({n.value for n in ast.walk(ast.parse(source))
                     if isinstance(n, ast.Constant) and type(n.value) is int and n.value > 1}, reverse=True)
    for v in values:
        for w in sorted({1, 2, v // 2, v - 1} - {v}):
            if w >= v or w < 1:
                continue
            tree = ast.parse(source)
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and type(n.value) is int and n.value == v:
                    n.value = w
            yield ast.unparse(tree)
            break  # the smallest that works is found on the next round


def _valid(source: str) -> bool:
    try:
        tree = ast.parse(source)
        return all(b for b, _ in _statements(tree))
    except (SyntaxError, StopIteration):
        return False


def minimize(source: str, target: str, configs: dict | None = None, log=print) -> str:
    want = verdict(source, target, configs)
    if want is None:
        raise SystemExit("the kernel does not fail on this target: nothing to minimize")
    log(f"verdict: {want}")
    changed = True
    while changed:
        changed = False
        for candidate in [*_deletions(source), *_literal_shrinks(source)]:
            if candidate != source and _valid(candidate) and verdict(candidate, target, configs) == want:
                source, changed = candidate, True
                log(f"  kept a {len(source)}-character kernel")
                break
    return source


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernel", help="a .py file defining `main`")
    ap.add_argument("--target", default="sim")
    ap.add_argument("--configs", default=None, help="pass_configs as JSON")
    args = ap.parse_args(argv)
    with open(args.kernel) as f:
        source = f.read()
    configs = json.loads(args.configs) if args.configs else None
    small = minimize(source, args.target, configs, log=lambda m: print(m, file=sys.stderr))
    print(small)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
