// RUN: tilec opt %s | tilec opt - | filecheck %s
// RUN: tilec opt %s --generic | tilec opt - | filecheck %s

// tile.atomic's optional result: the element's old value (`return_prev=True`), in the custom
// form (`-> type`) and through the generic form.
// CHECK-LABEL: func.func @prev
// CHECK:       %{{.*}} = tile.atomic %{{.*}}[%{{.*}}], %{{.*}} {kind = "add"} : !tile.tensor<64xi32>, i32 -> i32
// CHECK:       tile.atomic %{{.*}}[%{{.*}}], %{{.*}} {kind = "max"} : !tile.tensor<64xi32>, i32{{$}}
func.func @prev(%C: !tile.tensor<64xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %one = arith.constant 1 : i32
    %old = tile.atomic %C[%bx], %one {kind = "add"} : !tile.tensor<64xi32>, i32 -> i32
    tile.atomic %C[%bx], %old {kind = "max"} : !tile.tensor<64xi32>, i32
  }
  func.return
}
