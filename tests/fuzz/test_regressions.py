"""Minimized kernels from the differential fuzzer's findings, one test per bug.

Each kernel is the smallest we found that still fails; each test runs it on the interpreter,
the simulated CUDA lowering and (marked gpu) the GPU, against a float64 reference.  A bug
that is not fixed yet is `xfail(strict=True)` on the targets where it was seen, so the suite
stays green and the test turns red (XPASS) the day the fix lands: then drop the mark and
the bug's entry in known.py, which keeps the generator away from it meanwhile.  The cuda
parameters carry the same expectation as sim (same thread-level IR) but are not strict:
they have not been run on a GPU yet.
"""

# Kernels bind block indices they do not use: that is the DSL, not dead code.
# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T

FIXED = ("trailing_index_copy", "gemm_fragment_a_and_b", "parallel_atomic_replicated", "invariant_atomic_in_parallel",
         "broadcast_layout_conflict", "negative_global_index", "scan_into_local",
         "reduce_fragment_to_shared", "if_on_alloc_var")  # names of the bugs below whose fix has landed


def targets(bug: str | None, seen=("sim",), reason: str = ""):
    """interp, sim and cuda, the targets in `seen` marked xfail while `bug` is not fixed."""
    params = []
    for target in ("interp", "sim", "cuda"):
        marks = [pytest.mark.gpu] if target == "cuda" else []
        if bug is not None and bug not in FIXED and (target in seen or (target == "cuda" and "sim" in seen)):
            marks.append(pytest.mark.xfail(strict=target != "cuda", reason=reason or bug))
        params.append(pytest.param(target, marks=marks, id=target))
    return pytest.mark.parametrize("target", params)


def _device(target: str) -> str:
    return "cuda" if target == "cuda" else "cpu"


def _close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    got, want = got.double().cpu(), want.double().cpu()
    assert not torch.isnan(got).any(), f"unwritten (NaN) elements:\n{got}"
    err = ((got - want).norm() / want.norm().clamp_min(1e-30)).item()
    assert err < tol, f"relative error {err:.3g}\ngot  {got}\nwant {want}"


# --------------------------------------------------------------------------- #
# 1. T.copy between a tile and a global region whose last index is an integer
# --------------------------------------------------------------------------- #


def store_to_region_with_integer_last_index():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), Y: T.Tensor((4, 1), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((4,), T.float32)
            T.copy(X, f)
            T.copy(f, Y[0:4, 0])

    return main


def load_from_region_with_integer_last_index():
    @T.prim_func
    def main(Y: T.Tensor((2, 2, 1), T.float32), X: T.Tensor((2, 2), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((2, 2), T.float32)
            T.copy(Y[0:2, 0:2, 0], s)
            T.copy(s, X)

    return main


@pytest.mark.parametrize("make,shapes", [(store_to_region_with_integer_last_index, ((4,), (4, 1))),
                                         (load_from_region_with_integer_last_index, ((2, 2, 1), (2, 2)))],
                         ids=["fragment_store", "shared_load"])
@targets("trailing_index_copy", reason="only the first element of each row of the region is moved (the rest "
                                       "stays unwritten / reads as 0)")
def test_copy_region_with_an_integer_last_index(make, shapes, target):
    x = torch.randn(*shapes[0], device=_device(target))
    y = torch.full(shapes[1], float("nan"), device=_device(target))
    tilec.compile(make(), target=target)(x, y)
    _close(y, x.reshape(shapes[1]))


# --------------------------------------------------------------------------- #
# 2. T.gemm with both operands in fragments
# --------------------------------------------------------------------------- #


def gemm_of_two_fragments():
    @T.prim_func
    def main(A: T.Tensor((16, 16), T.float16), B: T.Tensor((16, 8), T.float16), C: T.Tensor((16, 8), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            a = T.alloc_fragment((16, 16), T.float16)
            b = T.alloc_fragment((16, 8), T.float16)
            c = T.alloc_fragment((16, 8), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, C)

    return main


@pytest.mark.parametrize("configs", [{}, {"tilec.enable_mma": False}], ids=["mma", "simt"])
@targets("gemm_fragment_a_and_b", reason="wrong products when A and B are both fragments")
def test_gemm_with_both_operands_in_fragments(configs, target):
    dev = _device(target)
    a, b = torch.randn(16, 16, device=dev).half(), torch.randn(16, 8, device=dev).half()
    c = torch.full((16, 8), float("nan"), device=dev)
    tilec.compile(gemm_of_two_fragments(), target=target, pass_configs=configs)(a, b, c)
    _close(c, a.double() @ b.double())


# --------------------------------------------------------------------------- #
# 3. Element atomics inside T.Parallel
# --------------------------------------------------------------------------- #


def atomic_per_element():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), Out: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                T.atomic_add(Out[0], X[i])

    return main


@targets("parallel_atomic_replicated", reason="every thread of the block performs every iteration's atomic "
                                              "(32 threads: 128 instead of 4)")
def test_element_atomics_in_parallel(target):
    dev = _device(target)
    x, out = torch.ones(4, device=dev), torch.zeros(1, device=dev)
    tilec.compile(atomic_per_element(), target=target)(x, out)
    _close(out, torch.tensor([4.0]))


def atomic_of_a_constant():
    @T.prim_func
    def main(Out: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                T.atomic_add(Out[0], 1.0)

    return main


@targets("invariant_atomic_in_parallel", seen=("interp", "sim"),
         reason="interp applies a loop-invariant atomic once (1.0); sim once per thread (32.0); want 4.0")
def test_loop_invariant_atomic_in_parallel_counts_every_iteration(target):
    out = torch.zeros(1, device=_device(target))
    tilec.compile(atomic_of_a_constant(), target=target)(out)
    _close(out, torch.tensor([4.0]))


# --------------------------------------------------------------------------- #
# 4. A valid kernel the CUDA target refuses: a reduced fragment broadcast into a tile of
#    another dtype ("fragment %s is used with incompatible thread layouts")
# --------------------------------------------------------------------------- #


def broadcast_of_a_reduction_into_float16():
    @T.prim_func
    def main(X: T.Tensor((64, 32), T.float32), Z: T.Tensor((64, 32), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 32), T.float32)
            s = T.alloc_fragment((32,), T.float32)
            z = T.alloc_fragment((64, 32), T.float16)
            T.copy(X, x)
            T.reduce_sum(x, s, dim=0)
            for i, j in T.Parallel(64, 32):
                z[i, j] = s[j]
            T.copy(z, Z)

    return main


@targets("broadcast_layout_conflict", reason="refused: fragment %s is used with incompatible thread layouts "
                                             "(and the hint's T.copy into another fragment does not help)")
def test_broadcast_of_a_reduction_into_another_dtype(target):
    dev = _device(target)
    x, z = torch.randn(64, 32, device=dev), torch.full((64, 32), float("nan"), device=dev)
    tilec.compile(broadcast_of_a_reduction_into_float16(), target=target)(x, z)
    _close(z, x.sum(0, keepdim=True).half().expand(64, 32), tol=1e-3)


# --------------------------------------------------------------------------- #
# 5. Global indices below 0: the interpreter reads 0 and skips the write (out-of-bounds
#    parts of global tensors are neither read nor written); the CUDA path accesses them.
# --------------------------------------------------------------------------- #


def copy_from_below_zero():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((8,), T.float32)
            T.copy(A[bx * 8 - 2], f)
            T.copy(f, B)

    return main


def copy_to_below_zero():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((8,), T.float32)
            T.copy(A, s)
            T.copy(s, B[bx * 8 - 1])

    return main


def parallel_read_below_zero():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                B[i] = A[bx * 8 + i - 1]

    return main


def parallel_write_below_zero():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                B[bx * 8 + i - 1] = A[i]

    return main


_NAN = float("nan")
NEGATIVE = [
    (copy_from_below_zero, lambda a: torch.cat([torch.zeros(2), a[:-2]])),
    (copy_to_below_zero, lambda a: torch.cat([a[1:], torch.tensor([_NAN])])),
    (parallel_read_below_zero, lambda a: torch.cat([torch.zeros(1), a[:-1]])),
    (parallel_write_below_zero, lambda a: torch.cat([a[1:], torch.tensor([_NAN])])),
]


@pytest.mark.parametrize("make,want", NEGATIVE, ids=[m.__name__ for m, _ in NEGATIVE])
@targets("negative_global_index", reason="sim: 'access at element -1 outside global memory (simulated)'; on the "
                                         "GPU an unguarded out-of-bounds access")
def test_negative_global_index(make, want, target):
    dev = _device(target)
    a, b = torch.randn(8, device=dev), torch.full((8,), _NAN, device=dev)
    tilec.compile(make(), target=target)(a, b)
    expect = want(a.cpu())
    assert torch.equal(torch.isnan(b.cpu()), torch.isnan(expect)), f"written: {b}\nwant {expect}"
    _close(b.cpu()[~torch.isnan(expect)], expect[~torch.isnan(expect)])


# --------------------------------------------------------------------------- #
# 6. A valid kernel the CUDA target refuses: a fragment reduced into a shared tile
#    ("T.reduce_* of a fragment on the CUDA target needs a fragment destination")
# --------------------------------------------------------------------------- #


def reduce_fragment_into_shared():
    @T.prim_func
    def main(X: T.Tensor((16, 32), T.float32), Y: T.Tensor((16,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((16, 32), T.float32)
            y = T.alloc_shared((16,), T.float32)
            T.copy(X, x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y)

    return main


@targets("reduce_fragment_to_shared", reason="refused on the CUDA target; the interpreter runs it (issue 7 item 2: "
                                             "one language for every target)")
def test_reduce_of_a_fragment_into_shared_memory(target):
    dev = _device(target)
    x, y = torch.randn(16, 32, device=dev), torch.full((16,), float("nan"), device=dev)
    tilec.compile(reduce_fragment_into_shared(), target=target)(x, y)
    _close(y, x.sum(1))


# --------------------------------------------------------------------------- #
# 7. A scan into a local tile does nothing on the CUDA path
# --------------------------------------------------------------------------- #


def cumsum_of_a_local_tile():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), Y: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_local((4,), T.float32)
            T.copy(X, x)
            T.cumsum(x)
            T.copy(x, Y)

    return main


def cummax_into_a_local_tile():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), Y: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((4,), T.float32)
            y = T.alloc_local((4,), T.float32)
            T.copy(X, f)
            T.cummax(f, y)
            T.copy(y, Y)

    return main


@pytest.mark.parametrize("make,want", [(cumsum_of_a_local_tile, lambda x: x.cumsum(0)),
                                       (cummax_into_a_local_tile, lambda x: x.cummax(0).values)],
                         ids=["cumsum_in_place", "cummax_dst"])
@targets("scan_into_local", reason="cumsum in place leaves the local tile unscanned; cummax into a local dst "
                                   "leaves it all zero")
def test_scan_of_a_local_tile(make, want, target):
    dev = _device(target)
    x, y = torch.tensor([4.0, -3.0, 2.0, 1.0], device=dev), torch.full((4,), float("nan"), device=dev)
    tilec.compile(make(), target=target)(x, y)
    _close(y, want(x.cpu()))


# --------------------------------------------------------------------------- #
# 8. An `if` on a per-iteration T.alloc_var inside T.Parallel
# --------------------------------------------------------------------------- #


def if_on_alloc_var():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                v = T.alloc_var(T.float32, init=A[i])
                if v > 0.0:
                    B[i] = 1.0
                else:
                    B[i] = 2.0

    return main


@targets("if_on_alloc_var", reason="every iteration takes the branch of one of them: [1, 1, 1, 1] instead of "
                                   "[1, 2, 1, 2]")
def test_if_on_a_per_iteration_alloc_var(target):
    dev = _device(target)
    a, b = torch.tensor([1.0, -1.0, 1.0, -1.0], device=dev), torch.full((4,), float("nan"), device=dev)
    tilec.compile(if_on_alloc_var(), target=target)(a, b)
    _close(b, torch.tensor([1.0, 2.0, 1.0, 2.0]))
