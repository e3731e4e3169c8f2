// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true},tile-infer-layout,convert-tile-to-thread" | filecheck %s

// One step of attention on two warpgroups, head dim 128: S = Q K^T (wgmma SS, K-major operands
// in two 64-column chunks), the row max of S, P = S converted to f16, O = P V (wgmma RS).
// The row max combines each thread's slots, then the 4 threads of a quad: two butterflies
// (lane xor 1, xor 2) for each of the thread's two rows, nothing through shared memory.
// The conversion is per thread (32 truncations of its own slots, no shuffles, no shared
// memory) and P's slots are packed in place into the RS form's A registers: 4 k16 steps x
// 4 registers of f16x2.
// CHECK-LABEL: func.func @attention_step
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: "nvvm.wgmma.mma_async"({{%.*}}, {{%.*}}) {{.*}} : (i64, i64) -> !llvm.struct
// CHECK: "nvvm.wgmma.wait.group.sync.aligned"
// CHECK-NOT: memref.view
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: "nvvm.shfl.sync"(%{{.*}}, %{{.*}}, %[[ONE:.*]], %{{.*}}) <{kind = #nvvm<shfl_kind bfly>}>
// CHECK-NOT: nvvm.shfl.sync
// CHECK-NOT: memref.view
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-32: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: nvvm.shfl.sync
// CHECK-NOT: memref.view
// CHECK: "nvvm.fence.proxy"
// CHECK-NEXT: "gpu.barrier"
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.view
// CHECK-NOT: nvvm.shfl.sync
// CHECK-COUNT-16: llvm.bitcast %{{.*}} : vector<2xf16> to i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: "nvvm.wgmma.mma_async"({{.*}}) {{.*}} : (!llvm.struct<(i32, i32, i32, i32)>, i64
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @attention_step(%O: !tile.tensor<128x64xf32>, %M: !tile.tensor<128xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [256, 1, 1] {
    %q = tile.alloc : !tile.buffer<128x128xf16, shared>
    %k = tile.alloc : !tile.buffer<64x128xf16, shared>
    %v = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s = tile.alloc : !tile.buffer<128x64xf32, fragment>
    %p = tile.alloc : !tile.buffer<128x64xf16, fragment>
    %m = tile.alloc : !tile.buffer<128xf32, fragment>
    %o = tile.alloc : !tile.buffer<128x64xf32, fragment>
    tile.gemm %q, %k, %s {transpose_b = true, clear_accum = true} : !tile.buffer<128x128xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x64xf32, fragment>
    tile.reduce %s, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128xf32, fragment>
    tile.copy %s, %p : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, fragment>
    tile.gemm %p, %v, %o {clear_accum = true} : !tile.buffer<128x64xf16, fragment>, !tile.buffer<64x64xf16, shared>, !tile.buffer<128x64xf32, fragment>
    tile.copy %o, %O : !tile.buffer<128x64xf32, fragment>, !tile.tensor<128x64xf32>
    tile.copy %m, %M : !tile.buffer<128xf32, fragment>, !tile.tensor<128xf32>
  }
  func.return
}

// A register A whose layout the kernel fixes otherwise: P is computed from an mma.sync
// accumulator (a gemm of a tile annotated with a swizzle that is not its rows', which wgmma cannot
// read) and takes its layout, so the RS gemm first converts P through shared memory into the
// register-A layout.
// CHECK-LABEL: func.func @register_a_other_layout
// CHECK: "nvvm.mma.sync"
// CHECK: arith.truncf
// CHECK: "nvvm.fence.proxy"
// CHECK: memref.view
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: llvm.bitcast %{{.*}} : vector<2xf16> to i32
// CHECK: "nvvm.wgmma.mma_async"({{.*}}) {{.*}} : (!llvm.struct<(i32, i32, i32, i32)>, i64
func.func @register_a_other_layout(%C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<64x64xf16, shared>
    tile.annotate_layout %x {layout = #tile.swizzle<64>} : !tile.buffer<64x64xf16, shared>
    %d = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %p = tile.alloc : !tile.buffer<64x64xf16, fragment>
    %b = tile.alloc : !tile.buffer<64x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %x, %x, %d {clear_accum = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %d[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %h = arith.truncf %v : f32 to f16
      tile.store %h, %p[%i, %j] : f16, !tile.buffer<64x64xf16, fragment>
    }
    tile.gemm %p, %b, %c {clear_accum = true} : !tile.buffer<64x64xf16, fragment>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.copy %c, %C : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}

// The program's own completion: the first gemm (wg_wait = -1) commits its group and waits for
// nothing; the second waits until one group is left running (wg_wait = 1), its accumulator tied;
// the program's wait completes the rest, both accumulators' 32 + 32 registers tied through it.
// CHECK-LABEL: func.func @program_waits
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: "nvvm.wgmma.wait.group.sync.aligned"(%{{[0-9]+}}) <{group = 1 : i64}>
// CHECK: "nvvm.wgmma.wait.group.sync.aligned"({{.*}}) <{group = 0 : i64}> : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) ->
func.func @program_waits(%X: !tile.tensor<64x64xf32>, %Y: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x64xf16, shared>
    %x = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %x {transpose_b = true, clear_accum = true, wg_wait = -1 : i64, wgmma_only} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %y {transpose_b = true, clear_accum = true, wg_wait = 1 : i64} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm_wait
    tile.copy %x, %X : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
    tile.copy %y, %Y : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>
  }
  func.return
}
