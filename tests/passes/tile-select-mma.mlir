// RUN: tilec opt %s -p "tile-select-mma{arch=sm_90a}" | filecheck %s
// RUN: tilec opt %s -p "tile-select-mma{arch=sm_80},tile-infer-layout" | filecheck %s --check-prefix=LAYOUT
// RUN: tilec opt %s -p "tile-select-mma{arch=sm_75}" | filecheck %s --check-prefix=OLD
// RUN: tilec opt %s -p "tile-select-mma{arch=sm_90a wgmma=true}" | filecheck %s --check-prefix=WG
// RUN: tilec opt %s -p "tile-select-mma{arch=sm_90a wgmma=true},tile-infer-layout" | filecheck %s --check-prefix=WGLAYOUT

// A float16 gemm into a float32 fragment, 64x64 over four warps: mma.sync m16n8k16, and the
// accumulator gets the instruction's fragment layout over a 2x2 warp grid. The shared
// operands get the swizzle of their row width: 64 bytes for A's 32 halves, 128 for B's 64.
// CHECK-LABEL: func.func @f16_gemm
// CHECK: %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
// CHECK: %b = tile.alloc {swizzle = 128 : i64} : !tile.buffer<32x64xf16, shared>
// CHECK: tile.gemm {{.*}} {mma = "m16n8k16"}
// LAYOUT-LABEL: func.func @f16_gemm
// LAYOUT: %c = tile.alloc {layout = #tile.fragment<"(2t64,2s16,2s2,8t4)x(2t32,4s4,4t1,2s1)|r()">}
// OLD-LABEL: func.func @f16_gemm
// OLD-NOT: mma =
// With wgmma (sm_90a): the same gemm is one warpgroup's m64n64k16; A is K-major with 64-byte
// rows, B N-major with 128-byte rows, each swizzled by its row width; the accumulator takes the
// wgmma fragment (warp w: rows 16w..16w+15; lane l: rows l/4, l/4+8, column pairs 2(l%4)).
// WG-LABEL: func.func @f16_gemm
// WG: %a = tile.alloc {swizzle = 64 : i64}
// WG: %b = tile.alloc {swizzle = 128 : i64}
// WG: tile.gemm {{.*}} {mma = "wgmma"}
// WGLAYOUT-LABEL: func.func @f16_gemm
// WGLAYOUT: %c = tile.alloc {layout = #tile.fragment<"(4t32,2s2,8t4)x(8s4,4t1,2s1)|r()">}
func.func @f16_gemm() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// K = 8 is not a multiple of the instruction's 16: the SIMT path stays, unswizzled.
// CHECK-LABEL: func.func @negative_k_not_16
// CHECK-NOT: swizzle
// CHECK-NOT: mma =
func.func @negative_k_not_16() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x8xf16, shared>
    %b = tile.alloc : !tile.buffer<8x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x8xf16, shared>, !tile.buffer<8x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// float32 operands have no m16n8k16 form here.
// CHECK-LABEL: func.func @negative_f32_operands
// CHECK-NOT: mma =
func.func @negative_f32_operands() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x16xf32, shared>
    %b = tile.alloc : !tile.buffer<16x64xf32, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x16xf32, shared>, !tile.buffer<16x64xf32, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// wgmma: an N-major B wider than 64 columns is stored in 64-column chunks (128-byte swizzle),
// and two warpgroups split the 128 rows.
// CHECK-LABEL: func.func @wide_b_two_warpgroups
// CHECK: {mma = "m16n8k16"}
// WG-LABEL: func.func @wide_b_two_warpgroups
// WG: %a = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
// WG: %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
// WG: tile.gemm {{.*}} {mma = "wgmma"}
// WGLAYOUT-LABEL: func.func @wide_b_two_warpgroups
// WGLAYOUT: %c = tile.alloc {layout = #tile.fragment<"(2t128,4t32,2s2,8t4)x(32s4,4t1,2s1)|r()">}
func.func @wide_b_two_warpgroups() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [256, 1, 1] {
    %a = tile.alloc : !tile.buffer<128x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x256xf16, shared>
    %c = tile.alloc : !tile.buffer<128x256xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x256xf16, shared>, !tile.buffer<128x256xf32, fragment>
  }
  func.return
}
