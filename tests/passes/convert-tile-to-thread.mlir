// RUN: tilec opt %s -p tile-infer-layout,convert-tile-to-thread | filecheck %s

// An element-wise add whose bounds guard is uniform over each group of 8 halves:
// one branch per group and 16-byte vector loads and stores.
// CHECK: sym_name = "__tilec_smem", type = memref<0xi8, 3 : i64>
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%A: memref<?xf16>, %B: memref<?xf16>, %C: memref<?xf16>)
// CHECK-SAME: nvvm.kernel
// CHECK: "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK: scf.if
// CHECK: vector.load %A{{.*}} : memref<?xf16>, vector<8xf16>
// CHECK: vector.load %B{{.*}} : memref<?xf16>, vector<8xf16>
// CHECK: vector.store {{.*}}, %C{{.*}} : memref<?xf16>, vector<8xf16>
func.func @add(%A: !tile.tensor<4096xf16>, %B: !tile.tensor<4096xf16>, %C: !tile.tensor<4096xf16>) {
  %c4 = arith.constant 4 : index
  tile.kernel (%bx) in (%c4) threads [128, 1, 1] {
    tile.parallel (%i) in [1024] {
      %c1024 = arith.constant 1024 : index
      %base = arith.muli %bx, %c1024 : index
      %idx = arith.addi %base, %i : index
      %n = arith.constant 4096 : index
      %ok = arith.cmpi slt, %idx, %n : index
      scf.if %ok {
        %a = tile.load %A[%idx] : !tile.tensor<4096xf16> -> f16
        %b = tile.load %B[%idx] : !tile.tensor<4096xf16> -> f16
        %c = arith.addf %a, %b : f16
        tile.store %c, %C[%idx] : f16, !tile.tensor<4096xf16>
      }
    }
  }
  func.return
}

// One row over 128 threads: butterflies inside each warp, then shared memory across
// the four warps.
// CHECK-LABEL: func.func @row_max
// CHECK-COUNT-5: "nvvm.shfl.sync"{{.*}}bfly
// CHECK: gpu.barrier
// CHECK: arith.maxnumf
func.func @row_max(%X: !tile.tensor<1x4096xf32>, %Y: !tile.tensor<1xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<1x4096xf32, fragment>
    %m = tile.alloc : !tile.buffer<1xf32, fragment>
    tile.copy %X, %x : !tile.tensor<1x4096xf32>, !tile.buffer<1x4096xf32, fragment>
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<1x4096xf32, fragment>, !tile.buffer<1xf32, fragment>
    tile.copy %m, %Y : !tile.buffer<1xf32, fragment>, !tile.tensor<1xf32>
  }
  func.return
}

// Four rows per block, a warp per row: butterflies alone, no shared memory.
// CHECK-LABEL: func.func @rows_per_warp
// CHECK-COUNT-5: "nvvm.shfl.sync"{{.*}}bfly
// CHECK-NOT: gpu.barrier
// CHECK: func.return
func.func @rows_per_warp(%X: !tile.tensor<4x1024xf32>, %Y: !tile.tensor<4xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x1024xf32, fragment>
    %m = tile.alloc : !tile.buffer<4xf32, fragment>
    tile.copy %X, %x : !tile.tensor<4x1024xf32>, !tile.buffer<4x1024xf32, fragment>
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<4x1024xf32, fragment>, !tile.buffer<4xf32, fragment>
    tile.copy %m, %Y : !tile.buffer<4xf32, fragment>, !tile.tensor<4xf32>
  }
  func.return
}

// A SIMT gemm: K = 32 becomes a loop carrying the 32 accumulators of each thread.
// CHECK-LABEL: func.func @gemm
// CHECK: scf.for {{.*}} iter_args
// CHECK: math.fma
func.func @gemm(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %acc {clear_accum = true} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %acc, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}

// A lazy T.if_then_else: an scf.if per lane (the condition differs between a thread's lanes)
// yielding the lane's value, the shared read inside the branch; the four values one vector store.
// CHECK-LABEL: func.func @lazy_select
// CHECK: %[[V:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK-NEXT: memref.load %{{.*}} : memref<8xi32, 3 : i64>
// CHECK: scf.yield %{{.*}} : f32
// CHECK-NEXT: } else {
// CHECK: scf.yield %{{.*}} : f32
// CHECK-COUNT-3: scf.if %{{.*}} -> (f32) {
// CHECK: vector.broadcast %[[V]] : f32 to vector<4xf32>
// CHECK: vector.store
func.func @lazy_select(%A: !tile.tensor<256xf32>, %N: !tile.tensor<1xi32>, %Out: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %idx = tile.alloc : !tile.buffer<8xi32, shared>
    %c0 = arith.constant 0 : index
    %n32 = tile.load %N[%c0] : !tile.tensor<1xi32> -> i32
    %n = arith.index_cast %n32 : i32 to index
    tile.parallel (%i) in [64] {
      %ok = arith.cmpi slt, %i, %n : index
      %v = scf.if %ok -> (f32) {
        %j32 = tile.load %idx[%i] : !tile.buffer<8xi32, shared> -> i32
        %j = arith.index_cast %j32 : i32 to index
        %a = tile.load %A[%j] : !tile.tensor<256xf32> -> f32
        scf.yield %a : f32
      } else {
        %m = arith.constant -1.0 : f32
        scf.yield %m : f32
      }
      tile.store %v, %Out[%i] : f32, !tile.tensor<64xf32>
    }
  }
  func.return
}
