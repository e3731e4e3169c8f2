// RUN: tilec opt %s -p tile-infer-layout,convert-tile-to-thread | filecheck %s

// A tensor at an address read from a pointer table: the address becomes a global pointer
// (llvm.inttoptr), seen as the flat memref the loads and stores address; its run-time row
// count bounds the accesses.
// CHECK-LABEL: func.func @gather_rows
// CHECK-SAME: (%ptrs: memref<?xi64>, %out: memref<?xf16>, %m: i32)
// CHECK: %[[P:.*]] = scf.if
// CHECK: memref.load %ptrs
// CHECK: %[[Q:.*]] = llvm.inttoptr %[[P]] : i64 to !llvm.ptr<1>
// CHECK: %[[A:.*]] = builtin.unrealized_conversion_cast %[[Q]] : !llvm.ptr<1> to memref<?xf16>
// CHECK: arith.cmpi ult
// CHECK: {{memref|vector}}.load %[[A]]
func.func @gather_rows(%ptrs: !tile.tensor<4xi64>, %out: !tile.tensor<4x64xf16>, %m: i32) {
  %c4 = arith.constant 4 : index
  tile.kernel (%bx) in (%c4) threads [64, 1, 1] {
    %p = tile.load %ptrs[%bx] : !tile.tensor<4xi64> -> i64
    %rows = arith.index_cast %m : i32 to index
    %A = tile.make_tensor %p[%rows] : i64 -> !tile.tensor<?x64xf16>
    %c3 = arith.constant 3 : index
    tile.parallel (%j) in [64] {
      %v = tile.load %A[%c3, %j] : !tile.tensor<?x64xf16> -> f16
      tile.store %v, %out[%bx, %j] : f16, !tile.tensor<4x64xf16>
    }
  }
  func.return
}
