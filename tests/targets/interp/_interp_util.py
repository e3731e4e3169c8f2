"""Helpers for the interpreter tests: parse MLIR text, run it, build arrays."""

import numpy as np
import tilec.dialects
from tilec.targets.interp import run
from xdsl.parser import Parser

bf16 = np.dtype("bfloat16")


def parse(text: str):
    module = Parser(tilec.dialects.context(), text).parse_module()
    module.verify()
    return module


def run_text(text: str, *args, func_name=None):
    run(parse(text), list(args), func_name=func_name)
    return args


# Elementwise add of 5000 f16 in blocks of 512: the last block is guarded by scf.if.
ADD = """
func.func @add(%A: !tile.tensor<5000xf16>, %B: !tile.tensor<5000xf16>, %C: !tile.tensor<5000xf16>) {
  %c10 = arith.constant 10 : index
  tile.kernel (%bx) in (%c10) threads [128, 1, 1] {
    %c512 = arith.constant 512 : index
    %n = tile.dim %A {dim = 0 : i64} : !tile.tensor<5000xf16>
    %base = arith.muli %bx, %c512 : index
    tile.parallel (%i) in [512] {
      %g = arith.addi %base, %i : index
      %ok = arith.cmpi slt, %g, %n : index
      scf.if %ok {
        %a = tile.load %A[%g] : !tile.tensor<5000xf16> -> f16
        %b = tile.load %B[%g] : !tile.tensor<5000xf16> -> f16
        %s = arith.addf %a, %b : f16
        tile.store %s, %C[%g] : f16, !tile.tensor<5000xf16>
      }
    }
  }
  func.return
}
"""
