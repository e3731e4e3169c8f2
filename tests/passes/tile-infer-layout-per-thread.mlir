// RUN: tilec opt %s -p tile-infer-layout | filecheck %s

// A fragment that each thread fills outside T.Parallel with values of its own (read through its
// thread index) is each thread's whole buffer: a local buffer, no layout and no shared trip
// (a shared copy would keep one thread's values for all: TileLang's sparse MLA seesaw prefetch).
// CHECK-LABEL: func.func @per_thread_prefetch
// CHECK: %f = tile.alloc : !tile.buffer<4xi32, local>
// CHECK-NOT: shared
// CHECK: tile.store %{{.*}}, %f[%r] : i32, !tile.buffer<4xi32, local>
// CHECK: tile.load %f[%r{{.*}}] : !tile.buffer<4xi32, local> -> i32
func.func @per_thread_prefetch(%Idx: !tile.tensor<512xi32>, %Out: !tile.tensor<512xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %f = tile.alloc : !tile.buffer<4xi32, fragment>
    %t = tile.thread_id
    %base = arith.muli %t, %c4 : index
    tile.for %r = %c0 to %c4 step %c1 {
      %k = arith.addi %base, %r : index
      %v = tile.load %Idx[%k] : !tile.tensor<512xi32> -> i32
      tile.store %v, %f[%r] : i32, !tile.buffer<4xi32, fragment>
    }
    tile.for %r2 = %c0 to %c4 step %c1 {
      %k2 = arith.addi %base, %r2 : index
      %w = tile.load %f[%r2] : !tile.buffer<4xi32, fragment> -> i32
      tile.store %w, %Out[%k2] : i32, !tile.tensor<512xi32>
    }
  }
  func.return
}

// A fragment filled the same way by every thread (no thread index): the shared trip as before.
// CHECK-LABEL: func.func @uniform_scalar_code
// CHECK: %f = tile.alloc {layout
// CHECK: %f_shared = tile.alloc : !tile.buffer<4xi32, shared>
func.func @uniform_scalar_code(%Idx: !tile.tensor<512xi32>, %Out: !tile.tensor<512xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %f = tile.alloc : !tile.buffer<4xi32, fragment>
    tile.for %r = %c0 to %c4 step %c1 {
      %v = tile.load %Idx[%r] : !tile.tensor<512xi32> -> i32
      tile.store %v, %f[%r] : i32, !tile.buffer<4xi32, fragment>
    }
    tile.for %r2 = %c0 to %c4 step %c1 {
      %w = tile.load %f[%r2] : !tile.buffer<4xi32, fragment> -> i32
      tile.store %w, %Out[%r2] : i32, !tile.tensor<512xi32>
    }
  }
  func.return
}
