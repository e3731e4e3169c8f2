"""CudaBackend on the CPU, with `tilec.compiler.lower.lower_to_thread` replaced by a hand-written
thread-level module: PTX (and a cubin where ptxas exists), IR stages, the disk cache, the
launch description and the argument checks that come before any driver call."""

import shutil

import pytest

from tilec import config

import tilec
from tilec.compiler import lower
from tilec.compiler.launch import GridExpr, LaunchSpec
import tilec.language as T
from tilec import TilecError
from tilec.target import Target, resolve_target

THREAD_ADD = """
func.func @add_kernel(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf16>, %n: i64)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
  %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %bid = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c128 = arith.constant 128 : index
  %base = arith.muli %bid, %c128 : index
  %i = arith.addi %base, %tid : index
  %nn = arith.index_cast %n : i64 to index
  %in = arith.cmpi slt, %i, %nn : index
  scf.if %in {
    %x = memref.load %a[%i] : memref<?xf16>
    %y = memref.load %b[%i] : memref<?xf16>
    %s = arith.addf %x, %y : f16
    memref.store %s, %c[%i] : memref<?xf16>
  }
  func.return
}
"""


def parse_thread(text):
    from tilec.dialects.nvvm import NVVM
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, gpu, llvm, memref, scf, vector
    from xdsl.dialects import math as xmath
    from xdsl.parser import Parser

    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, xmath.Math, scf.Scf, memref.MemRef, vector.Vector,
              gpu.GPU, llvm.LLVM, NVVM):
        ctx.load_dialect(d)
    return Parser(ctx, text).parse_module()


class FakeLowered(lower.Lowered):
    """THREAD_ADD as the thread stage; a placeholder text as the tile-opt stage."""

    def stage(self, name):
        return {"tile-opt": "// tile-opt stage\n", "thread": THREAD_ADD}[name]


def install_fake_lowering(monkeypatch, calls):
    """`tilec.compiler.lower.lower_to_thread` returning THREAD_ADD for a 1-D add."""

    def lower_to_thread(program, target, pass_configs, *, dump_dir=None):
        calls.append(program.name)
        grid = GridExpr([["size", "N"], ["const", 128], ["arith.ceildivsi", 0, 1]], [2])
        spec = LaunchSpec("add_kernel", (128, 1, 1), 0, grid,
                          [("tensor", 0), ("tensor", 1), ("tensor", 2), ("size", "N")])
        return FakeLowered(None, parse_thread(THREAD_ADD), spec, 0)

    monkeypatch.setattr(lower, "lower_to_thread", lower_to_thread)


@tilec.jit
def add(A, B, block: int = 128):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float16)
    B: T.Tensor((N,), T.float16)
    C = T.empty((N,), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


@pytest.fixture
def calls(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    monkeypatch.setattr(config, "DUMP_IR", None)
    calls = []
    install_fake_lowering(monkeypatch, calls)
    return calls


def compile_add(configs=None):
    return tilec.JITKernel(add.build_program(block=128), resolve_target("sm_90a"), configs or {})


def test_build_emits_ptx_and_stages(calls):
    kernel = compile_add()
    backend = kernel._backend
    assert calls == ["add"]
    ptx = kernel.get_kernel_source()
    assert ".entry add_kernel" in ptx and ".target sm_90a" in ptx
    assert backend.get_ir("tile").startswith("builtin.module")
    assert backend.get_ir("tile-opt") == "// tile-opt stage\n"
    assert "nvvm.kernel" in backend.get_ir("thread")
    assert "define" in backend.get_ir("llvm") and backend.emit("ptx") == ptx
    with pytest.raises(TilecError, match="unknown IR stage"):
        backend.get_ir("sass")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found")
def test_cubin_and_ptxas_report(calls):
    backend = compile_add()._backend
    cubin = backend.emit("cubin")
    assert isinstance(cubin, bytes) and cubin.startswith(b"\x7fELF")
    assert backend.report["add_kernel"].registers > 0
    assert "registers" in backend.launch_description()


def test_second_build_is_a_cache_hit(calls):
    first = compile_add()._backend
    second = compile_add()._backend
    assert calls == ["add"]  # lowering ran once
    assert second.from_cache and not first.from_cache
    assert second.ptx == first.ptx and second.cubin == first.cubin
    assert second.get_ir("llvm") == first.get_ir("llvm")
    assert second.spec == first.spec
    assert second.launch_description() == first.launch_description()
    assert second.spec.grid.evaluate({"N": 1000}) == (8, 1, 1)


def test_cache_key_follows_configs_and_target(calls):
    compile_add()
    compile_add({"tl.enable_fast_math": True})
    tilec.JITKernel(add.build_program(block=128), Target("sm_80", "cuda", "sm_80"), {})
    assert len(calls) == 3


def test_disabled_cache_always_lowers(calls, monkeypatch):
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    compile_add()
    compile_add()
    assert len(calls) == 2


def test_corrupted_cache_entry_is_rebuilt(calls, tmp_path):
    backend = compile_add()._backend
    folder = tmp_path / "cache" / backend.build_key[:2] / backend.build_key
    (folder / "ptx.bin").write_bytes(b"truncated")
    again = compile_add()._backend
    assert len(calls) == 2 and not again.from_cache
    assert compile_add()._backend.from_cache  # and rewritten


def test_memo_build_key_skips_the_frontend(calls):
    from tilec.compiler import cache
    from tilec.compiler.cuda_build import CacheMissError
    from tilec.compiler.cuda_backend import CudaBackend

    program = add.build_program(block=128)
    first = CudaBackend(program, resolve_target("sm_90a"), {})
    bare = cache.program_from_json(cache.program_to_json(program))
    again = CudaBackend(bare, resolve_target("sm_90a"), {}, build_key=first.build_key)
    assert again.from_cache and again.ptx == first.ptx and len(calls) == 1
    assert again.get_ir("tile") == first.get_ir("tile")
    with pytest.raises(CacheMissError):
        CudaBackend(bare, resolve_target("sm_90a"), {}, build_key="0" * 64)


def test_dump_ir(calls, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "DUMP_IR", str(tmp_path / "dump"))
    compile_add()
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert "add.0-tile.mlir" in names and "add.4-ptx.ptx" in names and "add.3-llvm.ll" in names


def test_launch_description(calls):
    text = compile_add().get_host_source()
    assert "grid  = (ceildiv(N, 128), 1, 1)" in text
    assert "block = (128, 1, 1)" in text
    assert "3: N: int64 (size)" in text and "2: out0: float16* global" in text


def test_smem_over_the_target_budget_is_an_error(calls, monkeypatch):
    original = lower.lower_to_thread

    def greedy(program, target, configs, **kw):
        lowered = original(program, target, configs, **kw)
        lowered.spec.smem_bytes = 300 * 1024  # e.g. lowering scratch on top of the planned buffers
        return lowered

    monkeypatch.setattr(lower, "lower_to_thread", greedy)
    with pytest.raises(TilecError, match="needs 307200 bytes of shared memory, more than the 232448 a block may "
                                         "use on sm_90a: 0 bytes of shared buffers and 307200 bytes of exchange"):
        compile_add()


def test_cpu_tensors_are_rejected_naming_the_argument(calls):
    torch = pytest.importorskip("torch")
    kernel = compile_add()
    a = torch.randn(1000).half()
    with pytest.raises(TilecError, match=r"argument 0 \(`A`\) must be on cuda, got cpu"):
        kernel(a, a)


def test_non_contiguous_tensor_is_rejected(calls):
    torch = pytest.importorskip("torch")
    backend = compile_add()._backend
    t = torch.randn(2000).half()[::2]

    class FakeCuda:  # looks like a CUDA tensor to the checks, no GPU needed
        def __init__(self, t):
            self.t = t
            self.device = torch.device("cuda", 0)

        def is_contiguous(self):
            return self.t.is_contiguous()

        detach = None

    FakeCuda.__module__ = "torch.fake"
    with pytest.raises(TilecError, match=r"argument 1 \(`B`\) must be contiguous"):
        backend.check_tensors({0: FakeCuda(torch.randn(1000).half()), 1: FakeCuda(t)})


def test_kernel_args_follow_the_launch_spec(calls):
    from tilec.targets.cuda.loader import Ptr

    backend = compile_add()._backend

    class FakeTensor:
        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

    args = backend.kernel_args({0: FakeTensor(0x100), 1: FakeTensor(0x200), 2: FakeTensor(0x300)}, {"N": 1000})
    assert args == [0x100, 0x200, 0x300, 1000]
    assert [type(a) for a in args] == [Ptr, Ptr, Ptr, int]
    with pytest.raises(TilecError, match="size N is not bound"):
        backend.kernel_args({0: FakeTensor(1), 1: FakeTensor(2), 2: FakeTensor(3)}, {})
