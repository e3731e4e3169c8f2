"""Canonicalization patterns of the `tile` dialect.

Referenced lazily from the ops' `HasCanonicalizationPatternsTrait`, so that
`dialects/` never imports `passes/` at module load.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tilec.dialects import tile


class EraseSelfCopy(RewritePattern):
    """`tile.copy %x, %x` has no effect."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CopyOp, rewriter: PatternRewriter) -> None:
        if op.src == op.dst:
            rewriter.erase_op(op)


def patterns() -> tuple[RewritePattern, ...]:
    return (EraseSelfCopy(),)
