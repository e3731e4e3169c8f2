"""tile-plan-shared-memory's diagnostic: too much shared memory, located at `with T.Kernel`.

An `.mlir` test cannot check it: ops parsed from MLIR text carry no file
locations, so the kernel is built with the frontend here.
"""

import inspect

import pytest

import tilec.dialects
import tilec.language as T
from tilec.errors import TilecError
from tilec.frontend import build_prim_func
from tilec.passes.tile_plan_shared_memory import TilePlanSharedMemoryPass


def too_big(A: T.Tensor((128, 256), T.float32)):
    with T.Kernel(1, threads=128):
        A_s = T.alloc_shared((128, 256), T.float32)
        B_s = T.alloc_shared((128, 256), T.float32)
        C_s = T.alloc_shared((128, 256), T.float32)
        T.copy(A, A_s)
        T.copy(A_s, B_s)
        T.copy(B_s, C_s)
        T.copy(C_s, A_s)
        T.copy(A_s, A)


def _kernel_line() -> int:
    lines, first = inspect.getsourcelines(too_big)
    return first + next(i for i, line in enumerate(lines) if "with T.Kernel" in line)


def test_over_limit_names_every_buffer_at_the_kernel():
    module = build_prim_func(T.prim_func(too_big), out_idx=None).module
    with pytest.raises(TilecError) as info:
        TilePlanSharedMemoryPass().apply(tilec.dialects.context(), module)
    text = str(info.value)
    assert f"{__file__}:{_kernel_line()}:" in text
    assert "393216 bytes" in text and "232448 bytes" in text
    for name in ("A_s", "B_s", "C_s"):
        assert f"{name}: 128x256xf32 (131072 bytes)" in text
    assert "hint: use smaller tiles" in text


def test_under_a_larger_limit_plans_offsets():
    module = build_prim_func(T.prim_func(too_big), out_idx=None).module
    TilePlanSharedMemoryPass(limit=400_000).apply(tilec.dialects.context(), module)
    kernel = next(op for op in module.walk() if op.name == "tile.kernel")
    assert kernel.smem_bytes.value.data == 393216


def test_through_the_compiler_the_error_names_the_target():
    import tilec

    with pytest.raises(TilecError) as info:
        tilec.compile(T.prim_func(too_big), target="sm_80")
    text = str(info.value)
    assert f"{__file__}:{_kernel_line()}:" in text
    assert "bytes on sm_80; shared buffers:" in text
