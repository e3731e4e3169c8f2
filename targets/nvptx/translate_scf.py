"""NVPTX translation of `scf` (for, if, while) into LLVM basic blocks with phis.

Regions are inlined at the builder; `scf.yield`/`scf.condition` are not translated as ops
but consumed here as the values flowing into the phis (see
`FunctionTranslator.translate_region`).
"""

from __future__ import annotations

from xdsl.dialects import scf

from .translate import FunctionTranslator as T
from .translate import lowers

# ---------------------------------------------------------------------------------- scf


@lowers(scf.ForOp)
def _for(t: T, op: scf.ForOp) -> None:
    """preheader → header(iv, iter phis; iv < ub ?) → body → latch(iv + step) → header;
    header → exit. LLVM's loop passes rotate and unroll it."""
    lb, ub, step = t.get(op.lb), t.get(op.ub), t.get(op.step)
    pre = t.b.block
    header, body, exit_ = (
        t.fn.append_basic_block(f"for.{n}") for n in ("header", "body", "exit")
    )
    t.b.branch(header)
    t.b.position_at_end(header)
    iv = t.b.phi(lb.type, "iv")
    iv.add_incoming(lb, pre)
    phis = []
    for init in op.iter_args:
        phi = t.b.phi(t.get(init).type)
        phi.add_incoming(t.get(init), pre)
        phis.append(phi)
    t.b.cbranch(t.b.icmp_signed("<", iv, ub), body, exit_)
    t.b.position_at_end(body)
    yielded = t.translate_region(op.body, [iv, *phis])
    next_iv = t.b.add(iv, step, flags=["nsw"])  # scf.for's iv never passes ub + step
    t.b.branch(header)
    iv.add_incoming(next_iv, t.b.block)
    for phi, value in zip(phis, yielded, strict=True):
        phi.add_incoming(value, t.b.block)
    t.b.position_at_end(exit_)
    t.set(op, *phis)


@lowers(scf.IfOp)
def _if(t: T, op: scf.IfOp) -> None:
    has_else = bool(op.false_region.blocks)
    then_bb = t.fn.append_basic_block("if.then")
    else_bb = t.fn.append_basic_block("if.else") if has_else else None
    merge = t.fn.append_basic_block("if.end")
    t.b.cbranch(t.get(op.cond), then_bb, else_bb or merge)
    incoming = []
    for bb, region in ((then_bb, op.true_region), (else_bb, op.false_region)):
        if bb is None:
            continue
        t.b.position_at_end(bb)
        incoming.append((t.translate_region(region, []), t.b.block))
        t.b.branch(merge)
    t.b.position_at_end(merge)
    results = []
    for i, res in enumerate(op.results):
        phi = t.b.phi(t.types(res.type))
        for values, block in incoming:
            phi.add_incoming(values[i], block)
        results.append(phi)
    t.set(op, *results)


@lowers(scf.WhileOp)
def _while(t: T, op: scf.WhileOp) -> None:
    """preheader → before(phis; condition) → after → before; before → exit."""
    pre = t.b.block
    before, after, exit_ = (
        t.fn.append_basic_block(f"while.{n}") for n in ("before", "after", "exit")
    )
    t.b.branch(before)
    t.b.position_at_end(before)
    phis = []
    for init in op.arguments:
        phi = t.b.phi(t.get(init).type)
        phi.add_incoming(t.get(init), pre)
        phis.append(phi)
    for arg, phi in zip(op.before_region.block.args, phis, strict=True):
        t.values[arg] = phi
    cond_op = t.translate_ops(op.before_region.block)
    assert isinstance(cond_op, scf.ConditionOp)
    forwarded = [t.get(v) for v in cond_op.args]
    t.b.cbranch(t.get(cond_op.condition), after, exit_)
    t.b.position_at_end(after)
    yielded = t.translate_region(op.after_region, forwarded)
    t.b.branch(before)
    for phi, value in zip(phis, yielded, strict=True):
        phi.add_incoming(value, t.b.block)
    t.b.position_at_end(exit_)
    t.set(op, *forwarded)
