// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue{tma_store=false},tile-plan-shared-memory' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue{tma_store=false}' | filecheck %s --check-prefix=PLAIN
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue,tile-plan-shared-memory' | filecheck %s --check-prefix=TMA
// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue' | filecheck %s --check-prefix=TMAPLAIN

// A persistent kernel's result tile of 128x256 f16 (64 KB) goes out through a 32 KB shared tile in
// two column chunks of 128: the producer streams the next tile's stages meanwhile, so the chunk has
// bytes of its own, and four 48 KB stages still fit next to it (a whole 64 KB tile left room for 3).
// CHECK-LABEL: func.func @gemm
// CHECK:       %C_f_out = tile.alloc {swizzle = 128 : i64, offset = 196608 : i64} : !tile.buffer<128x128xf16, shared>
// CHECK:       %A_s = tile.alloc {swizzle = 128 : i64, offset = {{[0-9]+}} : i64} : !tile.buffer<4x128x64xf16, shared>
// CHECK:       %full = tile.alloc_barrier {arrive_count = 1 : i64, offset = {{[0-9]+}} : i64} : !tile.mbarrier<4>
// CHECK:       } consumer {
// CHECK:           tile.gemm_wait %C_f
// CHECK:           %[[L:.*]] = tile.region %C_f[%[[Z:.*]], %[[A0:.*]]] : !tile.buffer<128x256xf32, fragment> -> !tile.buffer<128x128xf32, fragment>
// CHECK-NEXT:      tile.copy %[[L]], %C_f_out
// CHECK-NEXT:      %[[LW:.*]] = tile.region %c[%[[Z]], %[[A0]]] : !tile.tensor<128x256xf16> -> !tile.tensor<128x128xf16>
// CHECK-NEXT:      tile.copy %C_f_out, %[[LW]]
// CHECK-NEXT:      %[[AT:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[R:.*]] = tile.region %C_f[%[[Z]], %[[AT]]] : !tile.buffer<128x256xf32, fragment> -> !tile.buffer<128x128xf32, fragment>
// CHECK-NEXT:      tile.copy %[[R]], %C_f_out
// CHECK-NEXT:      %[[RW:.*]] = tile.region %c[%[[Z]], %[[AT]]] : !tile.tensor<128x256xf16> -> !tile.tensor<128x128xf16>
// CHECK-NEXT:      tile.copy %C_f_out, %[[RW]]
// CHECK:       {smem_bytes = 229440 : i64}

// Not persistent: the whole tile (the planner gives it the bytes of the finished stages).
// PLAIN-LABEL: func.func @gemm
// PLAIN:       %C_f_out = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x256xf16, shared>
// PLAIN:       tile.copy %C_f, %C_f_out
// PLAIN-NEXT:  tile.copy %C_f_out, %c
// By TMA (the default): the chunk tile is laid out in 64-column boxes of 128-byte rows; each chunk
// is written only once the store of the one before (the other chunk, the previous tile's last)
// has read the tile, and the consumers end waiting for the last one.
// TMA-LABEL: func.func @gemm
// TMA:       %C_f_out = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 196608 : i64} : !tile.buffer<128x128xf16, shared>
// TMA:       } consumer {
// TMA:           %[[L:.*]] = tile.region %C_f[%[[Z:.*]], %[[A0:.*]]] : !tile.buffer<128x256xf32, fragment> -> !tile.buffer<128x128xf32, fragment>
// TMA-NEXT:      tile.tma_store_wait %C_f_out : !tile.buffer<128x128xf16, shared>
// TMA-NEXT:      tile.copy %[[L]], %C_f_out
// TMA-NEXT:      %[[LW:.*]] = tile.region %c[%[[Z]], %[[A0]]] : !tile.tensor<128x256xf16> -> !tile.tensor<128x128xf16>
// TMA-NEXT:      tile.tma_store %C_f_out, %[[LW]]
// TMA-NEXT:      %[[AT:.*]] = arith.constant 128 : index
// TMA-NEXT:      %[[R:.*]] = tile.region %C_f[%[[Z]], %[[AT]]] : !tile.buffer<128x256xf32, fragment> -> !tile.buffer<128x128xf32, fragment>
// TMA-NEXT:      tile.tma_store_wait %C_f_out : !tile.buffer<128x128xf16, shared>
// TMA-NEXT:      tile.copy %[[R]], %C_f_out
// TMA-NEXT:      %[[RW:.*]] = tile.region %c[%[[Z]], %[[AT]]] : !tile.tensor<128x256xf16> -> !tile.tensor<128x128xf16>
// TMA-NEXT:      tile.tma_store %C_f_out, %[[RW]]
// TMA:         tile.tma_store_wait %C_f_out {final}
// TMA:       {smem_bytes = 229440 : i64}

// TMAPLAIN-LABEL: func.func @gemm
// TMAPLAIN:       %C_f_out = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<128x256xf16, shared>
// TMAPLAIN:       tile.copy %C_f, %C_f_out
// TMAPLAIN-NEXT:  tile.tma_store %C_f_out, %c
// TMAPLAIN-NEXT:  tile.tma_store_wait %C_f_out {final}
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
