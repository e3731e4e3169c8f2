// RUN: tilec opt %s -p 'tile-warp-specialize,tile-stage-epilogue' | filecheck %s
// RUN: tilec opt %s -p 'tile-warp-specialize{persistent=true},tile-stage-epilogue' | filecheck %s --check-prefix=PERSIST

// Attention's result goes to `Out[bz, rows, by, :]`, a region of four dims of which two are 1:
// it is staged as a 2-D tile (16-byte stores, not the fragment's 4-byte pairs).
// CHECK-LABEL: func.func @unit_dims
// CHECK:       %C_f_out = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x64xf16, shared>
// CHECK:       tile.copy %C_f, %C_f_out : !tile.buffer<128x64xf32, fragment>, !tile.buffer<128x64xf16, shared>
// CHECK-NEXT:  tile.copy %C_f_out, %c : !tile.buffer<128x64xf16, shared>, !tile.tensor<1x128x1x64xf16>

// A persistent kernel also stages it (one chunk: 16 KB).
// PERSIST-LABEL: func.func @unit_dims
// PERSIST:       tile.copy %C_f_out, %c : !tile.buffer<128x64xf16, shared>, !tile.tensor<1x128x1x64xf16>
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
