"""The facts with one home in the `tile` dialect that the lowering encodes and the targets decode:
the XOR swizzle, the wgmma matrix descriptor, the memref.atomic_rmw codes of `tile.atomic`."""

import numpy as np
import pytest
from tilec.dialects import tile
from tilec.dialects.tile.shared_layout import SWIZZLE_WIDTHS, swizzles_whole


@pytest.mark.parametrize("width", SWIZZLE_WIDTHS)
def test_the_swizzle_permutes_whole_chunks_inside_each_group(width):
    """Every 128-byte group keeps its bytes, every 16-byte chunk stays whole, and rows r and
    r + k of a group's row-set land on different chunks (the bank-conflict-free property)."""
    byte = np.arange(8 * 1024, dtype=np.int64)
    moved = tile.xor_swizzle(byte, width)
    assert sorted(moved.tolist()) == byte.tolist()
    assert (moved // 128 == byte // 128).all() and (moved % 16 == byte % 16).all()
    assert [tile.xor_swizzle(int(b), width) for b in byte[:2048:7]] == moved[:2048:7].tolist()
    rows = width // 16  # 128-byte groups whose chunk 0 moves to distinct chunks
    assert len({tile.xor_swizzle(128 * r, width) // 16 % 8 for r in range(rows)}) == rows
    assert tile.alignment(width) == max(128, 8 * width)


def test_no_swizzle_is_the_identity():
    assert tile.xor_swizzle(1234, 0) == 1234 and tile.alignment(0) == 128
    assert swizzles_whole(256) and not swizzles_whole(64)


@pytest.mark.parametrize("width", SWIZZLE_WIDTHS)
def test_the_wgmma_descriptor_round_trips(width):
    desc = tile.WgmmaDescriptor(start=0x2A40, lbo=16, sbo=8 * width, swizzle=width)
    encoded = desc.encode()
    assert 0 <= encoded < 1 << 64 and tile.WgmmaDescriptor.decode(encoded) == desc
    assert (desc.fields() & (1 << 64) - 1) | (0x2A40 >> 4) == encoded  # the lowering ORs the start in
    assert -(1 << 63) <= desc.fields() < 1 << 63  # an i64 constant


def test_the_descriptor_modes_are_the_ptx_isa_ones():
    """Bits 62-63: 1 = 128-byte, 2 = 64-byte, 3 = 32-byte swizzle; 0 (none) is not used by tilec."""
    assert [tile.WgmmaDescriptor(0, 0, 0, w).encode() >> 62 for w in (128, 64, 32)] == [1, 2, 3]
    with pytest.raises(ValueError, match="swizzle mode 0"):
        tile.WgmmaDescriptor.decode(0x40)


@pytest.mark.parametrize("kind", list(tile.AtomicKind))
@pytest.mark.parametrize("is_float", [True, False], ids=["float", "int"])
def test_every_atomic_kind_is_decoded_by_both_targets(kind, is_float):
    """The code the lowering gives a `tile.atomic` is one the simulator and the NVPTX translation
    both read, as the same operation."""
    from tilec.targets.interp.simt import _ATOMIC as SIMULATED
    from tilec.targets.nvptx.translate_ops import _ATOMIC_KINDS as LLVM

    code = tile.atomic_rmw_kind(kind, is_float)
    llvm_op = LLVM[code]
    assert llvm_op.startswith("f") == is_float
    assert llvm_op.lstrip("f").removesuffix("imum") == {"add": "add", "max": "max", "min": "min"}[kind]
    assert SIMULATED[code] is {"add": np.add, "max": np.fmax if is_float else np.maximum,
                               "min": np.fmin if is_float else np.minimum}[kind]


def test_the_atomic_codes_are_upstream_mlirs():
    """arith::AtomicRMWKind's order (MLIR's ArithBase.td): what upstream tools read from our IR."""
    assert [k.name.lower() for k in tile.AtomicRMWKind] == [
        "addf", "addi", "assign", "maximumf", "maxs", "maxu", "minimumf", "mins", "minu", "mulf", "muli", "ori",
        "andi", "maxnumf", "minnumf"]
    assert [int(k) for k in tile.AtomicRMWKind] == list(range(15))
