"""The fast call of a kernel whose parameters are all tensors of fixed shapes (StaticCall), on the CPU:
it launches exactly what the general path launches (pointers, tensor maps, grid, block, shared
memory), and every call it does not expect goes to the general path, whose checks report it."""

import pytest

import tilec
import tilec.language as T
from tilec import TilecError
from tilec.compiler import cuda_backend
from tilec.compiler.cuda_backend import SLOW, StaticCall
from tilec.targets.cuda import loader, tensor_map

from kernel_cases import gemm_tiles

torch = pytest.importorskip("torch")


def gemm(m, n, k):
    return tilec.compile(gemm_tiles(m, n, k, 64, 64, 32, T.float16), out_idx=[-1], target="sm_90a")


class FakeCuda(torch.Tensor):
    """A CPU tensor the launch path takes for one on cuda:`index` (no GPU needed)."""

    __torch_function__ = torch._C._disabled_torch_function_impl
    is_cuda = True
    index = 0

    @property
    def device(self):
        return torch.device("cuda", self.index)

    def get_device(self):
        return self.index


FakeCuda.__module__ = "torch.fake"  # the general path's test for a torch tensor


def cuda(t, index=0):
    fake = torch.Tensor._make_subclass(FakeCuda, t)
    fake.index = index
    return fake


class Recorder(loader.LoadedKernel):
    loader = "recorder"

    def __init__(self):
        super().__init__("main_kernel", 0)
        self.launches = []

    def launch(self, grid, block, smem_bytes, args, stream=0):
        self.launches.append((self._dims(grid, block), smem_bytes, list(args), stream))


@pytest.fixture
def kernel(monkeypatch):
    maps = []
    monkeypatch.setattr(tensor_map, "_DEFAULT_ENCODER", lambda args: maps.append(args) or bytes([len(maps)]) * 128)
    k = gemm(128, 192, 96)
    recorder = Recorder()
    backend = k._backend
    monkeypatch.setattr(backend, "_loaded", lambda index: recorder)
    monkeypatch.setattr(backend, "_static", SLOW)  # built afresh on this recorder
    monkeypatch.setattr(backend, "_grids", {(None,): tuple(int(g) for g in backend.spec.grid.evaluate({}, 132))})
    monkeypatch.setattr(cuda_backend, "_current_stream", lambda torch, device: 7)
    monkeypatch.setattr(StaticCall, "_device", lambda self, index: self.devices.setdefault(
        index, (torch.device("cpu"), tuple(int(g) for g in backend.spec.grid.evaluate({}, 132)), recorder)))
    real_init = StaticCall.__init__

    def init(self, *args):
        real_init(self, *args)
        self.stream = lambda index: 7

    monkeypatch.setattr(StaticCall, "__init__", init)
    # the general path on fake CUDA tensors: its device check passes, its outputs are CPU tensors
    monkeypatch.setattr(backend, "check_tensors", lambda given: torch.device("cpu"))
    return k, recorder, maps


def inputs():
    return cuda(torch.randn(128, 96).half()), cuda(torch.randn(96, 192).half())


def test_the_fast_call_launches_what_the_general_path_launches(kernel):
    k, recorder, maps = kernel
    assert any(kind == "tensormap" for kind, _ in k._backend.spec.args), "the kernel loads by TMA"
    a, b = inputs()
    out = k(a, b)
    assert out.shape == (128, 192) and out.dtype == torch.float32
    assert isinstance(k._backend._static, StaticCall), "the call took the fast path"
    fast = recorder.launches.pop()
    k._backend.launch(k, {0: a, 1: b}, [2], {})  # the general path, same tensors
    general = recorder.launches.pop()
    assert fast[0] == general[0] and fast[1] == general[1] and fast[3] == general[3] == 7
    for x, y, (kind, value) in zip(fast[2], general[2], k._backend.spec.args):
        if kind == "tensor" and value == 2:  # the output: a fresh tensor each call
            continue
        assert type(x) is type(y) and (x == y or kind == "tensormap" and value["tensor"] == 2), kind
    assert fast[2][0] == a.data_ptr() and fast[2][1] == b.data_ptr()


def test_a_warm_call_encodes_no_map_for_the_same_tensors(kernel):
    k, recorder, maps = kernel
    a, b = inputs()
    out = k(a, b)
    first = len(maps)
    del out
    for _ in range(5):
        out = k(a, b)  # the same inputs; the output's storage comes and goes
    input_maps = [m for m in maps[first:] if m["address"] in (a.data_ptr(), b.data_ptr())]
    assert input_maps == [], "the inputs' maps were encoded again"
    assert len(recorder.launches) == 6


@pytest.mark.parametrize("change, message", [
    (lambda a, b: (a.float(), b), r"argument 0 \(`A`\) must be float16, got float32"),
    (lambda a, b: (cuda(torch.randn(64, 96).half()), b), r"argument 0 \(`A`\) must have shape \(128, 96\)"),
    (lambda a, b: (a,), r"takes 2 input tensor\(s\)"),
])
def test_calls_it_does_not_expect_get_the_general_paths_errors(kernel, change, message):
    k, recorder, _ = kernel
    a, b = inputs()
    assert k._backend.call([a, b]) is not SLOW
    assert k._backend.call(list(change(a, b))) is SLOW
    with pytest.raises(TilecError, match=message):
        k(*change(a, b))


def test_cpu_non_contiguous_and_mixed_device_tensors_go_to_the_general_path(kernel):
    k, recorder, _ = kernel
    a, b = inputs()
    backend = k._backend
    assert backend.call([a, b]) is not SLOW
    assert backend.call([torch.randn(128, 96).half(), b]) is SLOW  # on the CPU
    wide = cuda(torch.randn(96, 384).half())[:, ::2]
    assert wide.shape == (96, 192) and backend.call([a, wide]) is SLOW  # not contiguous
    assert backend.call([a, cuda(torch.randn(96, 192).half(), index=1)]) is SLOW  # another device
    assert backend.call([a.numpy(), b]) is SLOW


@tilec.jit
def scale(A, block: int = 128):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * 2.0
    return B


def test_kernels_with_dynamic_sizes_have_no_fast_call():
    from tilec.target import resolve_target

    k = tilec.JITKernel(scale.build_program(block=128), resolve_target("sm_90a"), {})
    assert StaticCall.build(k._backend) is None
