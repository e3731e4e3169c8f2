"""The launch ABI: what the runtime needs to launch a lowered kernel (the grid as a function
of the sizes, the block, dynamic shared memory) and the kernel's argument list.

Light on purpose (no IR, no driver imports at module load) and JSON-serializable: a cached
build is launched from these alone.

**The argument list** is `LaunchSpec.args`, one `(kind, value)` pair per kernel parameter, in
order. Each kind is one `ArgKind` subclass registered with `@arg_kind`, and every consumer
dispatches through `ARG_KINDS`: the cache's check of a stored spec (`valid`), the GPU launch
(`gpu_packer`, built once per kernel), the thread-level simulator (`host_value`), `get_host_source` (`describe`), the
deployment manifest (`manifest`) and the JSON form (`to_json` / `from_json`). A new kind
is one more registered class here, plus the lowering that puts it into `args`.

    ("tensor", 2)     the device pointer of the kernel's parameter 2
    ("size", "N")     the dynamic size N, as int64
    ("scalar", 3)     the kernel's scalar parameter 3, by value in its own type
    ("tensormap", {"tensor": 0, "dtype": "f16", "box": [128, 64], "swizzle": 128})
                      a TMA tensor map over parameter 0, by value
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from tilec.errors import TilecError

# --------------------------------------------------------------------------- #
# The grid
# --------------------------------------------------------------------------- #

SCALAR_SIZE_PREFIX = "%"
"""An integer scalar parameter's value is in the sizes (for the grid) as `%name`, apart from T.dynamic names."""


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class GridExpr:
    """How to compute the launch grid from the dynamic sizes: a tiny expression program."""

    program: list = field(default_factory=list)  # [op, args...] per value, in order
    outputs: list[int] = field(default_factory=list)  # value numbers of gx, gy, gz
    persistent: bool = False  # launch at most one block per multiprocessor (1-D); blocks loop over the tiles
    cluster: int = 1  # a persistent kernel of clusters: its grid is a multiple of the cluster's blocks
    balanced: bool = False  # a persistent kernel: as few blocks as run its tiles in the same number of waves

    _BINARY = {
        "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
        "arith.ceildivsi": _ceildiv, "arith.floordivsi": lambda a, b: a // b,
        "arith.divsi": lambda a, b: int(a / b), "arith.divui": lambda a, b: a // b,
        "arith.remsi": lambda a, b: a - b * int(a / b), "arith.maxsi": max, "arith.minsi": min,
    }

    def evaluate(self, sizes: dict[str, int], processors: int | None = None) -> tuple[int, int, int]:
        """The launch grid; a persistent kernel's is 1-D, one block per tile up to `processors`
        (the device's multiprocessors; whole clusters of them). `balanced`: then the fewest blocks
        (whole clusters) that run the tiles in as many rounds, so that every block runs as many
        tiles: 2048 tiles on 132 multiprocessors take 16 rounds either way, on 128 blocks of 16
        tiles each, the other multiprocessors free for other work (on the H200 as fast at 8192^3,
        2 % faster at 3072x3072x4096, run s12b)."""
        tiles = self.tiles(sizes)
        if not self.persistent:
            return tiles
        total = tiles[0] * tiles[1] * tiles[2]  # (a multiple of the cluster: it divides the constant grid)
        if not processors:
            return total, 1, 1
        c = self.cluster
        blocks = min(total, processors // c * c)
        if self.balanced and blocks:
            rounds = _ceildiv(total, blocks)
            blocks = _ceildiv(_ceildiv(total, rounds), c) * c  # (<= blocks, itself a multiple of c)
        return blocks, 1, 1

    def tiles(self, sizes: dict[str, int]) -> tuple[int, int, int]:
        """The kernel's grid: one entry per block of a plain kernel, per tile of a persistent one."""
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
        if self.persistent:
            blocks = "multiprocessors" if self.cluster == 1 else f"multiprocessors // {self.cluster} * {self.cluster}"
            tiles = " * ".join(dims)
            grid = f"min({tiles}, {blocks})"
            if self.balanced:  # the same rounds, every block as many tiles
                grid = f"ceildiv({tiles}, ceildiv({tiles}, {grid}))"
                grid = grid if self.cluster == 1 else f"ceildiv({grid}, {self.cluster}) * {self.cluster}"
            return f"({grid}, 1, 1)"
        return f"({', '.join(dims)})"

    def is_well_formed(self) -> bool:
        """Known ops, each reading only earlier values (a GridExpr read from the cache)."""
        if not (isinstance(self.program, list) and isinstance(self.outputs, list) and len(self.outputs) <= 3
                and isinstance(self.persistent, bool) and is_int(self.cluster, 1) and isinstance(self.balanced, bool)
                and all(is_int(i) and i < len(self.program) for i in self.outputs)):
            return False
        for i, step in enumerate(self.program):
            if not (isinstance(step, list) and step and isinstance(step[0], str)):
                return False
            op, args = step[0], step[1:]
            if op == "const":
                ok = len(args) == 1 and is_int(args[0], -(1 << 62))
            elif op == "size":
                ok = len(args) == 1 and isinstance(args[0], str)
            else:
                arity = 1 if op == "copy" else 2 if op in self._BINARY else -1
                ok = len(args) == arity and all(is_int(a) and a < i for a in args)
            if not ok:
                return False
        return True

    def to_json(self) -> str:
        return json.dumps({"program": self.program, "outputs": self.outputs, "persistent": self.persistent,
                           "cluster": self.cluster, "balanced": self.balanced})

    @staticmethod
    def from_json(text: str) -> GridExpr:
        data = json.loads(text)
        return GridExpr(data["program"], data["outputs"], data.get("persistent", False), data.get("cluster", 1),
                        data.get("balanced", False))


SLOW = object()  # what a backend's fast call returns for a call it leaves to the general, checking path


def is_int(value, low: int = 0) -> bool:
    """An int (not a bool) of at least `low`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


# --------------------------------------------------------------------------- #
# The argument list
# --------------------------------------------------------------------------- #


class ArgKind:
    """One kind of kernel argument. Subclasses are registered with `@arg_kind(name)`; their
    methods are static, taking the pair's `value`."""

    name: ClassVar[str] = ""

    @staticmethod
    def valid(value, n_params: int) -> bool:
        """Whether `value` (read back from the cache) is well-formed for a kernel of `n_params`."""
        raise NotImplementedError

    @staticmethod
    def gpu_packer(value, backend):
        """A function `(tensors, sizes) -> the launch argument` for GPU launches, built once per
        kernel (`backend`: the CudaBackend launching, for its program in messages); `tensors`
        indexes the call's tensors by parameter position. What it keeps (e.g. encoded
        descriptors) lives as long as the kernel."""
        raise NotImplementedError

    @staticmethod
    def host_value(value, arrays: list, sizes: dict):
        """The argument the thread-level simulator passes (numpy arrays by parameter index)."""
        raise NotImplementedError

    @staticmethod
    def describe(value, params: list) -> str:
        """One line of `get_host_source`'s parameter list."""
        raise NotImplementedError

    @staticmethod
    def manifest(value) -> dict:
        """The argument in the deployment manifest (`tilec compile -o k.ptx` writes k.json)."""
        raise NotImplementedError

    @staticmethod
    def to_json(value):
        return value

    @staticmethod
    def from_json(data):
        return data


ARG_KINDS: dict[str, type[ArgKind]] = {}


def arg_kind(name: str):
    """Class decorator registering an `ArgKind` under `name`."""

    def register(cls: type[ArgKind]) -> type[ArgKind]:
        assert name not in ARG_KINDS, f"argument kind {name!r} registered twice"
        cls.name = name
        ARG_KINDS[name] = cls
        return cls

    return register


@arg_kind("tensor")
class TensorArg(ArgKind):
    """A global tensor, passed as its device pointer; the value is the parameter's index."""

    @staticmethod
    def valid(value, n_params: int) -> bool:
        return is_int(value) and value < n_params

    @staticmethod
    def gpu_packer(value, backend):
        from tilec.targets.cuda.loader import Ptr

        return lambda tensors, sizes: Ptr(tensors[value].data_ptr())

    @staticmethod
    def host_value(value, arrays: list, sizes: dict):
        return arrays[value]

    @staticmethod
    def describe(value, params: list) -> str:
        p = params[value]
        return f"{p.name}: {p.dtype.name}* global, shape {tuple(p.shape)}{' (output)' if p.is_output else ''}"

    @staticmethod
    def manifest(value) -> dict:
        return {"tensor": value}


@arg_kind("size")
class SizeArg(ArgKind):
    """A dynamic size, passed as int64; the value is the size's name."""

    @staticmethod
    def valid(value, n_params: int) -> bool:
        return isinstance(value, str)

    @staticmethod
    def gpu_packer(value, backend):
        def pack(tensors, sizes):
            if value not in sizes:
                program = backend.program
                raise TilecError(f"{program.name}: the size {value} is not bound by any input tensor",
                                 loc=program.loc)
            return int(sizes[value])

        return pack

    @staticmethod
    def host_value(value, arrays: list, sizes: dict):
        return sizes[value]

    @staticmethod
    def describe(value, params: list) -> str:
        return f"{value}: int64 (size)"

    @staticmethod
    def manifest(value) -> dict:
        return {"size": value}


@arg_kind("scalar")
class ScalarArg(ArgKind):
    """A scalar parameter of the kernel (`max_seqlen: T.int32`), passed by value in its own type; the
    value is the parameter's index."""

    @staticmethod
    def valid(value, n_params: int) -> bool:
        return is_int(value) and value < n_params

    @staticmethod
    def gpu_packer(value, backend):
        import numpy as np

        scalar = np.dtype(backend.program.params[value].dtype.numpy).type
        return lambda tensors, sizes: scalar(tensors[value])

    @staticmethod
    def host_value(value, arrays: list, sizes: dict):
        return arrays[value]

    @staticmethod
    def describe(value, params: list) -> str:
        p = params[value]
        return f"{p.name}: {p.dtype.name} (scalar, by value)"

    @staticmethod
    def manifest(value) -> dict:
        return {"scalar": value}


@arg_kind("tensormap")
class TensorMapArg(ArgKind):
    """A TMA tensor map over one of the kernel's tensors, passed by value (128 bytes, a
    grid-constant parameter); the value says which tensor, the box (outermost first), the
    swizzle in bytes and the element type. Encoded per tensor geometry (targets/cuda/tensor_map)."""

    @staticmethod
    def valid(value, n_params: int) -> bool:
        return (isinstance(value, dict) and set(value) == {"tensor", "dtype", "box", "swizzle"}
                and is_int(value["tensor"]) and value["tensor"] < n_params and isinstance(value["dtype"], str)
                and isinstance(value["box"], list) and all(is_int(b, 1) for b in value["box"])
                and value["swizzle"] in (0, 32, 64, 128))

    @staticmethod
    def gpu_packer(value, backend):
        from tilec.targets.cuda.loader import TensorMapArg
        from tilec.targets.cuda.tensor_map import TensorMaps, TensorMapSpec

        maps = TensorMaps(TensorMapSpec(value["tensor"], value["dtype"], tuple(value["box"]), value["swizzle"]))
        index = value["tensor"]

        def pack(tensors, sizes):
            t = tensors[index]
            return TensorMapArg(maps.get(t.data_ptr(), t.shape, t.stride()))

        return pack

    @staticmethod
    def host_value(value, arrays: list, sizes: dict):
        from tilec.targets.interp.simt_tma import TensorMapSim

        array = arrays[value["tensor"]]
        strides = tuple(s // array.itemsize for s in array.strides)
        return TensorMapSim(array.reshape(-1), tuple(array.shape), strides, tuple(value["box"]), value["swizzle"])

    @staticmethod
    def describe(value, params: list) -> str:
        p = params[value["tensor"]]
        return (f"tensor map over {p.name}: box {tuple(value['box'])} {value['dtype']}, "
                f"{value['swizzle']}-byte swizzle (128 bytes by value, grid constant)")

    @staticmethod
    def manifest(value) -> dict:
        return {"tensormap": dict(value)}


# --------------------------------------------------------------------------- #
# The launch spec
# --------------------------------------------------------------------------- #


@dataclass
class LaunchSpec:
    """Everything the runtime needs to launch a lowered kernel."""

    kernel_name: str
    block: tuple[int, int, int]
    smem_bytes: int
    grid: GridExpr
    args: list  # (kind, value) pairs, kinds from ARG_KINDS

    def is_well_formed(self, n_params: int) -> bool:
        """The types and ranges a launch relies on (a LaunchSpec read from the cache)."""
        if not (isinstance(self.kernel_name, str) and len(self.block) == 3 and all(is_int(b, 1) for b in self.block)
                and is_int(self.smem_bytes) and isinstance(self.args, list) and self.grid.is_well_formed()):
            return False
        return all(len(a) == 2 and a[0] in ARG_KINDS and ARG_KINDS[a[0]].valid(a[1], n_params) for a in self.args)

    def to_json(self) -> str:
        args = [[kind, ARG_KINDS[kind].to_json(value)] for kind, value in self.args]
        return json.dumps({"kernel_name": self.kernel_name, "block": list(self.block), "smem_bytes": self.smem_bytes,
                           "grid": self.grid.to_json(), "args": args})

    @staticmethod
    def from_json(text: str) -> LaunchSpec:
        d = json.loads(text)
        args = []
        for a in d["args"]:
            kind = ARG_KINDS.get(a[0]) if isinstance(a, list) and len(a) == 2 and isinstance(a[0], str) else None
            args.append((a[0], kind.from_json(a[1])) if kind is not None else tuple(a))  # unknown: fails the check
        return LaunchSpec(d["kernel_name"], tuple(d["block"]), d["smem_bytes"], GridExpr.from_json(d["grid"]), args)
