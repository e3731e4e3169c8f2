// RUN: tilec opt %s --split-input-file --verify-diagnostics

// The old value has dst's element type, and only an element atomic has one.
func.func @wrong_type(%C: !tile.tensor<64xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %one = arith.constant 1 : i32
    // expected-error@+1 {{tile.atomic: prev must be of dst's element type i32}}
    %old = tile.atomic %C[%bx], %one {kind = "add"} : !tile.tensor<64xi32>, i32 -> f32
  }
  func.return
}

// -----

func.func @tile_wide(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    // expected-error@+1 {{tile.atomic: prev is one element's value: a tile-wide atomic has none}}
    %old = tile.atomic %C[], %f {kind = "add"} : !tile.tensor<64xf32>, !tile.buffer<64xf32, fragment> -> f32
  }
  func.return
}
