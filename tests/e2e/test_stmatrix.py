"""A warp-specialized kernel's 16-bit result leaves the accumulator by `stmatrix` (stmatrix.py, pass
config `tilec.stmatrix`): four 8x8 matrices a warp instruction into the staged shared tile, each lane
giving one row address into its 128-byte swizzle. Simulated against float64 (the simulator runs
stmatrix lane by lane) for the plain copy, the persistent kernel's column chunks (a T.Parallel over
the accumulator), a fused bias + gelu epilogue, a kernel's own staging through shared memory, ping-pong,
bfloat16, 16-byte stores after it, and tails; an f32 result keeps the threads' own stores; off, the pairs go out 4 bytes a thread as
before; assembled by ptxas without spills and read back as SASS (STSM)."""


import re

import pytest
import torch
from sass_testing import spill_free_sass
from tilec.targets.nvptx import emit_ptx

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

PLAIN = {"tilec.persistent": False, "tilec.pingpong": False}
PERSISTENT = {"tilec.persistent": True, "tilec.pingpong": False}
PINGPONG = {"tilec.pingpong": True}


def _gemm(m, n, k, bm=128, bn=256, bk=64, threads=256, dtype="float16", out=None, epilogue=None):
    """C = A @ B, then per `epilogue`: "gelu", bias + gelu fused on the accumulator; "own_staging", the
    bias added in place in a T.Parallel that also stores the accumulator into a shared tile of the
    kernel's own, which a T.copy writes out (TileLang's way of staging a result)."""
    out = out or dtype

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), Bias: T.Tensor((n,), dtype),
             C: T.Tensor((m, n), out)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            a = T.alloc_shared((bm, bk), dtype)
            b = T.alloc_shared((bk, bn), dtype)
            c = T.alloc_fragment((bm, bn), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], a)
                T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c)
            if epilogue == "gelu":
                for i, j in T.Parallel(bm, bn):
                    v = c[i, j] + Bias[bx * bn + j]
                    c[i, j] = v * T.sigmoid(1.5957691216 * (v + 0.044715 * v * v * v))
            if epilogue == "own_staging":
                c_s = T.alloc_shared((bm, bn), out)
                for i, j in T.Parallel(bm, bn):
                    c[i, j] = c[i, j] + Bias[bx * bn + j]
                    c_s[i, j] = c[i, j]
                T.copy(c_s, C[by * bm, bx * bn])
            else:
                T.copy(c, C[by * bm, bx * bn])

    return main


def _compare(kernel, shape, dtype, epilogue=None, device="cpu", seed=3) -> None:
    """The kernel's result on fresh random inputs against float64."""
    m, n, k = shape
    torch.manual_seed(seed)
    a = torch.randn(m, k, device=device).to(dtype)
    b = torch.randn(k, n, device=device).to(dtype)
    bias = torch.randn(n, device=device).to(dtype)
    ref = a.double() @ b.double()
    if epilogue is not None:
        ref = ref + bias.double()
    if epilogue == "gelu":
        ref = ref * torch.sigmoid(1.5957691216 * (ref + 0.044715 * ref ** 3))
    got = kernel(a, b, bias).double()
    assert float((got - ref).norm() / ref.norm()) < (1e-2 if dtype == torch.bfloat16 else 3e-3)


def _check(configs, shape, stmatrix=True, **kw):
    """Runs the kernel on the simulator against float64; returns its thread-level IR."""
    kernel = tilec.compile(_gemm(*shape, **kw), out_idx=[3], target="sim",
                           pass_configs={**configs, "tilec.stmatrix": stmatrix})
    _compare(kernel, shape, getattr(torch, kw.get("dtype", "float16")), kw.get("epilogue"))
    return kernel.get_ir("thread")


@pytest.mark.parametrize("configs,shape,kw,count", [
    (PLAIN, (300, 600, 200), {}, 16),  # the whole 128x256 tile: 16 .x4 a warp
    (PERSISTENT, (300, 600, 200), {}, 16),  # two 128x128 chunks of 8
    (PERSISTENT, (256, 512, 128), {"epilogue": "gelu", "dtype": "bfloat16"}, 16),
    (PINGPONG, (256, 384, 192), {"bn": 128, "threads": 128}, 16),  # each group's 128x128 tile: 2 x 8
    ({**PLAIN, "tilec.tma_store": False}, (200, 320, 64), {}, 16),  # then 16-byte stores, tails guarded
    # the loop updates the fragment in place (it reads no shared tile it stores to): 128x128 over two
    # warpgroups, 8 .x4 a warp
    (PLAIN, (256, 256, 128), {"bn": 128, "epilogue": "own_staging"}, 8),
], ids=["plain_tails", "persistent_chunks", "persistent_gelu_bf16", "pingpong", "sixteen_byte_stores", "own_staging"])
def test_stmatrix_on_the_simulator(configs, shape, kw, count):
    thread = _check(configs, shape, **kw)
    assert thread.count('"nvvm.stmatrix"') == count
    assert thread.count("vector<2xf16>, 3") == 0 and thread.count("vector<2xbf16>, 3") == 0  # no 4-byte pairs


def test_stmatrix_off_stores_the_pairs_as_before():
    thread = _check(PERSISTENT, (300, 600, 200), stmatrix=False)
    assert '"nvvm.stmatrix"' not in thread
    assert "vector.store" in thread


def test_an_f32_result_keeps_the_threads_stores():
    """stmatrix moves 16-bit elements: a float32 result is staged by the threads' own stores."""
    thread = _check(PLAIN, (256, 256, 64), out="float32")
    assert '"nvvm.stmatrix"' not in thread


def test_stmatrix_assembles_without_spills_and_shows_in_the_sass(ptxas, cuobjdump, tmp_path):
    lowered = lower_to_thread(build_prim_func(_gemm(4096, 4096, 1024), [3]), resolve_target("sm_90a"), PERSISTENT)
    ptx = emit_ptx(lowered.thread, "sm_90a")
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 16
    sass = spill_free_sass(ptx, lowered.spec.kernel_name, cuobjdump, tmp_path)
    assert "STSM" in sass and "HGMMA" in sass


@pytest.mark.parametrize("configs,tiles", [(PERSISTENT, (128, 256, 64, 256)), (PINGPONG, (128, 128, 64, 128))],
                         ids=["persistent", "pingpong"])
def test_stmatrix_rows_share_their_swizzled_addresses(configs, tiles, ptxas, cuobjdump, tmp_path):
    """Rows 8 apart and whole column chunks move whole 1024-byte swizzle atoms, which the XOR leaves
    alone: they add after the swizzle, as immediate offsets, so a thread's 16 stmatrix take 2 address
    registers (one per 32-column half of a 64-column box), not 16 kept live across the mainloop
    (which spilled the fused gelu's consumers)."""
    bm, bn, bk, threads = tiles
    prim = _gemm(4096, 4096, 1024, bm, bn, bk, threads, epilogue="gelu")
    lowered = lower_to_thread(build_prim_func(prim, [3]), resolve_target("sm_90a"), configs)
    sass = spill_free_sass(emit_ptx(lowered.thread, "sm_90a"), lowered.spec.kernel_name, cuobjdump, tmp_path)
    addresses = re.findall(r"STSM\.16\.M88\.4 \[(R\d+)(?:\+0x[0-9a-f]+)?\]", sass)
    assert len(addresses) == 16 and len(set(addresses)) == 2, addresses


@pytest.mark.gpu
@pytest.mark.parametrize("configs,shape,kw", [
    (PLAIN, (300, 600, 200), {}), (PERSISTENT, (1000, 1512, 296), {}),
    (PERSISTENT, (1000, 1512, 296), {"epilogue": "gelu", "dtype": "bfloat16"}),
    (PINGPONG, (300, 600, 200), {"bn": 128, "threads": 128}),
    (PLAIN, (1000, 1024, 296), {"bn": 128, "epilogue": "own_staging"})],
    ids=["plain_tails", "persistent_tails", "persistent_gelu_bf16", "pingpong_tails", "own_staging"])
def test_stmatrix_on_the_gpu(configs, shape, kw):
    kernel = tilec.compile(_gemm(*shape, **kw), out_idx=[3], target="sm_90a", pass_configs=configs)
    assert "stmatrix.sync.aligned" in kernel.get_kernel_source()
    _compare(kernel, shape, getattr(torch, kw.get("dtype", "float16")), kw.get("epilogue"), "cuda", seed=4)

