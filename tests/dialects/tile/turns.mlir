// RUN: tilec opt %s | filecheck %s
// RUN: tilec opt %s | tilec opt | filecheck %s

// The warpgroups' turns (dialects/tile/turns.py) print and parse back.
// CHECK-LABEL: func.func @turns
// CHECK:       } consumer {
// CHECK-NEXT:    tile.warpgroup_wait_turn {start}
// CHECK-NEXT:    tile.warpgroup_pass_turn
// CHECK-NEXT:    tile.warpgroup_wait_turn
// CHECK-NEXT:    tile.warpgroup_pass_turn {final}
// CHECK-NEXT:  } {producer_threads = 128 : i64}
func.func @turns() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      tile.warpgroup_wait_turn {start}
      tile.warpgroup_pass_turn
      tile.warpgroup_wait_turn
      tile.warpgroup_pass_turn {final}
    } {producer_threads = 128 : i64}
  }
  func.return
}
