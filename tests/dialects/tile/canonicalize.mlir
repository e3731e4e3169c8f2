// RUN: tilec opt %s -p canonicalize | filecheck %s

// A copy of a buffer onto itself has no effect and is erased.
// CHECK-LABEL: func.func @copy_self
// CHECK-NOT:   tile.copy
func.func @copy_self() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    tile.copy %s, %s : !tile.buffer<64x32xf16, shared>, !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// A copy between two distinct buffers of the same type is kept.
// CHECK-LABEL: func.func @negative_copy_self_distinct_buffers
// CHECK:       %[[A:.*]] = tile.alloc : !tile.buffer<64x32xf16, shared>
// CHECK:       %[[B:.*]] = tile.alloc : !tile.buffer<64x32xf16, shared>
// CHECK:       tile.copy %[[A]], %[[B]]
func.func @negative_copy_self_distinct_buffers() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<64x32xf16, shared>
    tile.copy %a, %b : !tile.buffer<64x32xf16, shared>, !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// A copy from a region of a tensor into a buffer is kept even when the two
// have the same shape.
// CHECK-LABEL: func.func @negative_copy_self_region
// CHECK:       tile.copy %{{.*}}, %{{.*}} : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
func.func @negative_copy_self_region(%A: !tile.tensor<256x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %a = tile.region %A[%bx, %c0] : !tile.tensor<256x32xf16> -> !tile.tensor<64x32xf16>
    tile.copy %a, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// Index arithmetic on constants folds to one constant, which the region uses.
// CHECK-LABEL: func.func @arith_constants_fold
// CHECK:       %[[C192:.*]] = arith.constant 192 : index
// CHECK-NOT:   arith.muli
// CHECK-NOT:   arith.addi
// CHECK:       tile.region %{{.*}}[%[[C192]], %{{.*}}]
func.func @arith_constants_fold(%A: !tile.tensor<256x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %mul = arith.muli %c2, %c64 : index
    %row = arith.addi %mul, %c64 : index
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %a = tile.region %A[%row, %c0] : !tile.tensor<256x32xf16> -> !tile.tensor<64x32xf16>
    tile.copy %a, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// Float constants fold too; the fill takes the folded value.
// CHECK-LABEL: func.func @arith_float_constants_fold
// CHECK:       %[[V:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NOT:   arith.addf
// CHECK:       tile.fill %{{.*}}, %[[V]]
func.func @arith_float_constants_fold() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %three = arith.addf %one, %two : f32
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.fill %f, %three : !tile.buffer<64xf32, fragment>, f32
  }
  func.return
}
