// RUN: tilec opt %s -p tile-pipeline | filecheck %s
// RUN: tilec opt %s -p tile-pipeline,tile-insert-barriers | filecheck %s --check-prefix=BAR

// A gemm main loop with three stages: both tiles become 3-deep, two iterations are issued
// before the loop, and each iteration waits for its own, then issues the one two ahead.
// CHECK-LABEL: func.func @gemm
// CHECK:       %A_s = tile.alloc : !tile.buffer<3x128x32xf16, shared>
// CHECK-NEXT:  %B_s = tile.alloc : !tile.buffer<3x32x128xf16, shared>
// CHECK:       tile.barrier
// CHECK:       scf.if
// CHECK:         tile.copy %{{.*}}, %{{.*}} {async} : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
// CHECK:         tile.copy %{{.*}}, %{{.*}} {async} : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
// CHECK:       tile.async_commit
// CHECK:       scf.if
// CHECK:       tile.async_commit
// CHECK:       tile.for %ko = %c0 to %c4 step %c1 {
// CHECK:         %[[STAGE:.*]] = arith.remui %ko, %{{.*}} : index
// CHECK:         tile.async_wait {pending = 1 : i64}
// CHECK-NEXT:    tile.barrier
// CHECK:         %[[AHEAD:.*]] = arith.addi %ko, %{{.*}} : index
// CHECK-NEXT:    %[[GUARD:.*]] = arith.cmpi slt, %[[AHEAD]], %c4 : index
// CHECK-NEXT:    scf.if %[[GUARD]] {
// CHECK:           tile.copy %{{.*}} {async}
// CHECK:           tile.copy %{{.*}} {async}
// CHECK:         }
// CHECK-NEXT:    tile.async_commit
// CHECK-NEXT:    %[[A:.*]] = tile.stage %A_s[%[[STAGE]]] : !tile.buffer<3x128x32xf16, shared> -> !tile.buffer<128x32xf16, shared>
// CHECK-NEXT:    %[[B:.*]] = tile.stage %B_s[%[[STAGE]]]
// CHECK-NEXT:    tile.gemm %[[A]], %[[B]], %C_f
// CHECK-NEXT:  } {num_stages = 3 : i64, pipelined_stages = 3 : i64}
// CHECK-NEXT:  tile.async_wait {pending = 0 : i64}
// CHECK-NEXT:  tile.barrier

// The async copies need no barrier before the gemm: the loop's own wait and barrier order them.
// BAR-LABEL: func.func @gemm
// BAR:       tile.for
// BAR:         tile.async_wait {pending = 1 : i64}
// BAR-NEXT:    tile.barrier
// BAR-NOT:     tile.barrier
// BAR:         tile.gemm
// BAR-NEXT:  } {num_stages = 3 : i64, pipelined_stages = 3 : i64}
func.func @gemm(%A: !tile.tensor<256x128xf16>, %B: !tile.tensor<128x256xf16>, %C: !tile.tensor<256x256xf16>) {
  %g = arith.constant 2 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [128, 1, 1] {
    %A_s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %B_s = tile.alloc : !tile.buffer<32x128xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    tile.for %ko = %c0 to %c4 step %c1 {
      %c128 = arith.constant 128 : index
      %m = arith.muli %by, %c128 : index
      %c32 = arith.constant 32 : index
      %k = arith.muli %ko, %c32 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<256x128xf16> -> !tile.tensor<128x32xf16>
      tile.copy %a, %A_s : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
      %n = arith.muli %bx, %c128 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<128x256xf16> -> !tile.tensor<32x128xf16>
      tile.copy %b, %B_s : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %A_s, %B_s, %C_f : !tile.buffer<128x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
  }
  func.return
}

// Left alone: a tile read before its copy in the body (the loop carries last iteration's
// data), a copy that converts the element type, a loop of one stage, and a loop that writes
// global memory (a prefetch could read a row before the iteration that writes it).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:   tile.async_commit
// CHECK-NOT:   tile.stage
// CHECK:       {kind = "pipelined", num_stages = 3 : i64}
// CHECK:       {kind = "pipelined", num_stages = 1 : i64}
// CHECK:       {kind = "pipelined", num_stages = 2 : i64}
func.func @untouched(%A: !tile.tensor<64x32xf16>, %X: !tile.tensor<64x32xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %t = tile.alloc : !tile.buffer<64x32xf16, shared>
    %f = tile.alloc : !tile.buffer<64x32xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %s, %f : !tile.buffer<64x32xf16, shared>, !tile.buffer<64x32xf32, fragment>
      tile.copy %A, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      tile.copy %X, %t : !tile.tensor<64x32xf32>, !tile.buffer<64x32xf16, shared>
    } {kind = "pipelined", num_stages = 3 : i64}
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %A, %t : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      tile.copy %t, %f : !tile.buffer<64x32xf16, shared>, !tile.buffer<64x32xf32, fragment>
    } {kind = "pipelined", num_stages = 1 : i64}
    %u = tile.alloc : !tile.buffer<64x32xf16, shared>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %A, %u : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      tile.copy %u, %X : !tile.buffer<64x32xf16, shared>, !tile.tensor<64x32xf32>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}
