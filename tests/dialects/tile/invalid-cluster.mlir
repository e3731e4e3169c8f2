// RUN: tilec opt %s --split-input-file --verify-diagnostics

// Clusters (tile-cluster): one verifier message each.

// A cluster extent must divide a constant grid extent.
// expected-error@+4 {{tile.kernel: a cluster extent must divide a constant grid extent, got 2 for 3}}
func.func @odd_grid() {
  %g = arith.constant 3 : index
  %h = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %h) threads [128, 1, 1] {
  } {cluster = array<i64: 2, 1>}
  func.return
}

// -----

// Multicast masks and remote arrivals address every block: one clustered dimension.
// expected-error@+4 {{tile.kernel: a cluster spans one grid dimension, got [2, 2]}}
func.func @two_dims() {
  %g = arith.constant 2 : index
  %h = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %h) threads [128, 1, 1] {
  } {cluster = array<i64: 2, 2>}
  func.return
}

// -----

// A multicast load needs a cluster.
func.func @multicast_alone(%A: !tile.tensor<256x64xf16>) {
  %g = arith.constant 2 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
    %c0 = arith.constant 0 : index
    %r = tile.region %A[%c0, %c0] : !tile.tensor<256x64xf16> -> !tile.tensor<64x64xf16>
    // expected-error@+1 {{tile.tma_load: a multicast load needs a tile.kernel with a cluster of two or more blocks}}
    tile.tma_load %r, %s, %b[%c0] {multicast} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>, !tile.mbarrier<2>
  }
  func.return
}

// -----

// One 64-column chunk of 8 rows cannot be cut into two bands at 8-row boundaries.
func.func @multicast_indivisible(%A: !tile.tensor<256x64xf16>) {
  %g = arith.constant 2 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<8x64xf16, shared>
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
    %c0 = arith.constant 0 : index
    %r = tile.region %A[%c0, %c0] : !tile.tensor<256x64xf16> -> !tile.tensor<8x64xf16>
    // expected-error@+1 {{tile.tma_load: a multicast load must divide among the cluster's blocks by chunk or by row bands of 8-row multiples}}
    tile.tma_load %r, %s, %b[%c0] {multicast} : !tile.tensor<8x64xf16>, !tile.buffer<8x64xf16, shared>, !tile.mbarrier<2>
  } {cluster = array<i64: 2>}
  func.return
}

// -----

// A cluster-wide arrival needs a cluster.
func.func @arrive_alone() {
  %g = arith.constant 2 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
    %c0 = arith.constant 0 : index
    // expected-error@+1 {{tile.mbarrier_arrive: a cluster-wide arrival needs a tile.kernel with a cluster of two or more blocks}}
    tile.mbarrier_arrive %b[%c0] {cluster} : !tile.mbarrier<2>
  }
  func.return
}
