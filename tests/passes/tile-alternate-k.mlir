// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true pingpong=false},tile-alternate-k' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=false pingpong=false},tile-alternate-k' | filecheck %s --check-prefix=PLAIN

// A persistent gemm: the producer's loads read k as `3 - k` in the block's odd rounds (its
// `tiles before` odd), the ring's stage and phase still from k; the consumers' loop is untouched.
// CHECK-LABEL: func.func @gemm
// CHECK:       tile.warp_specialize producer {
// CHECK-NEXT:    tile.persistent (%{{.*}}, %{{.*}}, %[[N:.*]]) in (%g, %g) {
// CHECK:           %[[PARITY:.*]] = arith.remui %[[N]], %{{.*}} : index
// CHECK-NEXT:      %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:      %[[ODD:.*]] = arith.cmpi ne, %[[PARITY]], %{{.*}} : index
// CHECK-NEXT:      %[[MIRROR:.*]] = arith.constant 3 : index
// CHECK-NEXT:      tile.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %[[BACK:.*]] = arith.subi %[[MIRROR]], %[[K]] : index
// CHECK-NEXT:        %[[KK:.*]] = arith.select %[[ODD]], %[[BACK]], %[[K]] : index
// CHECK-NEXT:        arith.addi %[[K]], %{{.*}} : index
// CHECK:             %[[KA:.*]] = arith.muli %[[KK]], %c64 : index
// CHECK-NEXT:        %[[A:.*]] = tile.region %A[%{{.*}}, %[[KA]]] {in_bounds}
// CHECK-NEXT:        tile.tma_load %[[A]]
// CHECK:             %[[B:.*]] = tile.region %B[%[[KA]], %{{.*}}] {in_bounds}
// CHECK-NEXT:        tile.tma_load %[[B]]
// CHECK-NEXT:      } {tilec.alternate_k}
// CHECK:       } consumer {
// CHECK-NOT:     tilec.not_alternated
// CHECK:         } {num_stages = 4 : i64, warp_specialized_stages = 4 : i64}

// Not persistent: a block runs one tile, there are no rounds to alternate.
// PLAIN-LABEL: func.func @gemm
// PLAIN-NOT:   arith.select
// PLAIN-NOT:   tilec.alternate_k
func.func @gemm(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x512xf16>, %C: !tile.tensor<512x512xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [256, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<64x128xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.fill %C_f, %zero : !tile.buffer<128x128xf32, fragment>, f32
    tile.for %ko = %c0 to %c4 step %c1 {
      %m = arith.muli %by, %c128 : index
      %k = arith.muli %ko, %c64 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<512x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %n = arith.muli %bx, %c128 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x512xf16> -> !tile.tensor<64x128xf16>
      tile.copy %b, %B_s : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 4 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x512xf16> -> !tile.tensor<128x128xf16>
    tile.copy %C_f, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf16>
  }
  func.return
}

// A gemm that clears its accumulator each iteration keeps only the last k-tile's product: the
// order of the iterations decides the result, so the loads keep theirs and the loop says why.
// CHECK-LABEL: func.func @negative_gemm_clears
// CHECK-NOT:   tilec.alternate_k
// CHECK:       tilec.not_alternated = "a gemm clears its accumulator in the loop: the last iteration's product alone remains"
func.func @negative_gemm_clears(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x512xf16>, %C: !tile.tensor<512x512xf16>) {
  %g = arith.constant 4 : index
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
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<512x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %n = arith.muli %bx, %c128 : index
      %b = tile.region %B[%k, %n] {in_bounds} : !tile.tensor<256x512xf16> -> !tile.tensor<64x128xf16>
      tile.copy %b, %B_s : !tile.tensor<64x128xf16>, !tile.buffer<64x128xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma", clear_accum = true} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x128xf16, shared>, !tile.buffer<128x128xf32, fragment>
    } {kind = "pipelined", num_stages = 4 : i64}
    %m2 = arith.muli %by, %c128 : index
    %n2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%m2, %n2] {in_bounds} : !tile.tensor<512x512xf16> -> !tile.tensor<128x128xf16>
    tile.copy %C_f, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf16>
  }
  func.return
}
