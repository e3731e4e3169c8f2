// RUN: tilec opt %s -p tile-longest-first | filecheck %s

// Causal attention's loop: min(4, ceildiv((bx + 1) * 64, 64)) key blocks, more for higher bx:
// the blocks launch from the last bx (by does not move the trip count).
// CHECK-LABEL: func.func @causal
// CHECK:       } {launch_reversed = array<i64: 0>}
func.func @causal(%K: !tile.tensor<256x64xf16>) {
  %g = arith.constant 4 : index
  %h = arith.constant 8 : index
  tile.kernel (%bx, %by) in (%g, %h) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %b1 = arith.addi %bx, %c1 : index
    %rows = arith.muli %b1, %c64 : index
    %blocks = arith.ceildivsi %rows, %c64 : index
    %n = arith.minsi %c4, %blocks : index
    tile.for %k = %c0 to %n step %c1 {
    }
  }
  func.return
}

// The trip count along the second grid dim: reversed there.
// CHECK-LABEL: func.func @by_grows
// CHECK:       } {launch_reversed = array<i64: 1>}
func.func @by_grows(%n0: index) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %t = arith.muli %by, %c2 : index
    %n = arith.addi %t, %n0 : index
    tile.for %k = %c0 to %n step %c1 {
    }
  }
  func.return
}

// Already longest first (4 - bx), a window that slides with bx (same trip count), a constant
// loop: the hardware's order stays.
// CHECK-LABEL: func.func @stays
// CHECK-NOT:   launch_reversed
// CHECK:       func.return
func.func @stays() {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %down = arith.subi %c4, %bx : index
    tile.for %k = %c0 to %down step %c1 {
    }
    %hi = arith.addi %bx, %c8 : index
    tile.for %k2 = %bx to %hi step %c1 {
    }
    tile.for %k3 = %c0 to %c8 step %c1 {
    }
  }
  func.return
}

// One loop grows and one shrinks with bx: no order is longest first.
// CHECK-LABEL: func.func @both_ways
// CHECK-NOT:   launch_reversed
// CHECK:       func.return
func.func @both_ways() {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %up = arith.addi %bx, %c1 : index
    tile.for %k = %c0 to %up step %c1 {
    }
    %down = arith.subi %c4, %bx : index
    tile.for %k2 = %c0 to %down step %c1 {
    }
  }
  func.return
}

// Atomics (blocks may wait on each other in the hardware's order) and T.use_swizzle (an order
// the author chose) keep the order.
// CHECK-LABEL: func.func @atomics
// CHECK-NOT:   launch_reversed
// CHECK:       func.return
func.func @atomics(%count: !tile.tensor<64xi32>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1 : i32
    %up = arith.addi %bx, %c1 : index
    tile.for %k = %c0 to %up step %c1 {
    }
    tile.atomic %count[%c0], %one {kind = "add"} : !tile.tensor<64xi32>, i32
  }
  func.return
}

// CHECK-LABEL: func.func @swizzled
// CHECK-NOT:   launch_reversed
// CHECK:       func.return
func.func @swizzled() {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [128, 1, 1] {
    tile.use_swizzle {panel_size = 2 : i64, order = "row"}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %up = arith.addi %bx, %c1 : index
    tile.for %k = %c0 to %up step %c1 {
    }
  }
  func.return
}
