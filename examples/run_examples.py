"""`make run`: compile each example kernel and run it (on the GPU if one is visible, else the interpreter)."""

import importlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
EXAMPLES = ["elementwise_add", "softmax", "rms_norm", "gemm", "flash_attention"]


def main() -> int:

    from tilec.target import resolve_target

    target = resolve_target("auto")
    device = "cuda" if target.kind == "cuda" else "cpu"
    print(f"tilec examples on {target.name} ({device})")
    passed = failed = 0
    for name in EXAMPLES:
        start = time.perf_counter()
        try:
            ok = importlib.import_module(name).main(device)
        except Exception as e:  # report and go on with the next example
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            ok = False
        else:
            print(f"{'PASS' if ok else 'FAIL'} {name} ({time.perf_counter() - start:.2f} s)")
        passed += bool(ok)
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
