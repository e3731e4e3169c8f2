// RUN: tilec opt %s -p tile-legalize-bounds,tile-infer-layout,convert-tile-to-thread | filecheck %s

// TileLang's raw per-thread cp.async: each thread's own cp.async, at the address of its shared
// element under the buffer's layout.

// A 128-byte swizzled buffer: the shared address is the XOR swizzle of the element's byte
// address; the run is proven inside the tensor, so the copy reads unconditionally (no cp-size);
// 16 bytes go as `.cg`.
// CHECK-LABEL: func.func @swizzled_run
// CHECK:       arith.xori
// CHECK-NOT:   arith.select
// CHECK:       "nvvm.cp.async.shared.global"(%{{.*}}, %{{.*}}) <{size = 16 : i32, modifier = #nvvm.load_cache_modifier<cg>}> : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
func.func @swizzled_run(%A: !tile.tensor<16x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %t = tile.thread_id
    %c8 = arith.constant 8 : index
    %row = arith.floordivsi %t, %c8 : index
    %q = arith.remsi %t, %c8 : index
    %col = arith.muli %q, %c8 : index
    %s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<16x64xf16, shared>
    tile.cp_async %A[%row, %col], %s[%row, %col] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
  }
  func.return
}

// A run-time row (read from memory) and a predicate: the copy reads only where both hold
// (cp-size 8, else 0: the run is zero-filled); 8 bytes go as `.ca`.
// CHECK-LABEL: func.func @predicated_run
// CHECK:       arith.cmpi ult, %row
// CHECK:       %[[BOTH:.*]] = arith.andi %{{.*}}, %even : i1
// CHECK:       %[[SIZE:.*]] = arith.select %[[BOTH]], %{{.*}}, %{{.*}} : i32
// CHECK:       "nvvm.cp.async.shared.global"(%{{.*}}, %{{.*}}, %[[SIZE]]) <{size = 8 : i32, modifier = #nvvm.load_cache_modifier<ca>}>
func.func @predicated_run(%A: !tile.tensor<16x64xf16>, %rows: !tile.tensor<128xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %t = tile.thread_id
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %r = tile.load %rows[%t] : !tile.tensor<128xi32> -> i32
    %row = arith.index_cast %r : i32 to index
    %q = arith.remsi %t, %c8 : index
    %col = arith.muli %q, %c8 : index
    %even = arith.cmpi eq, %q, %c0 : index
    %s = tile.alloc : !tile.buffer<1x64xf16, shared>
    tile.cp_async %A[%row, %col], %s[%c0, %col] if %even {elements = 4 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<1x64xf16, shared>
  }
  func.return
}

// The arrival once the thread's copies have landed, on element 1 of a barrier array.
// CHECK-LABEL: func.func @arrive
// CHECK:       "nvvm.cp.async.mbarrier.arrive.shared"(%{{.*}}) <{noinc}> : (!llvm.ptr<3>) -> ()
func.func @arrive() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier<2>
    %c1 = arith.constant 1 : index
    tile.cp_async_arrive %b[%c1] : !tile.mbarrier<2>
  }
  func.return
}
