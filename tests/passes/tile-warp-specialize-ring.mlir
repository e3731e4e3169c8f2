// RUN: tilec opt %s -p tile-warp-specialize | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue,tile-plan-shared-memory' | filecheck %s --check-prefix=PERSIST

// A T.Pipelined wgmma loop: the staged tiles become 3-deep, a producer warpgroup waits for a free
// stage (`empty`, parity flipped), announces its bytes and issues the TMA loads; the consumers
// wait for `full`, run the gemm with one group in flight and release the previous stage from
// lane 0 of each warp (8 arrivals for 256 threads); the zero fill becomes `zero_on_entry`.
// CHECK-LABEL: func.func @gemm
// CHECK:       %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<3x128x64xf16, shared>
// CHECK-NEXT:  %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<3x64x128xf16, shared>
// CHECK:       %full = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<3>
// CHECK-NEXT:  %empty = tile.alloc_barrier {arrive_count = 8 : i64} : !tile.mbarrier<3>
// CHECK-NEXT:  tile.warp_specialize producer {
// CHECK-NEXT:    tile.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[S:.*]] = arith.remui %[[K]], %{{.*}} : index
// CHECK:           %[[FREE:.*]] = arith.xori
// CHECK-NEXT:      tile.mbarrier_wait_parity %empty[%[[S]]], %[[FREE]] : !tile.mbarrier<3>
// CHECK-NEXT:      tile.mbarrier_expect_tx %full[%[[S]]] {bytes = 32768 : i64} : !tile.mbarrier<3>
// CHECK:           %[[VA:.*]] = tile.stage %A_s[%[[S]]]
// CHECK-NEXT:      tile.tma_load %a, %[[VA]], %full[%[[S]]]
// CHECK:           tile.tma_load %b, %{{.*}}, %full[%[[S]]]
// CHECK:       } consumer {
// CHECK-NOT:     tile.fill
// CHECK:         tile.for %ko = %c0 to %c4 step %c1 {
// CHECK:           %[[CS:.*]] = arith.remui %ko, %{{.*}} : index
// CHECK:           tile.mbarrier_wait_parity %full[%[[CS]]], %{{.*}} : !tile.mbarrier<3>
// CHECK:           tile.gemm %{{.*}}, %{{.*}}, %C_f {mma = "wgmma", in_flight = 1 : i64, zero_on_entry}
// CHECK:           arith.cmpi ugt, %ko
// CHECK:           %[[TID:.*]] = tile.thread_id
// CHECK:           %[[LANE:.*]] = arith.remui %[[TID]], %{{.*}} : index
// CHECK:           arith.cmpi eq, %[[LANE]]
// CHECK:             tile.mbarrier_arrive %empty[%{{.*}}] : !tile.mbarrier<3>
// CHECK:         } {num_stages = 3 : i64, warp_specialized_stages = 3 : i64}
// CHECK-NEXT:    tile.gemm_wait %C_f
// CHECK-NOT:     tile.mbarrier_arrive
// CHECK:         tile.copy %C_f, %c
// CHECK:       } {producer_threads = 128 : i64, producer_regs = 40 : i64, consumer_regs = 232 : i64}

// Persistent: each role loops over the block's tiles; the block indices inside come from the
// tile loop, the ring of stages continues at (tiles before) * (trips), and the consumers free
// the stage of a tile's last iteration after its final wait. The epilogue's shared tile gets
// bytes of its own (the producer fills the next tile's stages while it is read).
// PERSIST-LABEL: func.func @gemm
// PERSIST:       %C_f_out = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 98304 : i64} : !tile.buffer<128x128xf16, shared>
// PERSIST-NEXT:  %A_s = tile.alloc {swizzle = 128 : i64, offset = 0 : i64} : !tile.buffer<3x128x64xf16, shared>
// PERSIST-NEXT:  %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 49152 : i64} : !tile.buffer<3x64x128xf16, shared>
// PERSIST:       tile.warp_specialize producer {
// PERSIST-NEXT:    tile.persistent (%[[PX:.*]], %[[PY:.*]], %[[PN:.*]]) in (%g, %g) {
// PERSIST-NEXT:      %[[PT:.*]] = arith.subi %c4, %c0 : index
// PERSIST-NEXT:      %[[PBASE:.*]] = arith.muli %[[PN]], %[[PT]] : index
// PERSIST-NEXT:      tile.for %[[K:.*]] = %c0 to %c4 step %c1 {
// PERSIST-NEXT:        %[[POS:.*]] = arith.addi %[[K]], %[[PBASE]] : index
// PERSIST:             arith.remui %[[POS]]
// PERSIST:             %m = arith.muli %[[PY]], %c128 : index
// PERSIST:             %n = arith.muli %[[PX]], %c128 : index
// PERSIST:       } consumer {
// PERSIST-NEXT:    tile.persistent (%[[CX:.*]], %[[CY:.*]], %[[CN:.*]]) in (%g, %g) {
// PERSIST-NEXT:      %m2 = arith.muli %[[CY]], %c128 : index
// PERSIST-NEXT:      %n2 = arith.muli %[[CX]], %c128 : index
// PERSIST-NEXT:      %[[CT:.*]] = arith.subi %c4, %c0 : index
// PERSIST-NEXT:      %[[CBASE:.*]] = arith.muli %[[CN]], %[[CT]] : index
// PERSIST:           tile.gemm_wait %C_f
// PERSIST-NEXT:      %[[END:.*]] = arith.addi %[[CBASE]], %[[CT]] : index
// PERSIST:           tile.mbarrier_arrive %empty
// PERSIST:           tile.tma_store_wait %C_f_out
// PERSIST-NEXT:      tile.copy %C_f, %C_f_out
// PERSIST-NEXT:      tile.tma_store %C_f_out, %c
// PERSIST:       } {smem_bytes = 131120 : i64}
func.func @gemm(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x512xf16>, %C: !tile.tensor<512x512xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [256, 1, 1] {
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
    } {kind = "pipelined", num_stages = 3 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x512xf16> -> !tile.tensor<128x128xf16>
    tile.copy %C_f, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf16>
  }
  func.return
}
