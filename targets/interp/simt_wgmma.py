"""The simulator's warpgroup mma (sm_90a): wgmma.mma_async reads its shared operands through their
descriptors (the PTX canonical swizzled layouts) and completes at issue; its reads last until the
wgmma.wait_group of its group (`simt_hopper.Hopper.wgmma_read`), for the race checks."""

from __future__ import annotations

import numpy as np
from ml_dtypes import bfloat16 as ml_bfloat16
from ml_dtypes import float8_e4m3fn as ml_float8_e4m3fn
from ml_dtypes import float8_e5m2 as ml_float8_e5m2
from tilec.dialects import nvvm, tile
from xdsl.dialects.builtin import IntegerType

from tilec.errors import error_at

from .simt_hopper import _lanes, hopper_of

__all__ = ["WGMMA_HANDLERS", "wgmma_operand_bytes"]


def wgmma_operand_bytes(desc: int, rows: int, k: int, k_major: bool, element_bytes: int = 2) -> np.ndarray:
    """Byte addresses in the shared window of a wgmma operand read through descriptor `desc`:
    element (r, kk) of a `rows` x `k` operand (r over M or N), as the PTX canonical swizzled
    layouts place it (K-major: 8-row groups SBO apart, rows of the swizzle width; MN-major:
    8-K-row groups SBO apart, chunks of swizzle-width/2 elements LBO apart), then the XOR of
    address bits 4.. with bits 7.. (16-bit elements): `tilec.dialects.tile.WgmmaDescriptor` and
    `xor_swizzle`, as the lowering encodes them."""
    d = tile.WgmmaDescriptor.decode(desc)
    start, lbo, sbo, width = d.start, d.lbo, d.sbo, d.swizzle
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    if k_major:
        addr = start + (r // 8) * sbo + (r % 8) * width + kk * element_bytes
    else:
        per_row = width // 2
        addr = start + (r // per_row) * lbo + (kk // 8) * sbo + (kk % 8) * width + (r % per_row) * 2
    return tile.xor_swizzle(addr, width)


_WGMMA_DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_bfloat16),
                 "e4m3": np.dtype(ml_float8_e4m3fn), "e5m2": np.dtype(ml_float8_e5m2)}


def _wgmma(op, c):
    """wgmma.mma_async m64nNk16 (m64nNk32 for fp8) per warpgroup of 128 threads: A and B read from shared memory
    through their descriptors, D = A @ B (+ the inouts), the accumulator of thread t of the group
    at row 16 (t/32) + (t%32)/4 + 8 ((i>>1)&1), column 8 (i>>2) + 2 (t%4) + (i&1)."""
    n, k = op.shape.n.data, op.shape.k.data
    half = _WGMMA_DTYPES[op.typeA.data.value]
    b_dtype = _WGMMA_DTYPES[op.typeB.data.value]
    eb = half.itemsize  # 2, or 1 for fp8 (k32, K-major only)
    a_kmajor = op.layoutA.data.value == "row"
    b_kmajor = op.layoutB.data.value == "col"

    register_a = not isinstance(op.descriptorA.type, IntegerType)

    def run(st):
        lanes = _lanes(st)
        groups = _require_converged(op, st, "wgmma")
        if register_a:
            regs = [np.broadcast_to(np.asarray(v).astype(np.int32), (lanes,)) for v in st.env[op.descriptorA]]
            da = np.zeros(lanes, np.uint64)
        else:
            da = np.broadcast_to(np.asarray(st.env[op.descriptorA], np.int64), (lanes,)).astype(np.uint64)
        db = np.broadcast_to(np.asarray(st.env[op.descriptorB], np.int64), (lanes,)).astype(np.uint64)
        acc = None
        if op.inouts is not None:
            acc = np.stack([np.broadcast_to(v, (lanes,)).astype(np.float32) for v in st.env[op.inouts]], axis=1)
        if op.scaleD is not None:  # a run-time scale-d: false ignores the inputs (D = A·B)
            keep = np.broadcast_to(np.asarray(st.env[op.scaleD], bool), (lanes,))
            acc = np.where(keep[:, None], acc, np.float32(0))
        raw = st.shared.array
        hopper = hopper_of(st)
        out = np.zeros((lanes, n // 2), np.float32) if acc is None else acc.copy()
        t = np.arange(128)
        w, l = t // 32, t % 32
        for g in groups:
            sel = slice(128 * g, 128 * (g + 1))
            if len(set(da[sel].tolist())) != 1 or len(set(db[sel].tolist())) != 1:
                raise error_at(op, "wgmma descriptors differ within a warpgroup (simulated)")
            try:
                b_addr = wgmma_operand_bytes(int(db[sel][0]), n, k, b_kmajor, eb)
                a_addr = None if register_a else wgmma_operand_bytes(int(da[sel][0]), 64, k, a_kmajor, eb)
            except ValueError as e:
                raise error_at(op, f"{e}") from None
            for addr in (a_addr, b_addr):
                if addr is not None and (addr.min() < 0 or addr.max() + eb > raw.size):
                    raise error_at(op, f"wgmma operand at bytes [{addr.min()}, {addr.max() + eb}) outside the "
                                       f"{raw.size} bytes of shared memory (simulated)")
                if addr is not None:
                    hopper.wgmma_read(op, addr.ravel())
            if register_a:  # A element (row, k) of thread t, register j/2, half j%2 (HOPPER_KERNELS.md §1.4)
                a = np.zeros((64, 16), np.float64)
                packed = np.stack([r[sel] for r in regs], axis=1).view(half).reshape(128, 8).astype(np.float64)
                jj = np.arange(8)
                rows = 16 * w[:, None] + l[:, None] // 4 + 8 * ((jj[None, :] >> 1) & 1)
                ks = 8 * (jj[None, :] >> 2) + 2 * (l[:, None] % 4) + (jj[None, :] & 1)
                a[rows, ks] = packed
            else:
                a = raw[a_addr[..., None] + np.arange(eb)].view(half)[..., 0].astype(np.float64)  # (64, k)
            b = raw[b_addr[..., None] + np.arange(eb)].view(b_dtype)[..., 0].astype(np.float64)  # (n, k)
            d = a @ b.T
            i = np.arange(n // 2)
            rows = 16 * w[:, None] + l[:, None] // 4 + 8 * ((i[None, :] >> 1) & 1)
            cols = 8 * (i[None, :] >> 2) + 2 * (l[:, None] % 4) + (i[None, :] & 1)
            block = d[rows, cols]
            if acc is not None:
                block = block + acc[sel]
            out[sel] = block.astype(np.float32)
        st.env[op.res] = tuple(out[:, i] for i in range(n // 2))

    return run


def _require_converged(op, st, what: str) -> list[int]:
    """A `.sync.aligned` wgmma instruction: the warpgroups running it run it with all 128 threads
    (returned: the warpgroups that do)."""
    lanes = _lanes(st)
    active = np.ones(lanes, bool) if st.mask is None else np.broadcast_to(np.asarray(st.mask), (lanes,))
    groups = [g for g in range(lanes // 128) if active[128 * g:128 * (g + 1)].any()]
    if lanes % 128 or any(not active[128 * g:128 * (g + 1)].all() for g in groups):
        raise error_at(op, f"{what} needs whole warpgroups of converged threads (simulated)")
    return groups


def _wgmma_wait(op, c):
    pending = op.group.value.data

    def run(st):  # the simulated wgmma is complete at issue; its operand reads last until the wait (races)
        _require_converged(op, st, f"wgmma.wait_group {pending}")
        for v, r in zip(op.values, op.res):
            st.env[r] = st.env[v]
        h = st.env.get("__hopper__")
        if h is not None:
            h.wgmma_wait(pending)

    return run


def _wgmma_commit(op, c):
    def run(st):
        _require_converged(op, st, "wgmma.commit_group")
        h = st.env.get("__hopper__")
        if h is not None:
            h.wgmma_commit()

    return run


WGMMA_HANDLERS = {nvvm.WgmmaMmaAsyncOp: _wgmma, nvvm.WgmmaCommitGroupSyncAlignedOp: _wgmma_commit,
                  nvvm.WgmmaWaitGroupSyncOp: _wgmma_wait}
