// RUN: tilec opt %s -p tile-infer-layout --split-input-file --verify-diagnostics

// One row vector read by loops over two gemm accumulators of different thread shapes:
// it would need the rows of both layouts (each loop has a fragment of its own rank, so
// neither can follow the row vector instead).
func.func @conflict() {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x16xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %b2 = tile.alloc : !tile.buffer<16x8xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %acc2 = tile.alloc : !tile.buffer<64x8xf32, fragment>
    %rows = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.gemm %a, %b, %acc : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b2, %acc2 : !tile.buffer<64x16xf16, shared>, !tile.buffer<16x8xf16, shared>, !tile.buffer<64x8xf32, fragment>
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
    // expected-error@+1 {{is used with incompatible thread layouts}}
    tile.parallel (%i, %j) in [64, 8] {
      %v = tile.load %acc2[%i, %j] : !tile.buffer<64x8xf32, fragment> -> f32
      %r = tile.load %rows[%i] : !tile.buffer<64xf32, fragment> -> f32
      %s = arith.addf %v, %r : f32
      tile.store %s, %acc2[%i, %j] : f32, !tile.buffer<64x8xf32, fragment>
    }
  }
  func.return
}
