// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-warp-specialize{softmax_overlap=true}" | filecheck %s

// tile-warp-specialize{softmax_overlap} (softmax_overlap.py, FlashAttention-3's intra-warpgroup
// overlap): the attention loop (on K and V rings of their own) is rotated by half an iteration.
// Before it: the first block's Q K^T and softmax, P included, without the rescale of O. In it:
// Q K_k^T, O through a wait that returns at once (so that LLVM keeps the rescale here), then the
// rescale o *= alpha of block k-1 and P_{k-1} V_{k-1} (both gemms left in
// flight: 1 and 2), the wait for S alone (pending 1), K_k's release, the softmax of S_k, the wait
// the wait for P V (no wait for K_{k+1} before it: holding it below the softmax that way measured
// 16 % slower on the H200, run s7a), V_{k-1}'s release, then P_k. After it: the last block's rescale and P V.
// CHECK-LABEL: func.func @attention
// CHECK: } consumer {
// CHECK: tile.mbarrier_wait_parity %full_K[%[[S0:.*]]], %{{.*}}
// CHECK-NEXT: tile.gemm %Q_s, %{{.*}}, %s {{.*}}in_flight = 0 : i64
// CHECK: tile.mbarrier_arrive %empty_K[%[[S0]]]
// CHECK: tile.reduce %s, %m
// CHECK-NOT: tile.load %o
// CHECK: tile.copy %s, %p
// CHECK-NEXT: %{{.*}} = arith.constant 1 : index
// CHECK-NEXT: %[[LB:.*]] = arith.addi %c0, %{{.*}} : index
// CHECK-NEXT: tile.for %k = %[[LB]] to %c4 step %c1 {
// CHECK: tile.mbarrier_wait_parity %full_K[%[[SK:.*]]], %{{.*}}
// CHECK-NEXT: tile.gemm %Q_s, %{{.*}}, %s {{.*}}in_flight = 1 : i64
// CHECK-NEXT: tile.gemm_wait %o {pending = 1 : i64}
// CHECK-NEXT: %{{.*}} = arith.constant 1 : index
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %k, %{{.*}} : index
// CHECK-NEXT: tile.parallel
// CHECK-NEXT: tile.load %o
// CHECK: %[[SV:.*]] = arith.remui %[[PREV]], %{{.*}} : index
// CHECK: tile.mbarrier_wait_parity %full_V[%[[SV]]], %{{.*}}
// CHECK-NEXT: %[[VIEW:.*]] = tile.stage %V_s[%[[SV]]]
// CHECK-NEXT: tile.gemm %p, %[[VIEW]], %o {mma = "wgmma", in_flight = 2 : i64}
// CHECK-NEXT: tile.gemm_wait %s {pending = 1 : i64}
// CHECK: tile.mbarrier_arrive %empty_K[%[[SK]]]
// CHECK: tile.reduce %s, %m
// CHECK: math.exp2
// CHECK-NOT: scf.if
// CHECK-NOT: tile.mbarrier_wait_parity %full_K
// CHECK: tile.gemm_wait %o :
// CHECK: tile.mbarrier_arrive %empty_V[%[[SV]]]
// CHECK: tile.copy %s, %p
// CHECK-NEXT: } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64, tilec.softmax_overlap}
// CHECK-NEXT: %{{.*}} = arith.constant 1 : index
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %c4, %{{.*}} : index
// CHECK-NEXT: tile.parallel
// CHECK-NEXT: tile.load %o
// CHECK: %[[SL:.*]] = arith.remui %[[LAST]], %{{.*}} : index
// CHECK: tile.mbarrier_wait_parity %full_V[%[[SL]]]
// CHECK: tile.gemm %p, %{{.*}}, %o {mma = "wgmma", in_flight = 0 : i64}
// CHECK: tile.mbarrier_arrive %empty_V[%[[SL]]]
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
    %alpha = tile.alloc : !tile.buffer<128xf32, fragment>
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
      tile.parallel (%i) in [128] {
        %mi = tile.load %m[%i] : !tile.buffer<128xf32, fragment> -> f32
        %a = math.exp2 %mi : f32
        tile.store %a, %alpha[%i] : f32, !tile.buffer<128xf32, fragment>
      }
      tile.parallel (%i, %j) in [128, 128] {
        %ov = tile.load %o[%i, %j] : !tile.buffer<128x128xf32, fragment> -> f32
        %ai = tile.load %alpha[%i] : !tile.buffer<128xf32, fragment> -> f32
        %r = arith.mulf %ov, %ai : f32
        tile.store %r, %o[%i, %j] : f32, !tile.buffer<128x128xf32, fragment>
      }
      tile.parallel (%i, %j) in [128, 64] {
        %sv = tile.load %s[%i, %j] : !tile.buffer<128x64xf32, fragment> -> f32
        %e = math.exp2 %sv : f32
        tile.store %e, %s[%i, %j] : f32, !tile.buffer<128x64xf32, fragment>
      }
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

// P V starting from zero in its first iteration (tile-warp-specialize dropped the fill of O
// before the loop: zero_on_entry): that iteration is peeled, so the loop stays as it is.
// CHECK-LABEL: func.func @zero_on_entry
// CHECK: tile.for %k = %c0 to %c4 step %c1 {
// CHECK: tile.gemm %p, %{{.*}}, %o {mma = "wgmma", in_flight = 0 : i64, zero_on_entry}
// CHECK: } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64, tilec.not_softmax_overlap = "the second gemm starts from zero in the first iteration (zero_on_entry), which is peeled"}
func.func @zero_on_entry(%Q: !tile.tensor<1x256x1x128xf16>, %K: !tile.tensor<1x256x1x128xf16>, %V: !tile.tensor<1x256x1x128xf16>, %Out: !tile.tensor<1x256x1x128xf32>) {
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
