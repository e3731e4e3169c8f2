// RUN: tilec opt %s | tilec opt - | filecheck %s
// RUN: tilec opt %s --generic | tilec opt - | filecheck %s
// RUN: tilec opt %s --generic | filecheck %s --check-prefix=GENERIC

// Round trip of every tile op and type: the custom form, and the generic form
// parsed back, both print the same custom form. (`tilec opt -` reads stdin;
// plain `tilec opt` does not yet, see tests/e2e/test_cli.py.)

// The kernel launch: 1-D to 3-D grids, the block shape, and extra attributes.
// CHECK-LABEL: func.func @kernel_grids
// CHECK:       tile.kernel (%[[BX:.*]]) in (%[[N:.*]]) threads [128, 1, 1] {
// CHECK:       tile.kernel (%{{.*}}, %{{.*}}) in (%[[N]], %[[N]]) threads [32, 4, 1] {
// CHECK:       tile.kernel (%{{.*}}, %{{.*}}, %{{.*}}) in (%[[N]], %[[N]], %[[N]]) threads [8, 8, 2] {
// CHECK:       } {tilec.note = "kept"}
func.func @kernel_grids() {
  %n = arith.constant 4 : index
  tile.kernel (%bx) in (%n) threads [128, 1, 1] {
  }
  tile.kernel (%bx, %by) in (%n, %n) threads [32, 4, 1] {
  }
  tile.kernel (%bx, %by, %bz) in (%n, %n, %n) threads [8, 8, 2] {
  } {tilec.note = "kept"}
  func.return
}

// Loops: tile.parallel over 1 and 2 extents; tile.for of each kind. The
// default kind `serial` is not printed; the pipelining options are.
// CHECK-LABEL: func.func @loops
// CHECK:       tile.parallel (%{{.*}}) in [64] {
// CHECK:       tile.parallel (%[[I:.*]], %[[J:.*]]) in [4, 512] {
// CHECK:       tile.for %{{.*}} = %[[LB:.*]] to %[[UB:.*]] step %[[STEP:.*]] {
// CHECK-NEXT:  }{{$}}
// CHECK-NOT:   kind = "serial"
// CHECK:       tile.for %{{.*}} = %[[LB]] to %[[UB]] step %[[STEP]] {
// CHECK:       } {kind = "pipelined", num_stages = 3 : i64, order = array<i64: 0, 2, 1>, stage = array<i64: 0, 0, 1>}
// CHECK:       } {kind = "unroll"}
// CHECK:       } {kind = "vectorized"}
func.func @loops() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    tile.parallel (%i) in [64] {
    }
    tile.parallel (%i, %j) in [4, 512] {
    }
    tile.for %k = %c0 to %c8 step %c1 {
    }
    tile.for %k = %c0 to %c8 step %c1 {
    } {kind = "pipelined", num_stages = 3 : i64, order = array<i64: 0, 2, 1>, stage = array<i64: 0, 0, 1>}
    tile.for %k = %c0 to %c8 step %c1 {
    } {kind = "unroll"}
    tile.for %k = %c0 to %c8 step %c1 {
    } {kind = "vectorized"}
  }
  func.return
}

// Buffers of each scope, a tensor with run-time sizes (`?`), regions of a
// tensor and of a buffer, the size of a tensor dimension, and reshape; a
// #tile.fragment layout rides along as a discardable attribute.
// CHECK-LABEL: func.func @buffers_and_regions
// CHECK-SAME:  (%[[A:.*]]: !tile.tensor<256x128xf16>, %[[D:.*]]: !tile.tensor<?x?xf32>)
// CHECK:       %[[S:.*]] = tile.alloc : !tile.buffer<64x32xf16, shared>
// CHECK:       tile.alloc {layout = #tile.fragment<"(8s4,8t16)x(16t1,4s1)|r()">} : !tile.buffer<64x64xf32, fragment>
// CHECK:       tile.alloc : !tile.buffer<8xi32, local>
// CHECK:       tile.region %[[A]][%{{.*}}, %{{.*}}] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
// CHECK:       tile.region %[[S]][%{{.*}}, %{{.*}}] : !tile.buffer<64x32xf16, shared> -> !tile.buffer<16x32xf16, shared>
// CHECK:       tile.dim %[[A]] {dim = 1 : i64} : !tile.tensor<256x128xf16>
// CHECK:       tile.dim %[[D]] {dim = 0 : i64} : !tile.tensor<?x?xf32>
// CHECK:       tile.region %[[D]][%{{.*}}, %{{.*}}] : !tile.tensor<?x?xf32> -> !tile.tensor<64x64xf32>
// CHECK:       tile.reshape %[[S]] : !tile.buffer<64x32xf16, shared> -> !tile.buffer<2048xf16, shared>
// CHECK:       tile.reshape %[[A]] : !tile.tensor<256x128xf16> -> !tile.tensor<128x256xf16>
func.func @buffers_and_regions(%A: !tile.tensor<256x128xf16>, %D: !tile.tensor<?x?xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %f = tile.alloc {layout = #tile.fragment<"(8s4,8t16)x(16t1,4s1)|r()">} : !tile.buffer<64x64xf32, fragment>
    %l = tile.alloc : !tile.buffer<8xi32, local>
    %a = tile.region %A[%bx, %c0] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
    %r = tile.region %s[%c16, %c0] : !tile.buffer<64x32xf16, shared> -> !tile.buffer<16x32xf16, shared>
    %n = tile.dim %A {dim = 1 : i64} : !tile.tensor<256x128xf16>
    %m = tile.dim %D {dim = 0 : i64} : !tile.tensor<?x?xf32>
    %d = tile.region %D[%bx, %c0] : !tile.tensor<?x?xf32> -> !tile.tensor<64x64xf32>
    %flat = tile.reshape %s : !tile.buffer<64x32xf16, shared> -> !tile.buffer<2048xf16, shared>
    %t = tile.reshape %A : !tile.tensor<256x128xf16> -> !tile.tensor<128x256xf16>
  }
  func.return
}

// Element access: load and store, on a fragment and on a global tensor.
// CHECK-LABEL: func.func @element_access
// CHECK:       %[[V:.*]] = tile.load %[[X:.*]][%[[I:.*]], %[[J:.*]]] : !tile.buffer<4x512xf32, fragment> -> f32
// CHECK:       tile.store %[[V]], %[[X]][%[[I]], %[[J]]] : f32, !tile.buffer<4x512xf32, fragment>
// CHECK:       %[[E:.*]] = tile.load %{{.*}}[%{{.*}}] : !tile.tensor<64xbf16> -> bf16
// CHECK:       tile.store %[[E]], %{{.*}}[%{{.*}}] : bf16, !tile.tensor<64xbf16>
func.func @element_access(%B: !tile.tensor<64xbf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x512xf32, fragment>
    tile.parallel (%i, %j) in [4, 512] {
      %v = tile.load %x[%i, %j] : !tile.buffer<4x512xf32, fragment> -> f32
      tile.store %v, %x[%i, %j] : f32, !tile.buffer<4x512xf32, fragment>
    }
    tile.parallel (%i) in [64] {
      %e = tile.load %B[%i] : !tile.tensor<64xbf16> -> bf16
      tile.store %e, %B[%i] : bf16, !tile.tensor<64xbf16>
    }
  }
  func.return
}

// Tile ops: copy (with unit dimensions and a dtype conversion), gemm with its
// defaults and with every option, fill, reduce, cumsum, cummax (whose default dim = 0 is not printed).
// CHECK-LABEL: func.func @tile_ops
// CHECK:       tile.copy %{{.*}}, %[[AS:.*]] : !tile.tensor<1x64x32xf16>, !tile.buffer<64x32xf16, shared>
// CHECK:       tile.copy %[[C:.*]], %{{.*}} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf16, shared>
// CHECK:       tile.gemm %[[AS]], %[[BS:.*]], %[[C]] : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
// CHECK:       tile.gemm %[[AT:.*]], %[[BT:.*]], %[[C]] {transpose_a = true, transpose_b = true, clear_accum = true, policy = "full_row", k_pack = 2 : i64} :
// CHECK-SAME:    !tile.buffer<32x64xf16, shared>, !tile.buffer<64x32xf16, fragment>, !tile.buffer<64x64xf32, fragment>
// CHECK:       tile.fill %[[C]], %{{.*}} : !tile.buffer<64x64xf32, fragment>, f32
// CHECK:       tile.reduce %[[C]], %[[M:.*]] {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64xf32, fragment>
// CHECK:       tile.reduce %[[C]], %[[M]] {kind = "abssum", dim = 0 : i64, clear = false}
// CHECK:       tile.cumsum %[[C]], %{{.*}} {dim = 1 : i64, reverse = true} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf32, fragment>
// CHECK:       tile.cummax %[[M]], %[[M]] : !tile.buffer<64xf32, fragment>, !tile.buffer<64xf32, fragment>
func.func @tile_ops(%A: !tile.tensor<4x64x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %as = tile.alloc : !tile.buffer<64x32xf16, shared>
    %bs = tile.alloc : !tile.buffer<32x64xf16, shared>
    %at = tile.alloc : !tile.buffer<32x64xf16, shared>
    %bt = tile.alloc : !tile.buffer<64x32xf16, fragment>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %cs = tile.alloc : !tile.buffer<64x64xf16, shared>
    %m = tile.alloc : !tile.buffer<64xf32, fragment>
    %y = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %a = tile.region %A[%bx, %c0, %c0] : !tile.tensor<4x64x32xf16> -> !tile.tensor<1x64x32xf16>
    tile.copy %a, %as : !tile.tensor<1x64x32xf16>, !tile.buffer<64x32xf16, shared>
    tile.copy %c, %cs : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf16, shared>
    tile.gemm %as, %bs, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    tile.gemm %at, %bt, %c {transpose_a = true, transpose_b = true, clear_accum = true, policy = "full_row", k_pack = 2 : i64} : !tile.buffer<32x64xf16, shared>, !tile.buffer<64x32xf16, fragment>, !tile.buffer<64x64xf32, fragment>
    tile.fill %c, %zero : !tile.buffer<64x64xf32, fragment>, f32
    tile.reduce %c, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64xf32, fragment>
    tile.reduce %c, %m {kind = "abssum", dim = 0 : i64, clear = false} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64xf32, fragment>
    tile.cumsum %c, %y {dim = 1 : i64, reverse = true} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf32, fragment>
    tile.cummax %m, %m : !tile.buffer<64xf32, fragment>, !tile.buffer<64xf32, fragment>
  }
  func.return
}

// Atomics: one element of a tensor, and a whole shared tile.
// CHECK-LABEL: func.func @atomics
// CHECK:       tile.atomic %{{.*}}[%{{.*}}], %{{.*}} {kind = "add"} : !tile.tensor<64xf32>, f32
// CHECK:       tile.atomic %{{.*}}[], %{{.*}} {kind = "max"} : !tile.buffer<64xf32, shared>, !tile.buffer<64xf32, fragment>
func.func @atomics(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %one = arith.constant 1.0 : f32
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.atomic %C[%bx], %one {kind = "add"} : !tile.tensor<64xf32>, f32
    tile.atomic %s[], %f {kind = "max"} : !tile.buffer<64xf32, shared>, !tile.buffer<64xf32, fragment>
  }
  func.return
}

// Annotations, synchronization and debugging ops, the mbarrier type and the
// three swizzle widths.
// CHECK-LABEL: func.func @annotations_and_sync
// CHECK:       tile.use_swizzle {panel_size = 10 : i64, order = "col"}
// CHECK:       tile.annotate_layout %[[S:.*]] {layout = #tile.swizzle<128>} : !tile.buffer<64x64xf16, shared>
// CHECK:       tile.annotate_layout %{{.*}} {layout = #tile.swizzle<64>}
// CHECK:       tile.annotate_layout %{{.*}} {layout = #tile.swizzle<32>}
// CHECK:       tile.barrier
// CHECK:       %[[B:.*]] = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier
// CHECK:       tile.mbarrier_arrive %[[B]] : !tile.mbarrier
// CHECK:       tile.mbarrier_wait_parity %[[B]], %{{.*}} : !tile.mbarrier
// CHECK:       tile.tma_store %[[S]], %{{.*}} : !tile.buffer<64x64xf16, shared>, !tile.tensor<1x64x1x64xf16>
// CHECK:       tile.tma_store_wait %[[S]] : !tile.buffer<64x64xf16, shared>
// CHECK:       tile.tma_store_wait %[[S]] {final} : !tile.buffer<64x64xf16, shared>
// CHECK:       tile.thread_id {dim = 1 : i64}
// CHECK:       tile.print {msg = "here"}
// CHECK:       tile.print %{{.*}} : f32 {msg = "v"}
// CHECK:       tile.print %[[S]] : !tile.buffer<64x64xf16, shared>{{$}}
// CHECK:       tile.device_assert %{{.*}} {msg = "ok"}
func.func @annotations_and_sync(%O: !tile.tensor<2x256x4x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %v = arith.constant 1.0 : f32
    %t = arith.constant true
    tile.use_swizzle {panel_size = 10 : i64, order = "col"}
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s64 = tile.alloc : !tile.buffer<32x32xf16, shared>
    %s32 = tile.alloc : !tile.buffer<16x16xf16, shared>
    tile.annotate_layout %s {layout = #tile.swizzle<128>} : !tile.buffer<64x64xf16, shared>
    tile.annotate_layout %s64 {layout = #tile.swizzle<64>} : !tile.buffer<32x32xf16, shared>
    tile.annotate_layout %s32 {layout = #tile.swizzle<32>} : !tile.buffer<16x16xf16, shared>
    tile.barrier
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier
    tile.mbarrier_arrive %b : !tile.mbarrier
    tile.mbarrier_wait_parity %b, %c0 : !tile.mbarrier
    %o = tile.region %O[%c0, %c0, %c0, %c0] : !tile.tensor<2x256x4x64xf16> -> !tile.tensor<1x64x1x64xf16>
    tile.tma_store %s, %o : !tile.buffer<64x64xf16, shared>, !tile.tensor<1x64x1x64xf16>
    tile.tma_store_wait %s : !tile.buffer<64x64xf16, shared>
    tile.tma_store_wait %s {final} : !tile.buffer<64x64xf16, shared>
    %tx = tile.thread_id {dim = 1 : i64}
    tile.print {msg = "here"}
    tile.print %v : f32 {msg = "v"}
    tile.print %s : !tile.buffer<64x64xf16, shared> {msg = ""}
    tile.device_assert %t {msg = "ok"}
  }
  func.return
}

// TileLang's raw per-thread cp.async: a run of a global tensor into a shared buffer, with a
// predicate and a proven-in-bounds source, and the arrival once the thread's copies landed.
// CHECK-LABEL: func.func @raw_cp_async
// CHECK:       tile.cp_async %{{.*}}[%[[R:.*]], %[[C:.*]]], %[[S:.*]][%[[R]], %[[C]]] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
// CHECK:       tile.cp_async %{{.*}}[%[[R]], %[[C]]], %[[S]][%[[R]], %[[C]]] if %{{.*}} {elements = 2 : i64, in_bounds} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
// CHECK:       tile.cp_async_arrive %{{.*}}[%[[R]]] : !tile.mbarrier<2>
// CHECK:       tile.cp_async_arrive %{{.*}} : !tile.mbarrier
// GENERIC-LABEL: sym_name = "raw_cp_async"
// GENERIC:     "tile.cp_async"(%{{.*}}) <{elements = 8 : i64, operandSegmentSizes = array<i32: 1, 2, 1, 2, 0>}>
// GENERIC:     "tile.cp_async"(%{{.*}}) <{elements = 2 : i64, in_bounds, operandSegmentSizes = array<i32: 1, 2, 1, 2, 1>}>
func.func @raw_cp_async(%A: !tile.tensor<16x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %r = arith.constant 1 : index
    %c = arith.constant 8 : index
    %p = arith.constant true
    %s = tile.alloc : !tile.buffer<16x64xf16, shared>
    tile.cp_async %A[%r, %c], %s[%r, %c] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
    tile.cp_async %A[%r, %c], %s[%r, %c] if %p {elements = 2 : i64, in_bounds} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
    %bars = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier<2>
    tile.cp_async_arrive %bars[%r] : !tile.mbarrier<2>
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier
    tile.cp_async_arrive %b : !tile.mbarrier
  }
  func.return
}

// Element types of tensors and buffers: every dtype of the surface.
// CHECK-LABEL: func.func @element_types
// CHECK-SAME:  !tile.tensor<8xf16>, %{{.*}}: !tile.tensor<8xbf16>, %{{.*}}: !tile.tensor<8xf32>, %{{.*}}: !tile.tensor<8xf64>
// CHECK-SAME:  !tile.tensor<8xi8>, %{{.*}}: !tile.tensor<8xi16>, %{{.*}}: !tile.tensor<8xi32>, %{{.*}}: !tile.tensor<8xi64>
// CHECK-SAME:  !tile.tensor<8xui8>, %{{.*}}: !tile.tensor<8xi1>, %{{.*}}: !tile.tensor<8xf8E4M3FN>
func.func @element_types(%a: !tile.tensor<8xf16>, %b: !tile.tensor<8xbf16>, %c: !tile.tensor<8xf32>, %d: !tile.tensor<8xf64>, %e: !tile.tensor<8xi8>, %f: !tile.tensor<8xi16>, %g: !tile.tensor<8xi32>, %h: !tile.tensor<8xi64>, %i: !tile.tensor<8xui8>, %j: !tile.tensor<8xi1>, %k: !tile.tensor<8xf8E4M3FN>) {
  func.return
}

// The facts passes hand each other, as typed properties (the pass contract): the shared layout
// and offset of an allocation, the fragment layout, `in_bounds`, `async`, the mma kind and the
// wgmma facts of a gemm, the stages of a transformed loop, why a loop was not warp-specialized,
// the kernel's shared-memory total. The custom form spells enums as strings; the generic form
// holds the typed enum attributes.
// CHECK-LABEL: func.func @pass_facts
// CHECK:       tile.alloc {swizzle = 64 : i64, offset = 0 : i64} : !tile.buffer<2x64x32xf16, shared>
// CHECK:       tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 8192 : i64} : !tile.buffer<32x128xf16, shared>
// CHECK:       tile.alloc {layout = #tile.fragment<"(4t32,2s2,8t4)x(16s4,4t1,2s1)|r()">} : !tile.buffer<64x128xf32, fragment>
// CHECK:       tile.region %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds} : !tile.tensor<128x64xf16> -> !tile.tensor<64x32xf16>
// CHECK:       tile.copy %{{.*}}, %{{.*}} {async} : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
// CHECK:       tile.load %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds} : !tile.tensor<128x64xf16> -> f16
// CHECK:       tile.gemm %{{.*}}, %{{.*}}, %{{.*}} {mma = "wgmma", in_flight = 1 : i64, zero_on_entry} :
// CHECK:       } {pipelined_stages = 2 : i64}
// CHECK:       } {kind = "pipelined", num_stages = 2 : i64, not_warp_specialized = "the loop writes global memory"}
// CHECK:       } {layout = #tile.fragment<"(4t32,2s2,8t4)x(16s4,4t1,2s1)|r()">}
// CHECK:       } {smem_bytes = 16384 : i64}
// GENERIC-LABEL: sym_name = "pass_facts"
// GENERIC:     "tile.kernel"(%{{.*}}) <{threads = array<i64: 128, 1, 1>, smem_bytes = 16384 : i64}>
// GENERIC:     "tile.for"(%{{.*}}) <{pipelined_stages = 2 : i64, kind = #tile<loop_kind serial>}>
// GENERIC:     "tile.gemm"(%{{.*}}) <{mma = #tile<mma_kind wgmma>, in_flight = 1 : i64, zero_on_entry, {{.*}}policy = #tile<gemm_policy square>
// GENERIC:     "tile.for"(%{{.*}}) <{kind = #tile<loop_kind pipelined>
// GENERIC:     "tile.reduce"(%{{.*}}) <{kind = #tile<reduce_kind sum>
// GENERIC:     "tile.atomic"(%{{.*}}) <{kind = #tile<atomic_kind min>}>
// GENERIC:     "tile.use_swizzle"() <{panel_size = 4 : i64, order = #tile<raster_order col>}>
func.func @pass_facts(%A: !tile.tensor<128x64xf16>, %C: !tile.tensor<64x64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %a = tile.alloc {swizzle = 64 : i64, offset = 0 : i64} : !tile.buffer<2x64x32xf16, shared>
    %b = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 8192 : i64} : !tile.buffer<32x128xf16, shared>
    %acc = tile.alloc {layout = #tile.fragment<"(4t32,2s2,8t4)x(16s4,4t1,2s1)|r()">} : !tile.buffer<64x128xf32, fragment>
    tile.for %k = %c0 to %c2 step %c1 {
      %off = arith.muli %k, %c32 : index
      %r = tile.region %A[%c0, %off] {in_bounds} : !tile.tensor<128x64xf16> -> !tile.tensor<64x32xf16>
      %s = tile.stage %a[%k] : !tile.buffer<2x64x32xf16, shared> -> !tile.buffer<64x32xf16, shared>
      tile.copy %r, %s {async} : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %v = tile.load %A[%c0, %off] {in_bounds} : !tile.tensor<128x64xf16> -> f16
      tile.gemm %s, %b, %acc {mma = "wgmma", in_flight = 1 : i64, zero_on_entry} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x128xf16, shared>, !tile.buffer<64x128xf32, fragment>
    } {pipelined_stages = 2 : i64}
    tile.for %k = %c0 to %c2 step %c1 {
    } {kind = "pipelined", num_stages = 2 : i64, not_warp_specialized = "the loop writes global memory"}
    tile.parallel (%i, %j) in [64, 128] {
    } {layout = #tile.fragment<"(4t32,2s2,8t4)x(16s4,4t1,2s1)|r()">}
    %m = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.reduce %acc, %m {kind = "sum", dim = 1 : i64, clear = true} : !tile.buffer<64x128xf32, fragment>, !tile.buffer<64xf32, fragment>
    %one = arith.constant 1.0 : f32
    tile.atomic %C[%c0, %c0], %one {kind = "min"} : !tile.tensor<64x64xf32>, f32
    tile.use_swizzle {panel_size = 4 : i64, order = "col"}
  } {smem_bytes = 16384 : i64}
  func.return
}
