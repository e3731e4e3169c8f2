"""Process replay for the compiler: the PTX of every kernel case, written out or compared.

A refactor must leave the emitted PTX byte-identical (STYLE.md §9, as tinygrad's process
replay compares kernels). This compiles, through the public API (`tilec.compile`), every
kernel case of tests/kernel_cases.py (with its pass configs), the reference kernels of
../shared/kernels at the sizes tests/e2e/test_reference_kernels_ptx.py uses, and examples/,
for sm_90a and sm_80:

    python tools/ptx_replay.py write  /tmp/ptx-before        # before the change
    python tools/ptx_replay.py compare /tmp/ptx-before       # after: lists every kernel that differs

`compare` exits 1 when a kernel's PTX differs, is new or is missing.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("TILEC_SHARED_KERNELS", os.path.join(os.path.dirname(ROOT), "shared", "kernels"))
ARCHS = ("sm_90a", "sm_80")


def _cases():
    """(name, prim_func, out_idx, pass_configs) of every kernel case."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import kernel_cases as kc

    groups = [("case", kc.CASES, {}), ("mma", kc.MMA_CASES, {}), ("pipe", kc.PIPELINE_CASES, {}),
              ("swz", kc.SWIZZLE_CASES, {}), ("wgmma", kc.WGMMA_CASES, {"tilec.enable_wgmma": True}),
              ("region", kc.REGION_OPERAND_CASES, {})]
    for prefix, cases, configs in groups:
        for case in cases:
            yield f"{prefix}.{case.name}", case.prim, case.out_idx, configs


def _reference_kernels():
    """The shared reference kernels and the examples, built as `tilec compile` builds them."""
    from tilec.cli import _load_module, build_program, find_kernel

    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    from test_reference_kernels_ptx import CASES

    if os.path.isdir(SHARED):
        sys.path.insert(0, SHARED)
        for i, (file, kernel, defines) in enumerate(CASES):
            program = build_program(find_kernel(_load_module(os.path.join(SHARED, file)), kernel), defines)
            yield f"ref.{kernel}-{i}", program
    examples = os.path.join(ROOT, "examples")
    sys.path.insert(0, examples)
    for file, kernel, defines in [("gemm.py", "matmul", {"M": 512, "N": 512, "K": 256}),
                                  ("softmax.py", "softmax", {"M": 64, "N": 1024}),
                                  ("rms_norm.py", "rms_norm", {"M": 64, "N": 1024}),
                                  ("elementwise_add.py", "add", {"N": 4096})]:
        try:
            program = build_program(find_kernel(_load_module(os.path.join(examples, file)), kernel), defines)
        except Exception as e:  # an example whose factory takes other names: listed, not fatal
            print(f"skip example {file}:{kernel}: {e}", file=sys.stderr)
            continue
        yield f"example.{kernel}", program


def collect() -> dict[str, str]:
    import tilec
    from tilec import compiler
    from tilec.target import resolve_target

    out: dict[str, str] = {}
    for name, prim, out_idx, configs in _cases():
        for arch in ARCHS:
            try:
                out[f"{name}.{arch}"] = tilec.compile(prim, out_idx=out_idx, target=arch,
                                                      pass_configs=configs).get_kernel_source()
            except Exception as e:  # a refusal is part of the record too
                out[f"{name}.{arch}"] = f"ERROR {type(e).__name__}: {e}"
    for name, program in _reference_kernels():
        for arch in ARCHS:
            target = resolve_target(arch)
            try:
                out[f"{name}.{arch}"] = compiler.build(program, target, {}).kernel_source()
            except Exception as e:
                out[f"{name}.{arch}"] = f"ERROR {type(e).__name__}: {e}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["write", "compare"])
    ap.add_argument("dir")
    args = ap.parse_args(argv)
    os.environ.setdefault("TILEC_DISABLE_CACHE", "1")
    current = collect()
    if args.mode == "write":
        os.makedirs(args.dir, exist_ok=True)
        for name, text in current.items():
            with open(os.path.join(args.dir, name + ".ptx"), "w", encoding="utf-8") as f:
                f.write(text)
        print(f"wrote {len(current)} kernels to {args.dir}")
        return 0
    before = {f[:-4]: open(os.path.join(args.dir, f), encoding="utf-8").read()
              for f in os.listdir(args.dir) if f.endswith(".ptx")}
    differ = [n for n in sorted(set(before) & set(current)) if before[n] != current[n]]
    new, gone = sorted(set(current) - set(before)), sorted(set(before) - set(current))
    for n in differ:
        diff = difflib.unified_diff(before[n].splitlines(), current[n].splitlines(), "before", "after", lineterm="", n=1)
        print(f"--- {n} differs:\n" + "\n".join(list(diff)[:30]))
    for n in new:
        print(f"+++ {n} is new")
    for n in gone:
        print(f"--- {n} is missing")
    same = len(set(before) & set(current)) - len(differ)
    print(f"{same} identical, {len(differ)} differ, {len(new)} new, {len(gone)} missing")
    return 1 if differ or new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
