"""Fragments the owning threads cannot serve as written, rewritten by tile-infer-layout
(passes/fragment_conversions.py): each pattern computes on the simulated CUDA target what the
interpreter computes, and assembles for sm_90a.

The patterns are the ones TileLang's examples use: a row vector read by loops over two
accumulators of different thread layouts (deepseek_v32 sparse_mla_fwd, gdn's backward kernels),
a fragment indexed by a serial loop variable or transposed inside T.Parallel (deepseek_mhc), a
fragment element read at a run-time index outside T.Parallel (blocksparse_attention), and a copy
out of a region of a fragment (flash_decoding's varlen logits).
"""

# Kernels bind block indices they do not use: that is the DSL, not dead code.
# ruff: noqa: F841

import pytest
import torch
from tilec.dialects import print_ir

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func

MMA_SYNC = {"tilec.enable_wgmma": False}  # two accumulators in mma.sync layouts of different warp grids


def rows_into_two_accumulators():
    """A row vector written in one accumulator's layout and read in the other's."""

    @T.prim_func
    def main(A: T.Tensor((64, 16), T.float16), B: T.Tensor((16, 64), T.float16), R: T.Tensor((64,), T.float32),
             C: T.Tensor((64, 64), T.float32), D: T.Tensor((64, 8), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 16), T.float16)
            b = T.alloc_shared((16, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            acc2 = T.alloc_fragment((64, 8), T.float32)
            rows = T.alloc_fragment((64,), T.float32)
            m = T.alloc_fragment((64,), T.float32)
            m2 = T.alloc_fragment((64,), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.copy(R, rows)
            T.gemm(a, b, acc, clear_accum=True)
            T.gemm(a, b[:, 0:8], acc2, clear_accum=True)
            T.reduce_max(acc, m, dim=1)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] + rows[i] - m[i]
            for i, j in T.Parallel(64, 8):
                acc2[i, j] = acc2[i, j] + rows[i] + m[i]
            T.reduce_sum(acc2, m2, dim=1)
            for i in T.Parallel(64):  # rows (acc's rows) written from m2 (acc2's rows)
                rows[i] = m2[i] * 0.5
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] * rows[i]
            T.copy(acc, C)
            T.copy(acc2, D)

    def ref(a, b, r):
        s = a.float() @ b.float()
        m = s.max(1).values
        c = s + r[:, None] - m[:, None]
        d = s[:, :8] + r[:, None] + m[:, None]
        return c * (d.sum(1) * 0.5)[:, None], d

    return main, ref


def test_layout_conflict_becomes_a_conversion():
    main, ref = rows_into_two_accumulators()
    a, b, r = torch.randn(64, 16).half(), torch.randn(16, 64).half(), torch.randn(64)
    want_c, want_d = ref(a, b, r)
    for target in ("interp", "sim"):
        c, d = tilec.compile(main, out_idx=[3, 4], target=target, pass_configs=MMA_SYNC)(a, b, r)
        torch.testing.assert_close(d, want_d, atol=1e-2, rtol=1e-2)
        torch.testing.assert_close(c, want_c, atol=2e-2, rtol=1e-2)
    tilec.compile(main, out_idx=[3, 4], target="sm_90a", pass_configs=MMA_SYNC)


def rows_read_in_a_loop():
    """A row vector converted once before the loop that reads it in another accumulator's layout."""

    @T.prim_func
    def main(A: T.Tensor((64, 16), T.float16), B: T.Tensor((16, 64), T.float16), R: T.Tensor((64,), T.float32),
             D: T.Tensor((64, 8), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 16), T.float16)
            b = T.alloc_shared((16, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            acc2 = T.alloc_fragment((64, 8), T.float32)
            rows = T.alloc_fragment((64,), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.copy(R, rows)
            T.gemm(a, b, acc, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] * rows[i]
            T.clear(acc2)
            for k in T.serial(3):
                T.gemm(a, b[:, 0:8], acc2)
                for i, j in T.Parallel(64, 8):
                    acc2[i, j] = acc2[i, j] + rows[i] + acc[i, j]
            T.copy(acc2, D)

    def ref(a, b, r):
        s = a.float() @ b.float()
        acc = s * r[:, None]
        d = torch.zeros(64, 8)
        for _ in range(3):
            d = d + s[:, :8] + r[:, None] + acc[:, :8]
        return d

    return main, ref


def test_a_conversion_for_a_loop_is_made_once_before_it():
    main, ref = rows_read_in_a_loop()
    ir = _tile_ir(main, configs=MMA_SYNC)
    assert ir.index("tile.copy %rows, %rows_as0") < ir.index("tile.for"), ir
    a, b, r = torch.randn(64, 16).half(), torch.randn(16, 64).half(), torch.randn(64)
    for target in ("interp", "sim"):
        d = tilec.compile(main, out_idx=[3], target=target, pass_configs=MMA_SYNC)(a, b, r)
        torch.testing.assert_close(d, ref(a, b, r), atol=5e-2, rtol=1e-2)


def _tile_ir(main, target="sm_90a", configs=None) -> str:
    from tilec.compiler.lower import run_tile_passes
    from tilec.target import resolve_target

    return print_ir(run_tile_passes(build_prim_func(main, None), resolve_target(target), configs or {},
                                    dump_dir=""))


def test_the_conversion_is_in_the_ir():
    main, _ = rows_into_two_accumulators()
    ir = _tile_ir(main, configs=MMA_SYNC)
    assert "%rows_as0 = tile.alloc {layout = #tile.fragment<" in ir
    assert "tile.copy %rows, %rows_as0" in ir
    assert "incompatible" not in ir


def indexed_by_a_serial_loop(hc=4, n=64):
    """deepseek_mhc's `a[i_hci, i_hco]`: a fragment indexed by a serial loop variable, transposed."""

    @T.prim_func
    def main(A: T.Tensor((hc, hc), T.float32), X: T.Tensor((hc, n), T.float32), Y: T.Tensor((hc, n), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_fragment((hc, hc), T.float32)
            x = T.alloc_fragment((hc, n), T.float32)
            y = T.alloc_fragment((hc, n), T.float32)
            T.copy(A, a)
            T.copy(X, x)
            for o, j in T.Parallel(hc, n):
                y[o, j] = 0.0
                for k in T.serial(hc):
                    y[o, j] += a[k, o] * x[k, j]
            T.copy(y, Y)

    return main, lambda a, x: a.T @ x


def written_at_permuted_indices(n=64):
    """A fragment written at `n - 1 - i` and read transposed: both through shared memory."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), M: T.Tensor((8, 16), T.float32), Y: T.Tensor((n,), T.float32),
             Z: T.Tensor((16, 8), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((n,), T.float32)
            y = T.alloc_fragment((n,), T.float32)
            m = T.alloc_fragment((8, 16), T.float32)
            z = T.alloc_fragment((16, 8), T.float32)
            T.copy(X, x)
            T.copy(M, m)
            for i in T.Parallel(n):
                y[n - 1 - i] = x[i] * 2.0
            for i, j in T.Parallel(16, 8):
                z[i, j] = m[j, i]
            T.copy(y, Y)
            T.copy(z, Z)

    return main, lambda x, m: (x.flip(0) * 2, m.T.contiguous())


def read_at_a_runtime_index(n=16, steps=8):
    """blocksparse_attention's `if block_mask[k] != 0:` in a loop, and a constant index of a
    fragment that is not replicated, both outside T.Parallel."""

    @T.prim_func
    def main(Mask: T.Tensor((steps,), T.int32), X: T.Tensor((steps, n), T.float32), Y: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            mask = T.alloc_fragment((steps,), T.int32)
            acc = T.alloc_fragment((n,), T.float32)
            T.copy(Mask, mask)
            T.clear(acc)
            for k in T.Pipelined(steps, num_stages=1):
                if mask[k] != 0:
                    for i in T.Parallel(n):
                        acc[i] += X[k, i]
            first = acc[0]
            for i in T.Parallel(n):
                Y[i] = acc[i] + first

    def ref(mask, x):
        acc = (x * (mask != 0)[:, None].float()).sum(0)
        return acc + acc[0]

    return main, ref


def copied_out_of_a_region():
    """flash_decoding's `T.copy(acc_o[:valid, :], O_shared)`; a copy into, a fill of and a
    reduction of a region; a copy between regions of two fragments."""

    @T.prim_func
    def main(X: T.Tensor((64, 32), T.float32), P: T.Tensor((8, 32), T.float32), Y: T.Tensor((24, 32), T.float32),
             R: T.Tensor((8,), T.float32), W: T.Tensor((16, 8), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64, 32), T.float32)
            w = T.alloc_fragment((32, 8), T.float32)
            r = T.alloc_fragment((8,), T.float32)
            s = T.alloc_shared((24, 32), T.float32)
            T.copy(X, x)
            T.copy(P, x[4:12, :])
            T.fill(x[20:22, 8:16], 2.0)
            for i, j in T.Parallel(64, 32):
                x[i, j] = x[i, j] + 1.0
            T.copy(x[0:24, :], s)
            T.copy(s, Y)
            T.reduce_sum(x[8:16, :], r, dim=1)
            T.copy(r, R)
            T.clear(w)
            T.copy(x[1:17, 3:11], w[16:32, :])
            T.copy(w[16:32, :], W)

    def ref(x, p):
        x = x.clone()
        x[4:12] = p
        x[20:22, 8:16] = 2.0
        x = x + 1
        return x[:24], x[8:16].sum(1), x[1:17, 3:11]

    return main, ref


def read_at_shifted_rows(rows=32, n=64, split=2):
    """TileLang's split store of an accumulator (sparse MLA backward): a T.Parallel over all rows
    reads row i + s * rows/split behind `i < rows/split`; the loop is renumbered to read its own
    row (parallel_rotation.py), not through a shared copy of the fragment."""
    part = rows // split

    @T.prim_func
    def main(A: T.Tensor((rows, n), T.float32), Y: T.Tensor((rows, n), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((rows, n), T.float32)
            staged = T.alloc_shared((part, n), T.float32)
            T.copy(A, acc)
            for i, j in T.Parallel(rows, n):
                acc[i, j] = acc[i, j] * 2 + i
            for s in range(split):
                for i, j in T.Parallel(rows, n):
                    if i < part:
                        staged[i, j] = acc[i + s * part, j] + j
                T.copy(staged, Y[s * part:(s + 1) * part, :])

    def ref(a):
        return a * 2 + torch.arange(rows, dtype=torch.float32)[:, None] + torch.arange(n, dtype=torch.float32)

    return main, ref


CASES = {
    "indexed_by_a_serial_loop": (indexed_by_a_serial_loop, lambda: (torch.randn(4, 4), torch.randn(4, 64)), [2]),
    "written_at_permuted_indices": (written_at_permuted_indices, lambda: (torch.randn(64), torch.randn(8, 16)),
                                    [2, 3]),
    "read_at_a_runtime_index": (read_at_a_runtime_index,
                                lambda: (torch.tensor([1, 0, 1, 1, 0, 0, 1, 0], dtype=torch.int32),
                                         torch.randn(8, 16)), [2]),
    "copied_out_of_a_region": (copied_out_of_a_region, lambda: (torch.randn(64, 32), torch.randn(8, 32)),
                               [2, 3, 4]),
    "read_at_shifted_rows": (read_at_shifted_rows, lambda: (torch.randn(32, 64),), [1]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_interpreter_and_simulator_agree(name):
    make, inputs, out_idx = CASES[name]
    main, ref = make()
    args = inputs()
    want = ref(*args)
    want = want if isinstance(want, tuple) else (want,)
    for target in ("interp", "sim"):
        got = tilec.compile(main, out_idx=out_idx, target=target)(*args)
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4, msg=f"{name} on {target}")


@pytest.mark.parametrize("name", list(CASES))
def test_assembles_for_sm_90a(name, ptxas):
    make, _, out_idx = CASES[name]
    tilec.compile(make()[0], out_idx=out_idx, target="sm_90a")


def test_shared_trips_are_in_the_ir():
    ir = _tile_ir(read_at_a_runtime_index()[0])
    assert "%mask_shared = tile.alloc" in ir and "tile.copy %mask, %mask_shared" in ir
    assert "tile.load %mask_shared[" in ir and "tile.load %acc_shared[" in ir
    # the mask's copy is hoisted out of the loop that reads it (nothing in the loop writes it)
    assert ir.index("tile.copy %mask, %mask_shared") < ir.index("tile.for")
    ir = _tile_ir(copied_out_of_a_region()[0])
    assert "tile.region" not in ir
    ir = _tile_ir(read_at_shifted_rows()[0])  # renumbered, not staged
    assert "acc_shared" not in ir and "arith.remui" in ir


def read_over_part_of_its_extent():
    """`x[i]` in a T.Parallel shorter than x: the loop variable runs over part of the dim."""

    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((32,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(X, x)
            for i in T.Parallel(32):
                Y[i] = x[i] + x[i + 32]

    return main, lambda x: x[:32] + x[32:]


CASES["read_over_part_of_its_extent"] = (read_over_part_of_its_extent, lambda: (torch.randn(64),), [1])


def reduced_and_accumulated_in_other_layouts():
    """A reduction (without clear) into a row vector that a loop over a larger fragment laid out
    first, and a second gemm into an accumulator with another warp grid: both work on converted
    copies."""

    @T.prim_func
    def main(A: T.Tensor((64, 16), T.float16), B: T.Tensor((16, 64), T.float16), R: T.Tensor((64, 8), T.float32),
             C: T.Tensor((64, 64), T.float32), M: T.Tensor((64,), T.float32), X: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 64), T.float32)
            a = T.alloc_shared((64, 16), T.float16)
            b = T.alloc_shared((16, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            r = T.alloc_fragment((64, 8), T.float16)
            m = T.alloc_fragment((64,), T.float32)
            T.copy(A, a)
            T.copy(B, b)
            T.copy(R, r)
            T.gemm(a, b, acc, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.gemm(a, b, acc, policy=T.GemmWarpPolicy.FullCol)  # acc += a @ b, in another warp grid
            T.fill(m, 0.0)
            T.fill(x, 1.0)
            for i, j in T.Parallel(64, 64):
                x[i, j] = x[i, j] + m[i]
            T.reduce_max(r, m, dim=1, clear=False)
            T.copy(acc, C)
            T.copy(m, M)
            T.copy(x, X)

    def ref(a, b, r):
        s = a.float() @ b.float()
        return 2 * s, r.half().float().max(1).values.clamp_min(0.0), torch.ones(64, 64)

    return main, ref


def test_reduction_and_gemm_on_converted_copies():
    main, ref = reduced_and_accumulated_in_other_layouts()
    a, b, r = torch.randn(64, 16).half(), torch.randn(16, 64).half(), torch.randn(64, 8)
    want = ref(a, b, r)
    ir = _tile_ir(main, configs=MMA_SYNC)
    assert "tile.copy %m, %m_as" in ir and "tile.copy %acc, %acc_as" in ir, ir
    for target in ("interp", "sim"):
        got = tilec.compile(main, out_idx=[3, 4, 5], target=target, pass_configs=MMA_SYNC)(a, b, r)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, atol=2e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_on_the_gpu(name):
    """The same cases on the GPU where one is visible (the interpreter's results are the reference)."""
    make, inputs, out_idx = CASES[name]
    main, ref = make()
    args = inputs()
    want = ref(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = tilec.compile(main, out_idx=out_idx, target="cuda")(*[a.cuda() for a in args])
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, atol=1e-4, rtol=1e-4, msg=name)


@pytest.mark.gpu
def test_conversions_on_the_gpu():
    for make, n_in, out_idx in ((rows_into_two_accumulators, 3, [3, 4]),
                                (reduced_and_accumulated_in_other_layouts, 3, [3, 4, 5])):
        main, ref = make()
        a, b = torch.randn(64, 16).half(), torch.randn(16, 64).half()
        third = torch.randn(64) if make is rows_into_two_accumulators else torch.randn(64, 8)
        want = ref(a, b, third)
        got = tilec.compile(main, out_idx=out_idx, target="cuda", pass_configs=MMA_SYNC)(a.cuda(), b.cuda(),
                                                                                        third.cuda())
        for g, w in zip(got, want):
            torch.testing.assert_close(g.cpu(), w, atol=2e-2, rtol=1e-2)
