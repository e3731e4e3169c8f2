// RUN: tilec opt %s --split-input-file --verify-diagnostics

// The warpgroups' turns (dialects/tile/turns.py): one verifier message each.

// Outside a consumer region there are no warpgroups taking turns.
func.func @wait_outside() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    // expected-error@+1 {{tile.warpgroup_wait_turn must be inside the consumer region of a tile.warp_specialize of one consumer group}}
    tile.warpgroup_wait_turn {start}
  }
  func.return
}

// -----

// The producer region is one warpgroup's.
func.func @pass_in_the_producer() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.warp_specialize producer {
      // expected-error@+1 {{tile.warpgroup_pass_turn must be inside the consumer region of a tile.warp_specialize of one consumer group}}
      tile.warpgroup_pass_turn
    } consumer {
      %c = arith.constant 0 : index
    } {producer_threads = 128 : i64}
  }
  func.return
}

// -----

// Consumer groups (the other ping-pong) take turns between tiles: tile.wait_turn.
func.func @in_consumer_groups() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      // expected-error@+1 {{tile.warpgroup_wait_turn must be inside the consumer region of a tile.warp_specialize of one consumer group}}
      tile.warpgroup_wait_turn
    } {producer_threads = 128 : i64, consumer_groups = 2 : i64}
  }
  func.return
}

// -----

// One warpgroup has nobody to take turns with.
func.func @one_warpgroup() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      // expected-error@+1 {{tile.warpgroup_pass_turn: the kernel's threads must be 2 to 4 whole warpgroups (256 to 512)}}
      tile.warpgroup_pass_turn {final}
    } {producer_threads = 128 : i64}
  }
  func.return
}
