"""Which tile-level passes run, in which order, for each target (STYLE 6: one function per
target, a "why here" comment on each pass).

The passes are constructed here and nowhere else; `lower.py` runs them. The target's facts
(`Target.has_cp_async`, `has_wgmma`, `arch`, `smem_per_block`) and the pass configs the
passes honour (`tilec.enable_mma`, `tilec.enable_wgmma` (default on sm_90a), `tilec.async_wgmma`, `tl.disable_wgmma`,
`tl.disable_warp_specialized`, `tl.disable_tma_lower`, `tilec.persistent`, `tilec.cluster`, `tilec.alternate_k`, `tilec.split_masks`, `tilec.longest_first`, `tilec.tma_store`, `tilec.warpgroup_pingpong`, `tilec.operand_rings`, `tilec.softmax_overlap`; see pass_configs.py) decide which passes run and with which options.
"""

from __future__ import annotations


def cuda_tile_passes(target, pass_configs: dict | None = None) -> list:
    """The tile-level passes for an NVIDIA target (and for "sim", which lowers for sm_90a), in order."""
    from tilec.passes.canonicalize import tile as _  # noqa: F401 - canonicalization patterns load lazily
    from tilec.passes.tile_alternate_k import TileAlternateKPass
    from tilec.passes.tile_infer_layout import TileInferLayoutPass
    from tilec.passes.tile_insert_barriers import TileInsertBarriersPass
    from tilec.passes.tile_legalize_bounds import TileLegalizeBoundsPass
    from tilec.passes.tile_longest_first import TileLongestFirstPass
    from tilec.passes.tile_pipeline import TilePipelinePass
    from tilec.passes.tile_plan_shared_memory import TilePlanSharedMemoryPass
    from tilec.passes.tile_select_mma import TileSelectMmaPass
    from tilec.passes.tile_split_masks import TileSplitMasksPass

    from tilec.passes.tile_stage_epilogue import TileStageEpiloguePass
    from tilec.passes.tile_warp_specialize import TileWarpSpecializePass

    configs = pass_configs or {}
    # mma.sync m16n8k16 and cp.async both come with sm_80: `has_cp_async` stands for both.
    mma = target.has_cp_async and configs.get("tilec.enable_mma", True)
    wgmma = target.has_wgmma and configs.get("tilec.enable_wgmma", True) and not configs.get("tl.disable_wgmma")
    specialize = wgmma and target.has_tma and not configs.get("tl.disable_warp_specialized") and \
        not configs.get("tl.disable_tma_lower")
    cluster = specialize and configs.get("tilec.cluster", False)
    overlap = bool(configs.get("tilec.softmax_overlap", True))
    # the turns: asked for, on every loop that fits; not given, on the loops the softmax overlap rotated
    turns = configs.get("tilec.warpgroup_pingpong")
    pingpong = specialize and (bool(turns) if turns is not None else overlap)
    if cluster:  # the passes that are off by default are imported only when they run
        from tilec.passes.tile_cluster import TileClusterPass
    if pingpong and turns is not None:
        from tilec.passes.tile_warpgroup_pingpong import TileWarpgroupPingpongPass
    return [
        # blocks whose loops run longer start first (causal attention); off with tilec.longest_first=False
        *([TileLongestFirstPass()] if configs.get("tilec.longest_first", True) else []),
        TileLegalizeBoundsPass(),  # prove which global accesses stay in bounds; the rest get predicates
        *([TileSplitMasksPass()] if configs.get("tilec.split_masks", True) else []),  # masks only where not uniform
        *([TileSelectMmaPass(target=target.name, wgmma=wgmma, program_async=bool(configs.get("tilec.async_wgmma", True)))]
          if mma else []),  # tensor cores
        *([TileWarpSpecializePass(target=target.name, persistent=_persistent(configs),
                                  pingpong=bool(configs.get("tilec.pingpong", True)),
                                  operand_rings=bool(configs.get("tilec.operand_rings", False)),
                                  per_copy=bool(configs.get("tilec.per_copy_tma", True)),
                                  softmax_overlap=overlap)]
          if specialize else []),  # T.Pipelined wgmma loops: a TMA producer warpgroup
        # (off by default: measured slower on the H200, run s5c, bench/NOTES.md)
        *([TileClusterPass(target=target.name)] if cluster else []),  # share loads
        # persistent gemms: odd rounds load their k-tiles last to first, starting on what L2 still holds
        # (on by default: +0.4-0.6 % at 8192^3 on an H100, bench/NOTES.md, sessions 19-20)
        *([TileAlternateKPass()] if specialize and configs.get("tilec.alternate_k", True) else []),
        *([TileStageEpiloguePass(target=target.name, tma_store=bool(configs.get("tilec.tma_store", True)))]
          if specialize else []),  # their results through shared memory: TMA stores or 16-byte stores
        *([TilePipelinePass(target=target.name)] if target.has_cp_async else []),  # the other T.Pipelined loops: cp.async stages
        TileInferLayoutPass(),  # thread ↔ element maps for fragments and T.Parallel loops
        TilePlanSharedMemoryPass(target=target.name),  # offsets, reuse, THE shared-memory budget check
        TileInsertBarriersPass(),  # order shared-memory accesses of different threads
        # after the barriers, so that it sees any a turn would hold: the warpgroups of a tile take turns at the gemms
        # (by default only on rotated loops: unrotated, measured slower on the H200, run s5f, bench/NOTES.md)
        *([TileWarpgroupPingpongPass() if turns is not None else TurnsOnRotatedLoops()] if pingpong else []),
    ]


def _persistent(configs: dict) -> bool | None:
    """`tilec.persistent` as given; not given: tile-warp-specialize's own choice (None)."""
    value = configs.get("tilec.persistent")
    return None if value is None else bool(value)


class TurnsOnRotatedLoops:
    """tile-warpgroup-pingpong on the loops the softmax overlap rotated, its module imported only
    when the module has one (a gemm kernel's build does not load it)."""

    name = "tile-warpgroup-pingpong"

    def apply(self, ctx, op) -> None:
        from tilec.dialects import tile
        from tilec.passes.softmax_overlap import ROTATED

        if any(isinstance(o, tile.ForOp) and ROTATED in o.attributes for o in op.walk()):
            from tilec.passes.tile_warpgroup_pingpong import TileWarpgroupPingpongPass

            TileWarpgroupPingpongPass(rotated_only=True).apply(ctx, op)
