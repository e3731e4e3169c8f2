"""convert-tile-to-thread's layout for a copy between memories: the widest vector both ends take,
its lanes consecutive. A tensor whose rows are 8 bytes aligned only (4100 f16 a row) is copied as
8-byte vectors of consecutive lanes, a warp's access one contiguous run; before, 16-byte groups split
in halves left every other 8 bytes of a row to the next instruction (twice the sectors: ncu, run s15b)."""

import pytest
from xdsl.dialects.builtin import f16, f32

from tilec.passes.convert_tile_to_thread.context import Lowerer
from tilec.passes.convert_tile_to_thread.copy import copy_layout, slot_groups
from tilec.passes.convert_tile_to_thread.memory import View


class _Probe:
    """The part of the Lowerer that decides vector widths (known multiples, no IR)."""

    threads = 128
    mults: dict = {}
    mult = Lowerer.mult
    flat_probe = Lowerer.flat_probe
    vectorizable = Lowerer.vectorizable


def _views(row: int, typ=f16, shape=(64, 256)):
    src = View("global", None, shape, typ, [0, 0], [row, 1], [4096, row], in_bounds=False)
    dst = View("shared", None, shape, typ, [0, 0], [shape[1], 1], list(shape))
    return src, dst


@pytest.mark.parametrize("row,typ,width", [(4096, f16, 8), (4100, f16, 4), (4098, f16, 2), (4097, f16, 1),
                                           (4098, f32, 2), (4097, f32, 1)])
def test_the_widest_vector_both_ends_take(row, typ, width):
    layout = copy_layout(_Probe(), (64, 256), *_views(row, typ))
    groups = slot_groups(layout)
    assert {len(g) for g in groups} == {width}
    # consecutive lanes take consecutive vectors: thread 1's first element is `width` columns on
    index = layout.index_parts(groups[0][0])
    last = dict(index[-1][1])
    assert sorted(last.values())[0] == width
