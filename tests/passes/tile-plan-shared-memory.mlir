// RUN: tilec opt %s -p tile-plan-shared-memory | filecheck %s
// RUN: tilec opt %s -p 'tile-plan-shared-memory{limit=49152}' | filecheck %s

// Two buffers read by the same gemm are alive together: disjoint bytes,
// largest first.  Fragments get no offset.
// CHECK-LABEL: func.func @gemm_operands
// CHECK:       tile.alloc {offset = 8192 : i64} : !tile.buffer<64x32xf16, shared>
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<64x64xf16, shared>
// CHECK:       tile.alloc : !tile.buffer<64x64xf32, fragment>
// CHECK:       smem_bytes = 12288 : i64
func.func @gemm_operands(%A: !tile.tensor<64x32xf16>, %B: !tile.tensor<32x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<64x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %bt = tile.reshape %b : !tile.buffer<64x64xf16, shared> -> !tile.buffer<32x128xf16, shared>
    %b0 = tile.region %bt[%bx, %bx] : !tile.buffer<32x128xf16, shared> -> !tile.buffer<32x64xf16, shared>
    tile.copy %A, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
    tile.copy %B, %b0 : !tile.tensor<32x64xf16>, !tile.buffer<32x64xf16, shared>
    tile.gemm %a, %b0, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// The first buffer is dead before the second is first used: they share offset 0.
// CHECK-LABEL: func.func @reuse_after_last_use
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<128xf32, shared>
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<256xf16, shared>
// CHECK:       smem_bytes = 512 : i64
func.func @reuse_after_last_use(%X: !tile.tensor<128xf32>, %Y: !tile.tensor<256xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<128xf32, shared>
    %t = tile.alloc : !tile.buffer<256xf16, shared>
    tile.copy %X, %s : !tile.tensor<128xf32>, !tile.buffer<128xf32, shared>
    tile.copy %s, %X : !tile.buffer<128xf32, shared>, !tile.tensor<128xf32>
    tile.copy %Y, %t : !tile.tensor<256xf16>, !tile.buffer<256xf16, shared>
    tile.copy %t, %Y : !tile.buffer<256xf16, shared>, !tile.tensor<256xf16>
  }
  func.return
}

// A buffer used only inside a loop is alive for the whole loop, so one whose
// uses end in the middle of the loop body still overlaps it.
// CHECK-LABEL: func.func @negative_reuse_inside_loop
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<128xf32, shared>
// CHECK:       tile.alloc {offset = 512 : i64} : !tile.buffer<128xf32, shared>
// CHECK:       smem_bytes = 1024 : i64
func.func @negative_reuse_inside_loop(%X: !tile.tensor<128xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %s = tile.alloc : !tile.buffer<128xf32, shared>
    %t = tile.alloc : !tile.buffer<128xf32, shared>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %X, %s : !tile.tensor<128xf32>, !tile.buffer<128xf32, shared>
      tile.copy %s, %X : !tile.buffer<128xf32, shared>, !tile.tensor<128xf32>
      tile.copy %X, %t : !tile.tensor<128xf32>, !tile.buffer<128xf32, shared>
    }
  }
  func.return
}

// A buffer read in a tile.parallel lives until the end of that loop; the one
// written at the parallel's start overlaps it.
// CHECK-LABEL: func.func @negative_reuse_parallel
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<64xf32, shared>
// CHECK:       tile.alloc {offset = 256 : i64} : !tile.buffer<64xf32, shared>
func.func @negative_reuse_parallel(%X: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    %t = tile.alloc : !tile.buffer<64xf32, shared>
    tile.copy %X, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    tile.parallel (%i) in [64] {
      %v = tile.load %s[%i] : !tile.buffer<64xf32, shared> -> f32
      tile.store %v, %t[%i] : f32, !tile.buffer<64xf32, shared>
    }
  }
  func.return
}

// Offsets are multiples of 128 bytes, and of 1024 for a 128-byte swizzle; the
// small buffer fills the gap the swizzled one leaves.
// CHECK-LABEL: func.func @alignment
// CHECK:       tile.alloc {offset = 0 : i64} : !tile.buffer<300xf32, shared>
// CHECK:       tile.alloc {offset = 1280 : i64} : !tile.buffer<3xf16, shared>
// CHECK:       tile.alloc {offset = 2048 : i64} : !tile.buffer<8x64xf16, shared>
// CHECK:       smem_bytes = 3072 : i64
func.func @alignment(%X: !tile.tensor<300xf32>, %Y: !tile.tensor<3xf16>, %Z: !tile.tensor<8x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<300xf32, shared>
    %t = tile.alloc : !tile.buffer<3xf16, shared>
    %w = tile.alloc : !tile.buffer<8x64xf16, shared>
    tile.annotate_layout %w {layout = #tile.swizzle<128>} : !tile.buffer<8x64xf16, shared>
    tile.copy %X, %s : !tile.tensor<300xf32>, !tile.buffer<300xf32, shared>
    tile.copy %Y, %t : !tile.tensor<3xf16>, !tile.buffer<3xf16, shared>
    tile.copy %Z, %w : !tile.tensor<8x64xf16>, !tile.buffer<8x64xf16, shared>
    tile.copy %s, %X : !tile.buffer<300xf32, shared>, !tile.tensor<300xf32>
    tile.copy %t, %Y : !tile.buffer<3xf16, shared>, !tile.tensor<3xf16>
    tile.copy %w, %Z : !tile.buffer<8x64xf16, shared>, !tile.tensor<8x64xf16>
  }
  func.return
}

// A kernel without shared buffers needs no shared memory.
// CHECK-LABEL: func.func @no_shared
// CHECK:       smem_bytes = 0 : i64
func.func @no_shared() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
  }
  func.return
}
