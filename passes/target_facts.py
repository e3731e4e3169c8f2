"""The target a tile pass compiles for, as the passes receive it: a `tilec.Target` (plain data:
arch, shared memory per block, warp size, has_cp_async / has_tma / has_wgmma), named by the pass's
`target` option so that `tilec opt -p 'tile-pipeline{target=sm_80}'` can spell it. Passes read the
facts from here, never from an arch string of their own."""

from __future__ import annotations

import functools

from tilec.target import Target, resolve_target

__all__ = ["target_facts", "shared_limit"]


@functools.lru_cache(maxsize=None)
def target_facts(name: str) -> Target:
    """The `Target` named `name` ("sm_80", "sm_90a", "sim", ...)."""
    return resolve_target(name)


def shared_limit(target: str, limit: int) -> int:
    """Bytes of shared memory a block may use: `limit` where a pass option sets it (tests, `tilec
    opt`), else the target's."""
    return limit or target_facts(target).smem_per_block
