"""A warp-specialized kernel's result leaves by TMA stores (tile-stage-epilogue, `tilec.tma_store`):
staged in a shared tile of 128-byte boxes, fenced for the async proxy, stored by one thread, waited
for before the tile is written again and before the consumers end. Simulated against torch (the
simulator reads a store's bytes only at its wait, and reports unfenced or unwaited stores), with
tails TMA clips, plain, persistent (two chunks per tile, several tiles per block) and ping-pong;
a destination TMA cannot write keeps the 16-byte stores and says why; assembled by ptxas and read
back as SASS (UTMASTG)."""

import re

import pytest
import torch
from sass_testing import spill_free_sass
from tilec.targets.nvptx import emit_ptx

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.errors import TilecError
from tilec.frontend import build_prim_func
from tilec.passes.convert_tile_to_thread import sync
from tilec.target import resolve_target

PLAIN = {"tilec.persistent": False, "tilec.pingpong": False}
PERSISTENT = {"tilec.persistent": True, "tilec.pingpong": False}
PINGPONG = {"tilec.pingpong": True}


def _gemm(m, n, k, bm=128, bn=256, bk=64, threads=256, out="float16", c_cols=None):
    """C = A @ B; with `c_cols`, into the first n columns of a C that has `c_cols`."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), C: T.Tensor((m, c_cols or n), out)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            a = T.alloc_shared((bm, bk), T.float16)
            b = T.alloc_shared((bk, bn), T.float16)
            c = T.alloc_fragment((bm, bn), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], a)
                T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * bm, bx * bn])  # the result's line (located errors point here)

    return main


def _run(prim, m, n, k, configs, out=torch.float16):
    kernel = tilec.compile(prim, out_idx=[2], target="sim", pass_configs=configs)
    torch.manual_seed(1)
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = a.double() @ b.double()
    got = kernel(a, b)[:, :n]
    assert got.dtype == out
    assert float((got.double() - ref).norm() / ref.norm()) < 3e-3
    return kernel.get_ir("tile-opt")


@pytest.mark.parametrize("configs,shape", [(PLAIN, (300, 600, 200)), (PERSISTENT, (300, 600, 200)),
                                           (PERSISTENT, (512, 1024, 128))],
                         ids=["plain_tails", "persistent_tails", "persistent_several_tiles"])
def test_tma_store_on_the_simulator(configs, shape):
    """Tails in M and N are clipped by TMA; the persistent kernel (3 simulated multiprocessors)
    stores two 128x128 chunks per tile, 4 or more tiles per block in the second shape."""
    m, n, k = shape
    tile_ir = _run(_gemm(m, n, k), m, n, k, configs)
    assert tile_ir.count("tile.tma_store %") == (2 if configs is PERSISTENT else 1)
    assert "tile.tma_store_wait %c_out {final}" in tile_ir
    assert ("tile.persistent" in tile_ir) == (configs is PERSISTENT)


def test_tma_store_under_ping_pong_on_the_simulator():
    """Two consumer groups of one warpgroup, each with a tile of its own and its own issuer."""
    m, n, k = 256, 384, 192
    tile_ir = _run(_gemm(m, n, k, bm=128, bn=128, threads=128), m, n, k, PINGPONG)
    assert "consumer_groups" in tile_ir or "tile.consumer_group" in tile_ir
    assert "tile.tma_store %" in tile_ir


def test_f32_result_by_tma_store_on_the_simulator():
    """An f32 result: boxes of 32 columns (128 bytes)."""
    m, n, k = 256, 256, 128
    tile_ir = _run(_gemm(m, n, k, bn=128, out="float32"), m, n, k, PLAIN, out=torch.float32)
    assert "chunk = 32 : i64" in tile_ir and "tile.tma_store %" in tile_ir


def test_a_destination_tma_cannot_write_keeps_the_stores_and_says_why():
    """C of 300 columns: the result's rows are 600 bytes apart, not a multiple of 16 (A and B load by TMA)."""
    m, n, k = 256, 256, 128
    tile_ir = _run(_gemm(m, n, k, bn=128, c_cols=300), m, n, k, PLAIN)
    assert "tile.tma_store" not in tile_ir
    assert 'not_tma_store = "a stride of 600 bytes (TMA needs multiples of 16)"' in tile_ir


def test_tma_store_off_keeps_the_sixteen_byte_stores():
    m, n, k = 256, 512, 128
    tile_ir = _run(_gemm(m, n, k), m, n, k, {**PLAIN, "tilec.tma_store": False})
    assert "tile.tma_store" not in tile_ir and "not_tma_store" not in tile_ir


def _line_of_the_result() -> int:
    return next(i for i, text in enumerate(open(__file__), 1) if "the result's line" in text)


def test_the_simulator_reports_a_store_of_unfenced_writes(monkeypatch):
    """Without the writers' fence.proxy.async the TMA store may read stale bytes on the GPU."""
    monkeypatch.setattr(sync, "fence_writes", lambda L: None)
    with pytest.raises(TilecError, match="TMA store of shared byte .* no fence.proxy.async.shared::cta") as e:
        _run(_gemm(256, 256, 128), 256, 256, 128, PLAIN)
    assert f"test_tma_store.py:{_line_of_the_result()}:" in str(e.value)


@pytest.mark.parametrize("configs,message", [
    (PERSISTENT, "a write to shared byte .* which a TMA store still reads"),  # the next chunk over the last
    (PLAIN, "the threads end with a TMA store whose bulk group was never waited for"),
], ids=["rewritten", "ended"])
def test_the_simulator_reports_a_store_not_waited_for(monkeypatch, configs, message):
    monkeypatch.setattr(sync, "wait_reads", lambda L: None)
    with pytest.raises(TilecError, match=message) as e:
        _run(_gemm(256, 512, 128), 256, 512, 128, configs)
    assert f"test_tma_store.py:{_line_of_the_result()}:" in str(e.value)


def _ptx(configs):
    lowered = lower_to_thread(build_prim_func(_gemm(4096, 4096, 1024), [2]), resolve_target("sm_90a"), configs)
    return emit_ptx(lowered.thread, "sm_90a"), lowered


@pytest.mark.parametrize("configs", [PLAIN, PERSISTENT], ids=["plain", "persistent"])
def test_tma_store_ptx_fences_meets_then_stores_from_one_thread(configs):
    ptx, lowered = _ptx(configs)
    stores = [m.start() for m in re.finditer(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group", ptx)]
    assert len(stores) == 4 if configs is PLAIN else 2 * 2  # 64-column boxes: 256 columns, or two chunks of 128
    fence = ptx.rindex("fence.proxy.async.shared::cta;", 0, stores[0])
    assert re.search(r"bar\.sync \t1, 256;", ptx[fence:stores[0]])  # the consumers meet after their fences
    assert "cp.async.bulk.commit_group;" in ptx[stores[-1]:]
    assert "cp.async.bulk.wait_group.read \t0;" in ptx[stores[-1]:]
    maps = lowered.thread.walk()
    assert any("tilec.tensor_maps" in getattr(op, "attributes", {}) for op in maps)


def test_tma_store_assembles_and_shows_in_the_sass(ptxas, cuobjdump, tmp_path):
    ptx, lowered = _ptx(PERSISTENT)
    sass = spill_free_sass(ptx, lowered.spec.kernel_name, cuobjdump, tmp_path)
    assert "UTMASTG" in sass and "UTMALDG" in sass and "HGMMA" in sass


@pytest.mark.gpu
@pytest.mark.parametrize("configs,shape,bn,out", [
    (PLAIN, (300, 600, 200), 256, "float16"), (PERSISTENT, (1000, 1512, 296), 256, "float16"),
    (PINGPONG, (300, 600, 200), 128, "float16"), (PLAIN, (256, 384, 128), 128, "float32"),
    (PERSISTENT, (4096, 4096, 256), 256, "float16")],
    ids=["plain_tails", "persistent_tails", "pingpong_tails", "f32", "persistent_many_tiles"])
def test_tma_store_on_the_gpu(configs, shape, bn, out):
    m, n, k = shape
    threads = 128 if configs is PINGPONG else 256
    kernel = tilec.compile(_gemm(m, n, k, bn=bn, threads=threads, out=out), out_idx=[2], target="sm_90a",
                           pass_configs=configs)
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in kernel.get_kernel_source()
    torch.manual_seed(2)
    a, b = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
    ref = a.double() @ b.double()
    for _ in range(2):  # the second launch reuses the cached tensor maps
        got = kernel(a, b)
        assert float((got.double() - ref).norm() / ref.norm()) < 3e-3
