"""The simulator's warpgroup mma: descriptors decode to the PTX canonical swizzled layouts, and
a kernel's m64nNk16 wgmma computes A @ B into the documented accumulator fragment.

The expected addresses come from tilec's own shared-memory swizzle (the one every shared access
uses, `Lowerer.swizzled`) applied to row-major tiles, which is how tilec will fill wgmma operands:
K-major A with rows of the swizzle width, N-major B in 64-column chunks (HOPPER_KERNELS.md §1.3,
the configurations checked there on the H200)."""

import numpy as np
import pytest

from tilec.targets.interp.simt import run_kernel
from tilec.targets.interp.simt_wgmma import wgmma_operand_bytes

SWIZZLE_CODE = {128: 1, 64: 2, 32: 3}


def descriptor(start: int, lbo: int, sbo: int, swizzle: int) -> int:
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | SWIZZLE_CODE[swizzle] << 62


def swizzled(byte, width: int):
    """tilec's XOR swizzle of a byte address (passes/_lower.py `Lowerer.swizzled`)."""
    return byte ^ (((byte >> 7) & (width // 16 - 1)) << 4)


@pytest.mark.parametrize("width", [128, 64, 32])
def test_k_major_operand_is_a_swizzled_row_major_tile(width):
    cols = width // 2  # elements per row: one swizzle width
    rows = 64
    for step in range(cols // 16):  # k16 steps advance the start address by 32 bytes
        desc = descriptor(step * 32, 16, 8 * width, width)
        got = wgmma_operand_bytes(desc, rows, 16, k_major=True)
        r, k = np.meshgrid(np.arange(rows), np.arange(16), indexing="ij")
        assert np.array_equal(got, swizzled((r * cols + step * 16 + k) * 2, width))


def test_n_major_operand_is_64_column_chunks():
    k_rows, n = 64, 128  # B stored as two 64x64 chunks [n // 64][k][64], 128-byte rows
    chunk = k_rows * 64 * 2
    for step in range(k_rows // 16):  # k16 steps advance 16 rows = 2048 bytes
        desc = descriptor(step * 2048, chunk, 1024, 128)
        got = wgmma_operand_bytes(desc, n, 16, k_major=False)
        nn, k = np.meshgrid(np.arange(n), np.arange(16), indexing="ij")
        flat = (nn // 64) * k_rows * 64 + (step * 16 + k) * 64 + nn % 64
        assert np.array_equal(got, swizzled(flat * 2, 128))


def _kernel(n: int, halves: int, write_before_the_wait: bool = False) -> str:
    struct = "!llvm.struct<(" + ", ".join(["f32"] * (n // 2)) + ")>"
    stores = []
    for i in range(n // 2):
        stores.append(f'  %v{i} = "llvm.extractvalue"(%d) <{{position = array<i64: {i}>}}> : ({struct}) -> f32')
        stores.append(f"  %o{i} = arith.constant {i} : index")
        stores.append(f"  %p{i} = arith.addi %base, %o{i} : index")
        stores.append(f"  memref.store %v{i}, %out[%p{i}] : memref<?xf32>")
    store_text = "\n".join(stores)
    return f"""
"memref.global"() <{{sym_name = "smem", sym_visibility = "private", type = memref<{2 * halves}xi8, 3>,
                    initial_value, alignment = 1024 : i64}}> : () -> ()
func.func @k(%tiles: memref<?xf16>, %out: memref<?xf32>, %da: i64, %db: i64, %dc: i64) attributes {{nvvm.kernel}} {{
  %t = "gpu.thread_id"() <{{dimension = #gpu<dim x>}}> : () -> index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {halves // 128} : index
  %raw = memref.get_global @smem : memref<{2 * halves}xi8, 3>
  %s = memref.view %raw[%c0][] : memref<{2 * halves}xi8, 3> to memref<{halves}xf16, 3>
  scf.for %j = %c0 to %cn step %c1 {{
    %j128 = arith.muli %j, %c128 : index
    %i = arith.addi %j128, %t : index
    %v = memref.load %tiles[%i] : memref<?xf16>
    memref.store %v, %s[%i] : memref<{halves}xf16, 3>
    scf.yield
  }}
  nvvm.barrier0
  nvvm.wgmma.fence.aligned
  %d0 = "nvvm.wgmma.mma_async"(%da, %db) <{{shape = #nvvm.shape<m = 64, n = {n}, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> : (i64, i64) -> {struct}
  %d1 = "nvvm.wgmma.mma_async"(%dc, %db, %d0) <{{shape = #nvvm.shape<m = 64, n = {n}, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> : (i64, i64, {struct}) -> {struct}
  nvvm.wgmma.commit.group.sync.aligned
{"  %z = arith.constant 0.0 : f16" + chr(10) + "  memref.store %z, %s[%c0] : memref<" + str(halves) + "xf16, 3>"
 if write_before_the_wait else ""}
  %d = "nvvm.wgmma.wait.group.sync.aligned"(%d1) <{{group = 0 : i64}}> : ({struct}) -> {struct}
  %cw = arith.constant {n // 2} : index
  %base = arith.muli %t, %cw : index
{store_text}
  func.return
}}
"""


@pytest.mark.parametrize("n", [64, 128])
def test_wgmma_in_the_simulator(n):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nvptx"))
    from nvptx_testing import parse

    rng = np.random.default_rng(n)
    a = rng.standard_normal((64, 64)).astype(np.float16)  # K-major, 128-byte rows, swizzled
    b = rng.standard_normal((16, n)).astype(np.float16)  # N-major, in 64-column chunks, swizzled
    a_bytes = 64 * 64 * 2
    halves = (a_bytes + 64 * n * 2) // 2
    tiles = np.zeros(halves, np.float16)
    r, k = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    tiles[swizzled((r * 64 + k) * 2, 128) // 2] = a
    kk, nn = np.meshgrid(np.arange(16), np.arange(n), indexing="ij")
    flat = (nn // 64) * 64 * 64 + kk * 64 + nn % 64  # 64 K-rows per chunk, only 16 used
    tiles[(a_bytes + swizzled(flat * 2, 128)) // 2] = b
    da = descriptor(0, 16, 1024, 128)  # A's k columns 0-15
    dc = descriptor(32, 16, 1024, 128)  # A's k columns 16-31: the second wgmma adds that product
    db = descriptor(a_bytes, 64 * 64 * 2, 1024, 128)
    out = np.zeros(128 * n // 2, np.float32)
    run_kernel(parse(_kernel(n, halves)), [tiles, out, da, db, dc], (1, 1, 1), (128, 1, 1), 2 * halves)
    ref = (a[:, :16].astype(np.float64) + a[:, 16:32].astype(np.float64)) @ b.astype(np.float64)
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    rows = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i >> 1) & 1)
    cols = 8 * (i >> 2) + 2 * (t % 4) + (i & 1)
    np.testing.assert_allclose(out.reshape(128, n // 2), ref[rows, cols], rtol=1e-5, atol=1e-4)


def test_a_write_into_an_operand_of_a_wgmma_not_waited_for_is_a_located_error():
    """wgmma reads shared memory until the wgmma.wait_group that completes it: a store into its
    operand before that wait may change what it reads on the GPU (the simulated wgmma reads at issue)."""
    import sys
    from pathlib import Path

    from tilec.errors import TilecRaceWarning

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nvptx"))
    from nvptx_testing import parse

    n, halves = 64, (64 * 64 * 2 + 64 * 64 * 2) // 2
    args = [np.zeros(halves, np.float16), np.zeros(128 * n // 2, np.float32), descriptor(0, 16, 1024, 128),
            descriptor(64 * 64 * 2, 64 * 64 * 2, 1024, 128), descriptor(32, 16, 1024, 128)]
    with pytest.raises(TilecRaceWarning, match="a write into shared memory that the block's wgmma still reads: the "
                                               "wgmma.wait_group that completes it comes later"):
        run_kernel(parse(_kernel(n, halves, write_before_the_wait=True)), args, (1, 1, 1), (128, 1, 1), 2 * halves)
