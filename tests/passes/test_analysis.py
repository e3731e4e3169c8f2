"""passes/analysis.py: affine forms, value ranges and known multiples of index values."""

import pytest
from xdsl.parser import Parser

import tilec.dialects
from tilec.passes.analysis import affine_form, known_multiple, value_range

IR = """
func.func @f(%A: !tile.tensor<?xf16>) {
  %g = arith.constant 3 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %n = tile.dim %A {dim = 0 : i64} : !tile.tensor<?xf16>
    %row = arith.muli %bx, %c64 : index
    %row32 = arith.addi %row, %c32 : index
    %back = arith.subi %row32, %row : index
    %sh = arith.shli %bx, %c2 : index
    %dyn = arith.muli %n, %c8 : index
    %lim = arith.minsi %n, %c8 : index
    %q = arith.ceildivsi %row32, %c32 : index
    %tid = tile.thread_id {dim = 0 : i64}
    %i32 = arith.index_cast %row : index to i32
    tile.for %k = %c0 to %c8 step %c2 {
      %kk = arith.addi %k, %row : index
      tile.parallel (%i) in [16] {
        %e = arith.addi %kk, %i : index
      }
    }
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def values():
    module = Parser(tilec.dialects.context(), IR).parse_module()
    found = {}
    for op in module.walk():
        for result in op.results:
            if result.name_hint:
                found[result.name_hint] = result
        for region in op.regions:
            for arg in region.block.args:
                found[arg.name_hint] = arg
    return found


def test_affine_form_looks_through_arith(values):
    bx = values["bx"]
    assert affine_form(values["row32"]) == (32, {bx: 64})
    assert affine_form(values["back"]) == (32, {})
    assert affine_form(values["sh"]) == (0, {bx: 4})
    assert affine_form(values["i32"]) == (0, {bx: 64})
    assert affine_form(values["dyn"]) == (0, {values["n"]: 8})
    assert affine_form(values["tid"]) == (0, {values["tid"]: 1})


def test_value_range_of_leaves(values):
    assert value_range(values["row32"]) == (32, 160)  # bx in [0, 2]
    assert value_range(values["k"]) == (0, 6)  # 0, 2, 4, 6
    assert value_range(values["e"]) == (0, 6 + 128 + 15)
    assert value_range(values["tid"]) == (0, 127)
    assert value_range(values["lim"]) is None  # min of unknown n and 8: no lower bound
    assert value_range(values["q"]) == (1, 5)
    assert value_range(values["n"]) is None
    assert value_range(values["dyn"]) is None


def test_known_multiple(values):
    assert known_multiple(values["row"]) == 64
    assert known_multiple(values["row32"]) == 32
    assert known_multiple(values["kk"]) == 2  # k steps by 2 from 0
    assert known_multiple(values["dyn"]) == 8
    assert known_multiple(values["e"]) == 1
    assert known_multiple(values["c0"]) == 0  # 0 is a multiple of everything
