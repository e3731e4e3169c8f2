"""tilec.source: reading a kernel's def from its file."""

import pytest

from tilec import TilecError
from tilec.source import parse_function

kernel_lambda = lambda A: None  # noqa: E731 - what a user might pass where a def is needed


def test_a_lambda_is_refused_with_its_location():
    with pytest.raises(TilecError, match=r"is not a `def` in its source file .*test_source.py:8") as e:
        parse_function(kernel_lambda)
    assert "a lambda cannot be a kernel" in str(e.value)


def test_a_def_is_read():
    def k(A):
        return A

    node, path, line, _ = parse_function(k)
    assert node.name == "k" and path.endswith("test_source.py") and line == 18
