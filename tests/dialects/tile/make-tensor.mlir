// RUN: tilec opt %s | tilec opt - | filecheck %s
// RUN: tilec opt %s --generic | tilec opt - | filecheck %s
// RUN: tilec opt %s --generic | filecheck %s --check-prefix=GENERIC

// tile.make_tensor: a tensor at an address loaded from a pointer table, one run-time size
// for its `?` dim; and a static one at a scalar address.
// CHECK-LABEL: func.func @pointer_tables
// CHECK:       %[[P:.*]] = tile.load %{{.*}}[%{{.*}}] : !tile.tensor<3xi64> -> i64
// CHECK:       tile.make_tensor %[[P]][%{{.*}}] : i64 -> !tile.tensor<?x64xf16>
// CHECK:       tile.make_tensor %{{.*}}[] : i64 -> !tile.tensor<8x8xf32>
// GENERIC:     "tile.make_tensor"(%{{.*}}, %{{.*}}) : (i64, index) -> !tile.tensor<?x64xf16>
func.func @pointer_tables(%ptrs: !tile.tensor<3xi64>, %q: i64, %m: index) {
  %g = arith.constant 3 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %p = tile.load %ptrs[%bx] : !tile.tensor<3xi64> -> i64
    %A = tile.make_tensor %p[%m] : i64 -> !tile.tensor<?x64xf16>
    %B = tile.make_tensor %q[] : i64 -> !tile.tensor<8x8xf32>
  }
  func.return
}
