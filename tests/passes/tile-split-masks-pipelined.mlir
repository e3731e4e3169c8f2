// RUN: tilec opt %s -p "tile-split-masks,tile-select-mma{target=sm_90a wgmma=true},tile-warp-specialize" | filecheck %s
// RUN: tilec opt %s -p "tile-split-masks,tile-select-mma{target=sm_90a wgmma=true},tile-pipeline" | filecheck %s --check-prefix=CPASYNC

// tile-split-masks before the passes that schedule a T.Pipelined loop: the loop stays one loop
// (its versioned mask an scf.if inside it), so tile-warp-specialize still gives it a TMA
// producer and the consumers run the guard in each iteration, and tile-pipeline still stages
// its copies. The split point, computed from the block index before the loop, stays at the
// kernel's top level (pure index arithmetic, which both roles may read).
// CHECK-LABEL: func.func @causal_attention
// CHECK:       arith.floordivsi
// CHECK-NEXT:  arith.constant 1 : index
// CHECK-NEXT:  %[[SPLIT:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:       tile.warp_specialize producer {
// CHECK:         tile.tma_load
// CHECK:       } consumer {
// CHECK:         tile.for %k
// CHECK:           tile.mbarrier_wait_parity %full
// CHECK:           %[[U:.*]] = arith.cmpi slt, %k, %[[SPLIT]] : index
// CHECK-NEXT:      scf.if %[[U]] {
// CHECK-NEXT:        arith.constant
// CHECK-NEXT:        tile.fill %s
// CHECK-NEXT:      } else {
// CHECK-NEXT:        tile.parallel
// CHECK:           }{tilec.split_mask = "prefix"}
// CHECK-NEXT:      tile.gemm %Q_s, %{{.*}}, %s {transpose_b = true, mma = "wgmma", in_flight = 0 : i64}
// CHECK:         } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64}
// CPASYNC-LABEL: func.func @causal_attention
// CPASYNC:       tile.for %k
// CPASYNC:         scf.if %{{.*}} {
// CPASYNC:           tile.fill %s
// CPASYNC:         }{tilec.split_mask = "prefix"}
// CPASYNC:       } {num_stages = 2 : i64, pipelined_stages = 2 : i64}
func.func @causal_attention(%Q: !tile.tensor<1x256x1x128xf16>, %K: !tile.tensor<1x256x1x128xf16>, %V: !tile.tensor<1x256x1x128xf16>, %Out: !tile.tensor<1x256x1x128xf32>) {
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
    %c2b = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %bx, %c128 : index
    %q = tile.region %Q[%bz, %row, %by, %c0] : !tile.tensor<1x256x1x128xf16> -> !tile.tensor<1x128x1x128xf16>
    tile.copy %q, %Q_s : !tile.tensor<1x128x1x128xf16>, !tile.buffer<128x128xf16, shared>
    %zero = arith.constant 0.000000e+00 : f32
    tile.fill %o, %zero : !tile.buffer<128x128xf32, fragment>, f32
    %bx1 = arith.addi %bx, %c1 : index
    %n = arith.muli %bx1, %c2b : index
    tile.for %k = %c0 to %n step %c1 {
      %key = arith.muli %k, %c64 : index
      %kr = tile.region %K[%bz, %key, %by, %c0] : !tile.tensor<1x256x1x128xf16> -> !tile.tensor<1x64x1x128xf16>
      tile.copy %kr, %K_s : !tile.tensor<1x64x1x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.parallel (%i, %j) in [128, 64] {
        %qb = arith.muli %bx, %c128 : index
        %qi = arith.addi %qb, %i : index
        %kb = arith.muli %k, %c64 : index
        %kj = arith.addi %kb, %j : index
        %see = arith.cmpi sge, %qi, %kj : index
        %z = arith.constant 0.000000e+00 : f32
        %ninf = arith.constant 0xff800000 : f32
        %v = arith.select %see, %z, %ninf : f32
        tile.store %v, %s[%i, %j] : f32, !tile.buffer<128x64xf32, fragment>
      }
      tile.gemm %Q_s, %K_s, %s {transpose_b = true} : !tile.buffer<128x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x64xf32, fragment>
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
