// RUN: tilec opt %s -p tile-infer-layout --split-input-file --verify-diagnostics

// A T.Parallel under a branch on the thread index: its iterations would be spread over all
// 64 threads, and the 32 outside the branch would not run theirs.
func.func @parallel_in_thread_branch(%Y: !tile.tensor<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c32 = arith.constant 32 : index
    %t = tile.thread_id
    %low = arith.cmpi ult, %t, %c32 : index
    scf.if %low {
      // expected-error@+1 {{T.Parallel inside a branch on the thread index (T.get_thread_binding) is not supported by the CUDA target}}
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
