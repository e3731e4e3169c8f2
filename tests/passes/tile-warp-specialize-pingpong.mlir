// RUN: tilec opt %s -p 'tile-warp-specialize{pingpong=true},tile-stage-epilogue,tile-plan-shared-memory' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true}' | filecheck %s --check-prefix=ONE

// Ping-pong: a kernel of one warpgroup becomes persistent with two consumer groups
// (`consumer_groups = 2`) on alternate tiles (`groups = 2`); the producer streams every tile's
// stages through one ring in tile order. Each group has its own epilogue tile (a stage of a
// [2, ...] tile at `tile.consumer_group`), waits for its turn before its main loop and passes
// it on right after, so that each group reads the ring only after the other group saw the
// previous round of those stages complete. `empty` counts one group's 4 warps.
// CHECK-LABEL: func.func @gemm
// CHECK:       %C_f_out = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 131072 : i64} : !tile.buffer<2x128x128xf16, shared>
// CHECK-NEXT:  %A_s = tile.alloc {swizzle = 128 : i64, offset = 0 : i64} : !tile.buffer<4x128x64xf16, shared>
// CHECK:       %empty = tile.alloc_barrier {arrive_count = 4 : i64, offset = {{.*}}} : !tile.mbarrier<4>
// CHECK-NEXT:  tile.warp_specialize producer {
// CHECK-NEXT:    tile.persistent (%{{.*}}, %{{.*}}, %[[PN:.*]]) in (%g, %g) {
// CHECK-NOT:     } {groups
// CHECK:         tile.tma_load
// CHECK:       } consumer {
// CHECK-NEXT:    %[[G:.*]] = tile.consumer_group
// CHECK-NEXT:    %C_f_out_g = tile.stage %C_f_out[%[[G]]] : !tile.buffer<2x128x128xf16, shared> -> !tile.buffer<128x128xf16, shared>
// CHECK-NEXT:    tile.persistent (%{{.*}}, %{{.*}}, %[[CN:.*]]) in (%g, %g) {
// CHECK:           %[[BASE:.*]] = arith.muli %[[CN]], %{{.*}} : index
// CHECK-NEXT:      tile.wait_turn
// CHECK-NEXT:      tile.for %ko = %c0 to %c4 step %c1 {
// CHECK-NEXT:        arith.addi %ko, %[[BASE]] : index
// CHECK:             tile.mbarrier_wait_parity %full
// CHECK:         } {num_stages = 4 : i64, warp_specialized_stages = 4 : i64}
// CHECK-NEXT:      tile.pass_turn
// CHECK-NEXT:      tile.gemm_wait %C_f
// CHECK:           tile.mbarrier_arrive %empty
// CHECK:           tile.copy %C_f, %C_f_out_g
// CHECK-NEXT:      tile.tma_store %C_f_out_g, %c
// CHECK:         } {groups = 2 : i64}
// CHECK-NEXT:    tile.tma_store_wait %C_f_out_g {final}
// CHECK-NEXT:  } {producer_threads = 128 : i64, consumer_groups = 2 : i64, producer_regs = 40 : i64, consumer_regs = 232 : i64}

// Persistent without ping-pong: one consumer group, no turns.
// ONE-LABEL:   func.func @gemm
// ONE-NOT:     tile.wait_turn
// ONE-NOT:     consumer_groups
// ONE:         } {producer_threads = 128 : i64, producer_regs = 40 : i64, consumer_regs = 232 : i64}
func.func @gemm(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x512xf16>, %C: !tile.tensor<512x512xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [128, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.fill %C_f, %zero : !tile.buffer<128x128xf32, fragment>, f32
    tile.for %ko = %c0 to %c4 step %c1 {
      %m = arith.muli %by, %c128 : index
      %k = arith.muli %ko, %c64 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<512x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %n = arith.muli %bx, %c128 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x512xf16> -> !tile.tensor<64x128xf16>
      tile.copy %b, %B_s : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 4 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x512xf16> -> !tile.tensor<128x128xf16>
    tile.copy %C_f, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf16>
  }
  func.return
}
