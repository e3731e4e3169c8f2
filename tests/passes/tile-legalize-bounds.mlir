// RUN: tilec opt %s -p tile-legalize-bounds | filecheck %s

// Block index times the tile size over a grid that divides the tensor exactly:
// by in [0, 1], so rows [0, 256) stay inside 256.
// CHECK-LABEL: func.func @region_block_tiles
// CHECK:       tile.region %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds}
func.func @region_block_tiles(%A: !tile.tensor<256x32xf16>) {
  %g = arith.constant 2 : index
  tile.kernel (%by) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %by, %c128 : index
    %s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %a = tile.region %A[%row, %c0] : !tile.tensor<256x32xf16> -> !tile.tensor<128x32xf16>
    tile.copy %a, %s : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
  }
  func.return
}

// A tile.for induction variable with constant bounds: k in [0, 3], k * 32 + 32 <= 128.
// CHECK-LABEL: func.func @region_loop_tiles
// CHECK:       tile.region %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds}
func.func @region_loop_tiles(%A: !tile.tensor<64x128xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    tile.for %k = %c0 to %c4 step %c1 {
      %col = arith.muli %k, %c32 : index
      %a = tile.region %A[%c0, %col] : !tile.tensor<64x128xf16> -> !tile.tensor<64x32xf16>
      tile.copy %a, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
    }
  }
  func.return
}

// The loop bound is a min of a constant and a run-time value: k still stays below 2.
// CHECK-LABEL: func.func @region_loop_min_bound
// CHECK:       tile.region %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds}
func.func @region_loop_min_bound(%A: !tile.tensor<128x64xf16>) {
  %g = arith.constant 2 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %next = arith.addi %bx, %c1 : index
    %n = arith.minsi %c2, %next : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    tile.for %k = %c0 to %n step %c1 {
      %row = arith.muli %k, %c64 : index
      %a = tile.region %A[%row, %c0] : !tile.tensor<128x64xf16> -> !tile.tensor<64x64xf16>
      tile.copy %a, %s : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
    }
  }
  func.return
}

// The last block's tile reaches past the end (3 blocks of 128 rows over 300 rows):
// the region stays unmarked and is lowered with predicated tails.
// CHECK-LABEL: func.func @negative_region_partial_tail
// CHECK:       tile.region
// CHECK-NOT:   in_bounds
func.func @negative_region_partial_tail(%A: !tile.tensor<300x32xf16>) {
  %g = arith.constant 3 : index
  tile.kernel (%by) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %by, %c128 : index
    %s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %a = tile.region %A[%row, %c0] : !tile.tensor<300x32xf16> -> !tile.tensor<128x32xf16>
    tile.copy %a, %s : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
  }
  func.return
}

// The offset is a run-time size, whose range is unknown.
// CHECK-LABEL: func.func @negative_region_dynamic_index
// CHECK:       tile.region
// CHECK-NOT:   in_bounds
func.func @negative_region_dynamic_index(%A: !tile.tensor<256x32xf16>, %B: !tile.tensor<?xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %n = tile.dim %B {dim = 0 : i64} : !tile.tensor<?xf16>
    %s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %a = tile.region %A[%n, %c0] : !tile.tensor<256x32xf16> -> !tile.tensor<128x32xf16>
    tile.copy %a, %s : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
  }
  func.return
}

// A dynamic tensor dimension proves nothing, even at offset 0.
// CHECK-LABEL: func.func @negative_region_dynamic_dim
// CHECK:       tile.region
// CHECK-NOT:   in_bounds
func.func @negative_region_dynamic_dim(%A: !tile.tensor<?x32xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %a = tile.region %A[%c0, %c0] : !tile.tensor<?x32xf16> -> !tile.tensor<128x32xf16>
    tile.copy %a, %s : !tile.tensor<128x32xf16>, !tile.buffer<128x32xf16, shared>
  }
  func.return
}

// A shared-buffer region is not a global access and is never marked.
// CHECK-LABEL: func.func @negative_region_shared_buffer
// CHECK:       tile.region
// CHECK-NOT:   in_bounds
func.func @negative_region_shared_buffer() {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %r = tile.region %s[%c0, %c0] : !tile.buffer<128x32xf16, shared> -> !tile.buffer<64x32xf16, shared>
    %z = arith.constant 0.0 : f16
    tile.fill %r, %z : !tile.buffer<64x32xf16, shared>, f16
  }
  func.return
}

// Element accesses in a tile.parallel: bx * 256 + i with bx in [0, 3], i in [0, 255].
// CHECK-LABEL: func.func @parallel_exact
// CHECK:       tile.load %{{.*}}[%{{.*}}] {in_bounds}
// CHECK:       tile.store %{{.*}}, %{{.*}}[%{{.*}}] {in_bounds}
func.func @parallel_exact(%A: !tile.tensor<1024xf32>, %C: !tile.tensor<1024xf32>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.parallel (%i) in [256] {
      %c256 = arith.constant 256 : index
      %base = arith.muli %bx, %c256 : index
      %idx = arith.addi %base, %i : index
      %v = tile.load %A[%idx] : !tile.tensor<1024xf32> -> f32
      tile.store %v, %C[%idx] : f32, !tile.tensor<1024xf32>
    }
  }
  func.return
}

// The eager elementwise add: 5 blocks of 1024 over 5000 elements, guarded by
// `if idx < 5000`, which proves the accesses inside the guard.
// CHECK-LABEL: func.func @parallel_guarded
// CHECK:       scf.if
// CHECK:       tile.load %{{.*}}[%{{.*}}] {in_bounds}
// CHECK:       tile.store %{{.*}}, %{{.*}}[%{{.*}}] {in_bounds}
func.func @parallel_guarded(%A: !tile.tensor<5000xf16>, %C: !tile.tensor<5000xf16>) {
  %g = arith.constant 5 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.parallel (%i) in [1024] {
      %c1024 = arith.constant 1024 : index
      %base = arith.muli %bx, %c1024 : index
      %idx = arith.addi %base, %i : index
      %n = arith.constant 5000 : index
      %ok = arith.cmpi slt, %idx, %n : index
      scf.if %ok {
        %v = tile.load %A[%idx] : !tile.tensor<5000xf16> -> f16
        tile.store %v, %C[%idx] : f16, !tile.tensor<5000xf16>
      }
    }
  }
  func.return
}

// Two guards joined by andi, one per dimension, in the else-free then branch.
// CHECK-LABEL: func.func @parallel_guarded_2d
// CHECK:       tile.load %{{.*}}[%{{.*}}, %{{.*}}] {in_bounds}
func.func @parallel_guarded_2d(%A: !tile.tensor<100x50xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %acc = tile.alloc : !tile.buffer<128x64xf32, fragment>
    tile.parallel (%i, %j) in [128, 64] {
      %m = arith.constant 100 : index
      %n = arith.constant 50 : index
      %ri = arith.cmpi ult, %i, %m : index
      %rj = arith.cmpi slt, %j, %n : index
      %ok = arith.andi %ri, %rj : i1
      scf.if %ok {
        %v = tile.load %A[%i, %j] : !tile.tensor<100x50xf32> -> f32
        tile.store %v, %acc[%i, %j] : f32, !tile.buffer<128x64xf32, fragment>
      }
    }
  }
  func.return
}

// Without the guard the last block runs past 5000 elements.
// CHECK-LABEL: func.func @negative_parallel_unguarded_tail
// CHECK:       tile.load
// CHECK-NOT:   in_bounds
func.func @negative_parallel_unguarded_tail(%A: !tile.tensor<5000xf16>, %C: !tile.tensor<5000xf16>) {
  %g = arith.constant 5 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.parallel (%i) in [1024] {
      %c1024 = arith.constant 1024 : index
      %base = arith.muli %bx, %c1024 : index
      %idx = arith.addi %base, %i : index
      %v = tile.load %A[%idx] : !tile.tensor<5000xf16> -> f16
      tile.store %v, %C[%idx] : f16, !tile.tensor<5000xf16>
    }
  }
  func.return
}

// The guard's bound (6000) is past the tensor's end (5000): it proves nothing.
// CHECK-LABEL: func.func @negative_parallel_guard_too_loose
// CHECK:       tile.load
// CHECK-NOT:   in_bounds
func.func @negative_parallel_guard_too_loose(%A: !tile.tensor<5000xf16>, %C: !tile.tensor<5000xf16>) {
  %g = arith.constant 5 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.parallel (%i) in [1024] {
      %c1024 = arith.constant 1024 : index
      %base = arith.muli %bx, %c1024 : index
      %idx = arith.addi %base, %i : index
      %n = arith.constant 6000 : index
      %ok = arith.cmpi slt, %idx, %n : index
      scf.if %ok {
        %v = tile.load %A[%idx] : !tile.tensor<5000xf16> -> f16
        tile.store %v, %C[%idx] : f16, !tile.tensor<5000xf16>
      }
    }
  }
  func.return
}

// The access sits in the else branch of `idx < 5000`: the guard bounds it from below only.
// CHECK-LABEL: func.func @negative_parallel_guard_else_branch
// CHECK:       tile.load
// CHECK-NOT:   in_bounds
func.func @negative_parallel_guard_else_branch(%A: !tile.tensor<5000xf16>, %C: !tile.tensor<5000xf16>) {
  %g = arith.constant 5 : index
  tile.kernel (%bx) in (%g) threads [256, 1, 1] {
    tile.parallel (%i) in [1024] {
      %c1024 = arith.constant 1024 : index
      %base = arith.muli %bx, %c1024 : index
      %idx = arith.addi %base, %i : index
      %n = arith.constant 5000 : index
      %ok = arith.cmpi slt, %idx, %n : index
      scf.if %ok {
      } else {
        %v = tile.load %A[%idx] : !tile.tensor<5000xf16> -> f16
        tile.store %v, %C[%idx] : f16, !tile.tensor<5000xf16>
      }
    }
  }
  func.return
}

// A load through a region that itself reaches past the end stays unmarked,
// though its index stays inside the region.
// CHECK-LABEL: func.func @negative_load_region_out_of_bounds
// CHECK:       tile.region
// CHECK-NOT:   in_bounds
func.func @negative_load_region_out_of_bounds(%A: !tile.tensor<100xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %acc = tile.alloc : !tile.buffer<128xf32, fragment>
    %a = tile.region %A[%c0] : !tile.tensor<100xf32> -> !tile.tensor<128xf32>
    tile.parallel (%i) in [128] {
      %v = tile.load %a[%i] : !tile.tensor<128xf32> -> f32
      tile.store %v, %acc[%i] : f32, !tile.buffer<128xf32, fragment>
    }
  }
  func.return
}

// A load through an in-bounds region, at an index inside the region, is in bounds.
// CHECK-LABEL: func.func @load_through_region
// CHECK:       tile.region %{{.*}}[%{{.*}}] {in_bounds}
// CHECK:       tile.load %{{.*}}[%{{.*}}] {in_bounds}
func.func @load_through_region(%A: !tile.tensor<256xf32>) {
  %g = arith.constant 2 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c128 = arith.constant 128 : index
    %off = arith.muli %bx, %c128 : index
    %acc = tile.alloc : !tile.buffer<128xf32, fragment>
    %a = tile.region %A[%off] : !tile.tensor<256xf32> -> !tile.tensor<128xf32>
    tile.parallel (%i) in [128] {
      %v = tile.load %a[%i] : !tile.tensor<128xf32> -> f32
      tile.store %v, %acc[%i] : f32, !tile.buffer<128xf32, fragment>
    }
  }
  func.return
}

// A raw cp.async's run of 8 elements from column (t % 8) * 8 <= 56 ends at 64, in row t // 8 <= 15:
// in bounds.
// CHECK-LABEL: func.func @cp_async_run
// CHECK:       tile.cp_async %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] {elements = 8 : i64, in_bounds}
func.func @cp_async_run(%A: !tile.tensor<16x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %t = tile.thread_id
    %c8 = arith.constant 8 : index
    %row = arith.floordivsi %t, %c8 : index
    %q = arith.remsi %t, %c8 : index
    %col = arith.muli %q, %c8 : index
    %s = tile.alloc : !tile.buffer<16x64xf16, shared>
    tile.cp_async %A[%row, %col], %s[%row, %col] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
  }
  func.return
}

// The same run from column (t % 8) * 8 + 4 would end at 68, past the tensor's 64 columns.
// CHECK-LABEL: func.func @negative_cp_async_run_past_the_row
// CHECK-NOT:   in_bounds
func.func @negative_cp_async_run_past_the_row(%A: !tile.tensor<16x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %t = tile.thread_id
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %row = arith.floordivsi %t, %c8 : index
    %q = arith.remsi %t, %c8 : index
    %c = arith.muli %q, %c8 : index
    %col = arith.addi %c, %c4 : index
    %s = tile.alloc : !tile.buffer<16x72xf16, shared>
    tile.cp_async %A[%row, %col], %s[%row, %c] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x72xf16, shared>
  }
  func.return
}
