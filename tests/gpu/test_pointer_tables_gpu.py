"""Pointer tables and `T.make_tensor` on a GPU (issue 11): TileLang's grouped GEMM over tables of
`data_ptr()`s and its matmul through `T.ptr` parameters, against torch, on sm_90a and sm_80
code paths (the kernels of tests/frontend/test_pointer_tables.py)."""

import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import tilec


def _kernels():
    path = pathlib.Path(__file__).parent.parent / "frontend" / "test_pointer_tables.py"
    spec = importlib.util.spec_from_file_location("_tilec_pointer_table_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_K = _kernels()
grouped_gemm, matmul_by_address, multi_copy = _K.grouped_gemm, _K.matmul_by_address, _K.multi_copy


def _table(tensors):
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64, device="cuda")


def test_pointer_table_copy():
    srcs = [torch.randn(64, dtype=torch.float16, device="cuda") for _ in range(3)]
    out = torch.zeros(3, 64, dtype=torch.float16, device="cuda")
    tilec.compile(multi_copy(3, 64), target="cuda")(_table(srcs), out)
    torch.testing.assert_close(out, torch.stack(srcs) * 2)


@pytest.mark.parametrize("pass_configs", [{}, {"tl.disable_warp_specialized": True}])
def test_grouped_gemm_by_pointer_table(pass_configs):
    sizes, K, N, bm, bn, bk = [64, 200, 33], 256, 128, 64, 64, 32
    max_m = max(sizes)
    a = [torch.zeros(max_m, K, dtype=torch.float16, device="cuda") for _ in sizes]
    for t, s in zip(a, sizes):
        t[:s] = torch.randn(s, K, dtype=torch.float16, device="cuda")
    b = [torch.randn(K, N, dtype=torch.float16, device="cuda") for _ in sizes]
    c = [torch.zeros(max_m, N, dtype=torch.float16, device="cuda") for _ in sizes]
    prog, offsets = grouped_gemm(sizes, K, N, bm, bn, bk)
    kernel = tilec.compile(prog, target="cuda", pass_configs=pass_configs)
    kernel(_table(a), _table(b), _table(c), torch.tensor(offsets, dtype=torch.int32, device="cuda"))
    for g, s in enumerate(sizes):
        torch.testing.assert_close(c[g][:s].float(), a[g][:s].float() @ b[g].float(), atol=1e-2, rtol=1e-2)


def test_matmul_through_scalar_pointers():
    M, N, K = 256, 192, 320
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(N, K, dtype=torch.float16, device="cuda")
    c = torch.zeros(M, N, device="cuda")
    tilec.compile(matmul_by_address(M, N, K, 64, 64, 32), target="cuda")(a.data_ptr(), b.data_ptr(), c.data_ptr(),
                                                                            M, N, K)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-2, rtol=1e-2)
