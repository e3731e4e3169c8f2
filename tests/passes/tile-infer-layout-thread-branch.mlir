// RUN: tilec opt %s -p tile-infer-layout | filecheck %s

// Whole-tile work on both sides of a branch on the thread index (TileLang's example_mhc_pre,
// `if T.get_thread_binding() < 32: ... else: ...`): each side runs on all 64 threads, the `then`
// side first; the branch is gone.
// CHECK-LABEL: func.func @two_sides
// CHECK-NOT: scf.if
// CHECK: tile.parallel (%i) in [64] {
// CHECK: %one = arith.constant 1.000000e+00 : f32
// CHECK: tile.store %one, %Y[%i]
// CHECK: tile.parallel (%j) in [64] {
// CHECK: %two = arith.constant 2.000000e+00 : f32
// CHECK: tile.store %two, %Z[%j]
// CHECK-NOT: scf.if
func.func @two_sides(%Y: !tile.tensor<64xf32>, %Z: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c32 = arith.constant 32 : index
    %t = tile.thread_id
    %low = arith.cmpi ult, %t, %c32 : index
    scf.if %low {
      tile.parallel (%i) in [64] {
        %one = arith.constant 1.0 : f32
        tile.store %one, %Y[%i] : f32, !tile.tensor<64xf32>
      }
    } else {
      tile.parallel (%j) in [64] {
        %two = arith.constant 2.0 : f32
        tile.store %two, %Z[%j] : f32, !tile.tensor<64xf32>
      }
    }
  }
  func.return
}

// Every one of the 64 threads takes the `then` side of `t < 64`: the `else` side never runs and
// is dropped.
// CHECK-LABEL: func.func @no_thread_takes_else
// CHECK-NOT: scf.if
// CHECK: tile.store %one, %Y[%i]
// CHECK-NOT: %Z[
// CHECK: func.return
func.func @no_thread_takes_else(%Y: !tile.tensor<64xf32>, %Z: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c64 = arith.constant 64 : index
    %t = tile.thread_id
    %low = arith.cmpi ult, %t, %c64 : index
    scf.if %low {
      tile.parallel (%i) in [64] {
        %one = arith.constant 1.0 : f32
        tile.store %one, %Y[%i] : f32, !tile.tensor<64xf32>
      }
    } else {
      tile.parallel (%j) in [64] {
        %two = arith.constant 2.0 : f32
        tile.store %two, %Z[%j] : f32, !tile.tensor<64xf32>
      }
    }
  }
  func.return
}

// Per-thread code keeps its branch: one element, from the thread that takes it.
// CHECK-LABEL: func.func @per_thread
// CHECK: scf.if
// CHECK: tile.store %z, %Y[%c0]
func.func @per_thread(%Y: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %t = tile.thread_id
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      %z = arith.constant 0.0 : f32
      tile.store %z, %Y[%c0] : f32, !tile.tensor<64xf32>
    }
  }
  func.return
}
