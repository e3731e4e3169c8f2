// RUN: tilec opt %s -p tile-insert-barriers | filecheck %s

// The classic GEMM main loop: the copies write A_s / B_s, the gemm reads them
// (a barrier before it), and the next iteration's copies overwrite what this
// iteration's gemm reads (a barrier before the loop's end).
// CHECK-LABEL: func.func @gemm_loop
// CHECK:       tile.for
// CHECK-NEXT:    tile.copy
// CHECK-NEXT:    tile.copy
// CHECK-NEXT:    tile.barrier
// CHECK-NEXT:    tile.gemm
// CHECK-NEXT:    tile.barrier
// CHECK-NEXT:  }
func.func @gemm_loop(%A: !tile.tensor<64x32xf16>, %B: !tile.tensor<32x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a = tile.alloc : !tile.buffer<64x32xf16, shared>
    %b = tile.alloc : !tile.buffer<32x64xf16, shared>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %A, %a : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      tile.copy %B, %b : !tile.tensor<32x64xf16>, !tile.buffer<32x64xf16, shared>
      tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    }
  }
  func.return
}

// A write through a region, then a read through a reshape of the same buffer
// (read after write); then a write after that read (write after read).
// CHECK-LABEL: func.func @views_of_one_buffer
// CHECK:       tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.fill
func.func @views_of_one_buffer(%X: !tile.tensor<32xf16>, %Y: !tile.tensor<64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f16
    %s = tile.alloc : !tile.buffer<2x32xf16, shared>
    %r = tile.region %s[%c0, %c0] : !tile.buffer<2x32xf16, shared> -> !tile.buffer<1x32xf16, shared>
    %v = tile.reshape %s : !tile.buffer<2x32xf16, shared> -> !tile.buffer<64xf16, shared>
    tile.copy %X, %r : !tile.tensor<32xf16>, !tile.buffer<1x32xf16, shared>
    tile.copy %v, %Y : !tile.buffer<64xf16, shared>, !tile.tensor<64xf16>
    tile.fill %s, %z : !tile.buffer<2x32xf16, shared>, f16
  }
  func.return
}

// A tile.parallel is one step: its body reads what the copy wrote, so the
// barrier goes before the parallel, never inside it.
// CHECK-LABEL: func.func @parallel_reads_shared
// CHECK:       tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.parallel
// CHECK-NOT:   tile.barrier
// CHECK:       tile.reduce
func.func @parallel_reads_shared(%W: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %w = tile.alloc : !tile.buffer<64xf32, shared>
    %x = tile.alloc : !tile.buffer<64xf32, shared>
    %sum = tile.alloc : !tile.buffer<1xf32, fragment>
    tile.copy %W, %w : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    tile.parallel (%i) in [64] {
      %v = tile.load %w[%i] : !tile.buffer<64xf32, shared> -> f32
      tile.store %v, %x[%i] : f32, !tile.buffer<64xf32, shared>
    }
    tile.reduce %w, %sum {kind = "sum", dim = 0 : i64, clear = true} : !tile.buffer<64xf32, shared>, !tile.buffer<1xf32, fragment>
  }
  func.return
}

// The write inside an scf.if branch conflicts with the read after the if.
// CHECK-LABEL: func.func @write_in_branch
// CHECK:       scf.if
// CHECK:       tile.copy
// CHECK:       tile.barrier
// CHECK-NEXT:  tile.copy
func.func @write_in_branch(%X: !tile.tensor<64xf32>, %c: i1) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    scf.if %c {
      tile.copy %X, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    }
    tile.copy %s, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
  }
  func.return
}

// A barrier the user wrote already orders the accesses: none is added.
// CHECK-LABEL: func.func @existing_barrier
// CHECK:       tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.copy
// CHECK-NOT:   tile.barrier
func.func @existing_barrier(%X: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    tile.copy %X, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    tile.barrier
    tile.copy %s, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
  }
  func.return
}

// The loop reads what was written before it: a barrier before the loop, and
// none at its end since the body only reads.
// CHECK-LABEL: func.func @write_before_loop
// CHECK:       tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.for
// CHECK-NOT:   tile.barrier
// CHECK:       func.return
func.func @write_before_loop(%X: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    tile.copy %X, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    tile.for %k = %c0 to %c4 step %c1 {
      tile.copy %s, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
    }
  }
  func.return
}

// Two reads of the same buffer need no barrier between them.
// CHECK-LABEL: func.func @negative_barrier_read_after_read
// CHECK-NOT:   tile.barrier
// CHECK:       func.return
func.func @negative_barrier_read_after_read(%X: !tile.tensor<64xf32>, %Y: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    tile.copy %s, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
    tile.copy %s, %Y : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
  }
  func.return
}

// Different shared buffers do not conflict (they have no planned offsets).
// CHECK-LABEL: func.func @negative_barrier_distinct_buffers
// CHECK-NOT:   tile.barrier
// CHECK:       func.return
func.func @negative_barrier_distinct_buffers(%X: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<64xf32, shared>
    %t = tile.alloc : !tile.buffer<64xf32, shared>
    tile.copy %X, %s : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
    tile.copy %t, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
  }
  func.return
}

// Fragments are per-thread and global tensors are not ordered by block
// barriers: write-then-read of either needs no barrier.
// CHECK-LABEL: func.func @negative_barrier_not_shared
// CHECK-NOT:   tile.barrier
// CHECK:       func.return
func.func @negative_barrier_not_shared(%X: !tile.tensor<64xf32>, %Y: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %f = tile.alloc : !tile.buffer<64xf32, fragment>
    tile.copy %X, %f : !tile.tensor<64xf32>, !tile.buffer<64xf32, fragment>
    tile.copy %f, %Y : !tile.buffer<64xf32, fragment>, !tile.tensor<64xf32>
    tile.copy %Y, %X : !tile.tensor<64xf32>, !tile.tensor<64xf32>
  }
  func.return
}

// Buffers that tile-plan-shared-memory placed at the same bytes alias: the
// write of the second after the read of the first needs a barrier.
// CHECK-LABEL: func.func @planned_aliases
// CHECK:       tile.copy
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.copy
func.func @planned_aliases(%X: !tile.tensor<64xf32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %s = tile.alloc {offset = 0 : i64} : !tile.buffer<64xf32, shared>
    %t = tile.alloc {offset = 0 : i64} : !tile.buffer<64xf32, shared>
    tile.copy %s, %X : !tile.buffer<64xf32, shared>, !tile.tensor<64xf32>
    tile.copy %X, %t : !tile.tensor<64xf32>, !tile.buffer<64xf32, shared>
  }
  func.return
}

// A branch only some threads take (its condition depends on the thread index): no barrier
// goes inside it, where the other threads would never arrive (on a GPU: a deadlock, or the
// block's later barriers out of step). The read and the write inside it are the program's to
// order; the read after the branch gets its barrier after it.
// CHECK-LABEL: func.func @divergent_branch
// CHECK:       scf.if
// CHECK-NEXT:    tile.load
// CHECK-NEXT:    tile.store
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.load
func.func @divergent_branch(%Y: !tile.tensor<64xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %tx = tile.thread_id
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %s = tile.alloc : !tile.buffer<2x64xi32, shared>
    %lt = arith.cmpi slt, %tx, %c32 : index
    scf.if %lt {
      %v = tile.load %s[%c0, %tx] : !tile.buffer<2x64xi32, shared> -> i32
      tile.store %v, %s[%c1, %tx] : i32, !tile.buffer<2x64xi32, shared>
    }
    %w = tile.load %s[%c1, %c0] : !tile.buffer<2x64xi32, shared> -> i32
    tile.store %w, %Y[%tx] : i32, !tile.tensor<64xi32>
  }
  func.return
}

// TileLang's topk_selector: the condition comes from an atomic's old value kept in a
// per-thread variable (`pos = T.atomic_add(..., return_prev=True)`): divergent too, so the
// move from one half of the buffer to the other gets no barrier inside the branch.
// CHECK-LABEL: func.func @divergent_through_a_variable
// CHECK:       scf.if
// CHECK-NOT:   tile.barrier
// CHECK:       tile.store %{{.*}}, %s[%c1, %{{.*}}]
// CHECK-NEXT:  }
func.func @divergent_through_a_variable(%K: !tile.tensor<1xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1 : i32
    %s = tile.alloc : !tile.buffer<2x64xi32, shared>
    %count = tile.alloc : !tile.buffer<1xi32, shared>
    %pos = tile.alloc : !tile.buffer<1xi32, local>
    %old = tile.atomic %count[%c0], %one {kind = "add"} : !tile.buffer<1xi32, shared>, i32 -> i32
    tile.store %old, %pos[%c0] : i32, !tile.buffer<1xi32, local>
    %k = tile.load %K[%c0] : !tile.tensor<1xi32> -> i32
    %p = tile.load %pos[%c0] : !tile.buffer<1xi32, local> -> i32
    %below = arith.cmpi slt, %p, %k : i32
    scf.if %below {
      %i = arith.index_cast %p : i32 to index
      %v = tile.load %s[%c0, %i] : !tile.buffer<2x64xi32, shared> -> i32
      tile.store %v, %s[%c1, %i] : i32, !tile.buffer<2x64xi32, shared>
    }
  }
  func.return
}

// The same branch on a value every thread reads alike (shared memory at one index, after a
// barrier) is uniform: the barrier between the read and the write goes inside it.
// CHECK-LABEL: func.func @uniform_through_shared
// CHECK:       scf.if
// CHECK-NEXT:    tile.load
// CHECK-NEXT:    tile.barrier
// CHECK-NEXT:    tile.store
func.func @uniform_through_shared(%K: !tile.tensor<1xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = tile.alloc : !tile.buffer<2x64xi32, shared>
    %count = tile.alloc : !tile.buffer<1xi32, shared>
    %n = tile.alloc : !tile.buffer<1xi32, local>
    %c = tile.load %count[%c0] : !tile.buffer<1xi32, shared> -> i32
    tile.store %c, %n[%c0] : i32, !tile.buffer<1xi32, local>
    %k = tile.load %K[%c0] : !tile.tensor<1xi32> -> i32
    %m = tile.load %n[%c0] : !tile.buffer<1xi32, local> -> i32
    %more = arith.cmpi slt, %m, %k : i32
    scf.if %more {
      %v = tile.load %s[%c0, %c0] : !tile.buffer<2x64xi32, shared> -> i32
      tile.store %v, %s[%c0, %c1] : i32, !tile.buffer<2x64xi32, shared>
    }
  }
  func.return
}

// A loop whose bound differs between threads: no barrier at the end of its body (threads
// run different numbers of iterations); the read after it gets one.
// CHECK-LABEL: func.func @divergent_loop_bound
// CHECK:       tile.for
// CHECK-NEXT:    tile.load
// CHECK-NEXT:    tile.store
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.load
func.func @divergent_loop_bound(%Y: !tile.tensor<64xi32>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [64, 1, 1] {
    %tx = tile.thread_id
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = tile.alloc : !tile.buffer<64xi32, shared>
    tile.for %k = %c0 to %tx step %c1 {
      %v = tile.load %s[%k] : !tile.buffer<64xi32, shared> -> i32
      tile.store %v, %s[%tx] : i32, !tile.buffer<64xi32, shared>
    }
    %w = tile.load %s[%c0] : !tile.buffer<64xi32, shared> -> i32
    tile.store %w, %Y[%tx] : i32, !tile.tensor<64xi32>
  }
  func.return
}

// Raw cp.asyncs write when they land, at the threads' wait: none needs a barrier before the next
// one (the loop's iterations), a barrier after the wait shows them all to the later copy out, and
// a barrier before them orders the earlier fill (written by other threads) ahead of them.
// CHECK-LABEL: func.func @raw_cp_async
// CHECK:       tile.fill
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.for
// CHECK-NEXT:    tile.cp_async
// CHECK-NEXT:  }
// CHECK-NEXT:  tile.async_commit
// CHECK-NEXT:  tile.async_wait
// CHECK-NEXT:  tile.barrier
// CHECK-NEXT:  tile.copy
func.func @raw_cp_async(%A: !tile.tensor<64x64xf16>, %B: !tile.tensor<64x64xf16>) {
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f16
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    tile.fill %s, %zero : !tile.buffer<64x64xf16, shared>, f16
    tile.for %r = %c0 to %c4 step %c1 {
      tile.cp_async %A[%r, %c0], %s[%r, %c0] {elements = 8 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
    }
    tile.async_commit
    tile.async_wait {pending = 0 : i64}
    tile.copy %s, %B : !tile.buffer<64x64xf16, shared>, !tile.tensor<64x64xf16>
  }
  func.return
}
