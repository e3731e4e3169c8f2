// RUN: tilec opt %s -p tile-split-masks | filecheck %s

// Causal attention's mask (row bx * 64 + i sees key k * 64 + j when i + 64 bx >= j + 64 k):
// true at every (i, j) while 64 k <= 64 bx - 63, a prefix of k. The split point
// floor((64 bx - 63) / 64) + 1 is computed before the loop; the unmasked copy stores only
// the constant 0 to all of %s, so it is a tile.fill.
// CHECK-LABEL: func.func @causal_prefix
// CHECK:       %[[LO:.*]] = arith.constant -63 : index
// CHECK:       %[[X:.*]] = arith.muli %bx, %{{.*}} : index
// CHECK:       %[[T:.*]] = arith.addi %[[LO]], %[[X]] : index
// CHECK:       %[[Q:.*]] = arith.floordivsi %[[T]], %{{.*}} : index
// CHECK:       %[[SPLIT:.*]] = arith.addi %[[Q]], %{{.*}} : index
// CHECK:       tile.for %k
// CHECK:         %[[U:.*]] = arith.cmpi slt, %k, %[[SPLIT]] : index
// CHECK-NEXT:    scf.if %[[U]] {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      tile.fill %s, %[[Z]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:      tile.parallel (%i, %j) in [64, 64] {
// CHECK:             arith.select
// CHECK:           }
// CHECK-NEXT:    }{tilec.split_mask = "prefix"}
// CHECK-NEXT:    tile.gemm
func.func @causal_prefix(%Q: !tile.tensor<256x64xf16>, %K: !tile.tensor<256x64xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %q = tile.alloc : !tile.buffer<64x64xf16, shared>
    %kt = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %n = arith.addi %bx, %c1 : index
    tile.for %k = %c0 to %n step %c1 {
      %row = arith.muli %k, %c64 : index
      %kr = tile.region %K[%row, %c0] : !tile.tensor<256x64xf16> -> !tile.tensor<64x64xf16>
      tile.copy %kr, %kt : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
      tile.parallel (%i, %j) in [64, 64] {
        %qb = arith.muli %bx, %c64 : index
        %qi = arith.addi %qb, %i : index
        %kb = arith.muli %k, %c64 : index
        %kj = arith.addi %kb, %j : index
        %see = arith.cmpi sge, %qi, %kj : index
        %zero = arith.constant 0.000000e+00 : f32
        %ninf = arith.constant 0xff800000 : f32
        %v = arith.select %see, %zero, %ninf : f32
        tile.store %v, %s[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
      }
      tile.gemm %q, %kt, %s {transpose_b = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}

// A key-tail mask (k * 64 + j < 200, true while k < 3) and-ed with a bound that holds from
// k = 2 on (k * 32 + i >= 40): a prefix and a suffix, the unmasked copy guarded by their
// conjunction. With no run-time values in them, the split points are constants. The value
// stored is not a constant, so the copy stays a tile.parallel, with the select gone.
// CHECK-LABEL: func.func @tail_and_suffix
// CHECK:       %[[P:.*]] = arith.constant 3 : index
// CHECK:       %[[S:.*]] = arith.constant 2 : index
// CHECK:       tile.for %k
// CHECK:         %[[A:.*]] = arith.cmpi slt, %k, %[[P]] : index
// CHECK-NEXT:    %[[B:.*]] = arith.cmpi sge, %k, %[[S]] : index
// CHECK-NEXT:    %[[AB:.*]] = arith.andi %[[A]], %[[B]] : i1
// CHECK-NEXT:    scf.if %[[AB]] {
// CHECK-NEXT:      tile.parallel (%{{.*}}, %{{.*}}) in [32, 64] {
// CHECK-NOT:         arith.select
// CHECK:             %[[V:.*]] = tile.load %x
// CHECK-NEXT:        tile.store %[[V]], %s
// CHECK:         } else {
// CHECK:           arith.select
// CHECK:         }{tilec.split_mask = "prefix and suffix"}
func.func @tail_and_suffix(%X: !tile.tensor<32x64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c40 = arith.constant 40 : index
    %c64 = arith.constant 64 : index
    %c200 = arith.constant 200 : index
    %x = tile.alloc : !tile.buffer<32x64xf32, fragment>
    %s = tile.alloc : !tile.buffer<32x64xf32, fragment>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.parallel (%i, %j) in [32, 64] {
        %kb = arith.muli %k, %c64 : index
        %kj = arith.addi %kb, %j : index
        %tail = arith.cmpi slt, %kj, %c200 : index
        %kc = arith.muli %k, %c32 : index
        %ki = arith.addi %kc, %i : index
        %late = arith.cmpi sge, %ki, %c40 : index
        %both = arith.andi %tail, %late : i1
        %xv = tile.load %x[%i, %j] : !tile.buffer<32x64xf32, fragment> -> f32
        %ninf = arith.constant 0xff800000 : f32
        %v = arith.select %both, %xv, %ninf : f32
        tile.store %v, %s[%i, %j] : f32, !tile.buffer<32x64xf32, fragment>
      }
    }
  }
  func.return
}

// An `if` over the fragment (`if i + 16 k < 48: s[i, j] = 1`): the unmasked copy runs the
// then-branch unconditionally.
// CHECK-LABEL: func.func @if_in_parallel
// CHECK:       tile.for %k
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      tile.parallel
// CHECK-NOT:         scf.if
// CHECK:             tile.store
// CHECK:         } else {
// CHECK:           tile.parallel
// CHECK:             scf.if
// CHECK:         }{tilec.split_mask = "prefix"}
func.func @if_in_parallel() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c48 = arith.constant 48 : index
    %s = tile.alloc : !tile.buffer<16x16xf32, fragment>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.parallel (%i, %j) in [16, 16] {
        %kb = arith.muli %k, %c16 : index
        %r = arith.addi %kb, %i : index
        %in = arith.cmpi slt, %r, %c48 : index
        scf.if %in {
          %one = arith.constant 1.000000e+00 : f32
          %old = tile.load %s[%i, %j] : !tile.buffer<16x16xf32, fragment> -> f32
          %new = arith.addf %old, %one : f32
          tile.store %new, %s[%i, %j] : f32, !tile.buffer<16x16xf32, fragment>
        }
      }
    }
  }
  func.return
}

// A key-tail mask that holds in every iteration (k * 64 + j < 256 for k < 4: a sequence the
// blocks divide) goes: the parallel becomes the fill, with no guard.
// CHECK-LABEL: func.func @tail_every_iteration
// CHECK:       tile.for %k
// CHECK-NOT:     scf.if
// CHECK:         tile.fill %s, %{{.*}} {tilec.split_mask = "every iteration"}
// CHECK-NOT:     tile.parallel
// CHECK:         tile.gemm
func.func @tail_every_iteration(%Q: !tile.tensor<64x64xf16>, %K: !tile.tensor<256x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %q = tile.alloc : !tile.buffer<64x64xf16, shared>
    %kt = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.parallel (%i, %j) in [64, 64] {
        %kb = arith.muli %k, %c64 : index
        %kj = arith.addi %kb, %j : index
        %in = arith.cmpi slt, %kj, %c256 : index
        %zero = arith.constant 0.000000e+00 : f32
        %ninf = arith.constant 0xff800000 : f32
        %v = arith.select %in, %zero, %ninf : f32
        tile.store %v, %s[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
      }
      tile.gemm %q, %kt, %s {transpose_b = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    }
  }
  func.return
}

// Not split: the mask holds in no iteration of the loop (k * 64 + j < 10 for k >= 1).
// CHECK-LABEL: func.func @negative_split_never_uniform
// CHECK-NOT:   tilec.split_mask
func.func @negative_split_never_uniform() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c10 = arith.constant 10 : index
    %c64 = arith.constant 64 : index
    %s = tile.alloc : !tile.buffer<16x64xf32, fragment>
    tile.for %k = %c1 to %c4 step %c1 {
      tile.parallel (%i, %j) in [16, 64] {
        %kb = arith.muli %k, %c64 : index
        %kj = arith.addi %kb, %j : index
        %in = arith.cmpi slt, %kj, %c10 : index
        %zero = arith.constant 0.000000e+00 : f32
        %one = arith.constant 1.000000e+00 : f32
        %v = arith.select %in, %one, %zero : f32
        tile.store %v, %s[%i, %j] : f32, !tile.buffer<16x64xf32, fragment>
      }
    }
  }
  func.return
}

// Not split: the mask reads a value loaded in the loop (no split point before it), and a
// mask that does not depend on the loop's k (uniform in k: nothing to split).
// CHECK-LABEL: func.func @negative_split_loaded_or_invariant
// CHECK-NOT:   tilec.split_mask
func.func @negative_split_loaded_or_invariant(%N: !tile.tensor<4xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %s = tile.alloc : !tile.buffer<16x16xf32, fragment>
    tile.for %k = %c0 to %c4 step %c1 {
      %lim = tile.load %N[%k] : !tile.tensor<4xi32> -> i32
      %limi = arith.index_cast %lim : i32 to index
      tile.parallel (%i, %j) in [16, 16] {
        %r = arith.addi %k, %i : index
        %in = arith.cmpi slt, %r, %limi : index
        %near = arith.cmpi slt, %j, %c8 : index
        %zero = arith.constant 0.000000e+00 : f32
        %one = arith.constant 1.000000e+00 : f32
        %v = arith.select %in, %one, %zero : f32
        %w = arith.select %near, %v, %zero : f32
        tile.store %w, %s[%i, %j] : f32, !tile.buffer<16x16xf32, fragment>
      }
    }
  }
  func.return
}
