"""Every ```mlir example in the `tile` dialect's docstrings parses, verifies and round-trips.

Op docstrings hold op sequences; they are wrapped in a kernel inside a function
(STYLE.md section 8: documentation drifts, so a test parses it).  Values an
example uses without defining (`%a`, `%i`) become arguments of the function,
typed as the example uses them.  The module docstring holds a whole function
and is parsed as is.
"""

import inspect
import io
import re

import pytest
from tilec.dialects import context, tile
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

_EXAMPLE = re.compile(r"```mlir\n(.*?)```", re.DOTALL)

# Op examples run inside a kernel (allocations and loops need one); an example
# that launches its own kernel sits directly in the function.
_WRAPPER = """func.func @doc({args}) {{
  %doc_grid = arith.constant 1 : index
  tile.kernel (%doc_bx) in (%doc_grid) threads [128, 1, 1] {{
{body}
  }}
  func.return
}}
"""

_FUNC_ONLY = """func.func @doc({args}) {{
{body}
  func.return
}}
"""

# Examples the parser rejects today, by test id, with the reason (none at the moment).
_KNOWN_BUGS: dict[str, str] = {}


def _examples() -> list:
    cases = []
    sources = [("module", tile.__doc__)]
    sources += [(op.__name__, op.__doc__) for op in tile.Tile.operations]
    for owner, doc in sources:
        for n, text in enumerate(_EXAMPLE.findall(inspect.cleandoc(doc or ""))):
            case_id = f"{owner}-{n}"
            bug = _KNOWN_BUGS.get(case_id)
            marks = [pytest.mark.xfail(reason=bug, strict=True)] if bug else []
            cases.append(pytest.param(text, id=case_id, marks=marks))
    return cases


def _free_values(text: str) -> dict[str, Attribute]:
    """The values `text` uses without defining them, with the types it uses them at."""
    parser = Parser(context(), text)
    try:
        parser.parse_module()
    except ParseError:
        if not parser.forward_ssa_references:
            raise
    return {name: refs[0].type for name, refs in parser.forward_ssa_references.items()}


def _wrap(text: str) -> str:
    if text.lstrip().startswith("func.func"):
        return text
    body = "\n".join("    " + line for line in text.strip().splitlines())
    template = _FUNC_ONLY if "tile.kernel" in text else _WRAPPER
    free = _free_values(template.format(args="", body=body))
    args = ", ".join(f"%{name}: {typ}" for name, typ in free.items())
    return template.format(args=args, body=body)


def _parse(text: str):
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def _print(module, *, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def test_every_op_is_documented_with_an_example():
    missing = [
        op.__name__
        for op in tile.Tile.operations
        if op is not tile.YieldOp and "```mlir" not in (op.__doc__ or "")
    ]
    assert missing == []


@pytest.mark.parametrize("example", _examples())
def test_doc_example_roundtrip(example):
    module = _parse(_wrap(example))
    custom = _print(module)
    assert _print(_parse(custom)) == custom
    assert _print(_parse(_print(module, generic=True))) == custom
