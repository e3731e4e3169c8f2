// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue,tile-infer-layout,tile-plan-shared-memory,convert-tile-to-thread' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue{tma_store=false},tile-infer-layout,tile-plan-shared-memory,convert-tile-to-thread' | filecheck %s --check-prefix=PLAIN
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue,tile-infer-layout,tile-plan-shared-memory,convert-tile-to-thread{stmatrix=false}' | filecheck %s --check-prefix=OFF

// The staged epilogue of a persistent 128x256 gemm on two consumer warpgroups: each 128x128 chunk
// of the result leaves the accumulator as f16 pairs (32 a thread: 64 truncations), and a warp stores them as 8
// stmatrix .x4 of four 8x8 matrices side by side (the chunk's 64 columns per swizzle box are two
// such rows of matrices), each lane giving one row address; no thread stores its pairs itself.
// CHECK-LABEL: func.func @gemm
// CHECK:       "nvvm.setmaxregister"() <{regCount = 232 : i32
// CHECK-COUNT-64: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT:   memref.store
// CHECK-COUNT-8: "nvvm.stmatrix"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{layout = #nvvm.mma_layout<row>}> : (!llvm.ptr<3>, i32, i32, i32, i32) -> ()
// CHECK-NEXT:  "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}>
// CHECK:       "nvvm.cp.async.bulk.tensor.global.shared.cta"
// CHECK-COUNT-64: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT:   memref.store
// CHECK-COUNT-8: "nvvm.stmatrix"
// CHECK-NOT:   memref.store
// CHECK:       "nvvm.fence.proxy"
// CHECK-NOT:   "nvvm.stmatrix"

// Not persistent, the whole tile by a tile.copy, then 16-byte stores: 16 stmatrix .x4 a warp.
// PLAIN-LABEL: func.func @gemm
// PLAIN-COUNT-16: "nvvm.stmatrix"
// PLAIN-NOT:   "nvvm.stmatrix"
// PLAIN:       vector.load %{{.*}} : memref<{{.*}}xf16, 3 : i64>, vector<8xf16>

// stmatrix=false (tilec.stmatrix): each thread stores its pairs, 4 bytes at a time.
// OFF-LABEL: func.func @gemm
// OFF-NOT:     "nvvm.stmatrix"
// OFF-COUNT-32: vector.store %{{.*}} : memref<{{.*}}xf16, 3 : i64>, vector<2xf16>
// OFF-NOT:     "nvvm.stmatrix"
func.func @gemm(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x1024xf16>, %C: !tile.tensor<512x1024xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [256, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x256xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x256xf32, fragment>
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
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x1024xf16> -> !tile.tensor<64x256xf16>
      tile.copy %b, %B_s : !tile.tensor<64x256xf16>, !tile.buffer<64x256xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x256xf16, shared>, !tile.buffer<128x256xf32, fragment>
    } {kind = "pipelined", num_stages = 4 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c256 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x1024xf16> -> !tile.tensor<128x256xf16>
    tile.copy %C_f, %c : !tile.buffer<128x256xf32, fragment>, !tile.tensor<128x256xf16>
  }
  func.return
}
