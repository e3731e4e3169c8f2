"""`tilec.utils`: TileLang's `tilelang.utils` helpers (tensor comparison and supply)."""

from tilec.utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close"]
