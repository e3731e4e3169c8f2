"""The persistent cooperative gemm (`tilec.persistent`, two consumer warpgroups) on sm_90a: its
128x256 f16 result leaves through a 32 KB shared tile in two column chunks, so that four 48 KB
stages fit (tile-stage-epilogue); the chunks' copies keep 4-byte shared stores (a range guard is
uniform over a vector group when both of its ends are); the warpgroup's coordinate is read from
lane 0 (`shfl.sync.idx`), which keeps its wgmma descriptors in uniform registers. Simulated
against torch, assembled by ptxas, and (where cuobjdump is) read back as SASS."""

import re
import subprocess

import pytest
import torch
from kernel_cases import gemm_tiles
from tilec.targets.nvptx import assemble, emit_ptx

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

_PERSISTENT = {"tilec.persistent": True, "tilec.pingpong": False}


def _prim(m, n, k, bm=128, bn=256, bk=64):
    """The reference gemm's shape of kernel (f16 in and out, 128x256x64 tiles, 4 stages, 256 threads)."""
    return gemm_tiles(m, n, k, bm, bn, bk, T.float16, threads=256, stages=4, out_dtype=T.float16)


@pytest.mark.parametrize("shape", [(256, 512, 128), (300, 600, 200)], ids=["tiles", "tails"])
def test_chunked_epilogue_on_the_simulator(shape):
    """Tiles on 3 simulated multiprocessors, each storing its f16 result in two 128x128 chunks;
    tails in M, N, K."""
    m, n, k = shape
    kernel = tilec.compile(_prim(m, n, k), out_idx=[2], target="sim", pass_configs=_PERSISTENT)
    tile_ir = kernel.get_ir("tile-opt")
    assert "tile.persistent" in tile_ir and "!tile.mbarrier<4>" in tile_ir
    assert "!tile.buffer<128x128xf16, shared>" in tile_ir and "!tile.buffer<128x256xf16, shared>" not in tile_ir
    torch.manual_seed(0)
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = a.float() @ b.float()
    assert float((kernel(a, b).float() - ref).norm() / ref.norm()) < 2e-3


def _sm90a(configs):
    lowered = lower_to_thread(build_prim_func(_prim(4096, 4096, 1024), [2]), resolve_target("sm_90a"), configs)
    ptx = emit_ptx(lowered.thread, "sm_90a")
    cubin, report = assemble(ptx, "sm_90a")
    return ptx, report, cubin, lowered.spec.kernel_name


def test_chunked_epilogue_assembles_with_four_byte_stores(ptxas):
    """No 2-byte shared stores (each chunk's guard folded per pair of columns), no spills."""
    ptx, report, _, name = _sm90a(_PERSISTENT)
    assert "%nctaid.x" in ptx  # persistent
    assert "st.shared.b16" not in ptx and "st.shared.u16" not in ptx
    assert not report.kernels[name].spills



def test_wgmma_descriptors_stay_in_uniform_registers(ptxas, cuobjdump, tmp_path):
    """The warpgroup index comes from lane 0: the consumer loop of the plain (not persistent)
    kernel moves no descriptor from a per-thread register to a uniform one (R2UR) between its
    HGMMAs. (The persistent kernel's loop still does: bench/NOTES.md, next-session checklist.)"""
    ptx, _, cubin, _ = _sm90a({"tilec.pingpong": False, "tilec.persistent": False})
    assert re.search(r"shfl\.sync\.idx\.b32", ptx)
    path = tmp_path / "gemm.cubin"
    path.write_bytes(cubin)
    sass = [line for line in subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True,
                                            check=True).stdout.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]
    hgmma = [i for i, line in enumerate(sass) if "HGMMA" in line]
    assert len(hgmma) == 4, "one loop of four m64n256k16 steps"
    loop = sass[hgmma[0]:hgmma[-1]]
    assert not [line for line in loop if "R2UR" in line], "\n".join(loop)


def test_the_chunk_guards_fold_in_the_lowering():
    """Each chunk's copy is a loop over the whole accumulator guarded to the chunk's columns; a
    slot's column is a constant plus the lane's offset under 8, so the lowering decides every guard
    itself (bounds of thread coordinates): none of their scf.if reaches the thread IR."""
    lowered = lower_to_thread(build_prim_func(_prim(4096, 4096, 1024), [2]), resolve_target("sm_90a"), _PERSISTENT)
    text = str(lowered.thread)
    assert "gpu.grid_dim" in text  # persistent: the tile loop steps by the grid
    assert text.count("scf.if") < 40, text.count("scf.if")  # 23 here; 151 with the guards left to LLVM
