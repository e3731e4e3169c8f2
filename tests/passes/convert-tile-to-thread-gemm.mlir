// RUN: tilec opt %s -p tile-infer-layout,convert-tile-to-thread | filecheck %s

// The three lowerings of `tile.gemm`: the `mma` property (tile-select-mma's choice, set by hand
// here together with the operand swizzles that pass would give) picks mma.sync or wgmma; a gemm
// without it runs on the SIMT cores.

// SIMT, B stored [n, k]: fused multiply-adds on the thread's accumulators, no tensor-core op.
// CHECK-LABEL: func.func @gemm_simt_bt
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: nvvm.ldmatrix
// CHECK: math.fma
// CHECK-NOT: nvvm.mma.sync
// CHECK: func.return
func.func @gemm_simt_bt(%C: !tile.tensor<32x32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %a = tile.alloc : !tile.buffer<32x16xf16, shared>
    %b = tile.alloc : !tile.buffer<32x16xf16, shared>
    %acc = tile.alloc : !tile.buffer<32x32xf32, fragment>
    tile.gemm %a, %b, %acc {clear_accum = true, transpose_b = true} : !tile.buffer<32x16xf16, shared>, !tile.buffer<32x16xf16, shared>, !tile.buffer<32x32xf32, fragment>
    tile.copy %acc, %C : !tile.buffer<32x32xf32, fragment>, !tile.tensor<32x32xf32>
  }
  func.return
}

// mma.sync m16n8k16: four warps of 32x32, K = 32 unrolled into two k16 steps. A's fragments come
// by ldmatrix.x4 (row) and B's, two n-tiles at a time, by ldmatrix.x4.trans (col), both from
// XOR-swizzled addresses; 2 x 4 mmas per step.
// CHECK-LABEL: func.func @gemm_mma
// CHECK-NOT: scf.for
// CHECK: arith.xori
// CHECK: "nvvm.ldmatrix"({{.*}}) <{num = 4 : i32, layout = #nvvm.mma_layout<row>}>
// CHECK: arith.xori
// CHECK: "nvvm.ldmatrix"({{.*}}) <{num = 4 : i32, layout = #nvvm.mma_layout<col>}>
// CHECK-COUNT-16: "nvvm.mma.sync"({{.*}}) <{shape = #nvvm.shape<m = 16, n = 8, k = 16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
// CHECK-NOT: "nvvm.mma.sync"
// CHECK: func.return
func.func @gemm_mma(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64} : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %acc {clear_accum = true, mma = "m16n8k16"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %acc, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}

// mma.sync whose B is a region of a shared tile at a run-time offset (`B_s[k * 32:k * 32 + 32, :]`
// in a loop, issue 8 item 5): A still comes by ldmatrix, B (which ldmatrix cannot address) by
// pairs of loads whose row is offset by %k, packed into the mma's vector<2xf16> registers.
// CHECK-LABEL: func.func @gemm_mma_region_b
// CHECK: scf.for
// CHECK: %[[K:.*]] = arith.muli
// CHECK: "nvvm.ldmatrix"({{.*}}) <{num = 4 : i32, layout = #nvvm.mma_layout<row>}>
// CHECK-NOT: "nvvm.ldmatrix"({{.*}}) <{num = {{[0-9]+}} : i32, layout = #nvvm.mma_layout<col>}>
// CHECK: %[[ROW:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.muli %[[ROW]], %{{.*}} : index
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4096xf16, 3 : i64>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4096xf16, 3 : i64>
// CHECK: vector.insert %{{.*}} [1] : f16 into vector<2xf16>
// CHECK: "nvvm.mma.sync"
// CHECK-NOT: "nvvm.ldmatrix"({{.*}}) <{num = {{[0-9]+}} : i32, layout = #nvvm.mma_layout<col>}>
// CHECK: func.return
func.func @gemm_mma_region_b(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<64x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    tile.for %ko = %c0 to %c2 step %c1 {
      %k = arith.muli %ko, %c32 : index
      %bk = tile.region %b[%k, %c0] : !tile.buffer<64x64xf16, shared> -> !tile.buffer<32x64xf16, shared>
      tile.gemm %a, %bk, %acc {mma = "m16n8k16"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    }
    tile.copy %acc, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}

// wgmma m64n64k16 from shared memory, K = 32: the threads' writes of the operands are ordered
// before the async proxy's reads (fence.proxy.async, then a barrier), one wgmma per k16 step
// (the first with no accumulator input: clear_accum), one commit, a wait for all groups.
// The descriptors' constant fields (`tilec.dialects.tile.WgmmaDescriptor`): A K-major with the
// 64-byte swizzle (LBO 16, SBO 512, mode 2) and B N-major with the 128-byte one (LBO 16,
// SBO 1024, mode 1); the start address / 16 is ORed in.
// CHECK-LABEL: func.func @gemm_wgmma
// CHECK-DAG: %[[FIELDS_A:.*]] = arith.constant -9223371899415756800 : i64
// CHECK-DAG: %[[FIELDS_B:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}>
// CHECK: gpu.barrier
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[DESC_B:.*]] = arith.ori %{{.*}}, %[[FIELDS_B]] : i64
// CHECK: %[[DESC_A:.*]] = arith.ori %{{.*}}, %[[FIELDS_A]] : i64
// CHECK: %[[D0:.*]] = "nvvm.wgmma.mma_async"(%[[DESC_A]], %[[DESC_B]]) <{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>
// CHECK: "nvvm.wgmma.mma_async"(%{{.*}}, %{{.*}}, %[[D0]])
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: "nvvm.wgmma.wait.group.sync.aligned"({{.*}}) <{group = 0 : i64}>
// CHECK: func.return
func.func @gemm_wgmma(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64} : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %acc {clear_accum = true, mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %acc, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}

// A warp-specialized consumer's wgmma (`in_flight = 1`, tile-warp-specialize): TMA wrote the
// operands in the async proxy, so no fence; the accumulators go in, and the wait leaves the
// newest group running.
// CHECK-LABEL: func.func @gemm_wgmma_in_flight
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: "nvvm.wgmma.mma_async"(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: "nvvm.wgmma.wait.group.sync.aligned"({{.*}}) <{group = 1 : i64}>
// CHECK: func.return
func.func @gemm_wgmma_in_flight(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64} : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %acc {mma = "wgmma", in_flight = 1 : i64} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %acc, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}
