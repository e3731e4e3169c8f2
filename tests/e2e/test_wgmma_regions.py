"""wgmma reads gemm operands that are regions of shared allocations, stages of multi-buffered ones,
and allocations `T.annotate_layout` lays out (issue 9: wgmma for every T.gemm it can serve).

TileLang's MLA kernels split a 512-wide head into halves, `T.gemm(Q_shared[:, :D // 2],
KV_shared[stage, :, :D // 2], acc_s, transpose_B=True)` then `T.gemm(S_shared, KV_shared[stage, :,
D // 2:], acc_o)`; TileLang's own kernels annotate `make_swizzled_layout`. These took mma.sync
before. A region's descriptors start at its first element inside the allocation's swizzled rows
(whose row width sets the layout, and whose strides the descriptors step by); a region they cannot
start at stays on mma.sync. On the simulator every case matches float64 and the thread-level IR
says which instruction ran; a wrong descriptor stride there gives values off by O(1).
"""

# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T
from tilec.layout import make_swizzled_layout


def mla_halves(stages=2, D=256, H=64, BI=64):
    """S = sum over stages of Q KV^T in two halves of D; O = P KV in two halves of D (P = S cast)."""
    half = D // 2

    @T.prim_func
    def main(Q: T.Tensor((H, D), T.float16), KV: T.Tensor((stages, BI, D), T.float16),
             S: T.Tensor((H, BI), T.float32), O: T.Tensor((H, D), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            q = T.alloc_shared((H, D), T.float16)
            kv = T.alloc_shared((stages, BI, D), T.float16)
            p = T.alloc_shared((H, BI), T.float16)
            acc_s = T.alloc_fragment((H, BI), T.float32)
            acc_l = T.alloc_fragment((H, half), T.float32)
            acc_r = T.alloc_fragment((H, half), T.float32)
            T.copy(Q, q)
            T.copy(KV, kv)
            T.clear(acc_s)
            T.clear(acc_l)
            T.clear(acc_r)
            for s in T.serial(stages):
                T.gemm(q[:, :half], kv[s, :, :half], acc_s, transpose_B=True)
                T.gemm(q[:, half:], kv[s, :, half:], acc_s, transpose_B=True)
            T.copy(acc_s, S)
            T.copy(acc_s, p)
            for s in T.serial(stages):
                T.gemm(p, kv[s, :, :half], acc_l)
                T.gemm(p, kv[s, :, half:], acc_r)
            T.copy(acc_l, O[:, :half])
            T.copy(acc_r, O[:, half:])

    def ref(q, kv):
        q, kv = q.double(), kv.double()
        s = sum(q @ kv[i].T for i in range(stages))
        o = sum(s.half().double() @ kv[i] for i in range(stages))
        return s.float(), o.float()

    return main, ref, [(H, D), (stages, BI, D)], [2, 3]


def rows_and_m_major():
    """A M-major (transpose_A) from columns 64:128 of a [64, 128] tile; B K-major from rows 16:80."""

    @T.prim_func
    def main(A: T.Tensor((64, 128), T.float16), B: T.Tensor((80, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 128), T.float16)
            b = T.alloc_shared((80, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a[:, 64:128], b[16:80, :], c, transpose_A=True, transpose_B=True)
            T.copy(c, C)

    return main, lambda a, b: (a.double()[:, 64:128].T @ b.double()[16:80].T).float(), [(64, 128), (80, 64)], [2]


def annotated(swizzle_bytes=None):
    """Both operands annotated with make_swizzled_layout (A's rows 256 bytes wide)."""
    extra = {} if swizzle_bytes is None else {"swizzle_bytes": swizzle_bytes}

    @T.prim_func
    def main(A: T.Tensor((64, 128), T.float16), B: T.Tensor((128, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 128), T.float16)
            b = T.alloc_shared((128, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.annotate_layout({a: make_swizzled_layout(a, **extra), b: make_swizzled_layout(b)})
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, C)

    return main, lambda a, b: (a.double() @ b.double()).float(), [(64, 128), (128, 64)], [2]


def same_tile():
    """X X: both operands one shared tile (A K-major, B N-major: the same rows' layout)."""

    @T.prim_func
    def main(X: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_shared((64, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(X, x)
            T.gemm(x, x, c, clear_accum=True)
            T.copy(c, C)

    return main, lambda x: (x.double() @ x.double()).float(), [(64, 64)], [1]


def half_step_offset():
    """K-major columns from 8: half a k16 step, where no descriptor starts (mma.sync)."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), T.float16)
            b = T.alloc_shared((64, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a[:, 8:24], b[8:24, :], c)
            T.copy(c, C)

    return main, lambda a, b: (a.double()[:, 8:24] @ b.double()[8:24]).float(), [(64, 64), (64, 64)], [2]


def pipelined_halves(M=256, N=256, K=256):
    """A T.Pipelined loop whose gemms read K halves of its staged tiles: warp-specialized with TMA."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(N // 128, M // 128, threads=256) as (bx, by):
            a = T.alloc_shared((128, 64), T.float16)
            b = T.alloc_shared((64, 128), T.float16)
            c = T.alloc_fragment((128, 128), T.float32)
            T.clear(c)
            for ko in T.Pipelined(K // 64, num_stages=3):
                T.copy(A[by * 128, ko * 64], a)
                T.copy(B[ko * 64, bx * 128], b)
                T.gemm(a[:, 0:32], b[0:32, :], c)
                T.gemm(a[:, 32:64], b[32:64, :], c)
            T.copy(c, C[by * 128, bx * 128])

    return main, lambda a, b: (a.double() @ b.double()).float(), [(M, K), (K, N)], [2]


def preload_through_a_region():
    """Q filled through a region of a wider tile before a pipelined loop, then read through that
    region: not the tile's whole writer, so no TMA preload of it (the producer would box a strided
    region as a dense one); the loop still runs its gemm on wgmma."""

    @T.prim_func
    def main(Q: T.Tensor((64, 64), T.float16), K: T.Tensor((256, 64), T.float16), S: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            q = T.alloc_shared((64, 128), T.float16)
            k = T.alloc_shared((64, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            T.copy(Q, q[:, 64:128])
            T.clear(acc)
            for j in T.Pipelined(4, num_stages=2):
                T.copy(K[j * 64, 0], k)
                T.gemm(q[:, 64:128], k, acc, transpose_B=True)
            T.copy(acc, S)

    def ref(q, k):
        return sum(q.double() @ k[j * 64:(j + 1) * 64].double().T for j in range(4)).float()

    return main, ref, [(64, 64), (256, 64)], [2]


def stages_of_68_rows():
    """Stages of 68 rows: stage 1 starts 4 rows into a swizzle pattern, where a descriptor with base
    offset 0 cannot start; mma.sync reads them."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((2, 68, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), T.float16)
            b = T.alloc_shared((2, 68, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            for s in T.serial(2):
                T.gemm(a, b[s, 0:64, :], c, transpose_B=True)
            T.copy(c, C)

    return main, lambda a, b: sum(a.double() @ b[s, :64].double().T for s in range(2)).float(), \
        [(64, 64), (2, 68, 64)], [2]


CASES = {
    "mla_halves": (mla_halves, "wgmma"),
    "rows_and_m_major": (rows_and_m_major, "wgmma"),
    "annotated": (annotated, "wgmma"),
    "annotated_other_swizzle": (lambda: annotated(swizzle_bytes=64), "mma.sync"),
    "same_tile": (same_tile, "wgmma"),
    "half_step_offset": (half_step_offset, "mma.sync"),
    "pipelined_halves": (pipelined_halves, "wgmma"),
    "preload_through_a_region": (preload_through_a_region, "wgmma"),
    "stages_of_68_rows": (stages_of_68_rows, "mma.sync"),
}
_IR = {"wgmma": "nvvm.wgmma.mma_async", "mma.sync": "nvvm.mma.sync"}


def _run(name, target, device):
    make, instruction = CASES[name]
    main, ref, shapes, out_idx = make()
    torch.manual_seed(len(name))
    inputs = [(torch.randn(*s) / 4).half().to(device) for s in shapes]
    kernel = tilec.compile(main, out_idx=out_idx, target=target)
    got = kernel(*inputs)
    got = got if isinstance(got, (list, tuple)) else [got]
    want = ref(*[x.cpu() for x in inputs])
    want = want if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, atol=2e-3, rtol=2e-3)
    return kernel, instruction


@pytest.mark.parametrize("name", list(CASES))
def test_on_the_simulator(name):
    kernel, instruction = _run(name, "sim", "cpu")
    ir = kernel.get_ir("thread")
    assert _IR[instruction] in ir and all(v not in ir for k, v in _IR.items() if k != instruction)


def test_pipelined_regions_are_warp_specialized():
    main, *_ = pipelined_halves()
    ir = tilec.compile(main, out_idx=[2], target="sim").get_ir("tile-opt")
    assert "tile.warp_specialize" in ir and "not_warp_specialized" not in ir and "tile.tma_load" in ir


def test_make_swizzled_layout_follows_the_row_width():
    """TileLang's make_swizzled_layout(buf) (its second argument is k_major, not a byte count):
    the widest swizzle the row is a multiple of, none for a row no swizzle fits."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            w = T.alloc_shared((64, 256), T.float16)
            h = T.alloc_shared((64, 32), T.float16)
            q = T.alloc_shared((64, 16), T.float16)
            n = T.alloc_shared((64, 12), T.float16)
            f = T.alloc_shared((64, 32), T.float16)
            T.annotate_layout({w: make_swizzled_layout(w, True), h: make_swizzled_layout(h),
                               q: make_swizzled_layout(q, k_major=False), n: make_swizzled_layout(n),
                               f: tilec.layout.make_full_bank_swizzled_layout(f)})
            T.copy(A[0:64, 0:12], n)

    ir = tilec.compile(main, target="interp").get_ir("tile")
    for name, nbytes in (("w", 128), ("h", 64), ("q", 32), ("f", 128)):
        assert f"tile.annotate_layout %{name} {{layout = #tile.swizzle<{nbytes}>}}" in ir, name
    assert "tile.annotate_layout %n" not in ir


def test_old_style_swizzle_bytes_argument_is_a_located_error():
    """make_swizzled_layout's second argument is TileLang's k_major: a byte count there is refused
    with the keyword to use, not silently ignored."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), T.float16)
            T.annotate_layout({a: make_swizzled_layout(a, 64)})
            T.copy(A, a)

    with pytest.raises(tilec.TilecError, match=r"k_major is TileLang's flag \(a bool\), got 64") as e:
        tilec.compile(main, target="interp")
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "make_swizzled_layout(a, 64)" in text)
    assert f"test_wgmma_regions.py:{line}:" in str(e.value) and "swizzle_bytes=64" in str(e.value)


@pytest.mark.parametrize("name", ["mla_halves", "rows_and_m_major", "annotated", "pipelined_halves"])
def test_assembles_for_sm_90a(name, ptxas):
    from tilec.compiler.lower import lower_to_thread
    from tilec.frontend import build_prim_func
    from tilec.target import resolve_target
    from tilec.targets.nvptx import assemble, emit_ptx

    main, _, _, out_idx = CASES[name][0]()
    lowered = lower_to_thread(build_prim_func(main, out_idx), resolve_target("sm_90a"), {})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    _, report = assemble(ptx, "sm_90a")
    assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
    assert not report.kernels[lowered.spec.kernel_name].spills


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_on_the_gpu(name):
    _run(name, "cuda", "cuda")
