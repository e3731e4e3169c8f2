"""Differential fuzzing of tilec: generated valid tile programs run on the interpreter, the
simulated CUDA lowering and the GPU, each checked against a float64 numpy reference.

- `draw.py`     the choice source: a seeded `random.Random` or a hypothesis `draw`
- `program.py`  a kernel under construction: its Python source and its numpy semantics
- `expr.py`     random element-wise expressions (source text, typing, reference, error bound)
- `recipes.py`, `recipes_gemm.py`, `recipes_fused.py`  the program kinds (elementwise,
  reduce, scan, copy; gemm, atomic; fused chains of them)
- `generate.py` `generate(seed)` / the hypothesis strategy `cases()`
- `harness.py`  running a case on a target and judging it against the reference
- `known.py`    unfixed bugs the generator steers around, until their regression tests pass
- `minimize.py` shrinking a failing kernel (statements, then integer literals)
"""
