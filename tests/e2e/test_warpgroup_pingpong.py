"""tile-warpgroup-pingpong on attention (issue 10, FlashAttention-3's ping-pong): the two consumer
warpgroups of one tile take turns at the gemms on named barriers 5 and 6. Simulated (each
warpgroup on its own, as on the GPU) against the interpreter and torch, with sequence lengths the
blocks do not divide, causal and not; assembled by ptxas and read back as SASS."""

import re
import subprocess

import pytest
from kernel_cases import Case, _attention_inputs, _attention_ref, attention, run_case
from tilec.dialects import tile
from tilec.passes.convert_tile_to_thread import registry, turns
from tilec.targets.nvptx import assemble, emit_ptx

import tilec
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

# the turns on the loop as written (opt-in: measured slower on the H200, run s5f, bench/NOTES.md); on the
# rotated loop of the softmax overlap they are tested in test_attention_fa3.py
_ON = {"tilec.warpgroup_pingpong": True, "tilec.softmax_overlap": False}
_OFF: dict = {"tilec.softmax_overlap": False}

_SHAPES = [  # (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads, dtype)
    (1, 1, 200, 128, False, 128, 64, 2, 256, "float16"),
    (1, 1, 200, 128, True, 128, 64, 2, 256, "float16"),
    (1, 2, 176, 64, True, 128, 128, 2, 256, "bfloat16"),
    (1, 1, 256, 128, False, 128, 128, 2, 256, "float16"),
]


def _sm90a(case, configs: dict | None = None):
    """(PTX, ptxas report, cubin, kernel name) of `case` for sm_90a."""
    lowered = lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target("sm_90a"), configs or {})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    cubin, report = assemble(ptx, "sm_90a")
    return ptx, report, cubin, lowered.spec.kernel_name



CASES = [Case(f"attention_{dt}_h{h}s{s}d{d}{'_causal' if c else ''}_{bm}x{bn}", attention(b, h, s, d, c, bm, bn, st, th, dt),
              [3], _attention_inputs(b, h, s, d, dt), _attention_ref(c), tol=1e-2)
         for (b, h, s, d, c, bm, bn, st, th, dt) in _SHAPES]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_turns_on_the_simulator_match_the_interpreter(case):
    """The simulated kernel (turns on) gives the interpreter's result, and both torch's."""
    inputs = case.inputs("cpu")
    sim = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=_ON)
    tile_ir, thread_ir = sim.get_ir("tile-opt"), sim.get_ir("thread")
    assert tile_ir.count("tile.warpgroup_wait_turn") == 2 and tile_ir.count("tile.warpgroup_pass_turn") == 2
    assert "tilec.consumer_groups = array<i64: 2, 128>" in thread_ir, "each warpgroup simulated on its own"
    got = sim(*[t.clone() for t in inputs]).double()
    oracle = tilec.compile(case.prim, out_idx=case.out_idx, target="interp")(*[t.clone() for t in inputs]).double()
    assert ((got - oracle).norm() / oracle.norm()).item() < 2e-3
    run_case(case, "sim", "cpu", pass_configs=_ON)


@pytest.mark.parametrize("case", CASES[:2], ids=[c.name for c in CASES[:2]])
def test_the_turns_are_opt_in(case):
    sim = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=_OFF)
    assert "warpgroup_" not in sim.get_ir("tile-opt") and "tilec.consumer_groups" not in sim.get_ir("thread")
    run_case(case, "sim", "cpu", pass_configs=_OFF)


def test_simulator_catches_a_turn_never_given(monkeypatch):
    """Without the last warpgroup's first arrival, warpgroup 0 waits for a turn nobody gives: the
    simulator reports the deadlock instead of hanging or passing (the turns run for real). Which
    role notices last (a warpgroup on its named barrier, or the producer on a free stage) varies."""
    def no_start(L, op):
        turns.named_barrier(L, turns.PAIR, L.ssa(L.add(turns._warpgroup(L), turns.TURN_BARRIERS)))
        turns._mark_split(L)

    monkeypatch.setitem(registry.UNIFORM, tile.WarpgroupWaitTurnOp, no_start)
    case = CASES[0]
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=_ON)
    with pytest.raises(tilec.TilecError, match=r"simulated deadlock: every role waits"):
        kernel(*case.inputs("cpu"))


def test_turns_assemble_without_spills_and_show_in_the_sass(ptxas, tmp_path, cuobjdump):
    """sm_90a: no spills, no wgmma serialization; in the SASS the turns are BAR.SYNC on a register
    barrier id (5 + w) and BAR.ARV (the start, the pass after Q K^T, the final pass); the pass
    comes right after Q K^T is issued, behind the P V still in flight (DEPBAR.LE gsb0, 0x2, BAR.ARV,
    then 0x0), and P V stays in flight over the loop's back edge (DEPBAR.LE gsb0, 0x1 at its end)."""
    case = CASES[3]
    _, report, cubin, name = _sm90a(case, _ON)
    assert not report.kernels[name].spills and "C75" not in report.log, report.log
    path = tmp_path / "attention.cubin"
    path.write_bytes(cubin)
    dump = subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True, check=True).stdout
    sass = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?;)", dump)
    text = "\n".join(sass)
    assert len(re.findall(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x100", text)) >= 2, text
    assert len(re.findall(r"BAR\.ARV (?:0x5|R\d+), 0x100", text)) == 3, text
    assert re.search(r"DEPBAR\.LE gsb0, 0x2 ;\s*\n\s*BAR\.ARV R\d+, 0x100 ;\s*\n\s*WARPGROUP\.DEPBAR\.LE gsb0, 0x0", text), text
    assert re.search(r"DEPBAR\.LE gsb0, 0x1 ;\s*\n\s*@P\d BRA", text), text
    assert "HGMMA" in text and "UTMALDG" in text and "SETMAXREG" in text


def test_off_the_ptx_has_no_turns(ptxas):
    on, off = _sm90a(CASES[3], _ON)[0], _sm90a(CASES[3], _OFF)[0]
    assert on.count("bar.arrive") == 3 and "bar.arrive" not in off
