"""Shared-memory layout: the facts the lowering encodes and the simulator decodes, each once.

- The XOR swizzle of a shared tile (`#tile.swizzle<S>` by `T.annotate_layout`, or the `swizzle`
  of a `tile.alloc` by tile-select-mma): with S bytes, the 16-byte chunk c of each 128-byte group
  r moves to c ^ (r % (S / 16)) — byte address bits 4.. XOR the bits from 7 up (CUTLASS's
  Swizzle<log2(S/16), 4, 3>), the pattern TMA and wgmma use. A chunk never splits and an address
  never leaves its 128-byte group, so only tiles of whole 128-byte groups swizzle.
- The alignment of a shared tile: 128 bytes (vector accesses, cp.async, TMA), 8x the swizzle
  width when swizzled (the XOR reads address bits below it).
- The wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13
  the start address / 16, 16-29 the leading byte offset / 16, 32-45 the stride byte offset / 16,
  62-63 the swizzle mode.

`xor_swizzle` works on ints and numpy arrays as is, and on IR values with `ops` that emit the
four bit operations (the lowering passes its own).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from types import SimpleNamespace

SWIZZLE_WIDTHS = (32, 64, 128)
"""Bytes of the XOR swizzles a shared tile may have."""

SWIZZLE_GROUP = 128
"""Bytes: a swizzle permutes the 16-byte chunks inside each 128-byte group of a tile."""

BASE_ALIGN = 128
"""Bytes every shared tile starts at a multiple of."""

PYTHON_OPS = SimpleNamespace(shr=operator.rshift, and_=operator.and_, shl=operator.lshift, xor=operator.xor)
"""The bit operations of `xor_swizzle` on ints and numpy arrays."""


def xor_swizzle(byte, swizzle: int, ops=PYTHON_OPS):
    """The swizzled byte address of `byte` under a `swizzle`-byte XOR pattern (0: none)."""
    if not swizzle:
        return byte
    group = ops.and_(ops.shr(byte, 7), swizzle // 16 - 1)
    return ops.xor(byte, ops.shl(group, 4))


def swizzles_whole(nbytes: int) -> bool:
    """Whether a shared tile of `nbytes` bytes can be swizzled (whole 128-byte groups)."""
    return nbytes % SWIZZLE_GROUP == 0


def alignment(swizzle: int) -> int:
    """Bytes a shared tile with a `swizzle`-byte XOR pattern (0: none) starts at a multiple of."""
    return max(BASE_ALIGN, 8 * swizzle)


# --------------------------------------------------------------------------- wgmma descriptors

_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # bits 62-63; 0 (no swizzle) is not used by tilec
_SWIZZLE_OF_MODE = {mode: width for width, mode in _SWIZZLE_MODE.items()}
START_MASK = 0x3FFF
"""The 14 bits of the start-address field (address / 16)."""


@dataclass(frozen=True)
class WgmmaDescriptor:
    """A wgmma shared-memory matrix descriptor: byte addresses and offsets, the swizzle width."""

    start: int  # byte address in the shared window
    lbo: int  # leading-dimension byte offset
    sbo: int  # stride-dimension byte offset (between 8-row groups)
    swizzle: int  # 32, 64 or 128

    def fields(self) -> int:
        """Every field but the start address, as the signed 64-bit constant the lowering ORs in."""
        bits = (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32 | _SWIZZLE_MODE[self.swizzle] << 62
        return bits - (1 << 64) if bits >= 1 << 63 else bits

    def encode(self) -> int:
        """The descriptor as an unsigned 64-bit integer."""
        return (self.fields() & (1 << 64) - 1) | (self.start >> 4) & START_MASK

    @staticmethod
    def decode(desc: int) -> WgmmaDescriptor:
        """The fields of descriptor `desc`; ValueError for a swizzle mode tilec does not use."""
        mode = (desc >> 62) & 3
        if mode not in _SWIZZLE_OF_MODE:
            raise ValueError(f"wgmma descriptor swizzle mode {mode} (none) is not used by tilec")
        return WgmmaDescriptor((desc & START_MASK) << 4, ((desc >> 16) & START_MASK) << 4,
                               ((desc >> 32) & START_MASK) << 4, _SWIZZLE_OF_MODE[mode])
