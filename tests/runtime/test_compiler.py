"""tilec/compiler (issue 8, item 3): Target is plain data, `compiler.build` picks the backend,
every stage's IR is kept from the build (get_ir runs no pass again), the argument kinds of
the launch ABI are one registry, shared memory past the lowering's scratch is refused."""

import dataclasses
import json

import pytest

import tilec
import tilec.language as T
from tilec import TilecError, compiler, config
from tilec.compiler import launch, lower
from tilec.compiler.cpu_backends import InterpBackend, SimBackend
from tilec.compiler.cuda_backend import CudaBackend
from tilec.frontend import build_prim_func
from tilec.target import Target, resolve_target


def reduce_kernel():
    @T.prim_func
    def main(X: T.Tensor((64, 128), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=128) as bx:
            x = T.alloc_fragment((16, 128), T.float32)
            y = T.alloc_fragment((16,), T.float32)
            T.copy(X[bx * 16, 0], x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y[bx * 16])

    return main


@pytest.fixture
def no_cache(monkeypatch):
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    monkeypatch.setattr(config, "DUMP_IR", None)


def test_target_is_plain_data():
    t = resolve_target("sm_80")
    assert dataclasses.is_dataclass(t) and not hasattr(t, "build")
    assert (t.arch, t.warp_size, t.has_cp_async, t.has_tma, t.has_wgmma) == ("sm_80", 32, True, False, False)
    assert resolve_target("sm_90a").has_wgmma and resolve_target("sim").has_tma
    assert not resolve_target("interp").has_cp_async
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.arch = "sm_90a"


def test_build_picks_the_backend(no_cache):
    program = build_prim_func(reduce_kernel(), [1])
    assert isinstance(compiler.build(program, resolve_target("interp"), {}), InterpBackend)
    assert isinstance(compiler.build(program, resolve_target("sim"), {}), SimBackend)
    assert isinstance(compiler.build(program, resolve_target("sm_80"), {}), CudaBackend)


@pytest.mark.parametrize("target", ["sim", "sm_90a"])
def test_get_ir_prints_the_kept_stages_without_running_a_pass(no_cache, monkeypatch, target):
    kernel = tilec.compile(reduce_kernel(), out_idx=[1], target=target)

    def refuse(*args, **kwargs):
        raise AssertionError("get_ir ran a pass again")

    monkeypatch.setattr(lower, "run_tile_passes", refuse)
    monkeypatch.setattr(lower, "lower_to_thread", refuse)
    tile_opt, thread = kernel.get_ir("tile-opt"), kernel.get_ir("thread")
    assert "tile.reduce" in tile_opt and "#tile.fragment" in tile_opt
    assert "nvvm.kernel" in thread and "tile.reduce" not in thread
    assert "tile.reduce" in kernel.get_ir("tile") and "#tile.fragment" not in kernel.get_ir("tile")


def test_the_kept_tile_opt_module_is_the_one_before_conversion(no_cache):
    lowered = lower.lower_to_thread(build_prim_func(reduce_kernel(), [1]), resolve_target("sm_90a"), {})
    assert lowered.tile_opt is not lowered.thread
    assert lowered.stage("tile-opt") == lower.Lowered(lowered.tile_opt, None, None, 0).stage("tile-opt")
    assert "smem_bytes" in lowered.stage("tile-opt") and 0 <= lowered.planned_smem <= lowered.spec.smem_bytes


def test_the_planned_bytes_are_the_plan_of_tile_plan_shared_memory(no_cache):
    """`planned_smem` is the kernel's `smem_bytes` property (the shared buffers; the lowering's
    scratch comes on top of it)."""
    case = next(c for c in __import__("kernel_cases").MMA_CASES)
    lowered = lower.lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target("sm_80"), {})
    kernel = next(op for op in lowered.tile_opt.walk() if op.name == "tile.kernel")
    assert lowered.planned_smem == kernel.smem_bytes.value.data > 0


def test_lowering_scratch_over_the_budget_is_refused_at_the_kernel(no_cache, monkeypatch):
    real = lower.lower_to_thread

    def with_scratch(program, target, configs, **kw):
        lowered = real(program, target, configs, **kw)
        lowered.spec.smem_bytes = lowered.planned_smem + 240_000
        return lowered

    monkeypatch.setattr(lower, "lower_to_thread", with_scratch)
    prim = reduce_kernel()
    with pytest.raises(TilecError, match=r"more than the 166912 a block may use on sm_80: \d+ bytes of shared buffers "
                                         r"and 240000 bytes of exchange scratch") as info:
        tilec.compile(prim, out_idx=[1], target="sm_80")
    assert info.value.loc.line == prim.fn.__code__.co_firstlineno + 2  # the T.Kernel line
    with pytest.raises(TilecError, match="exchange scratch"):
        tilec.compile(prim, out_idx=[1], target="sim")


# --------------------------------------------------------------------------- #
# The launch ABI's argument kinds
# --------------------------------------------------------------------------- #


def test_a_persistent_grid_is_one_block_per_multiprocessor_at_most():
    grid = launch.GridExpr([["size", "N"], ["const", 128], ["arith.ceildivsi", 0, 1], ["const", 4]], [2, 3],
                           persistent=True)
    assert grid.tiles({"N": 1000}) == (8, 4, 1)
    assert grid.evaluate({"N": 1000}, 132) == (32, 1, 1)  # fewer tiles than multiprocessors
    assert grid.evaluate({"N": 100000}, 132) == (132, 1, 1)
    assert str(grid) == "(min(ceildiv(N, 128) * 4 * 1, multiprocessors), 1, 1)"
    again = launch.GridExpr.from_json(grid.to_json())
    assert again == grid and again.is_well_formed()
    assert launch.GridExpr.from_json('{"program": [["const", 1]], "outputs": [0]}').persistent is False  # older entries


def test_a_persistent_grid_of_clusters_launches_whole_clusters():
    grid = launch.GridExpr([["const", 16], ["const", 4]], [0, 1], persistent=True, cluster=2)
    assert grid.evaluate({}, 132) == (64, 1, 1)
    assert grid.evaluate({}, 15) == (14, 1, 1)  # 7 clusters of two on 15 multiprocessors
    assert str(grid) == "(min(16 * 4 * 1, multiprocessors // 2 * 2), 1, 1)"
    again = launch.GridExpr.from_json(grid.to_json())
    assert again == grid and again.cluster == 2 and again.is_well_formed()
    assert launch.GridExpr.from_json('{"program": [["const", 1]], "outputs": [0], "persistent": true}').cluster == 1
    assert not launch.GridExpr([["const", 1]], [0], cluster=0).is_well_formed()


def test_a_balanced_persistent_grid_runs_the_same_rounds_on_the_fewest_blocks():
    grid = launch.GridExpr([["const", 64], ["const", 32]], [0, 1], persistent=True, balanced=True)
    assert grid.evaluate({}, 132) == (128, 1, 1)  # 2048 tiles: 16 rounds on 132 or on 128 blocks
    assert grid.evaluate({}, 128) == (128, 1, 1)
    assert grid.evaluate({}, 3000) == (2048, 1, 1)  # one round: a block per tile
    assert str(grid) == "(ceildiv(64 * 32 * 1, ceildiv(64 * 32 * 1, min(64 * 32 * 1, multiprocessors))), 1, 1)"
    for tiles, processors, blocks in ((2112, 132, 132), (1980, 132, 132), (288, 132, 96), (133, 132, 67),
                                      (265, 132, 89), (7, 3, 3), (1, 132, 1)):
        g = launch.GridExpr([["const", tiles]], [0], persistent=True, balanced=True)
        assert g.evaluate({}, processors) == (blocks, 1, 1), (tiles, processors)
        rounds = -(-tiles // min(tiles, processors))
        assert -(-tiles // blocks) == rounds  # as many rounds as one block per multiprocessor takes
    clusters = launch.GridExpr([["const", 133]], [0], persistent=True, cluster=2, balanced=True)
    assert clusters.evaluate({}, 132) == (68, 1, 1)  # 2 rounds: 67 tiles a round, rounded up to whole clusters
    assert str(clusters) == ("(ceildiv(ceildiv(133 * 1 * 1, ceildiv(133 * 1 * 1, min(133 * 1 * 1, multiprocessors // 2 * 2)))"
                             ", 2) * 2, 1, 1)")
    again = launch.GridExpr.from_json(grid.to_json())
    assert again == grid and again.balanced and again.is_well_formed()
    assert launch.GridExpr.from_json('{"program": [["const", 1]], "outputs": [0], "persistent": true}').balanced is False
    assert not launch.GridExpr([["const", 1]], [0], balanced=1).is_well_formed()


def test_every_consumer_dispatches_through_the_argument_kinds():
    grid = launch.GridExpr([["const", 1]], [0])
    spec = launch.LaunchSpec("k", (32, 1, 1), 0, grid, [("tensor", 0), ("size", "N")])
    again = launch.LaunchSpec.from_json(spec.to_json())
    assert again == spec and again.is_well_formed(1)
    assert not launch.LaunchSpec("k", (32, 1, 1), 0, grid, [("tensor", 1)]).is_well_formed(1)  # no param 1
    assert not launch.LaunchSpec("k", (32, 1, 1), 0, grid, [("texture", 0)]).is_well_formed(1)  # unknown kind
    data = json.loads(spec.to_json())
    data["args"].append(["texture", 0])
    assert not launch.LaunchSpec.from_json(json.dumps(data)).is_well_formed(1)


def test_a_new_argument_kind_is_one_registered_class(monkeypatch):
    monkeypatch.setattr(launch, "ARG_KINDS", dict(launch.ARG_KINDS))

    @launch.arg_kind("scaled")
    class Scaled(launch.ArgKind):  # a made-up kind: a size times a factor, stored as {"size", "by"}
        @staticmethod
        def valid(value, n_params):
            return isinstance(value, tuple) and isinstance(value[0], str) and launch.is_int(value[1])

        @staticmethod
        def gpu_packer(value, backend):
            return lambda tensors, sizes: sizes[value[0]] * value[1]

        @staticmethod
        def host_value(value, arrays, sizes):
            return sizes[value[0]] * value[1]

        @staticmethod
        def describe(value, params):
            return f"{value[0]} * {value[1]}: int64"

        @staticmethod
        def manifest(value):
            return {"size": value[0], "times": value[1]}

        @staticmethod
        def to_json(value):
            return {"size": value[0], "by": value[1]}

        @staticmethod
        def from_json(data):
            return (data["size"], data["by"])

    import tilec.compiler.cuda_backend as cb

    monkeypatch.setattr(cb, "ARG_KINDS", launch.ARG_KINDS)
    spec = launch.LaunchSpec("k", (32, 1, 1), 0, launch.GridExpr([["const", 1]], [0]),
                             [("size", "N"), ("scaled", ("N", 4))])
    again = launch.LaunchSpec.from_json(spec.to_json())
    assert again.args == spec.args and again.is_well_formed(0)
    backend = object.__new__(CudaBackend)
    backend.spec, backend._packers = again, None
    assert backend.kernel_args({}, {"N": 10}) == [10, 40]
    assert [launch.ARG_KINDS[k].manifest(v) for k, v in again.args] == [{"size": "N"}, {"size": "N", "times": 4}]
    with pytest.raises(AssertionError, match="registered twice"):
        launch.arg_kind("scaled")(Scaled)


def test_a_hand_made_target_has_only_the_facts_it_is_given():
    assert Target("x", "cuda", "sm_80").has_cp_async is False  # the arch string is not parsed again
