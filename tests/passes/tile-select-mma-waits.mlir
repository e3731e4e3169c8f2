// RUN: tilec opt %s -p "tile-select-mma{target=sm_90a wgmma=true}" | filecheck %s --check-prefix=WG
// RUN: not tilec opt %s -p "tile-select-mma{target=sm_80}" 2>&1 | filecheck %s --check-prefix=SM80
// RUN: not tilec opt %s -p "tile-select-mma{target=sm_90a}" 2>&1 | filecheck %s --check-prefix=OFF

// The program's own waits (T.wait_wgmma: tile.gemm_wait without accumulators) get the accumulators
// of the asynchronous wgmmas (wg_wait) they complete: those of the wait's role issued before it or
// in a loop around it, less those of the newest `pending` groups. Group 0's first wait (before any
// gemm) ties nothing; the one in the loop leaves one group running, the iteration before's gemm
// into %x, so it ties nothing either; the one after the loop ties %x. Group 1's ties %y alone.
// WG-LABEL: func.func @program_waits
// WG:        scf.if
// WG-NEXT:     tile.gemm_wait
// WG-NOT:      %
// WG:          tile.for
// WG-NEXT:       tile.gemm_wait {pending = 1 : i64}{{$}}
// WG-NEXT:       tile.gemm %a, %b, %x {{.*}}wg_wait = -1 : i64, wgmma_only, mma = "wgmma"}
// WG:          tile.gemm_wait %x : !tile.buffer<64x64xf32, fragment>
// WG:        } else {
// WG-NEXT:     tile.gemm %a, %b, %y {{.*}}wg_wait = 1 : i64, mma = "wgmma"}
// WG-NEXT:     tile.gemm_wait %y : !tile.buffer<64x64xf32, fragment>
// A T.wgmma_gemm wgmma cannot compute stops the build at the gemm, saying why.
// SM80: tile-select-mma-waits.mlir:[[# @LINE + 20]]:11: error: T.wgmma_gemm: the target sm_80 has no wgmma (sm_90a has)
// OFF: error: T.wgmma_gemm: wgmma is turned off for this build
func.func @program_waits() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {
    %a = tile.alloc : !tile.buffer<64x64xf16, shared>
    %b = tile.alloc : !tile.buffer<64x64xf16, shared>
    %x = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %y = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.warp_specialize producer {
    ^bb0:
    } consumer {
      %g = tile.consumer_group
      %first = arith.cmpi eq, %g, %c0 : index
      scf.if %first {
        tile.gemm_wait
        tile.for %i = %c0 to %c4 step %c1 {
          tile.gemm_wait {pending = 1 : i64}
          tile.gemm %a, %b, %x {transpose_b = true, wg_wait = -1 : i64, wgmma_only} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
        }
        tile.gemm_wait
      } else {
        tile.gemm %a, %b, %y {transpose_b = true, wg_wait = 1 : i64} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
        tile.gemm_wait
      }
    } {producer_threads = 0 : i64, all_producer_threads, consumer_groups = 2 : i64}
  }
  func.return
}
