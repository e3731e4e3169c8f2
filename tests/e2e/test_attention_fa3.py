"""FlashAttention-3's consumer schedule on attention (issue 10): K and V on rings of their own
(`tilec.operand_rings`) and the loop rotated so that the softmax of block j runs under P V of
block j - 1 (`tilec.softmax_overlap`). Simulated against torch (the simulator checks the
mbarrier parities and the races), causal and not, sequence lengths the blocks do not divide,
one key block and several, head dims 64 to 256, one and two consumer warpgroups, GQA with the
log-sum-exp; assembled by ptxas without spills or wgmma serialization and read back as SASS."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from kernel_cases import ATTENTION_CASES, Case, _attention_inputs, _attention_ref, attention, run_case
from tilec.targets.nvptx import assemble, emit_ptx

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

RINGS = {"tilec.operand_rings": True}
OVERLAP = {"tilec.softmax_overlap": True}
TURNS = {**OVERLAP, "tilec.warpgroup_pingpong": True}

_SHAPES = [  # (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads, dtype): two warpgroups
    (1, 1, 200, 128, False, 128, 64, 2, 256, "float16"),
    (1, 1, 200, 128, True, 128, 64, 2, 256, "float16"),
    (1, 2, 176, 64, True, 128, 128, 2, 256, "bfloat16"),
    (1, 1, 320, 128, False, 128, 128, 2, 256, "float16"),
    (1, 1, 100, 64, False, 128, 128, 2, 256, "float16"),  # one key block: the loop runs no iteration
]
TURN_CASES = [Case(f"attention_{dt}_h{h}s{s}d{d}{'_causal' if c else ''}_{bm}x{bn}_{st}st_{th}t", attention(b, h, s, d, c, bm, bn, st, th, dt),
                   [3], _attention_inputs(b, h, s, d, dt), _attention_ref(c), tol=1e-2)
              for (b, h, s, d, c, bm, bn, st, th, dt) in _SHAPES]

_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "flash_attention.py")
_spec = importlib.util.spec_from_file_location("tilec_example_flash_attention_fa3", _EXAMPLE)
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


@pytest.mark.parametrize("case", ATTENTION_CASES + TURN_CASES[:1], ids=lambda c: c.name)
def test_operand_rings_on_the_simulator(case):
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=RINGS)
    tile_ir = kernel.get_ir("tile-opt")
    assert "%full_K = tile.alloc_barrier" in tile_ir and "%empty_V = tile.alloc_barrier" in tile_ir
    run_case(case, "sim", "cpu", pass_configs=RINGS)


@pytest.mark.parametrize("case", TURN_CASES, ids=lambda c: c.name)
def test_operand_rings_with_the_turns_on_the_simulator(case):
    run_case(case, "sim", "cpu", pass_configs={**RINGS, "tilec.warpgroup_pingpong": True})


def _rows_per_warpgroup(case) -> int:
    """block_M / (threads / 128), read from the case's name (`..._{bm}x{bn}_{st}st_{th}t`)."""
    bm, threads = re.search(r"_(\d+)x\d+_\d+st_(\d+)t$", case.name).groups()
    return int(bm) // max(1, int(threads) // 128)


@pytest.mark.parametrize("case", ATTENTION_CASES + TURN_CASES, ids=lambda c: c.name)
def test_softmax_overlap_on_the_simulator(case):
    """Rotated (the wait for S alone: pending = 1; P V of the block before left in flight: 2);
    with more than 64 query rows per consumer warpgroup the loop stays as written, with the reason
    (ptxas serialized the rotated loop's peeled Q K^T there: C7519)."""
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=OVERLAP)
    tile_ir = kernel.get_ir("tile-opt")
    if _rows_per_warpgroup(case) > 64:
        assert 'tilec.not_softmax_overlap = "each consumer warpgroup holds' in tile_ir
        run_case(case, "sim", "cpu", pass_configs=OVERLAP)
        return
    assert "not_softmax_overlap" not in tile_ir
    assert "pending = 1" in tile_ir and "in_flight = 2" in tile_ir and "%full_V" in tile_ir
    run_case(case, "sim", "cpu", pass_configs=OVERLAP)


@pytest.mark.parametrize("case", TURN_CASES, ids=lambda c: c.name)
def test_turns_on_the_rotated_loop_on_the_simulator(case):
    """FA3's turns on the rotated loop: the first block's Q K^T, each iteration's two gemms and the
    last block's P V each take a turn; each warpgroup simulated on its own."""
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=TURNS)
    tile_ir, thread_ir = kernel.get_ir("tile-opt"), kernel.get_ir("thread")
    assert tile_ir.count("tile.warpgroup_wait_turn") == 3 and tile_ir.count("tile.warpgroup_pass_turn") == 3
    assert "not_warpgroup_pingpong" not in tile_ir and "pending = 1" in tile_ir
    assert "tilec.consumer_groups = array<i64: 2, 128>" in thread_ir
    run_case(case, "sim", "cpu", pass_configs=TURNS)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_softmax_overlap_gqa_with_lse_on_the_simulator(causal):
    """examples/flash_attention.py: 4 query heads on 2 KV heads, S = 200; O and LSE checked."""
    torch.manual_seed(7)
    q = torch.randn(1, 200, 4, 64).half()
    k, v = (torch.randn(1, 200, 2, 64).half() for _ in range(2))
    kernel = example.flash_fwd(1, 4, 2, 200, 64, causal, lse=True, target="sim", pass_configs=OVERLAP,
                               block_M=64, block_N=64, threads=128)
    assert "pending = 1" in kernel.get_ir("tile-opt")
    out, lse = kernel(q, k, v)
    ref_out, ref_lse = example.reference(q, k, v, causal)
    assert ((out.float() - ref_out).norm() / ref_out.norm()).item() < 1e-2
    torch.testing.assert_close(lse, ref_lse, rtol=1e-5, atol=1e-4)


def _sm90a(prim, configs):
    lowered = lower_to_thread(build_prim_func(prim, [3]), resolve_target("sm_90a"), configs)
    cubin, report = assemble(emit_ptx(lowered.thread, "sm_90a"), "sm_90a")
    return cubin, report, lowered.spec.kernel_name


def _cuobjdump() -> str | None:
    paths = [os.path.join(site, "nvidia", "cu13", "bin", "cuobjdump") for site in sys.path]
    return shutil.which("cuobjdump") or next((p for p in paths if os.path.isfile(p)), None)


_BENCH_TILES = [(64, (128, 128)), (128, (128, 128)), (256, (128, 64))]


@pytest.mark.parametrize("configs", [OVERLAP, TURNS], ids=["overlap", "overlap_turns"])
@pytest.mark.parametrize("dim,tiles", _BENCH_TILES, ids=["d64", "d128", "d256"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_softmax_overlap_assembles_and_shows_in_the_sass(dim, tiles, causal, configs, ptxas, tmp_path):
    """The bench's tiles (two consumer warpgroups, two stages): no wgmma serialization
    (C7510-C7520), no spills (but at D = 256, causal: 8 bytes, 68 with the turns); in the SASS
    twice the HGMMA of the unrotated kernel (Q K^T peeled before the loop, P V after it), half of
    them with a register A (P V); in the loop the rescale of O between the issue of Q K^T and of
    P V (under Q K^T, among its HGMMAs or after them; ptxas may put one multiplication elsewhere), the wait for S with P V still in flight (WARPGROUP.DEPBAR.LE gsb0, 0x1
    after the two groups), and a wait for P V (DEPBAR.LE gsb0, 0x0) later in the loop (ptxas
    hoists it into the row max; holding it below the exponentials measured 16 % slower, run s7a)."""
    prim = attention(2, 2048 // dim, 1024, dim, causal, *tiles, 2, 256)
    cubin, report, name = _sm90a(prim, configs)
    assert "C75" not in report.log, report.log
    k = report.kernels[name]
    spilled = k.spill_store_bytes + k.spill_load_bytes
    assert spilled == 0 or (dim == 256 and causal and spilled <= 68), (spilled, report.log)
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    path = tmp_path / "attention.cubin"
    path.write_bytes(cubin)
    dump = subprocess.run([tool, "--dump-sass", str(path)], capture_output=True, text=True, check=True).stdout
    sass = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?;)", dump)
    text = "\n".join(sass)
    hgmma = re.findall(r"HGMMA\.64x\d+x16\.F32\S* R\d+, (R\d+|gdesc)", text)
    steps = dim // 16 + tiles[1] // 16  # k16 steps of Q K^T and of P V, one m64 block per warpgroup
    assert len(hgmma) == 2 * steps and hgmma.count("gdesc") == 2 * (dim // 16), text
    assert re.search(r"gsb0, 0x2 ;\s*\n\s*(BAR\.ARV R\d+, 0x100 ;\s*\n\s*)?WARPGROUP\.DEPBAR\.LE gsb0, 0x1 ;", text)
    start = next(i for i, line in enumerate(sass) if "DEPBAR.LE gsb0, 0x2" in line)
    assert any("DEPBAR.LE gsb0, 0x0" in line for line in sass[start:]), text
    first_rs = next(i for i in range(start, 0, -1) if re.search(r"HGMMA\S* R\d+, R\d+", sass[i])
                    and not re.search(r"HGMMA\S* R\d+, R\d+", sass[i - 1]))
    issued = next(i for i in range(first_rs, 0, -1) if re.search(r"HGMMA\S* R\d+, gdesc", sass[i]))
    while issued > 0 and not re.search(r"DEPBAR|BRA", sass[issued - 1]):  # ptxas may interleave it with Q K^T's issue
        issued -= 1
    rescale = sum(line.startswith("FMUL") for line in sass[issued:first_rs])
    assert rescale >= dim // 2 - 1, f"{rescale} multiplications of O's {dim // 2} between Q K^T and P V"
    if configs is TURNS:
        assert len(re.findall(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x100", text)) == 3, text


def test_softmax_overlap_leaves_a_loop_whose_fragments_do_not_fit():
    """D = 256 on one consumer warpgroup with 64x128 tiles: S, O and P of two blocks would take
    about 256 registers per thread of the 232 (ptxas: 300+ bytes of spills, wgmma serialized):
    the loop stays unrotated, with the reason, and on one ring (rings without the rotation measured
    slower, run s7d) unless tilec.operand_rings asks for them."""
    prim = attention(1, 1, 256, 256, False, 64, 128, 2, 128)
    for configs, rings in ((OVERLAP, False), ({**OVERLAP, "tilec.operand_rings": True}, True)):
        tile_ir = tilec.compile(prim, out_idx=[3], target="sim", pass_configs=configs).get_ir("tile-opt")
        assert 'tilec.not_softmax_overlap = "S, O and P of two blocks need about 256 registers' in tile_ir
        assert "pending = 1" not in tile_ir and ("%full_V" in tile_ir) == rings


def test_three_consumer_warpgroups_fit_the_rotated_loop():
    """D = 64 with 192x128 tiles on three consumer warpgroups (FlashAttention-3's): S, O and P of
    two blocks take about 160 registers per thread, which the consumers get when the producer keeps
    32 (FA3's split; with 40 they got 152 and the loop stayed as written)."""
    b, h, s, d = 1, 1, 300, 64  # two query blocks, three key blocks, both with tails
    case = Case("attention_d64_causal_192x128_3wg", attention(b, h, s, d, True, 192, 128, 2, 384), [3],
                _attention_inputs(b, h, s, d, "float16"), _attention_ref(True), tol=1e-2)
    tile_ir = tilec.compile(case.prim, out_idx=[3], target="sim", pass_configs=OVERLAP).get_ir("tile-opt")
    assert "consumer_regs = 160 : i64" in tile_ir and "producer_regs = 32 : i64" in tile_ir
    assert "tilec.not_softmax_overlap" not in tile_ir and "pending = 1" in tile_ir
    run_case(case, "sim", "cpu", pass_configs=OVERLAP)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_persistent_attention_on_the_simulator(causal):
    """tilec.persistent on attention: each block loops over query tiles (10 tiles on the simulator's
    3 multiprocessors), Q loaded again for each tile once the consumers released the last one
    (`loaded_free`), the causal trip counts differing between tiles (the ring positions counted in
    `produced` / `consumed`), the loop rotated and the warpgroups' turns inside the tile loop."""
    b, h, s, d = 1, 2, 600, 128
    configs = {"tilec.persistent": True}
    case = Case("attention_persistent", attention(b, h, s, d, causal, 128, 128, 2, 256), [3],
                _attention_inputs(b, h, s, d, "float16"), _attention_ref(causal), tol=1e-2)
    tile_ir = tilec.compile(case.prim, out_idx=[3], target="sim", pass_configs=configs).get_ir("tile-opt")
    assert "tile.persistent" in tile_ir and "%loaded_free = tile.alloc_barrier" in tile_ir
    assert ("%consumed = tile.alloc" in tile_ir) == causal
    assert "pending = 1" in tile_ir and tile_ir.count("tile.warpgroup_wait_turn") == 3
    run_case(case, "sim", "cpu", pass_configs=configs)


@pytest.mark.gpu
@pytest.mark.parametrize("configs", [RINGS, OVERLAP, TURNS], ids=["rings", "overlap", "overlap_turns"])
@pytest.mark.parametrize("case", ATTENTION_CASES + TURN_CASES, ids=lambda c: c.name)
def test_fa3_schedules_on_the_gpu(case, configs):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a")
    for _ in range(2):
        run_case(case, "cuda", "cuda", pass_configs=configs, expect_ir="nvvm.wgmma.mma_async")


def _running_scores(seq_len=256, dim=64, block=64):
    """S filled once before the loop and accumulated over the key blocks (no clear in the loop):
    tile-warp-specialize drops the fill and the first Q K^T starts from zero (`zero_on_entry`)."""
    shape = [1, seq_len, 1, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, T.float16), K: T.Tensor(shape, T.float16), V: T.Tensor(shape, T.float16),
             Out: T.Tensor(shape, T.float32)):
        with T.Kernel(T.ceildiv(seq_len, block), 1, 1, threads=128) as (bx, by, bz):
            q_s = T.alloc_shared([block, dim], T.float16)
            k_s = T.alloc_shared([block, dim], T.float16)
            v_s = T.alloc_shared([block, dim], T.float16)
            s = T.alloc_fragment([block, block], T.float32)
            p = T.alloc_fragment([block, block], T.float16)
            o = T.alloc_fragment([block, dim], T.float32)
            T.copy(Q[bz, bx * block:(bx + 1) * block, by, :], q_s)
            T.fill(o, 0)
            T.fill(s, 0)
            for k in T.Pipelined(T.ceildiv(seq_len, block), num_stages=2):
                T.copy(K[bz, k * block:(k + 1) * block, by, :], k_s)
                T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block, dim):
                    o[i, j] *= 0.5
                for i, j in T.Parallel(block, block):
                    p[i, j] = s[i, j] * 0.001
                T.copy(V[bz, k * block:(k + 1) * block, by, :], v_s)
                T.gemm(p, v_s, o, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, Out[bz, bx * block:(bx + 1) * block, by, :])

    return main


def test_a_first_gemm_that_starts_from_zero_is_not_rotated():
    """Its peeled copy would have no loop to test for the first iteration (an internal error), and
    the one in the loop would zero the first block's partial sums: the loop keeps its shape, with
    the reason, and the result matches the interpreter."""
    prim = _running_scores()
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 256, 1, 64).half() for _ in range(3))
    ref = tilec.compile(prim, out_idx=[3], target="interp")(q, k, v)
    kernel = tilec.compile(prim, out_idx=[3], target="sim", pass_configs={"tilec.softmax_overlap": True})
    assert 'tilec.not_softmax_overlap = "the first gemm starts from zero' in kernel.get_ir("tile-opt")
    out = kernel(q, k, v)
    assert float((out.float() - ref.float()).norm() / ref.float().norm()) < 1e-2


def _keys_as_values(seq_len=256, dim=64, block=64):
    """O += P K: one staged tile read by both gemms, so no ring of its own for either."""
    shape = [1, seq_len, 1, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, T.float16), K: T.Tensor(shape, T.float16), Out: T.Tensor(shape, T.float32)):
        with T.Kernel(T.ceildiv(seq_len, block), 1, 1, threads=128) as (bx, by, bz):
            q_s = T.alloc_shared([block, dim], T.float16)
            k_s = T.alloc_shared([block, dim], T.float16)
            s = T.alloc_fragment([block, block], T.float32)
            p = T.alloc_fragment([block, block], T.float16)
            o = T.alloc_fragment([block, dim], T.float32)
            T.copy(Q[bz, bx * block:(bx + 1) * block, by, :], q_s)
            T.fill(o, 0)
            for k in T.Pipelined(T.ceildiv(seq_len, block), num_stages=2):
                T.copy(K[bz, k * block:(k + 1) * block, by, :], k_s)
                T.clear(s)
                T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block, block):
                    p[i, j] = s[i, j] * 0.001
                T.gemm(p, k_s, o, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, Out[bz, bx * block:(bx + 1) * block, by, :])

    return main


def test_a_loop_without_operand_rings_says_why_it_is_not_rotated():
    """The softmax overlap asked for on a two-gemm loop it cannot give rings: both reasons on the
    loop (not silently left alone), and the result matches the interpreter."""
    prim = _keys_as_values()
    torch.manual_seed(0)
    q, k = (torch.randn(1, 256, 1, 64).half() for _ in range(2))
    ref = tilec.compile(prim, out_idx=[2], target="interp")(q, k)
    kernel = tilec.compile(prim, out_idx=[2], target="sim", pass_configs=OVERLAP)
    ir = kernel.get_ir("tile-opt")
    assert 'tilec.not_operand_rings = "the staged tiles do not each feed one top-level gemm' in ir
    assert 'tilec.not_softmax_overlap = "no operand rings' in ir
    out = kernel(q, k)
    assert float((out.float() - ref.float()).norm() / ref.float().norm()) < 1e-2
