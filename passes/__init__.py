"""tilec's passes: one pass a file, registered here by kebab-case name for `tilec opt`.

Each entry maps a pass name to a function returning the pass class, so that
listing the passes imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def get() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(f"tilec.passes.{module}"), cls)

    return get


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _canonicalize,
    "cse": _cse,
    "dce": _dce,
    "tile-longest-first": _lazy("tile_longest_first", "TileLongestFirstPass"),
    "tile-legalize-bounds": _lazy("tile_legalize_bounds", "TileLegalizeBoundsPass"),
    "tile-split-masks": _lazy("tile_split_masks", "TileSplitMasksPass"),
    "tile-select-mma": _lazy("tile_select_mma", "TileSelectMmaPass"),
    "tile-warp-specialize": _lazy("tile_warp_specialize", "TileWarpSpecializePass"),
    "tile-cluster": _lazy("tile_cluster", "TileClusterPass"),
    "tile-alternate-k": _lazy("tile_alternate_k", "TileAlternateKPass"),
    "tile-stage-epilogue": _lazy("tile_stage_epilogue", "TileStageEpiloguePass"),
    "tile-pipeline": _lazy("tile_pipeline", "TilePipelinePass"),
    "tile-infer-layout": _lazy("tile_infer_layout", "TileInferLayoutPass"),
    "tile-plan-shared-memory": _lazy("tile_plan_shared_memory", "TilePlanSharedMemoryPass"),
    "tile-insert-barriers": _lazy("tile_insert_barriers", "TileInsertBarriersPass"),
    "tile-warpgroup-pingpong": _lazy("tile_warpgroup_pingpong", "TileWarpgroupPingpongPass"),
    "convert-tile-to-thread": _lazy("convert_tile_to_thread", "ConvertTileToThreadPass"),
    "thread-shared-divisor": _lazy("thread_shared_divisor", "ThreadSharedDivisorPass"),
    "thread-sigmoid": _lazy("thread_sigmoid", "ThreadSigmoidPass"),
}
"""Every pass `tilec opt -p` knows, by name."""


def register(name: str, get: Callable[[], type[ModulePass]]) -> None:
    """Adds a pass to the registry (targets and plugins register theirs here)."""
    PASSES[name] = get
