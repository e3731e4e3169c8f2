"""The CUDA backend on a GPU, with each loader: the README's eager add, outputs, streams,
dynamic shared memory opt-in, errors, and the profiler's CUDA-event timing.

`hand_lowered` tests use the hand-written thread-level module of
tests/runtime/test_cuda_backend.py (in place of tilec.compiler.lower); `README add` tests use the
real lowering.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

from tilec import config

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.targets.cuda import loader as rt

import tilec
import tilec.language as T
from tilec import TilecError
from tilec.target import resolve_target

LOADERS = [pytest.param(name, marks=pytest.mark.skipif(not rt._importable(name), reason=f"{name} not installed"))
           for name in rt.LOADERS]


def _runtime_tests():
    path = pathlib.Path(__file__).resolve().parent.parent / "runtime" / "test_cuda_backend.py"
    spec = importlib.util.spec_from_file_location("_tilec_runtime_backend_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HAND = _runtime_tests()


@pytest.fixture
def hand_lowered(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    HAND.install_fake_lowering(monkeypatch, [])


def _hand_kernel(loader):
    from tilec.compiler.cuda_backend import CudaBackend

    kernel = tilec.JITKernel(HAND.add.build_program(block=128), resolve_target("cuda"), {})
    kernel._backend = CudaBackend(kernel.program, kernel.target, {}, execution_backend=loader)
    return kernel


@pytest.mark.parametrize("loader", LOADERS)
def test_hand_lowered_add(hand_lowered, loader):
    kernel = _hand_kernel(loader)
    for n in (1, 127, 5000, 1 << 20):
        a = torch.randn(n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        c = kernel(a, b)
        torch.cuda.synchronize()
        assert c.shape == (n,) and c.device == a.device
        torch.testing.assert_close(c, a + b)
    assert next(iter(kernel._backend._kernels.values())).loader == loader
    assert f"loader {loader}" in kernel.get_host_source()


@pytest.mark.parametrize("loader", LOADERS)
def test_writes_every_element_and_no_more(hand_lowered, loader):
    kernel = _hand_kernel(loader)
    n = 1000
    a = torch.randn(n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, device="cuda", dtype=torch.float16)
    out = torch.full((n + 64,), float("nan"), device="cuda", dtype=torch.float16)
    kernel(a, b, out[:n])  # all three parameters given: the output is written in place
    torch.cuda.synchronize()
    torch.testing.assert_close(out[:n], a + b)
    assert torch.isnan(out[n:]).all()


@pytest.mark.parametrize("loader", LOADERS)
def test_side_stream_is_ordered(hand_lowered, loader):
    kernel = _hand_kernel(loader)
    n = 1 << 22
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.randn(n, device="cuda", dtype=torch.float16)
        b = torch.ones(n, device="cuda", dtype=torch.float16)
        c = kernel(a, b)
        d = c * 2  # runs after the kernel on the side stream
    side.synchronize()
    torch.testing.assert_close(d, (a + b) * 2)


@pytest.mark.parametrize("loader", LOADERS)
def test_cpu_and_non_contiguous_inputs_are_errors(hand_lowered, loader):
    kernel = _hand_kernel(loader)
    a = torch.randn(256, device="cuda", dtype=torch.float16)
    with pytest.raises(TilecError, match=r"argument 1 \(`B`\) must be on cuda"):
        kernel(a, a.cpu())
    with pytest.raises(TilecError, match=r"argument 0 \(`A`\) must be contiguous"):
        kernel(torch.randn(512, device="cuda", dtype=torch.float16)[::2], a)


@pytest.mark.skipif(not rt._importable("pycuda"), reason="pycuda not installed")
def test_pack_args_equals_pycuda_arg_buffer():
    # pycuda's _build_arg_buf (nested in pycuda.driver, not importable) packs np.number
    # arguments with their dtype.char and device allocations with "P" through _pvt_struct.pack
    from pycuda._pvt_struct import pack

    args = [rt.Ptr(0x7F00DEAD0000), np.int64(5000), np.float32(0.5), np.int32(3), rt.Ptr(8)]
    fmt = "P" + np.dtype(np.int64).char + np.dtype(np.float32).char + np.dtype(np.int32).char + "P"
    assert rt.pack_args(args) == bytes(pack(fmt, 0x7F00DEAD0000, *args[1:4], 8))


# Each thread writes its index at byte 102000 + 4*tid of dynamic shared memory and reads it back.
SMEM_PTX = """
.version 8.0
.target TARGET
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry smem_kernel(.param .u64 out, .param .u64 n)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  .reg .f32 %f<3>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, dyn;
  shl.b32 %r3, %r1, 2;
  add.u32 %r4, %r2, %r3;
  add.u32 %r5, %r4, 102000;
  cvt.rn.f32.u32 %f1, %r1;
  st.shared.f32 [%r5], %f1;
  bar.sync 0;
  ld.shared.f32 %f2, [%r5];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f2;
  ret;
}
"""


@pytest.mark.parametrize("loader", LOADERS)
def test_dynamic_shared_memory_over_48k(loader):
    """A launch asking for 100 KB of dynamic shared memory needs the per-function opt-in."""
    ptx = SMEM_PTX.replace("TARGET", resolve_target("cuda").arch)
    k = rt.load(ptx, "smem_kernel", loader=loader)
    out = torch.zeros(32, device="cuda")
    k.launch((1, 1, 1), (32, 1, 1), 110 * 1024, [rt.Ptr(out.data_ptr()), 32], torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.arange(32, device="cuda", dtype=torch.float32))


@pytest.mark.parametrize("loader", LOADERS)
def test_driver_errors_name_the_cuda_error(loader):
    with pytest.raises(TilecError, match="CUDA_ERROR"):
        rt.load(".version 8.0\n.target sm_90a\n.address_size 64\nthis is not ptx\n", "k", loader=loader)


def test_profiler_do_bench_uses_cuda_events():
    from tilec.profiler import do_bench

    x = torch.randn(1 << 24, device="cuda")
    ms = do_bench(lambda: x.mul_(1.0), warmup=5, rep=20, return_mode="median")
    assert 0.005 < ms < 5  # 128 MB read + written: tens of microseconds on an H200


@pytest.mark.parametrize("loader", LOADERS)
def test_readme_add(loader, monkeypatch):
    """The README's example, through the real pipeline, with each loader."""
    monkeypatch.setattr(config, "LOADER", loader)

    @tilec.jit
    def add(A, B, block: int = 1024):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return C

    a, b = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    c = add(a, b, block=256)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
    prof = add.compile(N=5000, block=256).get_profiler()
    prof.assert_allclose(lambda x, y: x + y)
    assert prof.do_bench(warmup=2, rep=10) > 0
