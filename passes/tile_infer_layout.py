"""Assign a thread layout to every fragment buffer and every `tile.parallel` loop.

Requires: tile-select-mma, when tensor cores are wanted (the `mma` property of a gemm
  selects the instruction's accumulator layout, and for wgmma with A in a fragment the
  layout of that register operand, which other fixed layouts may override).
Establishes: each fragment `tile.alloc` and each `tile.parallel` has its `layout`
  property, a `#tile.fragment<...>` of its shape; every fragment access is one that the
  owning threads serve from registers: a parallel loop indexes fragments with its induction
  variables, in order, in layouts that hold those elements on the threads that run them, and
  an element read outside T.Parallel is a constant index of a replicated fragment. What did
  not come that way is rewritten: a copy to or from a region of a fragment becomes a guarded
  loop over the fragment (fragment_regions.py); an op that needs a fragment in a second
  layout works on a converted copy `%x_as<k>` (`tile.copy` both ways, through shared memory
  in the lowering); other accesses go to a shared copy `%x_shared` (fragment_conversions.py).
Before inference: a branch on the thread index whose sides can run one after the other on the
  whole block does so (thread_branches.py), and a T.Parallel reading a fragment at a shifted loop
  variable is renumbered to read it at the variable (parallel_rotation.py). A `tile.reshape` of a
  fragment is a view: its layout is the fragment's reshaped (`Layout.reshaped`), both ways.
Fails: TilecError at a whole-tile op inside any other branch on the thread index (thread_branches.py),
  at an access of a fragment's reshaped view that its registers do not serve, and at a reshape
  whose layout does not split into the view's shape.

Inference is a fixed point (ARCHITECTURE.md, "Layouts"): gemm accumulators
are seeds; reductions derive replicated layouts; fragment-to-fragment copies
and parallel loops propagate layouts both ways; a loop that reads fragments only
with fewer dims than it has (`y[i]` in `T.Parallel(m, n)`) follows one of them,
extended over its other dims; a fragment nothing constrains gets the default
coalesced layout, largest fragments first. A use that needs a fragment in a layout
other than the one it has is a conflict, converted after the fixed point.

    %x = tile.alloc : !tile.buffer<4x1024xf32, fragment>
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : ...
  becomes
    %x = tile.alloc {layout = #tile.fragment<"(4s8)x(128t1,8s1)|r()">} : ...
    %m = tile.alloc {layout = #tile.fragment<"(4s1)|r(128t1)">} : ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.dialects import tile
from tilec.dialects.tile.layout import Layout, Mode
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilec.dtypes import from_ir
from tilec.errors import error_at

from .analysis import root_alloc
from .fragment_conversions import (
    convert_layouts,
    fragment_view,
    regular_access,
    localize_per_thread_fragments,
    stage_irregular_accesses,
)
from .fragment_regions import expand_region_uses
from .layouts import (
    default_layout,
    gemm_accumulator_layout,
    mma_accumulator_layout,
    wgmma_accumulator_layout,
    wgmma_register_a_layout,
)
from .parallel_rotation import rotate_shifted_accesses
from .thread_branches import check_thread_branches


def _fragment(value: SSAValue) -> tile.AllocOp | tile.ReshapeOp | None:
    """The fragment `value` is, as a layout key: its alloc, or the `tile.reshape` of one (a view
    whose layout is the alloc's seen with the view's shape, `Layout.reshaped`)."""
    view = fragment_view(value)
    if view is not None:
        return view
    alloc = root_alloc(value)
    if alloc is None or alloc.result.type.scope != "fragment" or alloc.result is not value:
        return None  # regions of fragments are not layout-propagated
    return alloc


def _bytes(typ) -> int:
    return max(1, from_ir(typ.element_type).bits // 8)


@dataclass
class _Access:
    alloc: tile.AllocOp
    dims: tuple[int | None, ...]  # the loop dim each index is, or None
    regular: bool  # indexed by loop variables in order, over the fragment's whole extents


def _parallel_accesses(loop: tile.ParallelOp) -> tuple[list[_Access], int]:
    """Fragment accesses in a loop, and the smallest element size of its memory accesses."""
    ivs = {arg: d for d, arg in enumerate(loop.body.block.args)}
    accesses, smallest = [], 16
    for op in loop.body.walk():
        if isinstance(op, tile.LoadOp | tile.StoreOp):
            buf = op.source if isinstance(op, tile.LoadOp) else op.dest
            alloc = _fragment(buf)
            if alloc is not None:
                dims = tuple(ivs.get(i) for i in op.indices)
                accesses.append(_Access(alloc, dims, regular_access(dims, loop.shape, alloc.result.type.shape)))
            elif buf.type.scope in ("global", "shared"):
                smallest = min(smallest, _bytes(buf.type))
    return accesses, smallest


def _rep_key(modes) -> tuple[tuple[int, int], ...]:
    """Replication thread modes as (size, stride), adjacent ones merged (8t16 == 4t16 + 2t64)."""
    merged: list[list[int]] = []
    for stride, size in sorted((m.stride, m.size) for m in modes if m.size > 1):
        for run in merged:
            if run[1] * run[0] == stride:
                run[0] *= size
                break
        else:
            merged.append([size, stride])
    return tuple(sorted((a, b) for a, b in merged))


def same_threads(a: Layout, b: Layout) -> bool:
    """Whether `a` and `b` put every element on the same threads (slots and the split of replication may differ)."""
    def key(lay: Layout):
        return tuple(tuple((m.size, m.kind, m.stride if m.kind == "t" else 0) for m in modes) for modes in lay.dims)

    return key(a) == key(b) and _rep_key(a.rep) == _rep_key(b.rep)


def extend(frag: Layout, dims: tuple[int, ...], shape: tuple[int, ...], vec: int) -> Layout:
    """A layout for a loop of `shape` whose projection on loop dims `dims` is `frag`.

    The loop's other dims take the fragment's replication threads where they divide them,
    then slots (a vector run of up to `vec` innermost): a loop that reads a fragment as a
    broadcast (`y[i]` in `T.Parallel(m, n)`) follows the layout the fragment already has.
    """
    rep = sorted(frag.rep, key=lambda m: m.stride)
    slot_stride = max(1, frag.num_slots)
    out: list[tuple[Mode, ...]] = [()] * len(shape)
    for k, d in enumerate(dims):
        out[d] = frag.dims[k]
    for d in reversed([d for d in range(len(shape)) if d not in dims]):
        n, threads = shape[d], []
        while rep and n > 1:
            take = math.gcd(rep[0].size, n)
            if take == 1:
                break
            mode = rep.pop(0)
            threads.append(Mode(take, "t", mode.stride))
            if take < mode.size:
                rep.insert(0, Mode(mode.size // take, "t", mode.stride * take))
            n //= take
        inner = 1
        while inner < vec and n % (inner * 2) == 0:
            inner *= 2
        modes = []
        if n // inner > 1:
            modes.append(Mode(n // inner, "s", slot_stride * inner))
        modes += reversed(threads)  # the higher-stride thread part is the more significant
        if inner > 1:
            modes.append(Mode(inner, "s", slot_stride))
        slot_stride *= n
        out[d] = tuple(modes) or (Mode(1, "s", 1),)
    return Layout(tuple(out), tuple(rep))


def project(layout: Layout, dims: tuple[int, ...]) -> Layout:
    """`layout` restricted to loop dims `dims` (in order): the others become replication."""
    for d in sorted(set(range(len(layout.dims))) - set(dims), reverse=True):
        layout = layout.reduce(d)
    return layout


class _Inference:
    def __init__(self, kernel: tile.KernelOp):
        self.kernel = kernel
        self.threads = kernel.num_threads
        self.layouts: dict[Operation, Layout] = {}  # fragment allocs and parallel loops
        self.conflicts: dict[tuple[Operation, tile.AllocOp], Layout] = {}  # (op, fragment) → the layout op needs

    def set(self, key: Operation, layout: Layout, where: Operation) -> bool:
        old = self.layouts.get(key)
        if old is None:
            self.layouts[key] = layout
            return True
        if not same_threads(old, layout) and (where, key) not in self.conflicts:
            self.conflicts[(where, key)] = layout  # `where` gets a converted copy of `key`
        return False

    def _set_view(self, key: Operation, layout: Layout | None, other: Operation) -> bool:
        """Gives `key` (a fragment or its view) `layout`, the one of `other` (the view or the fragment) reshaped."""
        view = key if isinstance(key, tile.ReshapeOp) else other
        if layout is None:
            name = f"fragment {view.source.name_hint}" if view.source.name_hint else "a fragment"
            raise error_at(view, f"T.reshape of {name} to "
                                 f"{'x'.join(map(str, view.result.type.shape))}: its layout "
                                 f"{self.layouts[other]} does not split into that shape",
                           hint="reshape a shared copy of the fragment instead")
        if key in self.layouts and not same_threads(self.layouts[key], layout):
            raise error_at(view, "T.reshape of a fragment whose two shapes are used in layouts that do not "
                                 f"match ({self.layouts[key]} and {layout})",
                           hint="use the fragment in one shape, or reshape a shared copy of it")
        return self.set(key, layout, other)

    def run(self) -> None:
        ops = list(self.kernel.body.walk())
        for op in ops:
            if isinstance(op, tile.GemmOp) and _fragment(op.c) is not None:
                m, n, _ = op.mnk()
                if op.mma_kind == tile.MmaKind.WGMMA:  # tile-select-mma chose wgmma m64nNk16
                    layout = wgmma_accumulator_layout(m, n, self.threads)
                elif op.mma_kind == tile.MmaKind.M16N8K16:  # tile-select-mma chose mma.sync m16n8k16
                    layout = mma_accumulator_layout(m, n, self.threads, op.policy.data)
                else:
                    layout = gemm_accumulator_layout(m, n, self.threads)
                self.set(_fragment(op.c), layout, op)
        # wgmma's register A (RS): the layout it reads in place, unless the fixed layouts already
        # decide the fragment otherwise (the lowering then converts it through shared memory)
        register_a = {_fragment(op.a): wgmma_register_a_layout(op.mnk()[0], op.mnk()[2], self.threads)
                      for op in ops if isinstance(op, tile.GemmOp) and op.mma_kind == tile.MmaKind.WGMMA
                      and _fragment(op.a) is not None}
        allocs = [op for op in ops if isinstance(op, tile.AllocOp) and op.result.type.scope == "fragment"]
        loops = [op for op in ops if isinstance(op, tile.ParallelOp)]
        while True:
            self.propagate(ops, loops)
            seeds = [(a, lay) for a, lay in register_a.items() if a not in self.layouts and lay is not None]
            if seeds:
                self.layouts[seeds[0][0]] = seeds[0][1]
                continue
            if any(self.follow(loop) for loop in loops if loop not in self.layouts):
                continue
            pending = [a for a in allocs if a not in self.layouts]
            if pending:
                alloc = max(pending, key=lambda a: a.result.type.num_elements())
                self.layouts[alloc] = default_layout(alloc.result.type.shape, self.threads, self.vec_for(alloc, ops))
                continue
            loose = [p for p in loops if p not in self.layouts]
            if not loose:
                return
            loop = loose[0]
            self.layouts[loop] = default_layout(loop.shape, self.threads, 16 // _parallel_accesses(loop)[1])

    def follow(self, loop: tile.ParallelOp) -> bool:
        """Gives `loop` the extension of a fragment it reads with fewer dims, when one has a layout."""
        accesses, smallest = _parallel_accesses(loop)
        for a in accesses:
            if a.alloc in self.layouts and a.regular and len(a.dims) < len(loop.shape):
                self.layouts[loop] = extend(self.layouts[a.alloc], a.dims, loop.shape, 16 // smallest)
                return True
        return False

    def vec_for(self, alloc: tile.AllocOp, ops) -> int:
        sizes = [_bytes(alloc.result.type)]
        for op in ops:
            if isinstance(op, tile.CopyOp) and alloc.result in (op.src, op.dst):
                other = op.dst if op.src is alloc.result else op.src
                sizes.append(_bytes(other.type))
        return 16 // min(sizes)

    def propagate(self, ops, loops) -> None:
        changed = True
        while changed:
            changed = False
            for op in ops:
                if isinstance(op, tile.ReduceOp):
                    src, dst = _fragment(op.src), _fragment(op.dst)
                    if src in self.layouts and dst is not None:
                        changed |= self.set(dst, self.layouts[src].reduce(op.axis), op)
                elif isinstance(op, tile.ReshapeOp) and fragment_view(op.result) is op:
                    base = op.source.owner  # the view and its fragment: one layout, two shapes
                    if base in self.layouts:
                        changed |= self._set_view(op, self.layouts[base].reshaped(op.result.type.shape), base)
                    elif op in self.layouts:
                        changed |= self._set_view(base, self.layouts[op].reshaped(op.source.type.shape), op)
                elif isinstance(op, tile.CopyOp):
                    src, dst = _fragment(op.src), _fragment(op.dst)
                    if src is not None and dst is not None and op.src.type.shape == op.dst.type.shape:
                        if src in self.layouts and dst not in self.layouts:
                            changed |= self.set(dst, self.layouts[src], op)
                        elif dst in self.layouts and src not in self.layouts:
                            changed |= self.set(src, self.layouts[dst], op)
            for loop in loops:
                changed |= self.propagate_loop(loop)

    def propagate_loop(self, loop: tile.ParallelOp) -> bool:
        accesses, _ = _parallel_accesses(loop)
        full = tuple(range(len(loop.shape)))
        changed = False
        if loop not in self.layouts:
            for a in accesses:
                if a.dims == full and a.regular and a.alloc in self.layouts:
                    self.layouts[loop] = self.layouts[a.alloc]
                    changed = True
                    break
            else:
                return False
        layout = self.layouts[loop]
        for a in accesses:
            if not a.regular:
                continue  # run-time, permuted or partial indices: through shared memory (fragment_conversions)
            changed |= self.set(a.alloc, project(layout, a.dims), loop)
        return changed


def check_view_sources(kernel: tile.KernelOp) -> None:
    """A `tile.reshape` of a fragment takes the fragment itself: a reshape of a view or of a region of
    one has no layout of its own here."""
    for op in kernel.walk():
        if isinstance(op, tile.ReshapeOp) and fragment_view(op.result) is None and \
                (root := root_alloc(op.source)) is not None and root.result.type.scope == "fragment":
            raise error_at(op, "T.reshape of a reshaped fragment, or of a region of one, is not supported by the "
                               "CUDA target", hint="reshape the fragment itself to the shape wanted")


def check_fragment_views(kernel: tile.KernelOp, inference: _Inference) -> None:
    """Every access through a `tile.reshape` of a fragment is one its registers serve as they are: a
    T.Parallel indexing the view with its variables in order, where the loop's layout holds them (a
    view is not staged through shared memory the way its fragment would be)."""
    for where, key in inference.conflicts:
        if isinstance(key, tile.ReshapeOp):
            raise error_at(where, "this op needs the reshaped fragment in another layout than its own, "
                                  "which tilec does not convert for a T.reshape view",
                           hint="reshape a shared copy of the fragment, or use the fragment in its own shape")
    for view in [op for op in kernel.walk() if isinstance(op, tile.ReshapeOp) and fragment_view(op.result) is op]:
        layout = inference.layouts[view]
        for use in view.result.uses:
            op = use.operation
            if not isinstance(op, tile.LoadOp | tile.StoreOp):
                continue
            loop = tile.enclosing(op, tile.ParallelOp)
            if loop is not None:
                ivs = {arg: d for d, arg in enumerate(loop.body.block.args)}
                dims = tuple(ivs.get(i) for i in op.indices)
                if regular_access(dims, loop.shape, view.result.type.shape) and \
                        same_threads(project(inference.layouts[loop], dims), layout):
                    continue
            raise error_at(op, "this element of a T.reshape view of a fragment is not held by the thread "
                               "that accesses it (index it with the T.Parallel variables, in order, over "
                               "its whole shape)",
                           hint="reshape a shared copy of the fragment for other accesses")


@dataclass(frozen=True)
class TileInferLayoutPass(ModulePass):
    """Assign a thread layout to every fragment buffer and every tile.parallel loop."""

    name = "tile-infer-layout"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if not isinstance(kernel, tile.KernelOp):
                continue
            check_thread_branches(kernel)
            localize_per_thread_fragments(kernel)  # (before any layout: each thread's own registers)
            expand_region_uses(kernel)
            rotate_shifted_accesses(kernel)
            check_view_sources(kernel)
            inference = _Inference(kernel)
            inference.run()
            check_fragment_views(kernel, inference)
            for target, layout in inference.layouts.items():
                if not isinstance(target, tile.ReshapeOp):  # (a view's layout is its fragment's, reshaped)
                    target.layout = tile.FragmentLayoutAttr(str(layout))
            convert_layouts([(where, alloc, layout) for (where, alloc), layout in inference.conflicts.items()])
            stage_irregular_accesses(kernel)


def layout_of(op: tile.AllocOp | tile.ParallelOp) -> Layout | None:
    """The layout a previous run of this pass gave `op` (an alloc or a parallel loop)."""
    return op.layout.layout if op.layout is not None else None


__all__ = ["TileInferLayoutPass", "layout_of", "project", "root_alloc"]
