// RUN: tilec opt %s -p tile-warp-specialize | filecheck %s

// A T.Pipelined wgmma loop (tile-select-mma chose wgmma and the operand swizzles): a producer
// warpgroup fills the 3-deep stages with TMA, the consumers' loop becomes serial with
// `warp_specialized_stages`, its gemm stays in flight across iterations and starts from D = A*B
// (the zero fill before the loop is dropped: `zero_on_entry`).
// CHECK-LABEL: func.func @gemm
// CHECK:       %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<3x64x32xf16, shared>
// CHECK:       %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<3x32x128xf16, shared>
// CHECK-NOT:   tile.fill
// CHECK:       tile.warp_specialize producer {
// CHECK:         tile.tma_load
// CHECK:         tile.tma_load
// CHECK:       } consumer {
// CHECK:         tile.gemm %{{.*}}, %{{.*}}, %c {mma = "wgmma", in_flight = 1 : i64, zero_on_entry}
// CHECK:       } {num_stages = 3 : i64, warp_specialized_stages = 3 : i64}
// CHECK-NEXT:  tile.gemm_wait %c
func.func @gemm(%A: !tile.tensor<128x256xf16>, %B: !tile.tensor<256x128xf16>, %C: !tile.tensor<128x128xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  tile.kernel (%bx, %by) in (%c1, %c2) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<32x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %zero = arith.constant 0.000000e+00 : f32
    tile.fill %c, %zero : !tile.buffer<64x128xf32, fragment>, f32
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.for %ko = %c0 to %c8 step %c1 {
      %row = arith.muli %by, %c64 : index
      %k = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%row, %k] {in_bounds} : !tile.tensor<128x256xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %col = arith.muli %bx, %c128 : index
      %rb = tile.region %B[%k, %col] {in_bounds} : !tile.tensor<256x128xf16> -> !tile.tensor<32x128xf16>
      tile.copy %rb, %b : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
    %rc = tile.region %C[%c0, %c0] {in_bounds} : !tile.tensor<128x128xf32> -> !tile.tensor<64x128xf32>
    tile.copy %c, %rc : !tile.buffer<64x128xf32, fragment>, !tile.tensor<64x128xf32>
  }
  func.return
}

// A loop that stores to global memory: a producer running ahead could read what an iteration
// in between writes, so the loop stays as it is, with the reason recorded.
// CHECK-LABEL: func.func @negative_writes_global
// CHECK-NOT:   tile.warp_specialize
// CHECK:       } {kind = "pipelined", num_stages = 2 : i64, not_warp_specialized = "the loop writes global memory"}
func.func @negative_writes_global(%A: !tile.tensor<64x256xf16>, %D: !tile.tensor<8x64x32xf16>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    tile.for %ko = %c0 to %c8 step %c1 {
      %k = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%c0, %k] {in_bounds} : !tile.tensor<64x256xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %rd = tile.region %D[%ko, %c0, %c0] {in_bounds} : !tile.tensor<8x64x32xf16> -> !tile.tensor<1x64x32xf16>
      tile.copy %a, %rd : !tile.buffer<64x32xf16, shared>, !tile.tensor<1x64x32xf16>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}

// An mma.sync gemm in the loop: only wgmma reads its operands asynchronously from TMA's stages.
// CHECK-LABEL: func.func @negative_mma_sync
// CHECK-NOT:   tile.warp_specialize
// CHECK:       not_warp_specialized = "not every gemm of the loop is a wgmma"
func.func @negative_mma_sync(%A: !tile.tensor<64x256xf16>, %B: !tile.tensor<256x64xf16>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64} : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    tile.for %ko = %c0 to %c8 step %c1 {
      %k = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%c0, %k] {in_bounds} : !tile.tensor<64x256xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %rb = tile.region %B[%k, %c0] {in_bounds} : !tile.tensor<256x64xf16> -> !tile.tensor<32x64xf16>
      tile.copy %rb, %b : !tile.tensor<32x64xf16>, !tile.buffer<32x64xf16, shared>
      tile.gemm %a, %b, %c {mma = "m16n8k16"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}
