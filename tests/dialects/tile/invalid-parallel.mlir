// RUN: tilec opt %s --split-input-file --verify-diagnostics

// What a tile.parallel body may hold, and constant indices into buffers: one case per
// message of parallel_body_error and of the element accesses' range check. Each error is
// reported at the op that fails to verify: the loop for its body's rules.

// A whole-tile op in a per-element loop.
func.func @copy_in_parallel(%A: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    // expected-error@+1 {{tile.parallel: T.copy (tile.copy) works on whole tiles and cannot be inside a tile.parallel}}
    tile.parallel (%i) in [64] {
      tile.copy %A, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    }
  }
  func.return
}

// -----

// A barrier is for the whole block.
func.func @barrier_in_parallel() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    // expected-error@+1 {{tile.parallel: T.sync_threads (tile.barrier) works on whole tiles and cannot be inside a tile.parallel}}
    tile.parallel (%i) in [64] {
      tile.barrier
    }
  }
  func.return
}

// -----

// Parallel loops do not nest.
func.func @nested_parallel() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    // expected-error@+1 {{tile.parallel: a nested T.Parallel (tile.parallel) works on whole tiles and cannot be inside a tile.parallel}}
    tile.parallel (%i) in [8] {
      tile.parallel (%j) in [8] {
      }
    }
  }
  func.return
}

// -----

// A pipelined loop inside a per-element loop.
func.func @pipelined_in_parallel() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    // expected-error@+1 {{tile.parallel: T.Pipelined (tile.for) works on whole tiles and cannot be inside a tile.parallel}}
    tile.parallel (%i) in [8] {
      tile.for %k = %c0 to %c4 step %c1 {
      } {kind = "pipelined", num_stages = 2 : i64}
    }
  }
  func.return
}

// -----

// An inner loop whose range depends on the element (a triangular loop).
func.func @per_element_loop_bound() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error@+1 {{tile.parallel: the bounds of a tile.for inside it differ between its iterations}}
    tile.parallel (%i) in [8] {
      tile.for %k = %c0 to %i step %c1 {
      }
    }
  }
  func.return
}

// -----

// Shared and fragment buffers belong to the block.
func.func @shared_alloc_in_parallel() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    // expected-error@+1 {{tile.parallel: shared buffers cannot be allocated inside a tile.parallel}}
    tile.parallel (%i) in [64] {
      %s = tile.alloc : !tile.buffer<4xf32, shared>
    }
  }
  func.return
}

// -----

// x[i] written from every j of a (64, 4) loop: four iterations write each element.
func.func @fragment_written_by_several_iterations(%A: !tile.tensor<64x4xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<64xf32, fragment>
    // expected-error@+1 {{tile.parallel: tile.store writes a fragment element from several iterations: its indices do not use loop dim 1}}
    tile.parallel (%i, %j) in [64, 4] {
      %v = tile.load %A[%i, %j] : !tile.tensor<64x4xf32> -> f32
      tile.store %v, %x[%i] : f32, !tile.buffer<64xf32, fragment>
    }
  }
  func.return
}

// -----

// A per-thread temporary allocated outside the loop: the frontend moves it inside.
func.func @outer_local_written_in_parallel(%A: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %t = tile.alloc : !tile.buffer<1xf32, local>
    // expected-error@+1 {{tile.parallel: tile.store writes a local buffer allocated outside the loop; a per-element temporary is allocated inside the loop body}}
    tile.parallel (%i) in [64] {
      %v = tile.load %A[%i] : !tile.tensor<64xf32> -> f32
      tile.store %v, %t[%c0] : f32, !tile.buffer<1xf32, local>
    }
  }
  func.return
}

// -----

// A constant index past a buffer's end, written.
func.func @store_out_of_range() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c70 = arith.constant 70 : index
    %one = arith.constant 1.0 : f32
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    // expected-error@+1 {{tile.store writes out of range: index 70 of dim 0 is outside a shared buffer of shape (64,)}}
    tile.store %one, %s[%c70] : f32, !tile.buffer<64xf32, shared>
  }
  func.return
}

// -----

// A negative constant index, read.
func.func @load_out_of_range() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %m1 = arith.constant -1 : index
    %f = tile.alloc : !tile.buffer<4x8xf32, fragment>
    // expected-error@+1 {{tile.load reads out of range: index -1 of dim 1 is outside a fragment buffer of shape (4, 8)}}
    %v = tile.load %f[%c0, %m1] : !tile.buffer<4x8xf32, fragment> -> f32
  }
  func.return
}

// -----

// A private temporary inside the loop, a loop-local fragment index, a read of an outer
// local: all allowed.
func.func @negative_parallel_body_is_fine(%A: !tile.tensor<64x4xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %u = tile.alloc : !tile.buffer<1xf32, local>
    %x = tile.alloc : !tile.buffer<64x4xf32, fragment>
    %y = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.parallel (%i, %j) in [64, 1] {
      %t = tile.alloc : !tile.buffer<1xf32, local>
      %v = tile.load %A[%i, %c0] : !tile.tensor<64x4xf32> -> f32
      %w = tile.load %u[%c0] : !tile.buffer<1xf32, local> -> f32
      tile.store %v, %t[%c0] : f32, !tile.buffer<1xf32, local>
      tile.store %w, %y[%i] : f32, !tile.buffer<64xf32, fragment>
    }
  }
  func.return
}
