"""`Layout.reshaped`: a fragment's threads and slots seen with another row-major shape (T.reshape of
a fragment), checked element by element against the layout it came from."""

import itertools
import math

import pytest
from tilec.dialects.tile.layout import Layout

LAYOUTS = ["(4s4,8t16)x(16t1,4s1)|r()",          # a coalesced default
           "(4t32,2s2,8t4)x(8s4,4t1,2s1)|r()",   # a wgmma m64n64 accumulator
           "(4t16)x(16t1,4s1)|r(2t64)"]          # replicated over two warps


def _elements(shape):
    return itertools.product(*(range(n) for n in shape))


def _unravel(flat, shape):
    index = []
    for n in reversed(shape):
        index.insert(0, flat % n)
        flat //= n
    return tuple(index)


CASES = [(LAYOUTS[0], (32, 8, 8)), (LAYOUTS[0], (2048,)), (LAYOUTS[0], (8, 4, 8, 8)), (LAYOUTS[0], (128, 16)),
         (LAYOUTS[1], (64, 4, 16)), (LAYOUTS[1], (4096,)), (LAYOUTS[1], (8, 8, 8, 8)), (LAYOUTS[1], (2, 2, 16, 64)),
         (LAYOUTS[2], (4, 4, 16)), (LAYOUTS[2], (256,)), (LAYOUTS[2], (2, 2, 64))]


@pytest.mark.parametrize("text, shape", CASES, ids=[f"{t}->{s}" for t, s in CASES])
def test_a_reshaped_layout_puts_every_element_on_the_same_thread_and_slot(text, shape):
    layout = Layout.parse(text)
    assert math.prod(shape) == math.prod(layout.shape) and shape != layout.shape
    view = layout.reshaped(shape)
    assert view is not None and view.shape == shape and view.rep == layout.rep
    assert view.num_slots == layout.num_slots and view.num_threads == layout.num_threads
    for index in _elements(layout.shape):
        flat = sum(i * math.prod(layout.shape[d + 1:]) for d, i in enumerate(index))
        other = _unravel(flat, shape)
        assert (view.thread_of(other), view.slot_of(other)) == (layout.thread_of(index), layout.slot_of(index))


def test_reshaping_back_gives_the_layout_itself():
    layout = Layout.parse(LAYOUTS[0])
    assert str(layout.reshaped((32, 8, 8))) == "(4s4,8t16)x(8t2)x(2t1,4s1)|r()"
    assert layout.reshaped((32, 8, 8)).reshaped((32, 64)) == layout  # 8t2,2t1 merge back into 16t1


def test_a_shape_the_modes_do_not_divide_into_is_refused():
    layout = Layout.parse(LAYOUTS[0])
    assert layout.reshaped((3, 682)) is None  # not the same number of elements
    assert Layout.parse("(3s1)x(4t1)|r()").reshaped((2, 6)) is None  # 3 slots do not split in 2
