// RUN: tilec opt %s --split-input-file --verify-diagnostics

// One case per verifier message of the tile dialect. Each error is reported at
// the line where the failing op starts. Type and attribute parameters
// (buffer scope, buffer sizes, swizzle bytes) are verified while parsing, which
// --verify-diagnostics cannot attribute yet: tests/dialects/test_tile_types.py
// covers them.

// tile.gemm: A is a global tensor; gemm operands are typed as on-chip buffers.
// The custom form's parser rejects the operand type, so this case is generic.
func.func @gemm_a_in_global(%A: !tile.tensor<64x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{operand 'a' at position 0 does not verify}}
    "tile.gemm"(%A, %b, %c) : (!tile.tensor<64x32xf16>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>) -> ()
  }
  func.return
}

// -----

// tile.gemm: the accumulator C must be a fragment or local buffer.
func.func @gemm_c_in_shared() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, shared>
    // expected-error@+1 {{tile.gemm: C must be in fragment or local scope, got shared}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, shared>
  }
  func.return
}

// -----

// tile.gemm: A must be shared or fragment, not per-thread local.
func.func @gemm_a_local() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, local>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: A must be in shared or fragment scope, got local}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, local>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: A's K (32) differs from B's K (16).
func.func @gemm_k_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<16x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: K differs: A gives 32, B gives 16}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<16x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: with transpose_b, B is NxK: K is its second dimension.
func.func @gemm_k_mismatch_transposed() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x32xf32, fragment>
    // expected-error@+1 {{tile.gemm: K differs: A gives 32, B gives 64}}
    tile.gemm %a, %b, %c {transpose_b = true} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x32xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: C has 32 rows but A has M = 64.
func.func @gemm_m_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<32x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: C must be (64, 64) for A (64, 32) and B (32, 64), got (32, 64)}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<32x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: C has 128 columns but B has N = 64.
func.func @gemm_n_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x128xf32, fragment>
    // expected-error@+1 {{tile.gemm: C must be (64, 64) for A (64, 32) and B (32, 64), got (64, 128)}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x128xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: operands are matrices.
func.func @gemm_not_2d() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<2x64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: A must be 2-D, got shape (2, 64, 32)}}
    tile.gemm %a, %b, %c : !tile.buffer<2x64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: A and B must have one element type.
func.func @gemm_mixed_input_types() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xbf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: A and B element types differ: f16 vs bf16}}
    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xbf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: an unknown warp policy.
func.func @gemm_bad_policy() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: policy must be one of square, full_row, full_col, got 'diagonal'}}
    tile.gemm %a, %b, %c {policy = "diagonal"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: k_pack counts K elements packed together, at least 1.
func.func @gemm_bad_k_pack() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: k_pack must be >= 1}}
    tile.gemm %a, %b, %c {k_pack = 0 : i64} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.copy: the shapes differ even after dropping unit dimensions.
func.func @copy_shape_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %f = tile.alloc : !tile.buffer<32x64xf32, fragment>
    // expected-error@+1 {{tile.copy: shapes differ: src (64, 32) vs dst (32, 64)}}
    tile.copy %s, %f : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf32, fragment>
  }
  func.return
}

// -----

// tile.fill: the value has the buffer's element type (no implicit conversion).
func.func @fill_value_type_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %v = arith.constant 0.0 : f16
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    // expected-error@+1 {{tile.fill: value type f16 differs from element type f32}}
    tile.fill %f, %v : !tile.buffer<64xf32, fragment>, f16
  }
  func.return
}

// -----

// tile.reduce: an unknown reduction kind.
func.func @reduce_bad_kind() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<4xf32, fragment>
    // expected-error@+1 {{tile.reduce: kind must be one of sum, max, min, abssum, absmax, got 'prod'}}
    tile.reduce %x, %y {kind = "prod", dim = 1 : i64, clear = true} : !tile.buffer<4x64xf32, fragment>, !tile.buffer<4xf32, fragment>
  }
  func.return
}

// -----

// tile.reduce: dim must name a dimension of the source (no negative dims in the IR).
func.func @reduce_dim_out_of_range() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<4xf32, fragment>
    // expected-error@+1 {{tile.reduce: dim 2 out of range for a rank-2 source}}
    tile.reduce %x, %y {kind = "sum", dim = 2 : i64, clear = true} : !tile.buffer<4x64xf32, fragment>, !tile.buffer<4xf32, fragment>
  }
  func.return
}

// -----

// tile.reduce: reducing dim 0 of 4x64 leaves 64 elements, not 4.
func.func @reduce_wrong_dst_shape() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<4xf32, fragment>
    // expected-error@+1 {{tile.reduce: reducing (4, 64) along dim 0 gives (64,), but dst is (4,)}}
    tile.reduce %x, %y {kind = "sum", dim = 0 : i64, clear = true} : !tile.buffer<4x64xf32, fragment>, !tile.buffer<4xf32, fragment>
  }
  func.return
}

// -----

// tile.cumsum: a scan keeps the shape.
func.func @cumsum_shape_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<4x32xf32, fragment>
    // expected-error@+1 {{tile.cumsum: src (4, 64) and dst (4, 32) shapes differ}}
    tile.cumsum %x, %y {dim = 1 : i64} : !tile.buffer<4x64xf32, fragment>, !tile.buffer<4x32xf32, fragment>
  }
  func.return
}

// -----

// tile.cummax: dim must name a dimension of the source.
func.func @cummax_dim_out_of_range() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<64xf32, shared>
    // expected-error@+1 {{tile.cummax: dim 1 out of range for a rank-1 source}}
    tile.cummax %x, %x {dim = 1 : i64} : !tile.buffer<64xf32, shared>, !tile.buffer<64xf32, shared>
  }
  func.return
}

// -----

// tile.load: one index per dimension.
func.func @load_index_count() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    // expected-error@+1 {{tile.load: 2 indices expected for a rank-2 tile, got 1}}
    %v = tile.load %x[%bx] : !tile.buffer<4x64xf32, fragment> -> f32
  }
  func.return
}

// -----

// tile.load: the result has the element type.
func.func @load_wrong_result_type() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    // expected-error@+1 {{tile.load: element type f32 expected, got f16}}
    %v = tile.load %x[%bx, %bx] : !tile.buffer<4x64xf32, fragment> -> f16
  }
  func.return
}

// -----

// tile.store: the stored value has the element type.
func.func @store_type_mismatch() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %v = arith.constant 1 : i32
    // expected-error@+1 {{tile.store: element type f32 expected, got i32}}
    tile.store %v, %x[%bx, %bx] : i32, !tile.buffer<4x64xf32, fragment>
  }
  func.return
}

// -----

// tile.store: one index per dimension.
func.func @store_index_count() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %x = tile.alloc : !tile.buffer<4x64xf32, fragment>
    %v = arith.constant 1.0 : f32
    // expected-error@+1 {{tile.store: 2 indices expected for a rank-2 tile, got 3}}
    tile.store %v, %x[%bx, %bx, %bx] : f32, !tile.buffer<4x64xf32, fragment>
  }
  func.return
}

// -----

// tile.region: one offset per dimension of the source.
func.func @region_offset_count(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.region: 2 offsets expected for a rank-2 tile, got 1}}
    %r = tile.region %A[%bx] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
  }
  func.return
}

// -----

// tile.region: a region of a global tensor is a global tensor, not a buffer.
func.func @region_changes_scope(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.region: a region keeps the scope of its source (global), got shared}}
    %r = tile.region %A[%bx, %bx] : !tile.tensor<256x128xf16> -> !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// -----

// tile.region: unit dimensions are kept, never dropped.
func.func @region_changes_rank(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.region: a region keeps the rank of its source}}
    %r = tile.region %A[%bx, %bx] : !tile.tensor<256x128xf16> -> !tile.tensor<64xf16>
  }
  func.return
}

// -----

// tile.region: a window does not convert.
func.func @region_changes_element_type(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.region: a region keeps the element type}}
    %r = tile.region %A[%bx, %bx] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf32>
  }
  func.return
}

// -----

// tile.region: extents are positive.
func.func @region_empty_extent(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.region: region extents must be positive constants}}
    %r = tile.region %A[%bx, %bx] : !tile.tensor<256x128xf16> -> !tile.tensor<0x32xf16>
  }
  func.return
}

// -----

// tile.dim: dim names a dimension of the tensor.
func.func @dim_out_of_range(%A: !tile.tensor<256x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.dim: dim 2 out of range for rank 2}}
    %n = tile.dim %A {dim = 2 : i64} : !tile.tensor<256x128xf16>
  }
  func.return
}

// -----

// tile.reshape: the number of elements is kept.
func.func @reshape_element_count() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    // expected-error@+1 {{tile.reshape: (64, 32) and (1024,) hold different numbers of elements}}
    %v = tile.reshape %s : !tile.buffer<64x32xf16, shared> -> !tile.buffer<1024xf16, shared>
  }
  func.return
}

// -----

// tile.reshape: a view stays in the buffer's scope.
func.func @reshape_changes_scope() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    // expected-error@+1 {{tile.reshape: scope must not change}}
    %v = tile.reshape %s : !tile.buffer<64x32xf16, shared> -> !tile.buffer<2048xf16, fragment>
  }
  func.return
}

// -----

// tile.reshape: a view does not convert.
func.func @reshape_changes_element_type() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    // expected-error@+1 {{tile.reshape: element type must not change}}
    %v = tile.reshape %s : !tile.buffer<64x32xf16, shared> -> !tile.buffer<2048xbf16, shared>
  }
  func.return
}

// -----

// tile.atomic: a fragment is private to the block; atomics target global or shared memory.
func.func @atomic_on_fragment() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    %v = arith.constant 1.0 : f32
    // expected-error@+1 {{tile.atomic: dst must be global or shared, got fragment}}
    tile.atomic %f[%bx], %v {kind = "add"} : !tile.buffer<64xf32, fragment>, f32
  }
  func.return
}

// -----

// tile.atomic: an unknown combining kind.
func.func @atomic_bad_kind(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %v = arith.constant 1.0 : f32
    // expected-error@+1 {{tile.atomic: kind must be one of add, max, min, got 'mul'}}
    tile.atomic %C[%bx], %v {kind = "mul"} : !tile.tensor<64xf32>, f32
  }
  func.return
}

// -----

// tile.atomic: an element atomic takes a value of the element type.
func.func @atomic_element_type(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %v = arith.constant 1.0 : f16
    // expected-error@+1 {{tile.atomic: element type f32 expected, got f16}}
    tile.atomic %C[%bx], %v {kind = "add"} : !tile.tensor<64xf32>, f16
  }
  func.return
}

// -----

// tile.atomic: a tile atomic combines two tiles of one shape.
func.func @atomic_tile_shape_mismatch(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<32xf32, fragment>
    // expected-error@+1 {{tile.atomic: shapes differ: value (32,) vs dst (64,)}}
    tile.atomic %C[], %f {kind = "add"} : !tile.tensor<64xf32>, !tile.buffer<32xf32, fragment>
  }
  func.return
}

// -----

// tile.atomic: without indices the value is a tile, not a scalar.
func.func @atomic_tile_needs_tile_value(%C: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %v = arith.constant 1.0 : f32
    // expected-error@+1 {{tile.atomic: value must be a tile (tensor or buffer), got f32}}
    tile.atomic %C[], %v {kind = "add"} : !tile.tensor<64xf32>, f32
  }
  func.return
}

// -----

// tile.annotate_layout: only shared buffers have a swizzled layout.
func.func @annotate_layout_not_shared() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64x64xf16, fragment>
    // expected-error@+1 {{tile.annotate_layout: buffer must be in shared scope, got fragment}}
    tile.annotate_layout %f {layout = #tile.swizzle<128>} : !tile.buffer<64x64xf16, fragment>
  }
  func.return
}

// -----

// tile.use_swizzle: a panel holds at least one block.
func.func @use_swizzle_panel_size() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.use_swizzle: panel_size must be >= 1}}
    tile.use_swizzle {panel_size = 0 : i64, order = "row"}
  }
  func.return
}

// -----

// tile.use_swizzle: panels are rows or columns of blocks.
func.func @use_swizzle_order() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.use_swizzle: order must be one of row, col, got 'diag'}}
    tile.use_swizzle {panel_size = 8 : i64, order = "diag"}
  }
  func.return
}

// -----

// tile.thread_id: blocks have three dimensions.
func.func @thread_id_dim() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.thread_id: dim must be 0, 1 or 2}}
    %t = tile.thread_id {dim = 3 : i64}
  }
  func.return
}

// -----

// tile.for: an unknown loop kind.
func.func @for_bad_kind() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    // expected-error@+1 {{tile.for: kind must be one of serial, pipelined, unroll, vectorized, got 'parallel'}}
    tile.for %k = %c0 to %c8 step %g {
    } {kind = "parallel"}
  }
  func.return
}

// -----

// tile.for: num_stages counts buffers.
func.func @for_negative_stages() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    // expected-error@+1 {{tile.for: num_stages must be >= 0, got -1}}
    tile.for %k = %c0 to %c8 step %g {
    } {kind = "pipelined", num_stages = -1 : i64}
  }
  func.return
}

// -----

// tile.parallel: extents are positive.
func.func @parallel_nonpositive_extent() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.parallel: extents must be positive, got [4, 0]}}
    tile.parallel (%i, %j) in [4, 0] {
    }
  }
  func.return
}

// -----

// tile.parallel: a loop nest has at least one loop.
func.func @parallel_no_extent() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.parallel: needs at least one extent}}
    tile.parallel () in [] {
    }
  }
  func.return
}

// -----

// tile.parallel outside a tile.kernel: there are no threads to partition it over.
func.func @parallel_outside_kernel() {
  // expected-error@+1 {{tile.parallel: must be inside a tile.kernel}}
  tile.parallel (%i) in [64] {
  }
  func.return
}

// -----

// tile.alloc outside a tile.kernel: on-chip buffers belong to a block.
func.func @alloc_outside_kernel() {
  // expected-error@+1 {{tile.alloc: fragment buffers exist only inside a tile.kernel}}
  %f = tile.alloc : !tile.buffer<64xf32, fragment>
  func.return
}

// -----

// tile.kernel: more than 1024 threads per block.
func.func @kernel_too_many_threads() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: at most 1024 threads per block, got 2048}}
  tile.kernel (%bx) in (%g) threads [256, 8, 1] {
  }
  func.return
}

// -----

// tile.kernel: the block shape has three positive extents.
func.func @kernel_zero_threads() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: threads must be three positive extents, got [128, 0, 1]}}
  tile.kernel (%bx) in (%g) threads [128, 0, 1] {
  }
  func.return
}

// -----

// tile.kernel: the block shape is always [x, y, z].
func.func @kernel_two_thread_extents() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: threads must be three positive extents, got [128, 1]}}
  tile.kernel (%bx) in (%g) threads [128, 1] {
  }
  func.return
}

// -----

// tile.kernel: grids have 1 to 3 dimensions.
func.func @kernel_4d_grid() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: grid must have 1 to 3 dimensions, got 4}}
  tile.kernel (%a, %b, %c, %d) in (%g, %g, %g, %g) threads [128, 1, 1] {
  }
  func.return
}

// -----

// tile.kernel (generic form): one block index per grid dimension.
func.func @kernel_block_index_count() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: the body needs one block index per grid dimension}}
  "tile.kernel"(%g, %g) <{threads = array<i64: 128, 1, 1>}> ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) : (index, index) -> ()
  func.return
}

// -----

// tile.copy {async} (tile-pipeline's cp.async copies): global to shared, one element type.
func.func @async_copy_converts(%A: !tile.tensor<64x32xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    // expected-error@+1 {{tile.copy: an async copy goes from a global tensor to a shared buffer of the same element type}}
    tile.copy %A, %s {async} : !tile.tensor<64x32xf32>, !tile.buffer<64x32xf16, shared>
  }
  func.return
}

// -----

// tile.stage: a stage drops the leading dim of a shared buffer and nothing else.
func.func @stage_wrong_shape() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<3x64x32xf16, shared>
    %i = arith.constant 1 : index
    // expected-error@+1 {{tile.stage: a stage of}}
    %v = tile.stage %s[%i] : !tile.buffer<3x64x32xf16, shared> -> !tile.buffer<32x64xf16, shared>
  }
  func.return
}

// -----

// tile.stage: only shared buffers are multi-buffered.
func.func @stage_of_a_fragment() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<2x64x32xf32, fragment>
    %i = arith.constant 1 : index
    // expected-error@+1 {{tile.stage: stages are of shared buffers}}
    %v = tile.stage %s[%i] : !tile.buffer<2x64x32xf32, fragment> -> !tile.buffer<64x32xf32, fragment>
  }
  func.return
}

// -----

// tile.async_wait: a count of groups.
func.func @async_wait_negative() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.async_wait: pending must be >= 0}}
    tile.async_wait {pending = -1 : i64}
  }
  func.return
}

// -----

// tile.gemm: the mma kinds are tile-select-mma's, and it picks one only for 16-bit operands
// into an f32 fragment.
func.func @gemm_mma_f32_operands() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf32, shared>
    %b = tile.alloc : !tile.buffer<32x64xf32, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: mma = m16n8k16 multiplies f16 or bf16 into an f32 fragment, got f32 into !tile.buffer<64x64xf32, fragment>}}
    tile.gemm %a, %b, %c {mma = "m16n8k16"} : !tile.buffer<64x32xf32, shared>, !tile.buffer<32x64xf32, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: an mma kind that does not exist.
func.func @gemm_mma_unknown() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: mma must be one of m16n8k16, wgmma, got 'm16n8k8'}}
    tile.gemm %a, %b, %c {mma = "m16n8k8"} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: wgmma reads B from shared memory only (A may be a register fragment: the RS form).
func.func @gemm_wgmma_fragment_b() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, fragment>
    %b = tile.alloc : !tile.buffer<32x64xf16, fragment>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: mma = wgmma reads A ([M, K] or, transposed, [K, M]; M % 64 zero) from shared memory or ([M, K]) from registers, and B from shared memory}}
    tile.gemm %a, %b, %c {mma = "wgmma"} : !tile.buffer<64x32xf16, fragment>, !tile.buffer<32x64xf16, fragment>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: wgmma reads a transposed (M-major) A only from shared memory (registers hold [M, K]).
func.func @gemm_wgmma_fragment_a_transposed() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<32x64xf16, fragment>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: mma = wgmma reads A ([M, K] or, transposed, [K, M]; M % 64 zero) from shared memory or ([M, K]) from registers, and B from shared memory}}
    tile.gemm %a, %b, %c {mma = "wgmma", transpose_a = true} : !tile.buffer<32x64xf16, fragment>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: only asynchronous wgmmas stay in flight.
func.func @gemm_in_flight_mma_sync() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: in_flight is a fact of asynchronous wgmmas (mma = wgmma)}}
    tile.gemm %a, %b, %c {mma = "m16n8k16", in_flight = 1 : i64} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: zero_on_entry (tile-warp-specialize dropped the fill before the loop) needs a loop.
func.func @gemm_zero_on_entry_outside_a_loop() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: zero_on_entry is for a gemm of a loop body that accumulates}}
    tile.gemm %a, %b, %c {mma = "wgmma", zero_on_entry} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.alloc: a swizzle is a shared-memory layout.
func.func @alloc_swizzle_fragment() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: swizzle is a fact of shared buffers, not of a fragment one}}
    %f = tile.alloc {swizzle = 128 : i64} : !tile.buffer<64x64xf16, fragment>
  }
  func.return
}

// -----

// tile.alloc: the XOR swizzles are 32, 64 and 128 bytes wide.
func.func @alloc_swizzle_width() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: swizzle must be 32, 64 or 128 bytes, got 16}}
    %s = tile.alloc {swizzle = 16 : i64} : !tile.buffer<64x64xf16, shared>
  }
  func.return
}

// -----

// tile.alloc: a column chunk divides the rows.
func.func @alloc_chunk_divides() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: chunk 48 must be positive and divide the last dim of (32, 128)}}
    %s = tile.alloc {swizzle = 128 : i64, chunk = 48 : i64} : !tile.buffer<32x128xf16, shared>
  }
  func.return
}

// -----

// tile.alloc: a 128-byte-swizzled buffer starts at a multiple of 1024 bytes.
func.func @alloc_offset_alignment() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: offset 512 must be a multiple of the buffer's alignment, 1024 bytes}}
    %s = tile.alloc {swizzle = 128 : i64, offset = 512 : i64} : !tile.buffer<64x64xf16, shared>
  }
  func.return
}

// -----

// tile.alloc: a thread layout is for fragments.
func.func @alloc_layout_shared() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: layout is a fact of fragments, not of a shared buffer}}
    %s = tile.alloc {layout = #tile.fragment<"(4t32,2s2,8t4)x(8s4,4t1,2s1)|r()">} : !tile.buffer<64x64xf32, shared>
  }
  func.return
}

// -----

// tile.alloc: the layout covers the buffer's shape.
func.func @alloc_layout_shape() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.alloc: a layout of shape (64, 64) for a buffer of shape (64, 32)}}
    %f = tile.alloc {layout = #tile.fragment<"(4t32,2s2,8t4)x(8s4,4t1,2s1)|r()">} : !tile.buffer<64x32xf32, fragment>
  }
  func.return
}

// -----

// tile.region: in_bounds claims the region lies inside the tensor; constants can refute it.
func.func @region_in_bounds_refuted(%A: !tile.tensor<128x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c96 = arith.constant 96 : index
    // expected-error@+1 {{tile.region: in_bounds, but [96, 160) of dim 0 leaves the tensor's 128}}
    %r = tile.region %A[%c96, %c0] {in_bounds} : !tile.tensor<128x64xf16> -> !tile.tensor<64x64xf16>
  }
  func.return
}

// -----

// tile.region: in_bounds is about global tensors (buffers have no out-of-range part).
func.func @region_in_bounds_buffer() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.region: in_bounds is a fact of accesses of global tensors, not of a shared tile}}
    %r = tile.region %s[%c0, %c0] {in_bounds} : !tile.buffer<64x64xf16, shared> -> !tile.buffer<32x64xf16, shared>
  }
  func.return
}

// -----

// tile.for: a pipelined loop's stages are recorded on the serial loop tile-pipeline makes of it.
func.func @for_pipelined_stages_kind() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    // expected-error@+1 {{tile.for: a loop with pipelined_stages is the serial loop its stages run in, not pipelined}}
    tile.for %i = %c0 to %c4 step %g {
    } {kind = "pipelined", num_stages = 2 : i64, pipelined_stages = 2 : i64}
  }
  func.return
}

// -----

// tile.for: software pipelining needs at least two stages.
func.func @for_pipelined_stages_one() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    // expected-error@+1 {{tile.for: pipelined_stages must be >= 2, got 1}}
    tile.for %i = %c0 to %c4 step %g {
    } {pipelined_stages = 1 : i64}
  }
  func.return
}

// -----

// tile.for: a warp-specialized loop is the consumers' loop of a tile.warp_specialize.
func.func @for_warp_specialized_outside() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    // expected-error@+1 {{tile.for: warp_specialized_stages on a loop outside the consumer region of a tile.warp_specialize}}
    tile.for %i = %c0 to %c4 step %g {
    } {warp_specialized_stages = 2 : i64}
  }
  func.return
}

// -----

// tile.kernel: smem_bytes covers every planned buffer.
func.func @kernel_smem_bytes_short() {
  %g = arith.constant 1 : index
  // expected-error@+1 {{tile.kernel: smem_bytes = 1024, but a shared buffer is planned at bytes (0, 8192)}}
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc {offset = 0 : i64} : !tile.buffer<64x64xf16, shared>
  } {smem_bytes = 1024 : i64}
  func.return
}

// -----

// tile.parallel: the layout covers the loop's extents.
func.func @parallel_layout_shape() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.parallel: a layout of shape (64, 64) for extents (64, 32)}}
    tile.parallel (%i, %j) in [64, 32] {
    } {layout = #tile.fragment<"(4t32,2s2,8t4)x(8s4,4t1,2s1)|r()">}
  }
  func.return
}

// -----

// tile.gemm: mma.sync tiles are 16x8x16.
func.func @gemm_mma_tile_multiple() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<24x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<24x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: mma = m16n8k16 needs M % 16, N % 8 and K % 16 zero, got (24, 64, 32)}}
    tile.gemm %a, %b, %c {mma = "m16n8k16"} : !tile.buffer<24x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<24x64xf32, fragment>
  }
  func.return
}

// -----

// tile.gemm: a count of wgmma groups left running.
func.func @gemm_in_flight_negative() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    // expected-error@+1 {{tile.gemm: in_flight must be >= 0}}
    tile.gemm %a, %b, %c {mma = "wgmma", in_flight = -1 : i64} : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
  }
  func.return
}

// -----

// tile.load: an in-bounds element of a region that is not known to be in bounds.
func.func @load_in_bounds_of_an_unproven_region(%A: !tile.tensor<128x64xf16>, %i: index) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %r = tile.region %A[%i, %c0] : !tile.tensor<128x64xf16> -> !tile.tensor<64x64xf16>
    // expected-error@+1 {{tile.load: in_bounds on a view of a region that is not in_bounds itself}}
    %v = tile.load %r[%c0, %c0] {in_bounds} : !tile.tensor<64x64xf16> -> f16
  }
  func.return
}

// -----

// tile.for: one transformation per loop.
func.func @for_pipelined_and_warp_specialized() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    // expected-error@+1 {{tile.for: a loop is pipelined (pipelined_stages) or warp-specialized, not both}}
    tile.for %i = %c0 to %c4 step %g {
    } {pipelined_stages = 2 : i64, warp_specialized_stages = 2 : i64}
  }
  func.return
}

// -----

// tile.tma_load: a region of a rank-4 tensor fills a 2-D tile when its extents are the tile's
// once unit dims are dropped; [1, 64, 2, 32] is not a 64x64 tile.
func.func @tma_load_region_not_the_tile(%X: !tile.tensor<1x64x2x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
    // expected-error@+1 {{tile.tma_load: the region (1, 64, 2, 32) and the tile (64, 64) must have one shape}}
    tile.tma_load %X, %s, %b : !tile.tensor<1x64x2x32xf16>, !tile.buffer<64x64xf16, shared>, !tile.mbarrier
  }
  func.return
}

// -----

// tile.consumer_group: only consumer regions have groups.
func.func @consumer_group_outside() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.consumer_group must be inside the consumer region of a tile.warp_specialize}}
    %grp = tile.consumer_group
  }
  func.return
}

// -----

// tile.persistent: groups = G splits the tiles of G consumer groups.
func.func @persistent_groups_without_split(%gx: index) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    // expected-error@+1 {{tile.persistent: groups = 2 needs the consumer region of a tile.warp_specialize with as many consumer groups}}
    tile.persistent (%tx, %n) in (%gx) {
    } {groups = 2 : i64}
  }
  func.return
}

// -----

// tile.wait_turn: turns are taken between consumer groups.
func.func @wait_turn_outside(%gx: index) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    tile.persistent (%tx, %n) in (%gx) {
      // expected-error@+1 {{tile.wait_turn must be inside the tile.persistent loop of consumer groups (groups > 1)}}
      tile.wait_turn
    }
  }
  func.return
}

// -----

// tile.kernel: launch_reversed names grid dimensions, each once.
func.func @launch_reversed_dim() {
  %g = arith.constant 4 : index
  // expected-error@+1 {{tile.kernel: launch_reversed needs distinct grid dimensions below 1, got [1]}}
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
  } {launch_reversed = array<i64: 1>}
  func.return
}

// -----

// tile.kernel: a reversed launch order and clusters do not combine.
func.func @launch_reversed_cluster() {
  %g = arith.constant 4 : index
  // expected-error@+1 {{tile.kernel: launch_reversed and clusters do not combine}}
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
  } {launch_reversed = array<i64: 0>, cluster = array<i64: 2>}
  func.return
}

// -----

// tile.tma_store: the reverse of tile.tma_load, from a shared tile.
func.func @tma_store_from_a_fragment(%X: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64x64xf16, fragment>
    // expected-error@+1 {{tile.tma_store: the source must be a shared tile}}
    tile.tma_store %f, %X : !tile.buffer<64x64xf16, fragment>, !tile.tensor<64x64xf16>
  }
  func.return
}

// -----

func.func @tma_store_converting(%X: !tile.tensor<64x64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.tma_store: TMA does not convert: f16 to f32}}
    tile.tma_store %s, %X : !tile.buffer<64x64xf16, shared>, !tile.tensor<64x64xf32>
  }
  func.return
}

// -----

func.func @tma_store_region_not_the_tile(%X: !tile.tensor<1x64x2x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.tma_store: the tile (64, 64) and the region (1, 64, 2, 32) must have one shape}}
    tile.tma_store %s, %X : !tile.buffer<64x64xf16, shared>, !tile.tensor<1x64x2x32xf16>
  }
  func.return
}

// -----

// tile.tma_store_wait: waits for the stores of a shared tile.
func.func @tma_store_wait_of_a_fragment() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %f = tile.alloc : !tile.buffer<64x64xf16, fragment>
    // expected-error@+1 {{tile.tma_store_wait: the tile must be a shared tile}}
    tile.tma_store_wait %f : !tile.buffer<64x64xf16, fragment>
  }
  func.return
}

// -----

// tile.warp_specialize: setmaxnreg moves registers within the block's (384 threads start with 168 each):
// 128 x 48 + 256 x 232 is 1024 more, and the consumers' setmaxnreg.inc would wait for them forever.
func.func @warp_specialize_registers_over_the_block() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    // expected-error@+1 {{tile.warp_specialize: setmaxnreg asks for 65536 registers (128 x 48 + 256 x 232), more than the block's 64512: the consumers' setmaxnreg.inc would wait forever}}
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      %c = arith.constant 0 : index
    } {producer_threads = 128 : i64, producer_regs = 48 : i64, consumer_regs = 232 : i64}
  }
  func.return
}

// -----

// tile.warp_specialize: a producer region that copies (cp.async) is run by all of its threads.
func.func @warp_specialize_copying_producer_of_one_thread(%A: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.warp_specialize: a producer region that copies (tile.copy, tile.cp_async) needs all_producer_threads: its first thread alone runs it otherwise}}
    tile.warp_specialize producer {
      tile.copy %A, %s {async} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
    } consumer {
      %c = arith.constant 0 : index
    } {producer_threads = 128 : i64}
  }
  func.return
}

// -----

// tile.cp_async: one cp.async moves 4, 8 or 16 bytes.
func.func @cp_async_of_six_bytes(%A: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.cp_async: copies 4, 8 or 16 bytes, got 3 elements of f16}}
    tile.cp_async %A[%c0, %c0], %s[%c0, %c0] {elements = 3 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
  }
  func.return
}

// -----

// tile.cp_async: the destination is shared memory.
func.func @cp_async_into_a_fragment(%A: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %f = tile.alloc : !tile.buffer<64x64xf16, fragment>
    // expected-error@+1 {{tile.cp_async: the destination is a shared buffer, got a fragment one}}
    tile.cp_async %A[%c0, %c0], %f[%c0, %c0] {elements = 8 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, fragment>
  }
  func.return
}

// -----

// tile.cp_async: a run never crosses the end of a row of the destination.
func.func @cp_async_rows_of_partial_runs(%A: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<64x12xf16, shared>
    // expected-error@+1 {{tile.cp_async: the destination's rows of 12 elements do not hold whole runs of 8}}
    tile.cp_async %A[%c0, %c0], %s[%c0, %c0] {elements = 8 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x12xf16, shared>
  }
  func.return
}

// -----

// tile.cp_async: in_bounds claims the whole run inside the tensor.
func.func @cp_async_in_bounds_past_the_row(%A: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c60 = arith.constant 60 : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.cp_async: in_bounds, but [60, 68) of dim 1 leaves the tensor's 64}}
    tile.cp_async %A[%c0, %c60], %s[%c0, %c0] {elements = 8 : i64, in_bounds} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
  }
  func.return
}

// -----

// tile.cp_async_arrive: an array of mbarriers needs an index.
func.func @cp_async_arrive_on_an_array() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier<2>
    // expected-error@+1 {{tile.cp_async_arrive: an array of 2 mbarriers needs an index (b[i])}}
    tile.cp_async_arrive %b : !tile.mbarrier<2>
  }
  func.return
}

// -----

// tile.cp_async: a copy keeps the element type.
func.func @cp_async_between_element_types(%A: !tile.tensor<64x64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    // expected-error@+1 {{tile.cp_async: element types differ: f32 and f16}}
    tile.cp_async %A[%c0, %c0], %s[%c0, %c0] {elements = 4 : i64} : !tile.tensor<64x64xf32>, !tile.buffer<64x64xf16, shared>
  }
  func.return
}
