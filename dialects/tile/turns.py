"""Turns of the warpgroups of one consumer region at the tensor cores (FlashAttention-3's
ping-pong, made by tile-warpgroup-pingpong): the W warpgroups of the kernel's threads work on the
same tile (the same stages, the same mbarriers), and each issues its gemms only when the
warpgroup before it has issued its own, so that one warpgroup's softmax runs while the next one's
gemms use the tensor cores. Warpgroup w waits on named barrier 5 + w and passes the turn on
5 + (w + 1) mod W; warpgroup 0 goes first. In the consumer region of attention:

    tile.warpgroup_wait_turn {start}
    tile.for %k { ... gemm S = Q K^T {in_flight = 1} ; tile.warpgroup_pass_turn ; tile.gemm_wait %s
                  softmax ; tile.warpgroup_wait_turn ; gemm O += P V ... }
    tile.warpgroup_pass_turn {final}

(`tile.wait_turn` / `tile.pass_turn` in sync.py are the other ping-pong: consumer groups with
tiles of their own, taking turns between tiles.)
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnitAttr
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, opt_prop_def

from .structure import enclosing_kernel
from .sync import consumer_split
from .types import _require

WARPGROUP = 128
MAX_WARPGROUPS = 4


def turn_warpgroups(op) -> int:
    """The warpgroups taking turns around `op`: its kernel's threads over 128."""
    kernel = enclosing_kernel(op)
    return kernel.num_threads // WARPGROUP if kernel is not None and kernel.num_threads % WARPGROUP == 0 else 0


class _WarpgroupTurnOp(IRDLOperation):
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def verify_(self) -> None:
        split = consumer_split(self)
        _require(split is not None and split.groups == 1,
                 f"{self.name} must be inside the consumer region of a tile.warp_specialize of one consumer group")
        _require(2 <= turn_warpgroups(self) <= MAX_WARPGROUPS,
                 f"{self.name}: the kernel's threads must be 2 to {MAX_WARPGROUPS} whole warpgroups (256 to 512)")


@irdl_op_definition
class WarpgroupWaitTurnOp(_WarpgroupTurnOp):
    """Warpgroup w waits until warpgroup w − 1 (mod W) has passed it the turn (`bar.sync 5 + w, 256`).
    With `start` (once, before the first wait of every warpgroup), the last warpgroup first gives
    warpgroup 0 its first turn.

    ```mlir
    %g = arith.constant 1 : index
    tile.kernel (%bx) in (%g) threads [256, 1, 1] {
      tile.warp_specialize producer {
        %p = arith.constant 0 : index
      } consumer {
        tile.warpgroup_wait_turn {start}
        tile.warpgroup_wait_turn
      } {producer_threads = 128 : i64}
    }
    ```
    """

    name = "tile.warpgroup_wait_turn"
    start = opt_prop_def(UnitAttr)

    def __init__(self, start: bool = False):
        super().__init__(properties={"start": UnitAttr()} if start else {})


@irdl_op_definition
class WarpgroupPassTurnOp(_WarpgroupTurnOp):
    """Warpgroup w passes the turn to warpgroup w + 1 (mod W) (`bar.arrive 5 + (w + 1) mod W, 256`).
    With `final` (the last pass of every warpgroup), the last warpgroup does not: nobody waits for
    it any more, and each named barrier is left as many arrivals as waits.

    ```mlir
    %g = arith.constant 1 : index
    tile.kernel (%bx) in (%g) threads [256, 1, 1] {
      tile.warp_specialize producer {
        %p = arith.constant 0 : index
      } consumer {
        tile.warpgroup_pass_turn
        tile.warpgroup_pass_turn {final}
      } {producer_threads = 128 : i64}
    }
    ```
    """

    name = "tile.warpgroup_pass_turn"
    final = opt_prop_def(UnitAttr)

    def __init__(self, final: bool = False):
        super().__init__(properties={"final": UnitAttr()} if final else {})
