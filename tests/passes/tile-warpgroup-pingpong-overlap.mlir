// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-warp-specialize{softmax_overlap=true},tile-warpgroup-pingpong" | filecheck %s

// tile-warpgroup-pingpong on a loop tile-warp-specialize{softmax_overlap} rotated (FA3's turns on
// its intra-warpgroup overlap): a turn holds the issue of the gemms only. In the loop, wait for the
// turn after the wait for K_k, issue Q K_k^T, the rescale, P_{k-1} V_{k-1}, pass the turn, then
// the waits the rotation placed (S with P V in flight, later P V). The first block's Q K^T and the
// last block's P V take a turn of their own (the first with `start`, the last `final`), each
// issued, the turn passed, then waited for.
// CHECK-LABEL: func.func @attention
// CHECK: } consumer {
// CHECK: tile.mbarrier_wait_parity %full_K
// CHECK-NEXT: tile.warpgroup_wait_turn {start}
// CHECK-NEXT: tile.gemm %Q_s, %{{.*}}, %s {{.*}}in_flight = 1 : i64
// CHECK-NEXT: tile.warpgroup_pass_turn
// CHECK-NEXT: tile.gemm_wait %s :
// CHECK: tile.mbarrier_arrive %empty_K
// CHECK: tile.for %k
// CHECK: tile.mbarrier_wait_parity %full_K
// CHECK-NEXT: tile.warpgroup_wait_turn
// CHECK-NEXT: tile.gemm %Q_s, %{{.*}}, %s {{.*}}in_flight = 1 : i64
// CHECK-NOT: tile.warpgroup_
// CHECK: tile.mbarrier_wait_parity %full_V
// CHECK-NOT: tile.warpgroup_
// CHECK: tile.gemm %p, %{{.*}}, %o {mma = "wgmma", in_flight = 2 : i64}
// CHECK-NEXT: tile.warpgroup_pass_turn
// CHECK-NEXT: tile.gemm_wait %s {pending = 1 : i64}
// CHECK-NOT: tile.warpgroup_
// CHECK: tile.gemm_wait %o :
// CHECK-NOT: tile.warpgroup_
// CHECK: } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64, tilec.softmax_overlap}
// CHECK: tile.mbarrier_wait_parity %full_V
// CHECK-NEXT: tile.stage %V_s
// CHECK-NEXT: tile.warpgroup_wait_turn
// CHECK-NEXT: tile.gemm %p, %{{.*}}, %o {mma = "wgmma", in_flight = 1 : i64}
// CHECK-NEXT: tile.warpgroup_pass_turn {final}
// CHECK-NEXT: tile.gemm_wait %o :
// CHECK: tile.mbarrier_arrive %empty_V
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
