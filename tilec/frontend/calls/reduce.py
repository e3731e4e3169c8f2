"""Tile reductions and scans: `T.reduce_*`, `T.cumsum`, `T.cummax`."""

from __future__ import annotations

from tilec.dialects import tile

from .operands import require_kernel, static_int, tile_operand
from .registry import handles_each

REDUCE_KINDS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_abssum": "abssum",
                "reduce_absmax": "absmax"}
_SCOPES = ("fragment", "shared", "local")


@handles_each(REDUCE_KINDS)
def reduce(name: str, kind: str):
    def handler(v, src, dst, dim, clear):
        require_kernel(v, f"T.reduce_{kind}", whole_tiles=True)
        s = tile_operand(v, src, f"T.reduce_{kind} source", _SCOPES)
        d = tile_operand(v, dst, f"T.reduce_{kind} destination", _SCOPES)
        rank = len(s.type.shape)
        dim = static_int(v, dim, "dim")
        if not -rank <= dim < rank:
            raise v.b.error(f"T.reduce_{kind}: dim {dim} is out of range for a {rank}-D source {s.type.shape}")
        dim %= rank
        want = tile.reduced_shape(s.type.shape, dim)
        if d.type.shape != want:
            raise v.b.error(f"T.reduce_{kind}: reducing {s.type.shape} along dim {dim} gives {want}, "
                            f"but the destination is {d.type.shape}")
        v.b.emit(tile.ReduceOp(s, d, kind, dim, bool(clear)))

    return handler


@handles_each({"cumsum": tile.CumsumOp, "cummax": tile.CummaxOp})
def scan(name: str, op_class):
    def handler(v, src, dst, dim, reverse):
        require_kernel(v, f"T.{name}", whole_tiles=True)
        s = tile_operand(v, src, f"T.{name} source", _SCOPES)
        d = s if dst is None else tile_operand(v, dst, f"T.{name} destination", _SCOPES)
        rank = len(s.type.shape)
        dim = static_int(v, dim, "dim")
        if not -rank <= dim < rank:
            raise v.b.error(f"T.{name}: dim {dim} is out of range for a {rank}-D source")
        v.b.emit(op_class(s, d, dim % rank, bool(reverse)))

    return handler
