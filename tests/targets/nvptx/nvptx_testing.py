"""Helpers for the NVPTX backend tests: parse MLIR text with every thread-level dialect
loaded, and skip assembling where no ptxas is installed."""

from __future__ import annotations

import shutil

import pytest
from tilec.dialects.nvvm import NVVM
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, llvm, math, memref, scf, vector
from xdsl.parser import Parser

DIALECTS = (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef,
            vector.Vector, gpu.GPU, llvm.LLVM, NVVM)  # fmt: skip

requires_ptxas = pytest.mark.skipif(
    shutil.which("ptxas") is None, reason="ptxas not found"
)


def parse(text: str) -> builtin.ModuleOp:
    ctx = Context()
    for dialect in DIALECTS:
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module
