"""Facts about the visible GPU, as TileLang's `carver.arch.driver` gives them (from torch)."""

from __future__ import annotations

__all__ = ["get_device_name", "get_max_dynamic_shared_size_bytes", "get_num_sms", "get_registers_per_block",
           "get_shared_memory_per_block"]


def _properties(device_id: int = 0):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU is visible")
    return torch.cuda.get_device_properties(device_id)


def get_num_sms(device_id: int = 0) -> int:
    """The number of streaming multiprocessors."""
    return int(_properties(device_id).multi_processor_count)


def get_device_name(device_id: int = 0) -> str:
    return str(_properties(device_id).name)


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002 - TileLang's name
    size = int(getattr(_properties(device_id), "shared_memory_per_block_optin", 48 * 1024))
    return {"bytes": size, "kb": size // 1024, "mb": size // 1024**2}[format]


get_max_dynamic_shared_size_bytes = get_shared_memory_per_block


def get_registers_per_block(device_id: int = 0) -> int:
    return int(getattr(_properties(device_id), "regs_per_multiprocessor", 65536))
