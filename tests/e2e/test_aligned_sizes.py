"""Kernels over run-time sizes (`T.dynamic`): the build for sizes of 16-byte multiples and the build for
others (tilec/compiler/size_variants.py, pass config `tilec.aligned_sizes`). A dynamic inner size
is a row stride; assumed a multiple of 16 bytes, TMA reads the tensor and its rows take 16-byte
copies, so a dynamic gemm is warp-specialized as a static one is; a call whose sizes are not such
multiples runs a build for the multiples they have (8-byte copies for rows of 8-byte multiples), made
then. Simulated against float64; the GPU runs the aligned build and another."""

import re

import pytest
import torch

import tilec
import tilec.language as T
from tilec.compiler import size_variants
from tilec.frontend import build_prim_func

from kernel_cases import gemm_tiles


def dynamic_gemm(bm, bn, bk, threads=256):
    return gemm_tiles(T.dynamic("m"), T.dynamic("n"), T.dynamic("k"), bm, bn, bk, "float16", threads=threads, stages=3)


def _run(kernel, m, n, k, device="cpu", seed=0):
    torch.manual_seed(seed)
    a = torch.randn(m, k, device=device).half()
    b = torch.randn(k, n, device=device).half()
    ref = a.double() @ b.double()
    got = kernel(a, b).double()
    assert float((got - ref).norm() / ref.norm()) < 1e-5


def test_the_multiples_are_16_bytes_of_each_inner_size():
    @T.prim_func
    def main(A: T.Tensor((T.dynamic("m"), T.dynamic("k")), "float16"),
             B: T.Tensor((T.dynamic("k"), T.dynamic("n")), "float8_e4m3"),
             C: T.Tensor((T.dynamic("m"), T.dynamic("n")), "float32"), D: T.Tensor((T.dynamic("rows"),), "float32")):
        with T.Kernel(1, threads=128):
            D[0] = C[0, 0]

    program = build_prim_func(main)
    # k: A's row (8 halves; B's rows are k, its outermost); n: B's row (16 fp8 bytes) and C's (4 floats);
    # m and rows are outermost dims only: no strides, no assumption
    assert size_variants.size_multiples(program) == {"k": 8, "n": 16}
    assert size_variants.unmet({"k": 8, "n": 16}, {"k": 64, "n": 200, "m": 3}) == ["n"]


def test_a_dynamic_gemm_is_warp_specialized_for_aligned_sizes():
    kernel = tilec.compile(dynamic_gemm(128, 128, 64), out_idx=[2], target="sim")
    backend = kernel._backend
    assert isinstance(backend, size_variants.SizeVariants) and backend.needed == {"k": 8, "n": 8}
    ir = kernel.get_ir("tile-opt")
    assert "tilec.aligned_sizes = [array<i64: 1, 8>, array<i64: 8, 8>, array<i64: 1, 8>]" in ir
    assert "tile.warp_specialize" in ir and len(re.findall(r"tile\.tma_load ", ir)) == 2
    _run(kernel, 200, 256, 192)  # tails in M only
    _run(kernel, 136, 120, 64)  # and in N
    assert len(backend.variants) == 1


def test_sizes_of_no_16_byte_multiple_run_a_build_for_the_multiples_they_have():
    kernel = tilec.compile(dynamic_gemm(128, 128, 64), out_idx=[2], target="sim")
    backend = kernel._backend
    _run(kernel, 136, 204, 196)  # n and k: multiples of 4 halves, not of 8: rows of 8-byte multiples
    assert len(backend.variants) == 2
    fours = backend.variants[1].lowered.stage("tile-opt")
    assert "tilec.aligned_sizes = [array<i64: 1, 4>, array<i64: 4, 4>, array<i64: 1, 4>]" in fours
    assert "tile.warp_specialize" not in fours  # no TMA over 8-byte rows: cp.async stages of 8-byte copies
    assert re.search(r'not_warp_specialized = "TMA cannot take any of its copies \(.*a run-time row stride', fours)
    assert "nvvm.cp.async.shared.global" in backend.variants[1].lowered.stage("thread")
    assert backend.for_sizes({"m": 7, "n": 64, "k": 64}) is backend.aligned
    assert backend.for_sizes({"m": 64, "n": 100, "k": 60}) is backend.variants[1]
    _run(kernel, 64, 64, 200)  # k = 200 = 8 * 25: the aligned build again
    _run(kernel, 70, 203, 67)  # odd sizes: the build that assumes nothing (element by element)
    assert len(backend.variants) == 3
    assert "tilec.aligned_sizes = " not in backend.variants[2].lowered.stage("tile-opt")
    assert size_variants.size_class({"k": 8, "n": 8}, {"k": 4100, "n": 203}) == {"k": 4, "n": 1}


def test_aligned_sizes_off_builds_for_any_sizes_only():
    kernel = tilec.compile(dynamic_gemm(128, 128, 64), out_idx=[2], target="sim",
                           pass_configs={"tilec.aligned_sizes": False})
    assert not isinstance(kernel._backend, size_variants.SizeVariants)
    assert "tile.warp_specialize" not in kernel.get_ir("tile-opt")
    _run(kernel, 130, 72, 72)


def test_a_static_gemm_has_one_build():
    kernel = tilec.compile(gemm_tiles(256, 256, 128, 128, 128, 64, "float16", threads=256, stages=3), out_idx=[2],
                           target="sim")
    assert not isinstance(kernel._backend, size_variants.SizeVariants)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1000, 1280, 520), (4096, 4096, 4096), (1000, 1284, 516), (4096, 4100, 4100)])
def test_both_builds_on_the_gpu(shape):
    kernel = tilec.compile(dynamic_gemm(128, 256, 64), out_idx=[2], target="sm_90a")
    _run(kernel, *shape, device="cuda", seed=1)
    aligned = not size_variants.unmet(kernel._backend.needed, dict(zip("mnk", shape)))
    assert len(kernel._backend.variants) == (1 if aligned else 2)


def test_a_cached_program_without_its_source_says_so_for_other_sizes():
    """A kernel restored from the cache (no tile IR) whose call needs another size class, with no frontend
    to run again: a located error naming the sizes, not a failure inside the build."""
    import kernel_cases

    kernel = tilec.compile(dynamic_gemm(128, 128, 64), out_idx=[2], target="sim")
    backend = kernel._backend
    backend._program.module, backend._make_program = None, None
    with pytest.raises(tilec.TilecError, match=r"sizes \['k'\] are not multiples of 16 bytes and the build for them "
                                               r"needs the kernel's source") as e:
        backend.for_sizes({"m": 64, "n": 64, "k": 60})
    line = next(i for i, text in enumerate(open(kernel_cases.__file__), 1) if "def main(A: T.Tensor(a_shape" in text)
    assert f"kernel_cases.py:{line}:" in str(e.value)
