// RUN: tilec opt %s -p tile-infer-layout | filecheck %s

// tile-infer-layout for loops that read a fragment with fewer dims than they have (a
// broadcast, `y[i]` in `T.Parallel(m, n)`): when no fragment of the loop's own rank decides
// its layout, the loop follows the broadcast fragment's layout, extended over its other dims
// with the fragment's replication threads, then slots.

// The row vector is written by a 1-D loop first (16 threads x 4 rows, replicated 8 times);
// the 2-D loop that broadcasts it puts those 8 replicas on its columns.
// CHECK-LABEL: func.func @broadcast_after_a_1d_loop
// CHECK: %y = tile.alloc {layout = #tile.fragment<"(16t1,4s1)|r(8t16)">}
// CHECK: } {layout = #tile.fragment<"(16t1,4s1)|r(8t16)">}
// CHECK: } {layout = #tile.fragment<"(16t1,4s1)x(8t16,4s4)|r()">}
func.func @broadcast_after_a_1d_loop(%A: !tile.tensor<64xf32>, %B: !tile.tensor<64x32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %y = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.parallel (%i) in [64] {
      %a = tile.load %A[%i] : !tile.tensor<64xf32> -> f32
      tile.store %a, %y[%i] : f32, !tile.buffer<64xf32, fragment>
    }
    tile.parallel (%i, %j) in [64, 32] {
      %v = tile.load %y[%i] : !tile.buffer<64xf32, fragment> -> f32
      tile.store %v, %B[%i, %j] : f32, !tile.tensor<64x32xf32>
    }
  }
  func.return
}

// A column sum (a reduction along dim 0) read as s[j] by a loop that writes a float16
// fragment: the loop, and through it the new fragment, follow the sum's layout, so the
// column sums are where the loop needs them (here: x's own layout again).
// CHECK-LABEL: func.func @broadcast_of_a_reduction
// CHECK: %x = tile.alloc {layout = #tile.fragment<"(4s4,16t8)x(8t1,4s1)|r()">}
// CHECK: %s = tile.alloc {layout = #tile.fragment<"(8t1,4s1)|r(16t8)">}
// CHECK: %z = tile.alloc {layout = #tile.fragment<"(4s4,16t8)x(8t1,4s1)|r()">}
// CHECK: } {layout = #tile.fragment<"(4s4,16t8)x(8t1,4s1)|r()">}
func.func @broadcast_of_a_reduction(%X: !tile.tensor<64x32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<64x32xf32, fragment>
    %s = tile.alloc : !tile.buffer<32xf32, fragment>
    %z = tile.alloc : !tile.buffer<64x32xf16, fragment>
    tile.copy %X, %x : !tile.tensor<64x32xf32>, !tile.buffer<64x32xf32, fragment>
    tile.reduce %x, %s {kind = "sum", dim = 0 : i64, clear = true} : !tile.buffer<64x32xf32, fragment>, !tile.buffer<32xf32, fragment>
    tile.parallel (%i, %j) in [64, 32] {
      %v = tile.load %s[%j] : !tile.buffer<32xf32, fragment> -> f32
      %h = arith.truncf %v : f32 to f16
      tile.store %h, %z[%i, %j] : f16, !tile.buffer<64x32xf16, fragment>
    }
  }
  func.return
}

// A loop that writes a fragment of its own rank follows that fragment, not the broadcast.
// CHECK-LABEL: func.func @negative_full_rank_fragment_decides
// CHECK: %x = tile.alloc {layout = #tile.fragment<"[[X:.*]]">} : !tile.buffer<16x128xf32, fragment>
// CHECK: tile.parallel (%{{.*}}, %{{.*}}) in [16, 128]
// CHECK: } {layout = #tile.fragment<"[[X]]">}
func.func @negative_full_rank_fragment_decides(%A: !tile.tensor<16x128xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<16x128xf32, fragment>
    %y = tile.alloc : !tile.buffer<16xf32, fragment>
    tile.parallel (%i) in [16] {
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      tile.store %f, %y[%i] : f32, !tile.buffer<16xf32, fragment>
    }
    tile.parallel (%i, %j) in [16, 128] {
      %a = tile.load %A[%i, %j] : !tile.tensor<16x128xf32> -> f32
      %b = tile.load %y[%i] : !tile.buffer<16xf32, fragment> -> f32
      %s = arith.addf %a, %b : f32
      tile.store %s, %x[%i, %j] : f32, !tile.buffer<16x128xf32, fragment>
    }
  }
  func.return
}
