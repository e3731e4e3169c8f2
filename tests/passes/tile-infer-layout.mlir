// RUN: tilec opt %s -p tile-infer-layout | filecheck %s

// A row softmax: the loaded tile gets the default coalesced layout (8 x f16 = 16 bytes
// per thread, a warp per row), the row maxima the layout of its reduction, replicated
// over the 32 lanes of the row's warp, and the parallel loop follows the tile it writes.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: %x = tile.alloc {layout = #tile.fragment<"(4t32)x(4s8,32t1,8s1)|r()">}
// CHECK: %m = tile.alloc {layout = #tile.fragment<"(4t32)|r(32t1)">}
// CHECK: tile.parallel
// CHECK: } {layout = #tile.fragment<"(4t32)x(4s8,32t1,8s1)|r()">}
func.func @softmax_rows(%X: !tile.tensor<64x1024xf16>) {
  %c16 = arith.constant 16 : index
  tile.kernel (%bx) in (%c16) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %x = tile.alloc : !tile.buffer<4x1024xf32, fragment>
    %m = tile.alloc : !tile.buffer<4xf32, fragment>
    %r = tile.region %X[%bx, %c0] : !tile.tensor<64x1024xf16> -> !tile.tensor<4x1024xf16>
    tile.copy %r, %x : !tile.tensor<4x1024xf16>, !tile.buffer<4x1024xf32, fragment>
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<4x1024xf32, fragment>, !tile.buffer<4xf32, fragment>
    tile.parallel (%i, %j) in [4, 1024] {
      %v = tile.load %x[%i, %j] : !tile.buffer<4x1024xf32, fragment> -> f32
      %mx = tile.load %m[%i] : !tile.buffer<4xf32, fragment> -> f32
      %d = arith.subf %v, %mx : f32
      tile.store %d, %x[%i, %j] : f32, !tile.buffer<4x1024xf32, fragment>
    }
  }
  func.return
}

// A gemm accumulator is a seed: 8x16 threads each own an 8x4 micro-tile; a row vector
// the loop over it reads gets the row projection, replicated over the 16 threads of a row.
// CHECK-LABEL: func.func @gemm_seed
// CHECK: %acc = tile.alloc {layout = #tile.fragment<"(8s4,8t16)x(16t1,4s1)|r()">}
// CHECK: %rows = tile.alloc {layout = #tile.fragment<"(8s1,8t16)|r(16t1)">}
func.func @gemm_seed() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %rows = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.gemm %a, %b, %acc : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
  }
  func.return
}

// A fragment copied into another of the same shape shares its layout.
// CHECK-LABEL: func.func @copy_propagates
// CHECK: %s = tile.alloc {layout = #tile.fragment<"[[L:.*]]">}
// CHECK: %p = tile.alloc {layout = #tile.fragment<"[[L]]">}
func.func @copy_propagates() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x16xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %s = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %p = tile.alloc : !tile.buffer<64x64xf16, fragment>
    tile.gemm %a, %b, %s : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %s, %p : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf16, fragment>
  }
  func.return
}

// Shared buffers get no layout from this pass.
// CHECK-LABEL: func.func @negative_shared_untouched
// CHECK: %s = tile.alloc : !tile.buffer<64x64xf16, shared>
func.func @negative_shared_untouched() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
  }
  func.return
}
