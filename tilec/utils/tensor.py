"""Tensors for and from kernels: how inputs are drawn (`TensorSupplyType`) and how outputs are compared.

`torch_assert_close(a, b, rtol, atol, max_mismatched_ratio)` passes when at most that fraction
of elements differ beyond `atol + rtol * |b|` (TileLang's semantics and defaults).
`get_tensor_supply(kind)(param)` draws a tensor for a kernel parameter (anything with `shape`
and `dtype`), on the GPU when there is one.
"""

from __future__ import annotations

import enum

from tilec.dtypes import as_dtype

__all__ = ["TensorSupplyType", "get_tensor_supply", "is_float8_dtype", "torch_assert_close"]


class TensorSupplyType(enum.Enum):
    """How input tensors are filled (TileLang's names)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def is_float8_dtype(dtype) -> bool:
    d = as_dtype(dtype)
    return d is not None and d.name.startswith("float8")


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer):
    """A function drawing one tensor for a parameter (its static `shape` and `dtype`) as `supply_type` says."""

    def get_tensor(param):
        import torch

        shape = [int(d) if isinstance(d, int) else _static_size(param, d) for d in param.shape]
        d = as_dtype(param.dtype)
        if d is None:
            raise ValueError(f"get_tensor_supply: unknown dtype {param.dtype!r}")
        dtype, device = d.torch, _device()
        kind = supply_type
        if kind is TensorSupplyType.Auto and d.name in ("float16", "float32", "bfloat16"):
            return torch.empty(*shape, device=device, dtype=dtype).uniform_(-1.0, 1.0)
        if kind in (TensorSupplyType.Auto, TensorSupplyType.Integer):
            return _integers(torch, d, shape, device)
        if d.name == "int8" and kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal):
            return torch.ones(*shape, device=device, dtype=dtype)
        if kind is TensorSupplyType.Uniform:
            return torch.empty(*shape, device=device, dtype=torch.float32).uniform_(-1.0, 1.0).to(dtype)
        if kind is TensorSupplyType.Normal:
            return torch.empty(*shape, device=device, dtype=torch.float32).normal_(-1.0, 1.0).to(dtype)
        if kind is TensorSupplyType.Randn:
            return torch.randn(*shape, device=device).to(dtype)
        if kind is TensorSupplyType.Zero:
            return torch.zeros(*shape, device=device, dtype=dtype)
        if kind is TensorSupplyType.One:
            return torch.ones(*shape, device=device, dtype=dtype)
        raise NotImplementedError(supply_type)

    return get_tensor


def _integers(torch, d, shape, device):
    """Small integers in the dtype (TileLang's `Integer`, and `Auto` for non-float types)."""
    if d.kind == "uint":
        return torch.randint(0, 3, shape, device=device, dtype=d.torch)
    if d.name.startswith("float8"):
        return torch.randint(-128, 128, shape, device=device, dtype=torch.int8).to(d.torch)
    if d.kind == "bool":
        return torch.randint(0, 2, shape, device=device, dtype=d.torch)
    return torch.randint(-2, 3, shape, device=device, dtype=d.torch)


def _static_size(param, d):
    raise ValueError(f"get_tensor_supply: `{getattr(param, 'name', param)}` has the dynamic size {d}; a random "
                     "tensor needs a static shape (pass the input tensors yourself)")


def torch_assert_close(tensor_a, tensor_b, rtol=1e-2, atol=1e-3, max_mismatched_ratio=0.001, verbose: bool = False,
                       equal_nan: bool = True, check_device: bool = True, check_dtype: bool = True,
                       check_layout: bool = True, check_stride: bool = False, base_name: str = "LHS",
                       ref_name: str = "RHS"):
    """Asserts that at most `max_mismatched_ratio` of the elements differ beyond atol + rtol * |b|."""
    import numpy as np
    import torch

    if tensor_a.shape != tensor_b.shape:
        raise AssertionError(f"The values for attribute 'shape' do not match: {tensor_a.shape} != {tensor_b.shape}.")
    if check_device and tensor_a.device != tensor_b.device:
        raise AssertionError(f"The values for attribute 'device' do not match: {tensor_a.device} != {tensor_b.device}.")
    if check_dtype and tensor_a.dtype != tensor_b.dtype:
        raise AssertionError(f"The values for attribute 'dtype' do not match: {tensor_a.dtype} != {tensor_b.dtype}.")
    if check_stride and tensor_a.stride() != tensor_b.stride():
        raise AssertionError(f"The values for attribute 'stride()' do not match: {tensor_a.stride()} != "
                             f"{tensor_b.stride()}.")
    a, b = tensor_a.detach(), tensor_b.detach()
    if a.device != b.device:
        a, b = a.cpu(), b.cpu()
    if a.dtype != b.dtype:
        wide = [torch.uint64, torch.uint32, torch.uint16]
        dtype = torch.promote_types(torch.int64 if a.dtype in wide else a.dtype,
                                    torch.int64 if b.dtype in wide else b.dtype)
        a, b = a.to(dtype), b.to(dtype)
    mismatched = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    diff = torch.abs(a - b)
    count, total = int(mismatched.sum().item()), a.numel()
    allowed = int(total * max_mismatched_ratio)
    if verbose:
        print(f"Number of mismatched elements: {count} / {total} (allowed: {allowed})")
    if count <= allowed:
        return True
    flat = int(torch.argmax(mismatched.reshape(-1).int()).item())
    idx = [int(i) for i in np.unravel_index(flat, tuple(a.shape))]
    av, bv = a.reshape(-1)[flat].item(), b.reshape(-1)[flat].item()
    raise AssertionError(
        f"Too many mismatched elements: {count} > {allowed} ({max_mismatched_ratio * 100:.2f}% allowed, but get "
        f"{count / max(total, 1) * 100:.2f}%).\nFirst mismatch at index {idx}: lhs={av:.6f}, rhs={bv:.6f}, "
        f"abs_diff={abs(av - bv):.6f}, rel_diff={abs(av - bv) / (abs(bv) + 1e-12):.6f}"
        f"\nGreatest absolute difference: {diff.max().item()}, "
        f"Greatest relative difference: {(diff / (torch.abs(b) + 1e-12)).max().item()}"
        f"\n{base_name}: {tensor_a}\n{ref_name}: {tensor_b}")
