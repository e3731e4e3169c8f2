// RUN: tilec opt %s -p tile-infer-layout --split-input-file --verify-diagnostics

// A T.Parallel under a branch on the thread index and the block index: which threads take it is
// not known from the thread index alone, so its sides cannot run one after the other on the whole
// block (thread_branches.py), and its iterations would be spread over threads outside it.
func.func @parallel_in_thread_branch(%Y: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %t = tile.thread_id
    %low = arith.cmpi ult, %t, %bx : index
    scf.if %low {
      // expected-error@+1 {{T.Parallel inside a branch on the thread index (T.get_thread_binding) is not supported by the CUDA target: tilec spreads whole-tile work over all the block's threads, and those outside the branch would not do their part; tilec runs such a branch's sides one after the other on the whole block, but which threads take this one is not known from the thread index alone}}
      tile.parallel (%i) in [64] {
        %z = arith.constant 0.0 : f32
        tile.store %z, %Y[%i] : f32, !tile.tensor<64xf32>
      }
    }
  }
  func.return
}

// -----

// Per-thread code under such a branch is fine: one element, from the threads that take it.
func.func @negative_scalar_in_thread_branch(%Y: !tile.tensor<64xf32>) {
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

// -----

// A branch on the thread index that yields a value cannot be replaced by its sides one after the
// other (which side's value would follow it?), so its whole-tile work stays refused.
func.func @thread_branch_with_results(%Y: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c32 = arith.constant 32 : index
    %t = tile.thread_id
    %low = arith.cmpi ult, %t, %c32 : index
    %v = scf.if %low -> (f32) {
      // expected-error@+1 {{T.Parallel inside a branch on the thread index (T.get_thread_binding) is not supported by the CUDA target: tilec spreads whole-tile work over all the block's threads, and those outside the branch would not do their part; tilec runs such a branch's sides one after the other on the whole block, but this one yields values}}
      tile.parallel (%i) in [64] {
        %z = arith.constant 0.0 : f32
        tile.store %z, %Y[%i] : f32, !tile.tensor<64xf32>
      }
      %one = arith.constant 1.0 : f32
      scf.yield %one : f32
    } else {
      %two = arith.constant 2.0 : f32
      scf.yield %two : f32
    }
  }
  func.return
}
