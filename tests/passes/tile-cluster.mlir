// RUN: tilec opt %s -p 'tile-warp-specialize{pingpong=false},tile-cluster' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{pingpong=false},tile-cluster,tile-infer-layout,tile-plan-shared-memory,convert-tile-to-thread' | filecheck %s --check-prefix=THREAD
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true pingpong=false},tile-cluster' | filecheck %s --check-prefix=PERSIST
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true pingpong=false},tile-cluster,tile-infer-layout,tile-plan-shared-memory,convert-tile-to-thread' | filecheck %s --check-prefix=PTHREAD

// A 128x256 gemm tile on a 2x4 grid: B's region (k, bx) does not depend on by, so the blocks
// (bx, 2j) and (bx, 2j+1) pair into a cluster along the grid's second dimension and load B once,
// multicast; A's region depends on by and stays each block's own. Either block's producer writes
// into both blocks' B stages, so `empty` counts both blocks' consumer warps (2 x 8) and each
// release arrives on the barrier of both blocks.
// CHECK-LABEL: func.func @gemm
// CHECK:       %empty = tile.alloc_barrier {arrive_count = 16 : i64} : !tile.mbarrier<3>
// CHECK:       tile.warp_specialize producer {
// CHECK:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] : !tile.tensor<128x64xf16>
// CHECK:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] {multicast} : !tile.tensor<64x256xf16>
// CHECK:       } consumer {
// CHECK:         tile.mbarrier_arrive %empty[%{{.*}}] {cluster} : !tile.mbarrier<3>
// CHECK:       } {cluster = array<i64: 1, 2>}

// The thread level: a compile-time cluster shape (a plain launch), the block's rank, the
// block indices of a cluster kept together under the rasterization (by = (by/2 rasterized)*2 +
// by%2), a cluster barrier once the barriers are initialized and one before the kernel returns,
// each B chunk issued by one rank with CTA mask 0b11, each release arriving through mapa on
// rank 0 and rank 1.
// THREAD-LABEL: func.func @gemm
// THREAD-SAME:  nvvm.cluster_dim = array<i32: 1, 2, 1>
// THREAD:       nvvm.read.ptx.sreg.cluster.ctarank
// THREAD:       nvvm.fence.mbarrier.init
// THREAD:       nvvm.cluster.arrive
// THREAD-NEXT:  nvvm.cluster.wait
// THREAD:       "nvvm.cp.async.bulk.tensor.shared.cluster.global"({{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 2, 1, 0, 0>}>
// THREAD:       scf.if
// THREAD:       "nvvm.cp.async.bulk.tensor.shared.cluster.global"({{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 2, 1, 1, 0>}> : ({{.*}}, i16) -> ()
// THREAD:       nvvm.mapa.shared.cluster
// THREAD:       nvvm.mbarrier.arrive.cluster
// THREAD:       nvvm.mapa.shared.cluster
// THREAD:       nvvm.mbarrier.arrive.cluster
// THREAD:       nvvm.cluster.arrive
// THREAD-NEXT:  nvvm.cluster.wait
// THREAD-NEXT:  func.return

// A persistent kernel pairs tiles: the tile loops' index along the grid's second dimension counts
// as the block index, B's load is multicast and the releases reach both blocks.
// PERSIST-LABEL: func.func @gemm
// PERSIST:       %empty = tile.alloc_barrier {arrive_count = 16 : i64} : !tile.mbarrier<3>
// PERSIST:       tile.persistent
// PERSIST:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] : !tile.tensor<128x64xf16>
// PERSIST:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] {multicast} : !tile.tensor<64x256xf16>
// PERSIST:       } consumer {
// PERSIST:         tile.persistent
// PERSIST:           tile.mbarrier_arrive %empty[%{{.*}}] {cluster} : !tile.mbarrier<3>
// PERSIST:       } {cluster = array<i64: 1, 2>}

// Its launch is 1-D: clusters of two consecutive blocks; each cluster loops over the 2x2 grid of
// cluster tiles from blockIdx.x / 2 by gridDim.x / 2, and its blocks take the tile rows
// 2q (rank 0) and 2q + 1 (rank 1) of cluster tile row q.
// PTHREAD-LABEL: func.func @gemm
// PTHREAD-SAME:  nvvm.cluster_dim = array<i32: 2, 1, 1>
// PTHREAD-SAME:  tilec.persistent
// PTHREAD:       %[[TWO:.*]] = arith.constant 2 : index
// PTHREAD:       %[[RANK:.*]] = nvvm.read.ptx.sreg.cluster.ctarank : i32
// PTHREAD:       %[[R:.*]] = arith.index_cast %[[RANK]] : i32 to index
// PTHREAD:       nvvm.setmaxregister
// PTHREAD:       %[[TILES:.*]] = arith.muli %gx, %[[TWO]] : index
// PTHREAD:       %[[BID:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// PTHREAD:       %[[GRID:.*]] = "gpu.grid_dim"() <{dimension = #gpu<dim x>}>
// PTHREAD:       %[[FIRST:.*]] = arith.divui %[[BID]], %[[TWO]] : index
// PTHREAD:       %[[STEP:.*]] = arith.divui %[[GRID]], %[[TWO]] : index
// PTHREAD:       scf.for %{{.*}} = %[[FIRST]] to %[[TILES]] step %[[STEP]] {
// PTHREAD:         %[[Q2:.*]] = arith.muli %{{[0-9]+}}, %[[TWO]] : index
// PTHREAD-NEXT:    arith.addi %[[Q2]], %[[R]] : index
// PTHREAD:       nvvm.cluster.arrive
// PTHREAD-NEXT:  nvvm.cluster.wait
// PTHREAD-NEXT:  func.return
func.func @gemm(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x512xf16>, %C: !tile.tensor<512x512xf16>) {
  %gx = arith.constant 2 : index
  %gy = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%gx, %gy) threads [256, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x256xf32, fragment>
    tile.use_swizzle {panel_size = 10 : i64}
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    tile.fill %C_f, %zero : !tile.buffer<128x256xf32, fragment>, f32
    tile.for %ko = %c0 to %c4 step %c1 {
      %m = arith.muli %by, %c128 : index
      %k = arith.muli %ko, %c64 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<512x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %n = arith.muli %bx, %c256 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x512xf16> -> !tile.tensor<64x256xf16>
      tile.copy %b, %B_s : !tile.tensor<64x256xf16>, !tile.buffer<64x256xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x256xf16, shared>, !tile.buffer<128x256xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c256 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x512xf16> -> !tile.tensor<128x256xf16>
    tile.copy %C_f, %c : !tile.buffer<128x256xf32, fragment>, !tile.tensor<128x256xf16>
  }
  func.return
}

// A 3x3 grid: no dimension pairs up (3 is odd).
// CHECK-LABEL: func.func @odd
// CHECK-NOT:   multicast
// CHECK:       not_clustered = "no TMA load whose region is shared by two blocks of the grid"
func.func @odd(%A: !tile.tensor<384x256xf16>, %B: !tile.tensor<256x384xf16>, %C: !tile.tensor<384x384xf16>) {
  %g = arith.constant 3 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [256, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.for %ko = %c0 to %c4 step %c1 {
      %m = arith.muli %by, %c128 : index
      %k = arith.muli %ko, %c64 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<384x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %n = arith.muli %bx, %c128 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x384xf16> -> !tile.tensor<64x128xf16>
      tile.copy %b, %B_s : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<384x384xf16> -> !tile.tensor<128x128xf16>
    tile.copy %C_f, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf16>
  }
  func.return
}
