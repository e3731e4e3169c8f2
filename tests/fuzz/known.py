"""Bugs the fuzzer found that are not fixed yet: the generator steers around each one, so
the CI run stays green and a long run keeps finding new bugs instead of the same one.

Each entry names its regression test in test_regressions.py (an xfail(strict=True) test
until the fix lands).  When that test starts passing, delete the entry here so the
generator covers the construct again.  `TILEC_FUZZ_KNOWN=hit` turns all avoidance off.
"""

from __future__ import annotations

import os

KNOWN_BUGS: dict = {}


def avoid(name: str) -> bool:
    """Whether the generator should steer around known bug `name`."""
    assert name in KNOWN_BUGS or name in FIXED, name
    return name in KNOWN_BUGS and os.environ.get("TILEC_FUZZ_KNOWN") != "hit"


# Entries moved here once fixed (kept so old `avoid` calls stay valid).
FIXED = {
    "if_on_alloc_var": "`if v > 0.0:` on a per-iteration `v = T.alloc_var(T.float32, init=A[i])` inside "
                       "T.Parallel takes the same branch in every iteration on the CUDA path "
                       "(test_if_on_a_per_iteration_alloc_var)",
    "negative_global_index": "a global region or element below index 0 (T.copy(A[bx * 8 - 1], s), "
                             "A[bx * 8 + i - 1] in T.Parallel) is read and written unguarded on the CUDA path "
                             "(the interpreter reads 0 and skips the write) (test_negative_global_index)",
    "scan_into_local": "T.cumsum / T.cummax whose destination is a T.alloc_local tile (in place or dst=) "
                       "leaves the values unscanned on the CUDA path: [1, 2, 3, 4] stays [1, 2, 3, 4] "
                       "(test_scan_of_a_local_tile)",
    "reduce_fragment_to_shared": "T.reduce_sum(fragment, dst) with a shared or local dst is refused by the CUDA "
                                 "target ('needs a fragment destination'); the interpreter runs it "
                                 "(test_reduce_of_a_fragment_into_shared_memory)",
    "trailing_index_copy": "T.copy between a tile and a global region whose last index is an integer "
                           "(Y[i0:i0 + 16, j]) moves only the first column on the CUDA path "
                           "(test_copy_region_with_an_integer_last_index)",
    "gemm_fragment_a_and_b": "T.gemm with both A and B in fragments gives wrong products on the CUDA path, "
                             "SIMT and mma.sync alike (test_gemm_with_both_operands_in_fragments)",
    "parallel_atomic_replicated": "T.atomic_add(Out[j], x[i, j]) inside T.Parallel is applied more than once "
                                  "per element on the CUDA path when the block has more than about a quarter "
                                  "as many threads as the loop has elements (test_element_atomics_in_parallel)",
    "invariant_atomic_in_parallel": "T.atomic_add(Out[0], 1.0) inside T.Parallel(4) (index and value the same "
                                    "every iteration) adds once on the interpreter and once per thread on the "
                                    "CUDA path (test_loop_invariant_atomic_in_parallel_counts_every_iteration)",
    "broadcast_layout_conflict": "a reduced fragment read as y[i] / y[j] in a T.Parallel that writes another "
                                 "fragment whose dtype (or whose source's dtype) differs is refused: 'fragment "
                                 "%y is used with incompatible thread layouts'; the hint's T.copy does not help "
                                 "(test_broadcast_of_a_reduction_into_another_dtype)",
}
