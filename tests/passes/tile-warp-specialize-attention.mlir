// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-warp-specialize" | filecheck %s

// tile-warp-specialize beyond the plain gemm loop (tile-warp-specialize.mlir): tiles loaded
// once, loops with more than one gemm, gemm results read in the loop, one stage.

// The attention loop (trimmed to its shape: Q K^T, the row max, P = S, P V) on a rank-4
// [batch, seq, heads, dim] layout. Q, copied before the loop and read only by the first gemm,
// is loaded once by the producer (TMA, its own barrier `loaded`, which the consumers wait for
// where the copy was); K and V go through the two stages on `full` / `empty`, both boxes of an
// iteration on one barrier. S is read right after its gemm, so each gemm is waited for
// (in_flight = 0) and the stage goes back at the end of the iteration that read it.
// CHECK-LABEL: func.func @attention
// CHECK: %full = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
// CHECK: %empty = tile.alloc_barrier {arrive_count = 8 : i64} : !tile.mbarrier<2>
// CHECK: %loaded = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
// CHECK: tile.warp_specialize producer {
// CHECK-NEXT: tile.mbarrier_expect_tx %loaded {bytes = 32768 : i64}
// CHECK: tile.tma_load %{{.*}}, %Q_s, %loaded : !tile.tensor<1x128x1x128xf16>, !tile.buffer<128x128xf16, shared>
// CHECK: tile.for
// CHECK: tile.mbarrier_wait_parity %empty[%[[S:.*]]], %{{.*}}
// CHECK: tile.mbarrier_expect_tx %full[%[[S]]] {bytes = 32768 : i64}
// CHECK: tile.tma_load %{{.*}}, %full[%[[S]]] : !tile.tensor<1x64x1x128xf16>, !tile.buffer<64x128xf16, shared>
// CHECK: tile.tma_load %{{.*}}, %full[%[[S]]] : !tile.tensor<1x64x1x128xf16>, !tile.buffer<64x128xf16, shared>
// CHECK: } consumer {
// CHECK-NOT: %Q_s
// CHECK: tile.mbarrier_wait_parity %loaded, %{{.*}} : !tile.mbarrier
// CHECK: tile.for %k
// CHECK: tile.mbarrier_wait_parity %full[%[[C:.*]]], %{{.*}}
// CHECK-NOT: tile.copy %{{.*}}, %K_s
// CHECK: tile.gemm %Q_s, %{{.*}}, %s {transpose_b = true, clear_accum = true, mma = "wgmma", in_flight = 0 : i64}
// CHECK: tile.reduce %s, %m
// CHECK: tile.copy %s, %p
// CHECK-NOT: tile.copy %{{.*}}, %V_s
// CHECK: tile.gemm %p, %{{.*}}, %o {mma = "wgmma", in_flight = 0 : i64
// CHECK-NOT: tile.gemm
// CHECK: tile.mbarrier_arrive %empty[%[[C]]]
// CHECK-NOT: tile.gemm_wait
// CHECK: tile.copy %o
func.func @attention(%Q: !tile.tensor<1x256x1x128xf16>, %K: !tile.tensor<1x256x1x128xf16>, %V: !tile.tensor<1x256x1x128xf16>, %Out: !tile.tensor<1x256x1x128xf32>) {
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  tile.kernel (%bx, %by, %bz) in (%c2, %c1, %c1) threads [256, 1, 1] {
    %Q_s = tile.alloc : !tile.buffer<128x128xf16, shared>
    %K_s = tile.alloc : !tile.buffer<64x128xf16, shared>
    %V_s = tile.alloc : !tile.buffer<64x128xf16, shared>
    %s = tile.alloc : !tile.buffer<128x64xf32, fragment>
    %p = tile.alloc : !tile.buffer<128x64xf16, fragment>
    %o = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %m = tile.alloc : !tile.buffer<128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %bx, %c128 : index
    %q = tile.region %Q[%bz, %row, %by, %c0] : !tile.tensor<1x256x1x128xf16> -> !tile.tensor<1x128x1x128xf16>
    tile.copy %q, %Q_s : !tile.tensor<1x128x1x128xf16>, !tile.buffer<128x128xf16, shared>
    %zero = arith.constant 0.000000e+00 : f32
    tile.fill %o, %zero : !tile.buffer<128x128xf32, fragment>, f32
    tile.for %k = %c0 to %c4 step %c1 {
      %key = arith.muli %k, %c64 : index
      %kr = tile.region %K[%bz, %key, %by, %c0] : !tile.tensor<1x256x1x128xf16> -> !tile.tensor<1x64x1x128xf16>
      tile.copy %kr, %K_s : !tile.tensor<1x64x1x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %Q_s, %K_s, %s {transpose_b = true, clear_accum = true} : !tile.buffer<128x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x64xf32, fragment>
      tile.reduce %s, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128xf32, fragment>
      tile.copy %s, %p : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, fragment>
      %vr = tile.region %V[%bz, %key, %by, %c0] : !tile.tensor<1x256x1x128xf16> -> !tile.tensor<1x64x1x128xf16>
      tile.copy %vr, %V_s : !tile.tensor<1x64x1x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %p, %V_s, %o : !tile.buffer<128x64xf16, fragment>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
    %out = tile.region %Out[%bz, %row, %by, %c0] : !tile.tensor<1x256x1x128xf32> -> !tile.tensor<1x128x1x128xf32>
    tile.copy %o, %out : !tile.buffer<128x128xf32, fragment>, !tile.tensor<1x128x1x128xf32>
  }
  func.return
}

// A plain gemm loop: its one gemm keeps a group in flight across iterations (in_flight = 1),
// the stage of the iteration before goes back once this one's gemm is issued, and the
// accumulator is waited for after the loop.
// CHECK-LABEL: func.func @gemm
// CHECK: } consumer {
// CHECK: tile.gemm {{.*}} {mma = "wgmma", in_flight = 1 : i64}
// CHECK: scf.if
// CHECK: tile.mbarrier_arrive %empty
// CHECK: tile.gemm_wait %c
func.func @gemm(%A: !tile.tensor<128x256xf16>, %B: !tile.tensor<256x128xf16>, %C: !tile.tensor<128x128xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<128x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x128xf16, shared>
    %c = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.for %k = %c0 to %c4 step %c1 {
      %kk = arith.muli %k, %c64 : index
      %ar = tile.region %A[%c0, %kk] : !tile.tensor<128x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %ar, %a : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %br = tile.region %B[%kk, %c0] : !tile.tensor<256x128xf16> -> !tile.tensor<64x128xf16>
      tile.copy %br, %b : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %a, %b, %c : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
    tile.copy %c, %C : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf32>
  }
  func.return
}

// The same loop reading its accumulator after the gemm (a running maximum of C): the gemm's
// result is needed in the iteration, so it is waited for (in_flight = 0) and the iteration
// releases its own stage; with one stage that is the only order that does not deadlock.
// CHECK-LABEL: func.func @gemm_read_in_the_loop
// CHECK: } consumer {
// CHECK: tile.mbarrier_wait_parity %full[%[[C:.*]]], %{{.*}}
// CHECK: tile.gemm {{.*}} {clear_accum = true, mma = "wgmma", in_flight = 0 : i64}
// CHECK: tile.reduce
// CHECK-NOT: tile.gemm
// CHECK: tile.mbarrier_arrive %empty[%[[C]]]
// CHECK-NOT: tile.gemm_wait
func.func @gemm_read_in_the_loop(%A: !tile.tensor<128x256xf16>, %B: !tile.tensor<256x128xf16>, %M: !tile.tensor<128xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<128x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x128xf16, shared>
    %c = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %m = tile.alloc : !tile.buffer<128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.for %k = %c0 to %c4 step %c1 {
      %kk = arith.muli %k, %c64 : index
      %ar = tile.region %A[%c0, %kk] : !tile.tensor<128x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %ar, %a : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %br = tile.region %B[%kk, %c0] : !tile.tensor<256x128xf16> -> !tile.tensor<64x128xf16>
      tile.copy %br, %b : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %a, %b, %c {clear_accum = true} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
      tile.reduce %c, %m {kind = "max", dim = 1 : i64, clear = false} : !tile.buffer<128x128xf32, fragment>, !tile.buffer<128xf32, fragment>
    } {kind = "pipelined", num_stages = 1 : i64}
    tile.copy %m, %M : !tile.buffer<128xf32, fragment>, !tile.tensor<128xf32>
  }
  func.return
}

// Q filled before the loop by the threads themselves (a T.Parallel, not a copy): the in-flight
// wgmmas would read what the generic proxy wrote with no fence; no warp specialization.
// CHECK-LABEL: func.func @negative_operand_written_by_threads
// CHECK-NOT: tile.warp_specialize
// CHECK: not_warp_specialized = "a gemm operand is written by the block's threads
func.func @negative_operand_written_by_threads(%K: !tile.tensor<256x64xf16>, %C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %q = tile.alloc : !tile.buffer<64x64xf16, shared>
    %ks = tile.alloc : !tile.buffer<64x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    tile.parallel (%i, %j) in [64, 64] {
      %one = arith.constant 1.000000e+00 : f16
      tile.store %one, %q[%i, %j] : f16, !tile.buffer<64x64xf16, shared>
    }
    tile.for %k = %c0 to %c4 step %c1 {
      %kk = arith.muli %k, %c64 : index
      %kr = tile.region %K[%kk, %c0] : !tile.tensor<256x64xf16> -> !tile.tensor<64x64xf16>
      tile.copy %kr, %ks : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
      tile.gemm %q, %ks, %c {transpose_b = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
    tile.copy %c, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}
