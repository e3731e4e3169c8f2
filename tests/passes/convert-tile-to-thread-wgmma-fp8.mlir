// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-infer-layout,convert-tile-to-thread" | filecheck %s
// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true}" | filecheck %s --check-prefix=SELECT

// An fp8 gemm on one warpgroup: C[64x64] += A[64x128] B[64x128]^T, e5m2 x e5m2. wgmma reads 8-bit
// operands K-major only, 32 bytes of K per instruction: k32, 4 steps over K = 128, both tiles
// with the 128-byte swizzle of their 128-byte rows (tile-select-mma), the fp8 types named.
// SELECT-COUNT-2: tile.alloc {swizzle = 128 : i64} : !tile.buffer<64x128xf8E5M2, shared>
// SELECT: tile.gemm {{.*}}mma = "wgmma"
// CHECK-LABEL: func.func @fp8_gemm
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: "nvvm.wgmma.mma_async"({{%.*}}, {{%.*}}, {{%.*}}) <{shape = #nvvm.shape<m = 64, n = 64, k = 32>, typeA = #nvvm.mma_type<e5m2>, typeB = #nvvm.mma_type<e5m2>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
// CHECK-NOT: "nvvm.wgmma.mma_async"
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @fp8_gemm(%A: !tile.tensor<64x128xf8E5M2>, %B: !tile.tensor<64x128xf8E5M2>, %C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x128xf8E5M2, shared>
    %b = tile.alloc : !tile.buffer<64x128xf8E5M2, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.copy %A, %a : !tile.tensor<64x128xf8E5M2>, !tile.buffer<64x128xf8E5M2, shared>
    tile.copy %B, %b : !tile.tensor<64x128xf8E5M2>, !tile.buffer<64x128xf8E5M2, shared>
    tile.gemm %a, %b, %c {transpose_b = true} : !tile.buffer<64x128xf8E5M2, shared>, !tile.buffer<64x128xf8E5M2, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %c, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}
