// RUN: tilec opt %s -p tile-warp-specialize | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{per_copy=false}' | filecheck %s --check-prefix=OFF

// TMA or cp.async, decided per copy: B's rows are 408 bytes apart (204 f16), no multiple of 16,
// which no tensor map can describe. A still comes by TMA, issued by the producer's first thread;
// B is copied into its stage by all 128 producer threads (cp.async, the reason kept in
// `tilec.not_tma`), each of which arrives on `full` once its copies have landed (128 arrivals more
// than the TMA issuer's one); the consumers fence those bytes for the async proxy after their wait.
// The copying producer keeps more than 40 registers (40 spill its copy addresses): beside one
// consumer warpgroup of 232, 64.
// Off (per_copy=false, pass config tilec.per_copy_tma=False): the loop goes whole to tile-pipeline, the
// copy named.
// OFF-LABEL: func.func @gemm_b_misaligned
// OFF-NOT:   tile.warp_specialize
// OFF:       not_warp_specialized = "TMA cannot take every copy (rb: a stride of 408 bytes (TMA needs multiples of 16); tilec.per_copy_tma=True copies it by the producer's threads)"
// CHECK-LABEL: func.func @gemm_b_misaligned
// CHECK:       %full = tile.alloc_barrier {arrive_count = 129 : i64} : !tile.mbarrier<3>
// CHECK:       %empty = tile.alloc_barrier {arrive_count = 4 : i64} : !tile.mbarrier<3>
// CHECK:       tile.warp_specialize producer {
// CHECK:         tile.mbarrier_wait_parity %empty[%{{.*}}], %{{.*}} : !tile.mbarrier<3>
// CHECK-NEXT:    tile.mbarrier_expect_tx %full[%{{.*}}] {bytes = 4096 : i64} : !tile.mbarrier<3>
// CHECK:         tile.tma_load %{{.*}}, %{{.*}}, %full[%{{.*}}] : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
// CHECK:         tile.copy %{{.*}}, %{{.*}} {tilec.not_tma = "a stride of 408 bytes (TMA needs multiples of 16)", async} : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
// CHECK-NEXT:    tile.mbarrier_arrive %full[%{{.*}}] {after_copies} : !tile.mbarrier<3>
// CHECK:       } consumer {
// CHECK:         tile.mbarrier_wait_parity %full[%{{.*}}], %{{.*}} {fence_proxy} : !tile.mbarrier<3>
// CHECK:         tile.gemm %{{.*}}, %{{.*}}, %c {mma = "wgmma", in_flight = 1 : i64, zero_on_entry}
// CHECK:       } {producer_threads = 128 : i64, all_producer_threads, producer_regs = 64 : i64, consumer_regs = 232 : i64}
func.func @gemm_b_misaligned(%A: !tile.tensor<128x256xf16>, %B: !tile.tensor<256x204xf16>, %C: !tile.tensor<128x204xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  tile.kernel (%bx, %by) in (%c2, %c2) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<32x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %zero = arith.constant 0.000000e+00 : f32
    tile.fill %c, %zero : !tile.buffer<64x128xf32, fragment>, f32
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.for %ko = %c0 to %c8 step %c1 {
      %row = arith.muli %by, %c64 : index
      %k = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%row, %k] {in_bounds} : !tile.tensor<128x256xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %col = arith.muli %bx, %c128 : index
      %rb = tile.region %B[%k, %col] : !tile.tensor<256x204xf16> -> !tile.tensor<32x128xf16>
      tile.copy %rb, %b : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
  }
  func.return
}

// Neither copy can go by TMA (A's rows 392 bytes apart, B's 408): a producer warpgroup would only
// copy what the kernel's own threads copy as well, so the loop stays for tile-pipeline (cp.async
// stages), with the reason recorded.
// CHECK-LABEL: func.func @negative_no_copy_for_tma
// CHECK-NOT:   tile.warp_specialize
// CHECK:       not_warp_specialized = "TMA cannot take any of its copies (ra: a stride of 392 bytes (TMA needs multiples of 16))"
func.func @negative_no_copy_for_tma(%A: !tile.tensor<64x196xf16>, %B: !tile.tensor<196x204xf16>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc {swizzle = 64 : i64} : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<32x128xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    %c0 = arith.constant 0 : index
    %c6 = arith.constant 6 : index
    %c32 = arith.constant 32 : index
    tile.for %ko = %c0 to %c6 step %c1 {
      %k = arith.muli %ko, %c32 : index
      %ra = tile.region %A[%c0, %k] : !tile.tensor<64x196xf16> -> !tile.tensor<64x32xf16>
      tile.copy %ra, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %rb = tile.region %B[%k, %c0] : !tile.tensor<196x204xf16> -> !tile.tensor<32x128xf16>
      tile.copy %rb, %b : !tile.tensor<32x128xf16>, !tile.buffer<32x128xf16, shared>
      tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
  }
  func.return
}
