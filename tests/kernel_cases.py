"""Kernels the CUDA tests and the simulated-CUDA tests share, each with inputs and a reference.

`CASES` lists (name, prim_func, out_idx, inputs(device), reference(*inputs)); kernels that
write into an input (no out_idx) name the input to compare in `check`.
"""

from dataclasses import dataclass, field

import torch

import tilec.language as T


def scale_dynamic():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 256), threads=128) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < N:
                    B[bx * 256 + i] = A[bx * 256 + i] * 2.0 + 1.0

    return main



def row_reduce(kind: str, rows=64, cols=256):
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
              "absmax": T.reduce_absmax}[kind]

    @T.prim_func
    def main(X: T.Tensor((rows, cols), T.float16), Y: T.Tensor((rows,), T.float32)):
        with T.Kernel(rows // 16, threads=128) as bx:
            x = T.alloc_fragment((16, cols), T.float32)
            y = T.alloc_fragment((16,), T.float32)
            T.copy(X[bx * 16, 0], x)
            reduce(x, y, dim=1)
            T.copy(y, Y[bx * 16])

    return main



def column_sum():
    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((128, 64), T.float32)
            y = T.alloc_fragment((64,), T.float32)
            T.copy(X, x)
            T.reduce_sum(x, y, dim=0)
            T.copy(y, Y)

    return main



def scan(reverse: bool):
    @T.prim_func
    def main(X: T.Tensor((32, 64), T.float32), Y: T.Tensor((32, 64), T.float32)):
        with T.Kernel(4, threads=128) as bx:
            x = T.alloc_fragment((8, 64), T.float32)
            T.copy(X[bx * 8, 0], x)
            T.cumsum(x, dim=1, reverse=reverse)
            T.copy(x, Y[bx * 8, 0])

    return main



def atomic_rows():
    @T.prim_func
    def main(X: T.Tensor((256, 128), T.float32), Total: T.Tensor((128,), T.float32)):
        with T.Kernel(16, threads=128) as bx:
            x = T.alloc_fragment((16, 128), T.float32)
            s = T.alloc_fragment((128,), T.float32)
            T.copy(X[bx * 16, 0], x)
            T.reduce_sum(x, s, dim=0)
            T.atomic_add(Total[0], s)

    return main



def gemm_bt(m=96, n=80, k=64):
    @T.prim_func
    def main(A: T.Tensor((m, k), T.bfloat16), B: T.Tensor((n, k), T.bfloat16), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(n, 64), T.ceildiv(m, 64), threads=128) as (bx, by):
            a = T.alloc_shared((64, 32), T.bfloat16)
            b = T.alloc_shared((64, 32), T.bfloat16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, 32), num_stages=2):
                T.copy(A[by * 64, ko * 32], a)
                T.copy(B[bx * 64, ko * 32], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C[by * 64, bx * 64])

    return main



def serial_accumulate():
    @T.prim_func
    def main(X: T.Tensor((64, 32), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_shared((64, 32), T.float32)
            T.copy(X, x)
            for i in T.Parallel(64):
                acc = T.alloc_var(T.float32, init=0.0)
                for k in T.serial(32):
                    acc = acc + x[i, k] * x[i, k]
                Y[i] = acc

    return main



def copy_tiles(m, n, bm, bn, dtype):
    @T.prim_func
    def main(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=64) as (bx, by):
            s = T.alloc_shared((bm, bn), dtype)
            f = T.alloc_fragment((bm, bn), T.float32)
            T.copy(A[by * bm, bx * bn], s)
            T.copy(s, f)
            T.copy(f, B[by * bm, bx * bn])

    return main


def reduce_rows(m, n, bm, kind, dtype):
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "absmax": T.reduce_absmax}[kind]

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m,), T.float32)):
        with T.Kernel(T.ceildiv(m, bm), threads=64) as bx:
            x = T.alloc_fragment((bm, n), T.float32)
            y = T.alloc_fragment((bm,), T.float32)
            T.copy(X[bx * bm, 0], x)
            reduce(x, y, dim=1)
            T.copy(y, Y[bx * bm])

    return main


@dataclass
class Case:
    name: str
    prim: object
    out_idx: list | None
    inputs: object  # device -> list of tensors
    reference: object  # *inputs -> expected tensor
    check: int | None = None  # with no out_idx: the input the kernel writes
    tol: float = 1e-5
    marks: list = field(default_factory=list)


def _reductions():
    refs = {"sum": lambda x: x.float().sum(1), "max": lambda x: x.float().amax(1),
            "min": lambda x: x.float().amin(1), "abssum": lambda x: x.float().abs().sum(1),
            "absmax": lambda x: x.float().abs().amax(1)}
    return [Case(f"reduce_{k}", row_reduce(k), [1], lambda d: [torch.randn(64, 256, device=d).half()], f, tol=1e-3)
            for k, f in refs.items()]


CASES = [
    *[Case(f"dynamic_{n}", scale_dynamic(), [1], lambda d, n=n: [torch.randn(n, device=d)], lambda a: a * 2 + 1)
      for n in (1, 1000, 4096, 10_003)],
    *_reductions(),
    Case("column_sum", column_sum(), [1], lambda d: [torch.randn(128, 64, device=d)], lambda x: x.sum(0)),
    *[Case(f"cumsum_reverse_{r}", scan(r), [1], lambda d: [torch.randn(32, 64, device=d)],
           (lambda x: x.flip(1).cumsum(1).flip(1)) if r else (lambda x: x.cumsum(1))) for r in (False, True)],
    Case("atomic_rows", atomic_rows(), None, lambda d: [torch.randn(256, 128, device=d), torch.zeros(128, device=d)],
         lambda x, total: x.sum(0), check=1),
    Case("gemm_bt_bf16", gemm_bt(), [2],
         lambda d: [torch.randn(96, 64, device=d).bfloat16(), torch.randn(80, 64, device=d).bfloat16()],
         lambda a, b: a.float() @ b.float().T, tol=1e-3),
    Case("alloc_var_serial", serial_accumulate(), [1], lambda d: [torch.randn(64, 32, device=d)],
         lambda x: (x * x).sum(1)),
]


def run_case(case: Case, target: str, device: str, pass_configs: dict | None = None,
             expect_ir: str | None = None) -> None:
    """Runs `case` on `target` with fresh inputs on `device` and checks it against its reference."""
    import tilec

    inputs = case.inputs(device)
    expected = case.reference(*[t.clone() for t in inputs])
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target=target, pass_configs=pass_configs)
    if expect_ir is not None:
        assert expect_ir in kernel.get_ir("thread"), f"{case.name}: no {expect_ir} in the thread-level IR"
    out = kernel(*inputs)
    got = inputs[case.check] if case.check is not None else out
    got, expected = got.double().cpu(), expected.double().cpu()
    err = ((got - expected).norm() / expected.norm().clamp_min(1e-30)).item()
    assert err < case.tol and not torch.isnan(got).any(), f"{case.name}: relative error {err:.2e}"


def two_d_threads():
    @T.prim_func
    def main(X: T.Tensor((64, 128), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=[32, 4]) as bx:
            x = T.alloc_fragment((16, 128), T.float32)
            y = T.alloc_fragment((16,), T.float32)
            T.copy(X[bx * 16, 0], x)
            T.reduce_max(x, y, dim=1)
            T.copy(y, Y[bx * 16])

    return main


CASES.append(Case("threads_32x4", two_d_threads(), [1], lambda d: [torch.randn(64, 128, device=d)],
                  lambda x: x.amax(1)))


def reduce_shared(kind: str, cols: int):
    reduce = {"sum": T.reduce_sum, "absmax": T.reduce_absmax}[kind]

    @T.prim_func
    def main(X: T.Tensor((32, cols), T.float32), Y: T.Tensor((32,), T.float32)):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((16, cols), T.float32)
            y = T.alloc_fragment((16,), T.float32)
            T.copy(X[bx * 16, 0], s)
            T.fill(y, 1.0)
            reduce(s, y, dim=1, clear=False)
            T.copy(y, Y[bx * 16])

    return main


CASES += [
    Case("reduce_shared_sum_unrolled", reduce_shared("sum", 24), [1], lambda d: [torch.randn(32, 24, device=d)],
         lambda x: x.sum(1) + 1),
    Case("reduce_shared_absmax_loop", reduce_shared("absmax", 100), [1], lambda d: [torch.randn(32, 100, device=d)],
         lambda x: x.abs().amax(1).clamp_min(1.0)),
]


def gemm_tiles(m, n, k, bm, bn, bk, dtype, transpose_b=False, policy=T.GemmWarpPolicy.Square, threads=128,
               stages=2, out_dtype=T.float32, transpose_a=False):
    a_shape, a_tile = ((k, m), (bk, bm)) if transpose_a else ((m, k), (bm, bk))
    b_shape = (n, k) if transpose_b else (k, n)
    b_tile = (bn, bk) if transpose_b else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), out_dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            a = T.alloc_shared(a_tile, dtype)
            b = T.alloc_shared(b_tile, dtype)
            c = T.alloc_fragment((bm, bn), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=stages):
                if transpose_a:
                    T.copy(A[ko * bk, by * bm], a)
                else:
                    T.copy(A[by * bm, ko * bk], a)
                if transpose_b:
                    T.copy(B[bx * bn, ko * bk], b)
                else:
                    T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c, transpose_A=transpose_a, transpose_B=transpose_b, policy=policy)
            T.copy(c, C[by * bm, bx * bn])

    return main


def _gemm_inputs(m, n, k, dtype, transpose_b):
    torch_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    return lambda d: [torch.randn(m, k, device=d).to(torch_dtype),
                      torch.randn(*((n, k) if transpose_b else (k, n)), device=d).to(torch_dtype)]


def _gemm_ref(transpose_b):
    return lambda a, b: a.float() @ (b.float().T if transpose_b else b.float())


# Tensor-core gemms (mma.sync m16n8k16): every warp grid and repeat count, both operand types,
# B row- and column-major, and tails; run with pass config tilec.enable_mma.
MMA_CASES = [
    Case(f"mma_{dtype}_{m}x{n}x{k}_{bm}x{bn}x{bk}{'_bt' if bt else ''}_{policy.name}_{threads}",
         gemm_tiles(m, n, k, bm, bn, bk, dtype, bt, policy, threads), [2], _gemm_inputs(m, n, k, dtype, bt),
         _gemm_ref(bt), tol=1e-3)
    for (m, n, k, bm, bn, bk, dtype, bt, policy, threads) in [
        (64, 64, 32, 64, 64, 32, "float16", False, T.GemmWarpPolicy.Square, 128),
        (96, 80, 64, 64, 64, 32, "bfloat16", True, T.GemmWarpPolicy.Square, 128),
        (128, 64, 64, 64, 32, 64, "float16", True, T.GemmWarpPolicy.FullRow, 128),
        (64, 128, 48, 32, 64, 16, "bfloat16", False, T.GemmWarpPolicy.FullCol, 64),
        (32, 32, 96, 32, 32, 32, "float16", False, T.GemmWarpPolicy.Square, 32),
    ]
]


# Software-pipelined gemms (tile-pipeline: cp.async stages): K tails (zero-filled async copies),
# fewer iterations than stages, rows that are no whole 16-byte vectors (plain copies in the stage).
PIPELINE_CASES = [
    Case(f"pipelined{stages}_{dtype}_{m}x{n}x{k}_{bm}x{bn}x{bk}{'_bt' if bt else ''}",
         gemm_tiles(m, n, k, bm, bn, bk, dtype, bt, stages=stages), [2], _gemm_inputs(m, n, k, dtype, bt),
         _gemm_ref(bt), tol=1e-3)
    for (m, n, k, bm, bn, bk, dtype, bt, stages) in [
        (96, 80, 200, 64, 64, 32, "float16", False, 3),
        (64, 64, 32, 64, 64, 32, "bfloat16", True, 4),
        (128, 128, 256, 64, 64, 32, "float16", True, 4),
        (70, 66, 96, 32, 32, 32, "float16", False, 3),
    ]
]


def gemm_two_pipelines(m, n, k, bm=64, bn=64, bk=32, stages=3):
    """An outer serial loop runs a pipelined loop twice over the same stages (K in two halves)."""
    half = k // 2

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), T.float16)
            b = T.alloc_shared((bk, bn), T.float16)
            c = T.alloc_fragment((bm, bn), T.float32)
            T.clear(c)
            for h in T.serial(2):
                for ko in T.Pipelined(T.ceildiv(half, bk), num_stages=stages):
                    T.copy(A[by * bm, h * half + ko * bk], a)
                    T.copy(B[h * half + ko * bk, bx * bn], b)
                    T.gemm(a, b, c)
            T.copy(c, C[by * bm, bx * bn])

    return main


PIPELINE_CASES.append(Case("pipelined3_nested_64x64x320", gemm_two_pipelines(64, 64, 320), [2],
                           _gemm_inputs(64, 64, 320, "float16", False), _gemm_ref(False), tol=1e-3))


# Warpgroup gemms (wgmma m64nNk16, pass config tilec.enable_wgmma on sm_90a): K-major A with
# 128/64/32-byte rows, N-major B in one swizzle row or in 64-column chunks, K-major B
# (transpose_B), two warpgroups, bf16, pipelined stages and K tails.
WGMMA_CASES = [
    Case(f"wgmma_{dtype}_{m}x{n}x{k}_{bm}x{bn}x{bk}{'_bt' if bt else ''}_{threads}t_{stages}st",
         gemm_tiles(m, n, k, bm, bn, bk, dtype, bt, threads=threads, stages=stages), [2],
         _gemm_inputs(m, n, k, dtype, bt), _gemm_ref(bt), tol=1e-3)
    for (m, n, k, bm, bn, bk, dtype, bt, threads, stages) in [
        (64, 64, 128, 64, 64, 64, "float16", False, 128, 2),
        (128, 256, 96, 64, 128, 32, "float16", False, 128, 3),
        (128, 128, 64, 128, 64, 64, "bfloat16", True, 256, 2),
        (64, 96, 80, 64, 32, 16, "float16", False, 128, 3),
        (128, 128, 200, 128, 128, 64, "float16", False, 256, 3),
        (128, 64, 256, 128, 64, 64, "float16", False, 128, 2),  # two m64 blocks per warpgroup
        (64, 64, 32, 64, 64, 16, "float16", True, 128, 2),  # K-major B with 32-byte rows
        (64, 32, 64, 64, 16, 64, "float16", False, 128, 2),  # N-major B with 32-byte rows (n = 16)
        (64, 192, 64, 64, 192, 64, "bfloat16", False, 128, 2),  # three 64-column chunks
    ]
]


def gemm_swizzled(m, n, k, swizzle_bytes=128, dtype="float16"):
    """The shared tiles carry an XOR swizzle (T.annotate_layout): every access must agree on it."""
    from tilec.layout import make_swizzled_layout

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(n, 64), T.ceildiv(m, 64), threads=128) as (bx, by):
            a = T.alloc_shared((64, 64), dtype)
            b = T.alloc_shared((64, 64), dtype)
            c = T.alloc_fragment((64, 64), T.float32)
            T.annotate_layout({a: make_swizzled_layout(a, swizzle_bytes=swizzle_bytes),
                               b: make_swizzled_layout(b, swizzle_bytes=swizzle_bytes)})
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, 64), num_stages=2):
                T.copy(A[by * 64, ko * 64], a)
                T.copy(B[ko * 64, bx * 64], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * 64, bx * 64])

    return main


SWIZZLE_CASES = [
    Case(f"gemm_swizzle{s}", gemm_swizzled(96, 80, 128, s), [2], _gemm_inputs(96, 80, 128, "float16", False),
         _gemm_ref(False), tol=1e-3)
    for s in (32, 64, 128)
]


def gemm_region_operands(m, n, k, dtype, transpose_b=False, a_region=False, bk=32):
    """Each block holds all of K of its B tile in one shared buffer and multiplies a K-slice of it
    per iteration: `B_s[ko * bk:ko * bk + bk, :]`, a region at a run-time offset, which ldmatrix
    cannot address (issue 8, item 5); with `a_region` A's slices are regions of one buffer too."""
    assert not (transpose_b and a_region), "a case varies one operand at a time"
    b_shape, b_tile = ((n, k), (64, k)) if transpose_b else ((k, n), (k, 64))

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(n // 64, m // 64, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, k if a_region else bk), dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(B[bx * 64, 0] if transpose_b else B[0, bx * 64], B_s)
            if a_region:
                T.copy(A[by * 64, 0], A_s)
            T.clear(c)
            for ko in T.serial(k // bk):
                if not a_region:
                    T.copy(A[by * 64, ko * bk], A_s)
                if a_region:
                    T.gemm(A_s[:, ko * bk:ko * bk + bk], B_s[ko * bk:ko * bk + bk, :], c)
                elif transpose_b:
                    T.gemm(A_s, B_s[:, ko * bk:ko * bk + bk], c, transpose_B=True)
                else:
                    T.gemm(A_s, B_s[ko * bk:ko * bk + bk, :], c)
            T.copy(c, C[by * 64, bx * 64])

    return main


# Gemm operands that are regions of a shared tile at run-time offsets (issue 8, item 5).
REGION_OPERAND_CASES = [
    Case(f"gemm_region_{dtype}{'_bt' if bt else ''}{'_a' if ar else ''}",
         gemm_region_operands(128, 128, 64, dtype, bt, ar), [2], _gemm_inputs(128, 128, 64, dtype, bt),
         _gemm_ref(bt), tol=1e-3)
    for (dtype, bt, ar) in [("float16", False, False), ("bfloat16", True, False), ("float16", False, True)]
]


# --------------------------------------------------------------------------- #
# Regressions: thread counts that are not powers of two, overlapping copies
# --------------------------------------------------------------------------- #


def reduce_odd_threads(threads: int, shape: tuple, dim: int, kind: str, scope: str = "fragment"):
    """One block of `threads` reducing an `shape` tile along `dim` (issue 7: the cross-warp
    combine was wrong for thread modes of sizes that are not powers of two, e.g. 3 x 8 lanes)."""
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
              "absmax": T.reduce_absmax}[kind]
    out = (shape[1 - dim],)

    @T.prim_func
    def main(X: T.Tensor(shape, T.float32), Y: T.Tensor(out, T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            x = T.alloc_fragment(shape, T.float32) if scope == "fragment" else T.alloc_shared(shape, T.float32)
            y = T.alloc_fragment(out, T.float32)
            T.copy(X, x)
            reduce(x, y, dim=dim)
            T.copy(y, Y)

    return main


_REDUCE_REF = {"sum": lambda x, d: x.sum(d), "max": lambda x, d: x.amax(d), "min": lambda x, d: x.amin(d),
               "abssum": lambda x, d: x.abs().sum(d), "absmax": lambda x, d: x.abs().amax(d)}
_ODD_REDUCTIONS = [(96, (1, 96), 1, "sum"), (96, (1, 96), 1, "max"), (192, (1, 192), 1, "min"),
                   (100, (1, 100), 1, "abssum"), (96, (4, 96), 1, "absmax"), (192, (16, 48), 0, "sum"),
                   (160, (96, 8), 0, "max"), (224, (7, 33), 1, "sum"), (100, (4, 96), 1, "sum")]
CASES += [
    Case(f"reduce_{kind}_{threads}t_{shape[0]}x{shape[1]}_dim{dim}", reduce_odd_threads(threads, shape, dim, kind),
         [1], lambda d, shape=shape: [torch.randn(*shape, device=d)],
         lambda x, kind=kind, dim=dim: _REDUCE_REF[kind](x, dim), tol=1e-4)
    for threads, shape, dim, kind in _ODD_REDUCTIONS
]


def overlapping_shared_copies(threads: int):
    """T.copy between overlapping regions of one shared tile, both directions (issue 7: each
    thread wrote before others had read, changing 192 of 256 elements)."""

    @T.prim_func
    def main(X: T.Tensor((8, 32), T.float32), Y: T.Tensor((8, 32), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_shared((8, 32), T.float32)
            T.copy(X, s)
            T.copy(s[0:7, :], s[1:8, :])
            T.copy(s[2:8, 0:31], s[0:6, 1:32])
            T.copy(s, Y)

    return main


def _overlap_ref(x):
    ref = x.clone()
    ref[1:8] = ref[0:7].clone()
    ref[0:6, 1:32] = ref[2:8, 0:31].clone()
    return ref


def overlapping_global_copy():
    """T.copy between overlapping regions of one global tensor inside one block."""

    @T.prim_func
    def main(X: T.Tensor((8, 32), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.copy(X[0:7, :], X[1:8, :])

    return main


def _shift_rows(x):
    ref = x.clone()
    ref[1:8] = x[0:7]
    return ref


CASES += [
    *[Case(f"copy_overlap_shared_{t}t", overlapping_shared_copies(t), [1], lambda d: [torch.randn(8, 32, device=d)],
           _overlap_ref, tol=1e-9) for t in (96, 128)],
    Case("copy_overlap_global", overlapping_global_copy(), None, lambda d: [torch.randn(8, 32, device=d)],
         _shift_rows, check=0, tol=1e-9),
]


# Warpgroup gemms over K-major rows wider than 128 bytes (64-column chunks): A at K = 128 and
# B (transpose_B) at K = 128 and 256, as attention's Q K^T at head dims 128 and 256.
WGMMA_CASES += [
    Case(f"wgmma_{dtype}_{m}x{n}x{k}_{bm}x{bn}x{bk}{'_bt' if bt else ''}_{threads}t_{stages}st",
         gemm_tiles(m, n, k, bm, bn, bk, dtype, bt, threads=threads, stages=stages), [2],
         _gemm_inputs(m, n, k, dtype, bt), _gemm_ref(bt), tol=1e-3)
    for (m, n, k, bm, bn, bk, dtype, bt, threads, stages) in [
        (64, 64, 256, 64, 64, 128, "float16", True, 128, 2),
        (128, 64, 256, 128, 64, 256, "bfloat16", True, 256, 2),
        (64, 128, 256, 64, 128, 128, "float16", False, 128, 2),
    ]
]


def attention(batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads, dtype="float16", stage=None,
              group=None):
    """FlashAttention forward as shared/kernels/flash_attention.py writes it (online softmax,
    exp2 with the scale folded in, [batch, seq, heads, dim]), the keys past the end masked too;
    `stage` / `group`: a hand schedule of its loop (TileLang's T.Pipelined arguments)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [batch, seq_len, heads, dim]
    accum = T.float32

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Out: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared([block_M, dim], dtype)
            K_s = T.alloc_shared([block_N, dim], dtype)
            V_s = T.alloc_shared([block_N, dim], dtype)
            s = T.alloc_fragment([block_M, block_N], accum)
            p = T.alloc_fragment([block_M, block_N], dtype)
            o = T.alloc_fragment([block_M, dim], accum)
            m_old = T.alloc_fragment([block_M], accum)
            m_new = T.alloc_fragment([block_M], accum)
            alpha = T.alloc_fragment([block_M], accum)
            p_sum = T.alloc_fragment([block_M], accum)
            l = T.alloc_fragment([block_M], accum)
            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m_new, -T.infinity(accum))
            n_blocks = T.ceildiv(seq_len, block_N)
            if causal:
                n_blocks = T.min(n_blocks, T.ceildiv((bx + 1) * block_M, block_N))
            for k in T.Pipelined(n_blocks, num_stages=stages, stage=stage, group=group):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_s)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(accum))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.if_then_else(k * block_N + j < seq_len, 0, -T.infinity(accum))
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m_new, m_old)
                T.reduce_max(s, m_new, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_old[i] - m_new[i]) * scale)
                for i, j in T.Parallel(block_M, dim):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m_new[i] * scale)
                T.reduce_sum(s, p_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + p_sum[i]
                T.copy(s, p)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                o[i, j] /= l[i]
            T.copy(o, Out[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def _attention_inputs(batch, heads, seq_len, dim, dtype):
    torch_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    return lambda d: [torch.randn(batch, seq_len, heads, dim, device=d).to(torch_dtype) for _ in range(3)]


def _attention_ref(causal):
    def ref(q, k, v):
        q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).transpose(1, 2)

    return ref


# Attention on the sm_90a path: S = Q K^T by wgmma SS (K-major operands in 64-column chunks at
# head dims 128 and 256), O += P V by wgmma RS (P in registers), one and two warpgroups (two
# m64 blocks per warpgroup at block_M 128 over 128 threads), causal and not, sequence lengths
# that the blocks do not divide.
ATTENTION_CASES = [
    Case(f"attention_{dtype}_b{b}h{h}s{s}d{d}{'_causal' if causal else ''}_{bm}x{bn}_{st}st_{th}t",
         attention(b, h, s, d, causal, bm, bn, st, th, dtype), [3], _attention_inputs(b, h, s, d, dtype),
         _attention_ref(causal), tol=1e-2)
    for (b, h, s, d, causal, bm, bn, st, th, dtype) in [
        (1, 2, 128, 64, False, 64, 64, 1, 128, "float16"),
        (1, 1, 256, 128, False, 128, 128, 2, 256, "float16"),
        (1, 1, 200, 128, True, 128, 64, 2, 256, "float16"),
        (1, 1, 192, 64, True, 128, 64, 2, 128, "bfloat16"),
        (1, 1, 160, 128, False, 64, 128, 2, 128, "float16"),
        (1, 1, 128, 256, True, 64, 64, 2, 128, "float16"),
    ]
]
