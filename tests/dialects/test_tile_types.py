"""The `tile` types and attributes: their verifiers' messages, and `?` sizes.

Type and attribute parameters are verified while the IR is parsed, before any
op exists, so these cases cannot live in tile/invalid.mlir (see
test_verify_diagnostics_reports_type_errors for why).
"""

import io
import subprocess
import sys

import pytest
from tilec.dialects import context, tile
from xdsl.dialects.builtin import Float16Type, Float32Type
from xdsl.parser import Parser
from xdsl.printer import Printer

_KERNEL = """func.func @f() {{
  %g = arith.constant 1 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {{
    {op}
  }}
  func.return
}}
"""

_TYPE_ERRORS = [
    pytest.param(
        "%s = tile.alloc : !tile.buffer<64x32xf16, global>",
        "tile.buffer: scope must be one of shared, fragment, local, got 'global'",
        id="buffer_bad_scope",
    ),
    pytest.param(
        "%s = tile.alloc : !tile.buffer<64x0xf16, shared>",
        "tile.buffer: buffer sizes must be positive constants, got (64, 0)",
        id="buffer_zero_size",
    ),
    pytest.param(
        "%s = tile.alloc : !tile.buffer<?x32xf16, shared>",
        "tile.buffer: buffer sizes must be positive constants",
        id="buffer_dynamic_size",
    ),
    pytest.param(
        "%b = tile.alloc : !tile.buffer<64x64xf16, shared>\n"
        "    tile.annotate_layout %b {layout = #tile.swizzle<16>} : !tile.buffer<64x64xf16, shared>",
        "swizzle must be 32, 64 or 128 bytes, got 16",
        id="swizzle_bytes",
    ),
]


def _parse(text: str):
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


@pytest.mark.parametrize(("op", "message"), _TYPE_ERRORS)
def test_type_verifier_message(op, message):
    with pytest.raises(Exception) as info:  # the message is checked below
        _parse(_KERNEL.format(op=op))
    assert message in str(info.value)


def test_types_built_in_python_print_as_documented():
    assert (
        str(tile.TensorType([256, tile.DYNAMIC], Float16Type()))
        == "!tile.tensor<256x?xf16>"
    )
    assert (
        str(tile.BufferType([4], Float32Type(), "local"))
        == "!tile.buffer<4xf32, local>"
    )
    assert str(tile.SwizzleLayoutAttr(64)) == "#tile.swizzle<64>"
    assert str(tile.MBarrierType()) == "!tile.mbarrier"
    assert (
        str(tile.FragmentLayoutAttr("(4s8)x(128t1,8s1)|r()"))
        == '#tile.fragment<"(4s8)x(128t1,8s1)|r()">'
    )


def test_dynamic_tensor_type_roundtrip():
    """`?` parses to tile.DYNAMIC (-1), not xDSL's DYNAMIC_INDEX (-2**63)."""
    text = """func.func @dyn(%A: !tile.tensor<?x128xf16>) {
  %n = tile.dim %A {dim = 0 : i64} : !tile.tensor<?x128xf16>
  func.return
}
"""
    module = _parse(text)
    (arg,) = list(module.walk())[1].body.block.args
    assert arg.type.shape == (tile.DYNAMIC, 128)
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    assert "!tile.tensor<?x128xf16>" in out.getvalue()


def test_verify_diagnostics_reports_type_errors(tmp_path):
    path = tmp_path / "types.mlir"
    path.write_text(
        _KERNEL.format(
            op="// expected-error@+1 {{scope must be one of}}\n"
            "    %s = tile.alloc : !tile.buffer<64x32xf16, global>"
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tilec.cli", "opt", str(path), "--verify-diagnostics"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
