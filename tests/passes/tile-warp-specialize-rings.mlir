// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-warp-specialize{operand_rings=true}" | filecheck %s

// tile-warp-specialize{operand_rings}: the staged tiles that feed different gemms (attention's K
// for Q K^T, V for P V) get a full/empty ring each (FlashAttention-3's pipeline_k / pipeline_v).
// The producer fills K's stage on full_K once empty_K frees it, then V's on full_V; the consumers
// wait for K only before Q K^T, give K's stage back right after it (the gemm is waited for), wait
// for V only before P V, and give V's stage back after it.
// CHECK-LABEL: func.func @attention
// CHECK: %full_K = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
// CHECK-NEXT: %empty_K = tile.alloc_barrier {arrive_count = 8 : i64} : !tile.mbarrier<2>
// CHECK-NEXT: %full_V = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<2>
// CHECK-NEXT: %empty_V = tile.alloc_barrier {arrive_count = 8 : i64} : !tile.mbarrier<2>
// CHECK-NEXT: %loaded = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
// CHECK: tile.warp_specialize producer {
// CHECK: tile.for
// CHECK: tile.mbarrier_wait_parity %empty_K[%[[S:.*]]], %[[FREE:.*]] : !tile.mbarrier<2>
// CHECK-NEXT: tile.mbarrier_expect_tx %full_K[%[[S]]] {bytes = 16384 : i64}
// CHECK: tile.tma_load %{{.*}}, %full_K[%[[S]]]
// CHECK-NEXT: tile.mbarrier_wait_parity %empty_V[%[[S]]], %[[FREE]] : !tile.mbarrier<2>
// CHECK-NEXT: tile.mbarrier_expect_tx %full_V[%[[S]]] {bytes = 16384 : i64}
// CHECK: tile.tma_load %{{.*}}, %full_V[%[[S]]]
// CHECK-NEXT: }
// CHECK: } consumer {
// CHECK: tile.for %k
// CHECK: tile.stage %K_s
// CHECK-NEXT: tile.stage %V_s
// CHECK-NEXT: tile.mbarrier_wait_parity %full_K[%[[C:.*]]], %[[PH:.*]] : !tile.mbarrier<2>
// CHECK-NEXT: tile.gemm %Q_s, %{{.*}}, %s {{.*}}in_flight = 0 : i64
// CHECK: tile.mbarrier_arrive %empty_K[%[[C]]]
// CHECK: tile.reduce %s, %m
// CHECK: tile.copy %s, %p
// CHECK-NEXT: tile.mbarrier_wait_parity %full_V[%[[C]]], %[[PH]] : !tile.mbarrier<2>
// CHECK-NEXT: tile.gemm %p, %{{.*}}, %o {{.*}}in_flight = 0 : i64
// CHECK: tile.mbarrier_arrive %empty_V[%[[C]]]
// CHECK-NEXT: }
// CHECK-NEXT: } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64}
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

// One gemm reads both staged tiles: one ring (named full / empty as without the option).
// CHECK-LABEL: func.func @one_gemm
// CHECK: %full = tile.alloc_barrier
// CHECK-NEXT: %empty = tile.alloc_barrier
// CHECK-NOT: %full_
func.func @one_gemm(%A: !tile.tensor<128x256xf16>, %B: !tile.tensor<256x128xf16>, %C: !tile.tensor<128x128xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %A_s = tile.alloc : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc : !tile.buffer<64x128xf16, shared>
    %c = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.000000e+00 : f32
    tile.fill %c, %zero : !tile.buffer<128x128xf32, fragment>, f32
    tile.for %k = %c0 to %c4 step %c1 {
      %kk = arith.muli %k, %c64 : index
      %a = tile.region %A[%c0, %kk] : !tile.tensor<128x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %b = tile.region %B[%kk, %c0] : !tile.tensor<256x128xf16> -> !tile.tensor<64x128xf16>
      tile.copy %b, %B_s : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %A_s, %B_s, %c : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
    tile.copy %c, %C : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf32>
  }
  func.return
}
