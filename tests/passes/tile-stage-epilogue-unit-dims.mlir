// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue' | filecheck %s --check-prefix=PERSIST
// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue{tma_store=false}' | filecheck %s --check-prefix=STG

// Attention's result goes to `Out[bz, rows, by, :]`, a region of four dims of which two are 1:
// it is staged as a 2-D tile and leaves by a TMA store (one 128-byte-wide box of the four dims:
// the tensor's strides are multiples of 16 bytes); the consumers' last op waits for the store to
// have read the tile.
// CHECK-LABEL: func.func @unit_dims
// CHECK:       %C_f_out = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
// CHECK:       } consumer {
// CHECK-NOT:   tile.tma_store_wait
// CHECK:       tile.copy %C_f, %C_f_out : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, shared>
// CHECK-NEXT:  tile.tma_store %C_f_out, %c : !tile.buffer<128x64xf16, shared>, !tile.tensor<1x128x1x64xf16>
// CHECK-NEXT:  tile.tma_store_wait %C_f_out {final} : !tile.buffer<128x64xf16, shared>
// CHECK-NEXT:  }

// A persistent kernel also stages it (one chunk: 16 KB); before the tile is written for the next
// query tile, the previous tile's store must have read it.
// PERSIST-LABEL: func.func @unit_dims
// PERSIST:       tile.persistent
// PERSIST:       tile.tma_store_wait %C_f_out : !tile.buffer<128x64xf16, shared>
// PERSIST-NEXT:  tile.copy %C_f, %C_f_out
// PERSIST-NEXT:  tile.tma_store %C_f_out, %c : !tile.buffer<128x64xf16, shared>, !tile.tensor<1x128x1x64xf16>
// PERSIST:       tile.tma_store_wait %C_f_out {final}

// Without TMA stores (`tilec.tma_store=False`): the consumers' 16-byte stores of the staged tile.
// STG-LABEL: func.func @unit_dims
// STG:       tile.copy %C_f, %C_f_out : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, shared>
// STG-NEXT:  tile.copy %C_f_out, %c : !tile.buffer<128x64xf16, shared>, !tile.tensor<1x128x1x64xf16>
// STG-NOT:   tile.tma_store

func.func @unit_dims(%A: !tile.tensor<512x256xf16>, %B: !tile.tensor<256x64xf16>, %C: !tile.tensor<2x512x4x64xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%g, %g) threads [256, 1, 1] {
    %A_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
    %B_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<64x64xf16, shared>
    %C_f = tile.alloc : !tile.buffer<128x64xf32, fragment>
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    tile.fill %C_f, %zero : !tile.buffer<128x64xf32, fragment>, f32
    tile.for %ko = %c0 to %c4 step %c1 {
      %m = arith.muli %bx, %c128 : index
      %k = arith.muli %ko, %c64 : index
      %a = tile.region %A[%m, %k] {in_bounds} : !tile.tensor<512x256xf16> -> !tile.tensor<128x64xf16>
      tile.copy %a, %A_s : !tile.tensor<128x64xf16>, !tile.buffer<128x64xf16, shared>
      %b = tile.region %B[%k, %c0] {in_bounds} : !tile.tensor<256x64xf16> -> !tile.tensor<64x64xf16>
      tile.copy %b, %B_s : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
      tile.gemm %A_s, %B_s, %C_f {mma = "wgmma"} : !tile.buffer<128x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<128x64xf32, fragment>
    } {kind = "pipelined", num_stages = 2 : i64}
    %m2 = arith.muli %bx, %c128 : index
    %c = tile.region %C[%c1, %m2, %by, %c0] {in_bounds} : !tile.tensor<2x512x4x64xf16> -> !tile.tensor<1x128x1x64xf16>
    tile.copy %C_f, %c : !tile.buffer<128x64xf32, fragment>, !tile.tensor<1x128x1x64xf16>
  }
  func.return
}
