// RUN: tilec opt %s -p tile-infer-layout --split-input-file | filecheck %s

// One row vector read by loops over two gemm accumulators of different thread shapes: it
// keeps the rows of the first loop's layout, and the second loop reads a converted copy in
// its own (the lowering moves the elements through shared memory).
// CHECK-LABEL: func.func @conflict
// CHECK: %rows = tile.alloc {layout = #tile.fragment<"(8s1,8t16)|r(16t1)">}
// CHECK: %rows_as0 = tile.alloc {layout = #tile.fragment<"(64t2)|r(2t1)">}
// CHECK: tile.load %rows[
// CHECK: tile.copy %rows, %rows_as0
// CHECK-NEXT: tile.parallel
// CHECK: tile.load %rows_as0[
// CHECK-NOT: tile.copy %rows_as0, %rows
func.func @conflict() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x16xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %b2 = tile.alloc : !tile.buffer<16x8xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %acc2 = tile.alloc : !tile.buffer<64x8xf32, fragment>
    %rows = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.gemm %a, %b, %acc : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b2, %acc2 : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x8xf16, shared>, !tile.buffer<64x8xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
    tile.parallel (%i, %j) in [64, 8] {
      %v = tile.load %acc2[%i, %j] : !tile.buffer<64x8xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc2[%i, %j] : f32, !tile.buffer<64x8xf32, fragment>
    }
  }
  func.return
}

// -----

// A loop that writes the row vector from the other accumulator's rows (a reduction of it):
// it writes a converted copy, copied back out after it; nothing to copy in, since the loop
// overwrites every element without reading one.
// CHECK-LABEL: func.func @conflict_written
// CHECK-NOT: tile.copy %rows, %rows_as0
// CHECK: tile.parallel (%{{.*}}) in [64]
// CHECK: tile.store %{{.*}}, %rows_as0[
// CHECK: tile.copy %rows_as0, %rows
func.func @conflict_written() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x16xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %b2 = tile.alloc : !tile.buffer<16x8xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %acc2 = tile.alloc : !tile.buffer<64x8xf32, fragment>
    %rows = tile.alloc : !tile.buffer<64xf32, fragment>
    %m2 = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.gemm %a, %b, %acc : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b2, %acc2 : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x8xf16, shared>, !tile.buffer<64x8xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
    tile.reduce %acc2, %m2 {kind = "sum", dim = 1 : i64, clear = true} : !tile.buffer<64x8xf32, fragment>, !tile.buffer<64xf32, fragment>
    tile.parallel (%i) in [64] {
      %m = tile.load %m2[%i] : !tile.buffer<64xf32, fragment> -> f32
      tile.store %m, %rows[%i] : f32, !tile.buffer<64xf32, fragment>
    }
  }
  func.return
}

// -----

// A fragment read at a run-time index inside T.Parallel and outside it: the reads go to a
// shared copy, made once before the loop that neither writes the fragment nor its copy.
// CHECK-LABEL: func.func @runtime_index
// CHECK: %x = tile.alloc {layout =
// CHECK-NEXT: %x_shared = tile.alloc : !tile.buffer<8x64xf32, shared>
// CHECK: tile.copy %x, %x_shared
// CHECK-NEXT: tile.for
// CHECK: tile.load %x_shared[%k, %i]
// CHECK: tile.load %x_shared[%k, %c0]
// CHECK-NOT: tile.load %x[
func.func @runtime_index(%X: !tile.tensor<8x64xf32>, %Y: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %x = tile.alloc : !tile.buffer<8x64xf32, fragment>
    tile.copy %X, %x : !tile.tensor<8x64xf32>, !tile.buffer<8x64xf32, fragment>
    tile.for %k = %c0 to %c8 step %c1 {
      tile.parallel (%i) in [64] {
        %v = tile.load %x[%k, %i] : !tile.buffer<8x64xf32, fragment> -> f32
        tile.store %v, %Y[%i] : f32, !tile.tensor<64xf32>
      }
      %w = tile.load %x[%k, %c0] : !tile.buffer<8x64xf32, fragment> -> f32
      tile.store %w, %Y[%k] : f32, !tile.tensor<64xf32>
    }
  }
  func.return
}

// -----

// A copy out of a region of a fragment: a loop over the whole fragment, in its layout,
// guarded to the region's rows.
// CHECK-LABEL: func.func @region_copy
// CHECK-NOT: tile.region %x
// CHECK: tile.parallel (%[[I:.*]], %[[J:.*]]) in [64, 32]
// CHECK: arith.cmpi sge, %[[I]]
// CHECK: scf.if
// CHECK: tile.load %x[%[[I]], %[[J]]]
// CHECK: } {layout = #tile.fragment<
func.func @region_copy(%Y: !tile.tensor<16x32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %x = tile.alloc : !tile.buffer<64x32xf32, fragment>
    %r = tile.region %x[%c8, %c0] : !tile.buffer<64x32xf32, fragment> -> !tile.buffer<16x32xf32, fragment>
    tile.copy %r, %Y : !tile.buffer<16x32xf32, fragment>, !tile.tensor<16x32xf32>
  }
  func.return
}

// -----

// A row vector computed before a loop and read inside it by a loop over an accumulator of
// another layout: converted once, before the loop (nothing in it writes the vector).
// CHECK-LABEL: func.func @conversion_hoisted
// CHECK: tile.copy %rows, %rows_as0
// CHECK-NEXT: tile.for
// CHECK-NOT: tile.copy %rows
// CHECK: tile.load %rows_as0[
func.func @conversion_hoisted() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %a = tile.alloc : !tile.buffer<64x16xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %b2 = tile.alloc : !tile.buffer<16x8xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %acc2 = tile.alloc : !tile.buffer<64x8xf32, fragment>
    %rows = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.gemm %a, %b, %acc : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
    tile.for %k = %c0 to %c4 step %c1 {
      tile.gemm %a, %b2, %acc2 : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x8xf16, shared>, !tile.buffer<64x8xf32, fragment>
      tile.parallel (%i, %j) in [64, 8] {
        %v = tile.load %acc2[%i, %j] : !tile.buffer<64x8xf32, fragment> -> f32
        %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
        %s = arith.addf %v, %r : f32
        tile.store %s, %acc2[%i, %j] : f32, !tile.buffer<64x8xf32, fragment>
      }
    }
  }
  func.return
}
