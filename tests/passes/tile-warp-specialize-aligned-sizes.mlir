// RUN: tilec opt %s -p tile-warp-specialize | filecheck %s

// Run-time sizes: K is A's row, N is B's. A build for sizes of 16-byte multiples (the func's
// `tilec.aligned_sizes`, per argument and dim: K and N multiples of 8 halves) knows both rows are
// 16-byte multiples, so TMA reads both tiles and the loop is warp-specialized.
// CHECK-LABEL: func.func @aligned
// CHECK:       tile.warp_specialize producer {
// CHECK:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] : !tile.tensor<64x32xf16>
// CHECK:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] : !tile.tensor<32x128xf16>
// CHECK:       } {num_stages = 2 : i64, warp_specialized_stages = 2 : i64}
func.func @aligned(%A: !tile.tensor<?x?xf16>, %B: !tile.tensor<?x?xf16>) attributes {tilec.aligned_sizes = [array<i64: 1, 8>, array<i64: 8, 8>]} {
  %k = tile.dim %A {dim = 1 : i64} : !tile.tensor<?x?xf16>
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<32x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %n = arith.ceildivsi %k, %c32 : index
    tile.for %ko = %c0 to %n step %c1 {
      %kk = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%c0, %kk] : !tile.tensor<?x?xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %rb = tile.region %B[%kk, %c0] : !tile.tensor<?x?xf16> -> !tile.tensor<32x128xf16>
      tile.copy %rb, %b : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}

// The same kernel in the build for any sizes (no `tilec.aligned_sizes`): neither row stride is known,
// no tensor map describes the tensors, and the loop is left to tile-pipeline.
// CHECK-LABEL: func.func @any_sizes
// CHECK-NOT:   tile.warp_specialize
// CHECK:       not_warp_specialized = "TMA cannot take any of its copies (ra: a run-time row stride (a build for sizes of 16-byte multiples takes TMA: tilec.aligned_sizes))"
func.func @any_sizes(%A: !tile.tensor<?x?xf16>, %B: !tile.tensor<?x?xf16>) {
  %k = tile.dim %A {dim = 1 : i64} : !tile.tensor<?x?xf16>
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<32x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %n = arith.ceildivsi %k, %c32 : index
    tile.for %ko = %c0 to %n step %c1 {
      %kk = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%c0, %kk] : !tile.tensor<?x?xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %rb = tile.region %B[%kk, %c0] : !tile.tensor<?x?xf16> -> !tile.tensor<32x128xf16>
      tile.copy %rb, %b : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}
