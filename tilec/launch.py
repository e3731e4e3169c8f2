"""What the runtime needs to launch a lowered kernel: the grid as a function of the sizes,
the block, shared memory and the argument list. Light on purpose, and JSON-serializable for
the cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class GridExpr:
    """How to compute the launch grid from the dynamic sizes: a tiny expression program."""

    program: list = field(default_factory=list)  # [op, args...] per value, in order
    outputs: list[int] = field(default_factory=list)  # value numbers of gx, gy, gz

    _BINARY = {
        "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
        "arith.ceildivsi": lambda a, b: -(-a // b), "arith.floordivsi": lambda a, b: a // b,
        "arith.divsi": lambda a, b: int(a / b), "arith.divui": lambda a, b: a // b,
        "arith.remsi": lambda a, b: a - b * int(a / b), "arith.maxsi": max, "arith.minsi": min,
    }

    def evaluate(self, sizes: dict[str, int]) -> tuple[int, int, int]:
        values: list[int] = []
        for op, *args in self.program:
            if op == "const":
                values.append(args[0])
            elif op == "size":
                values.append(sizes[args[0]])
            elif op == "copy":
                values.append(values[args[0]])
            else:
                values.append(self._BINARY[op](values[args[0]], values[args[1]]))
        grid = [max(0, values[i]) for i in self.outputs]
        return tuple(grid + [1] * (3 - len(grid)))

    def __str__(self) -> str:
        """The grid as a formula of the sizes, e.g. `(ceildiv(N, 128), 1, 1)`."""
        names = {"arith.addi": "{} + {}", "arith.subi": "{} - {}", "arith.muli": "{} * {}",
                 "arith.ceildivsi": "ceildiv({}, {})", "arith.floordivsi": "{} // {}", "arith.divsi": "{} / {}",
                 "arith.divui": "{} // {}", "arith.remsi": "{} % {}", "arith.maxsi": "max({}, {})",
                 "arith.minsi": "min({}, {})"}
        text: list[str] = []
        for op, *args in self.program:
            if op == "const":
                text.append(str(args[0]))
            elif op == "size":
                text.append(args[0])
            elif op == "copy":
                text.append(text[args[0]])
            else:
                text.append(names[op].format(text[args[0]], text[args[1]]))
        dims = [text[i] for i in self.outputs] + ["1"] * (3 - len(self.outputs))
        return f"({', '.join(dims)})"

    def to_json(self) -> str:
        return json.dumps({"program": self.program, "outputs": self.outputs})

    @staticmethod
    def from_json(text: str) -> GridExpr:
        data = json.loads(text)
        return GridExpr(data["program"], data["outputs"])


@dataclass
class LaunchSpec:
    """Everything the runtime needs to launch a lowered kernel."""

    kernel_name: str
    block: tuple[int, int, int]
    smem_bytes: int
    grid: GridExpr
    args: list  # ("tensor", param index) | ("size", symbol name)

    def to_json(self) -> str:
        return json.dumps({"kernel_name": self.kernel_name, "block": list(self.block), "smem_bytes": self.smem_bytes,
                           "grid": self.grid.to_json(), "args": self.args})

    @staticmethod
    def from_json(text: str) -> LaunchSpec:
        d = json.loads(text)
        return LaunchSpec(d["kernel_name"], tuple(d["block"]), d["smem_bytes"], GridExpr.from_json(d["grid"]),
                          [tuple(a) for a in d["args"]])
