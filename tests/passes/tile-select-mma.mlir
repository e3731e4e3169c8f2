// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a}" | filecheck %s
// RUN: tilec opt %s -p "tile-select-mma{target=sm_80},tile-infer-layout" | filecheck %s --check-prefix=LAYOUT
// RUN: tilec opt %s -p "tile-select-mma{target=interp}" | filecheck %s --check-prefix=OLD
// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true}" | filecheck %s --check-prefix=WG
// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-infer-layout" | filecheck %s --check-prefix=WGLAYOUT

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
// and two warpgroups split the 128 rows (one m64 block each: the warpgroup and warp modes are
// one, 8t32, as in the mma.sync full-row layout of the same rows).
// CHECK-LABEL: func.func @wide_b_two_warpgroups
// CHECK: {mma = "m16n8k16"}
// WG-LABEL: func.func @wide_b_two_warpgroups
// WG: %a = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
// WG: %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
// WG: tile.gemm {{.*}} {mma = "wgmma"}
// WGLAYOUT-LABEL: func.func @wide_b_two_warpgroups
// WGLAYOUT: %c = tile.alloc {layout = #tile.fragment<"(8t32,2s2,8t4)x(32s4,4t1,2s1)|r()">}
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

// Attention's S = Q K^T at head dim 128: K-major A and K-major B (transpose_B) with 256-byte
// rows are stored as two 64-column chunks with the 128-byte swizzle (each chunk a canonical
// K-major tile), so wgmma reads them; at head dim 256 four chunks.
// CHECK-LABEL: func.func @k_major_wide_rows
// CHECK: {mma = "m16n8k16"
// WG-LABEL: func.func @k_major_wide_rows
// WG: %q = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<128x128xf16, shared>
// WG: %k = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
// WG: tile.gemm %q, %k, %s {transpose_b = true, mma = "wgmma"}
// WG: %q2 = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<128x256xf16, shared>
// WG: %k2 = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<128x256xf16, shared>
// WG: tile.gemm %q2, %k2, %s2 {transpose_b = true, mma = "wgmma"}
func.func @k_major_wide_rows() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [256, 1, 1] {
    %q = tile.alloc : !tile.buffer<128x128xf16, shared>
    %k = tile.alloc : !tile.buffer<64x128xf16, shared>
    %s = tile.alloc : !tile.buffer<128x64xf32, fragment>
    tile.gemm %q, %k, %s {transpose_b = true} : !tile.buffer<128x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x64xf32, fragment>
    %q2 = tile.alloc : !tile.buffer<128x256xf16, shared>
    %k2 = tile.alloc : !tile.buffer<128x256xf16, shared>
    %s2 = tile.alloc : !tile.buffer<128x128xf32, fragment>
    tile.gemm %q2, %k2, %s2 {transpose_b = true} : !tile.buffer<128x256xf16, shared>, !tile.buffer<128x256xf16, shared>, !tile.buffer<128x128xf32, fragment>
  }
  func.return
}

// K-major rows that are no whole number of 64-column chunks (96 halves = 192 bytes) have no
// canonical swizzled layout: mma.sync stays.
// WG-LABEL: func.func @negative_k_major_rows_not_chunks
// WG-NOT: chunk
// WG: tile.gemm {{.*}} {mma = "m16n8k16"
func.func @negative_k_major_rows_not_chunks() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x96xf16, shared>
    %b = tile.alloc : !tile.buffer<96x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x96xf16, shared>, !tile.buffer<96x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// Attention's O += P V with P a 16-bit fragment: wgmma's RS form (A from registers, B = V
// N-major in 64-column chunks). The layouts: S, the QK^T accumulator, and P, its conversion,
// share the wgmma accumulator layout of 128x64 over two warpgroups, which is the register-A
// layout of the PV gemm (m128 k64): the T.copy(s, p) is a per-thread conversion.
// WG-LABEL: func.func @register_a_attention
// WG: %v = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
// WG: tile.gemm %q, %k, %s {transpose_b = true, mma = "wgmma"}
// WG: tile.gemm %p, %v, %o {mma = "wgmma"}
// WGLAYOUT-LABEL: func.func @register_a_attention
// WGLAYOUT: %s = tile.alloc {layout = #tile.fragment<"[[ACC:\(8t32,2s2,8t4\)x\(8s4,4t1,2s1\)\|r\(\)]]">}
// WGLAYOUT: %p = tile.alloc {layout = #tile.fragment<"[[ACC]]">}
// WGLAYOUT: %o = tile.alloc {layout = #tile.fragment<"(8t32,2s2,8t4)x(16s4,4t1,2s1)|r()">}
func.func @register_a_attention() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [256, 1, 1] {
    %q = tile.alloc : !tile.buffer<128x128xf16, shared>
    %k = tile.alloc : !tile.buffer<64x128xf16, shared>
    %v = tile.alloc : !tile.buffer<64x128xf16, shared>
    %s = tile.alloc : !tile.buffer<128x64xf32, fragment>
    %p = tile.alloc : !tile.buffer<128x64xf16, fragment>
    %o = tile.alloc : !tile.buffer<128x128xf32, fragment>
    tile.gemm %q, %k, %s {transpose_b = true} : !tile.buffer<128x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x64xf32, fragment>
    tile.copy %s, %p : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, fragment>
    tile.gemm %p, %v, %o : !tile.buffer<128x64xf16, fragment>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
  }
  func.return
}

// A register A that nothing else lays out takes the register-A layout itself: one warpgroup,
// 128 rows (two m64 blocks), k = 32.
// WG-LABEL: func.func @register_a_alone
// WG: tile.gemm %a, %b, %c {mma = "wgmma"}
// WGLAYOUT-LABEL: func.func @register_a_alone
// WGLAYOUT: %a = tile.alloc {layout = #tile.fragment<"(2s16,4t32,2s2,8t4)x(4s4,4t1,2s1)|r()">}
func.func @register_a_alone() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<128x32xf16, fragment>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<128x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<128x32xf16, fragment>, !tile.buffer<32x64xf16, shared>, !tile.buffer<128x64xf32, fragment>
  }
  func.return
}

// A register A with B also in registers: wgmma needs B in shared memory (mma.sync stays, both
// staged through shared memory by the lowering).
// WG-LABEL: func.func @negative_register_b
// WG: tile.gemm {{.*}} {mma = "m16n8k16"}
func.func @negative_register_b() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, fragment>
    %b = tile.alloc : !tile.buffer<32x64xf16, fragment>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, fragment>, !tile.buffer<32x64xf16, fragment>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// A stored [K, M] (transpose_A, M-major) as wgmma's SS form reads it: the rows hold M, so they
// take the swizzle of M's width, 64-column chunks when wider than 128 bytes (as an N-major B);
// M-major A in registers (the RS form) has no such instruction: mma.sync stays.
// CHECK-LABEL: func.func @m_major_a
// CHECK: {transpose_a = true, mma = "m16n8k16"}
// WG-LABEL: func.func @m_major_a
// WG: %a = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
// WG: %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
// WG: tile.gemm %a, %b, %c {transpose_a = true, mma = "wgmma"}
// WG: %a2 = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xbf16, shared>
// WG: tile.gemm %a2, %b2, %c2 {transpose_a = true, transpose_b = true, mma = "wgmma"}
// WG: tile.gemm %af, %b3, %c3 {transpose_a = true, mma = "m16n8k16"}
func.func @m_major_a() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [256, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x128xf16, shared>
    %b = tile.alloc : !tile.buffer<64x256xf16, shared>
    %c = tile.alloc : !tile.buffer<128x256xf32, fragment>
    tile.gemm %a, %b, %c {transpose_a = true} : !tile.buffer<64x128xf16, shared>, !tile.buffer<64x256xf16, shared>, !tile.buffer<128x256xf32, fragment>
    %a2 = tile.alloc : !tile.buffer<64x128xbf16, shared>
    %b2 = tile.alloc : !tile.buffer<128x64xbf16, shared>
    %c2 = tile.alloc : !tile.buffer<128x128xf32, fragment>
    tile.gemm %a2, %b2, %c2 {transpose_a = true, transpose_b = true} : !tile.buffer<64x128xbf16, shared>, !tile.buffer<128x64xbf16, shared>, !tile.buffer<128x128xf32, fragment>
    %af = tile.alloc : !tile.buffer<64x128xf16, fragment>
    %b3 = tile.alloc : !tile.buffer<64x64xf16, shared>
    %c3 = tile.alloc : !tile.buffer<128x64xf32, fragment>
    tile.gemm %af, %b3, %c3 {transpose_a = true} : !tile.buffer<64x128xf16, fragment>, !tile.buffer<64x64xf16, shared>, !tile.buffer<128x64xf32, fragment>
  }
  func.return
}

// Regions of shared allocations (TileLang's MLA: `T.gemm(Q_shared[:, :D // 2], KV_shared[stage, :,
// :D // 2], acc_s, transpose_B=True)`, then `T.gemm(S_shared, KV_shared[stage, :, D // 2:], acc_o)`)
// are wgmma operands: the layout is the allocation's rows' (256 halves: 128-byte swizzle in 64-column
// chunks), and each region starts where a descriptor can (8-row multiples; along K-major rows a
// multiple of 16 halves, along N-major rows a whole 64-column chunk, here 128).
// WG-LABEL: func.func @regions_of_allocations
// WG: %q = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
// WG: %kv = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<2x64x256xf16, shared>
// WG: tile.gemm %qr, %kvr, %s {transpose_b = true, mma = "wgmma"}
// WG: tile.gemm %p, %kvr2, %o {mma = "wgmma"}
func.func @regions_of_allocations() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %q = tile.alloc : !tile.buffer<64x256xf16, shared>
    %kv = tile.alloc : !tile.buffer<2x64x256xf16, shared>
    %p = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %o = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %qr = tile.region %q[%c0, %c128] : !tile.buffer<64x256xf16, shared> -> !tile.buffer<64x128xf16, shared>
    %st = tile.stage %kv[%bx] : !tile.buffer<2x64x256xf16, shared> -> !tile.buffer<64x256xf16, shared>
    %kvr = tile.region %st[%c0, %c128] : !tile.buffer<64x256xf16, shared> -> !tile.buffer<64x128xf16, shared>
    tile.gemm %qr, %kvr, %s {transpose_b = true} : !tile.buffer<64x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<64x64xf32, fragment>
    %kvr2 = tile.region %st[%c0, %c128] : !tile.buffer<64x256xf16, shared> -> !tile.buffer<64x128xf16, shared>
    tile.gemm %p, %kvr2, %o : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
  }
  func.return
}

// A region wgmma's descriptors cannot start at stays on mma.sync: 8 halves into K-major rows (half
// a k16 step), 32 columns into N-major rows of 64-column atoms, 4 rows down (inside an 8-row atom).
// WG-LABEL: func.func @negative_region_offsets
// WG: tile.gemm %ar, %b16, %c {mma = "m16n8k16"}
// WG: tile.gemm %a, %br, %c {mma = "m16n8k16"}
// WG: tile.gemm %a, %br4, %c2 {transpose_b = true, mma = "m16n8k16"}
func.func @negative_region_offsets() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %ar = tile.region %a[%c0, %c8] : !tile.buffer<64x64xf16, shared> -> !tile.buffer<64x16xf16, shared>
    %b16 = tile.region %b[%c0, %c0] : !tile.buffer<64x128xf16, shared> -> !tile.buffer<16x64xf16, shared>
    tile.gemm %ar, %b16, %c : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    %br = tile.region %b[%c0, %c32] : !tile.buffer<64x128xf16, shared> -> !tile.buffer<64x64xf16, shared>
    tile.gemm %a, %br, %c : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    %c2 = tile.alloc : !tile.buffer<64x32xf32, fragment>
    %br4 = tile.region %a[%c4, %c0] : !tile.buffer<64x64xf16, shared> -> !tile.buffer<32x64xf16, shared>
    tile.gemm %a, %br4, %c2 {transpose_b = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x32xf32, fragment>
  }
  func.return
}

// T.annotate_layout's swizzle serves wgmma when it is the rows' own (make_swizzled_layout: 128
// bytes, a 256-halves row in 64-column chunks); another (64 bytes on 128-byte rows) keeps mma.sync.
// WG-LABEL: func.func @annotated_layouts
// WG: %a = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
// WG: tile.gemm %a, %b, %c {mma = "wgmma"}
// WG: tile.gemm %a2, %b2, %c2 {mma = "m16n8k16"}
func.func @annotated_layouts() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x256xf16, shared>
    tile.annotate_layout %a {layout = #tile.swizzle<128>} : !tile.buffer<64x256xf16, shared>
    %b = tile.alloc : !tile.buffer<256x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c : !tile.buffer<64x256xf16, shared>, !tile.buffer<256x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    %a2 = tile.alloc : !tile.buffer<64x64xf16, shared>
    tile.annotate_layout %a2 {layout = #tile.swizzle<64>} : !tile.buffer<64x64xf16, shared>
    %b2 = tile.alloc : !tile.buffer<64x64xf16, shared>
    %c2 = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a2, %b2, %c2 : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

