"""Guards for the cold-compile time of a kernel (issue 9: the reference gemm to cubin in ≤ 1.0 s;
tools/compile_time.py measures it). No wall-clock assertions: each test checks the structural
fact that a saving rests on, so that a change undoing it fails here on any machine."""

from __future__ import annotations

import re

from tilec.dialects import context
from tilec.targets.nvptx import compile_llvm_ir, emit_llvm_ir
from xdsl.parser import Parser

STRUCT = "!llvm.struct<(" + ", ".join(["f32"] * 32) + ")>"
WGMMA = f"""
func.func @acc(%desc: i64, %out: memref<?xf32>) attributes {{nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}} {{
  nvvm.wgmma.fence.aligned
  %d0 = "nvvm.wgmma.mma_async"(%desc, %desc) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> : (i64, i64) -> {STRUCT}
  %d1 = "nvvm.wgmma.mma_async"(%desc, %desc, %d0) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> : (i64, i64, {STRUCT}) -> {STRUCT}
  nvvm.wgmma.commit.group.sync.aligned
  %d = "nvvm.wgmma.wait.group.sync.aligned"(%d1) <{{group = 0 : i64}}> : ({STRUCT}) -> {STRUCT}
  %v = "llvm.extractvalue"(%d) <{{position = array<i64: 5>}}> : ({STRUCT}) -> f32
  %c0 = arith.constant 0 : index
  memref.store %v, %out[%c0] : memref<?xf32>
  func.return
}}
"""  # fmt: skip


def test_wgmma_accumulators_get_one_named_struct_type():
    """A wgmma accumulator struct is spelled once, as a named type, not in every extractvalue of it
    (the 4096³ gemm's LLVM IR: 1.4 MB → 0.26 MB), and naming it leaves the PTX as it was."""
    module = Parser(context(), WGMMA).parse_module()
    llvm_ir = emit_llvm_ir(module)
    literal = "{" + ", ".join(["float"] * 32) + "}"
    assert llvm_ir.count(literal) == 1, "the 32-float struct is spelled out more than once"
    assert re.search(r'^%"floatx32" = type \{float(, float){31}\}$', llvm_ir, re.M)
    assert llvm_ir.count('%"floatx32"') > 32  # every use names it
    assert compile_llvm_ir(llvm_ir) == compile_llvm_ir(llvm_ir.replace('%"floatx32" = type', "; ").replace(
        '%"floatx32"', literal))


def _accumulating_wgmma(members: int = 32) -> str:
    """WGMMA with its accumulator built member by member (llvm.insertvalue, as the gemm lowering
    builds it from the fragment's registers), and one member read after the wait."""
    lines = ["%u = llvm.mlir.undef : " + STRUCT, "%x = arith.constant 1.0 : f32"]
    prev = "%u"
    for i in range(members):
        lines.append(f'%s{i} = "llvm.insertvalue"({prev}, %x) <{{position = array<i64: {i}>}}> : ({STRUCT}, f32) -> {STRUCT}')
        prev = f"%s{i}"
    body = "\n  ".join(lines)
    return WGMMA.replace('  nvvm.wgmma.fence.aligned\n', f"  {body}\n  nvvm.wgmma.fence.aligned\n").replace(
        "(%desc, %desc) <{", f"(%desc, %desc, {prev}) <{{").replace(
        "operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64) ->",
        "operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (i64, i64, " + STRUCT + ") ->")


def test_translation_reads_struct_members_it_inserted_without_extractvalue():
    """A struct the translation built with insertvalue hands back the inserted values: the
    accumulator going into the first wgmma and the members read after the wait (which rebuilds
    its struct) need no extractvalue; only the results of the inline asm are extracted, 32 each
    from the operand fence before the first wgmma (translate_nvvm._fence_operands), the two wgmmas
    and the wait (161 without: InstCombine folds the other 33 again)."""
    llvm_ir = emit_llvm_ir(Parser(context(), _accumulating_wgmma()).parse_module())
    assert llvm_ir.count("= extractvalue") == 128, llvm_ir.count("= extractvalue")
    assert "insertvalue" not in llvm_ir  # the structs only wgmma and extractvalue read are never built
    ptx = compile_llvm_ir(llvm_ir)
    assert ptx.count("wgmma.mma_async") == 2 and "st.global.b32" in ptx


def test_import_tilec_makes_xdsl_op_formats_lazy():
    """After `import tilec`, defining xDSL's and tilec's ops parses none of their assembly formats
    (xDSL's format parser is not even imported) until an op is printed, and printing and parsing
    are unchanged."""
    import subprocess
    import sys

    code = """if True:
        import sys
        import tilec
        assert "xdsl" not in sys.modules  # import tilec stays light
        from xdsl.dialects import arith, gpu, llvm, memref, scf, vector  # noqa: F401
        import tilec.dialects.nvvm, tilec.dialects.tile  # noqa: F401
        assert "xdsl.irdl.declarative_assembly_format_parser" not in sys.modules
        from tilec.dialects import context, print_ir
        from xdsl.parser import Parser
        text = '''builtin.module {
  %0 = arith.constant 1 : i32
  %1 = arith.addi %0, %0 : i32
  %2 = arith.muli %1, %0 overflow<nsw> : i32
}
'''
        assert print_ir(Parser(context(), text).parse_module()) == text
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_struct_used_as_a_whole_is_still_built():
    """The counterpart: a struct returned (not read member by member) is built, every member."""
    chain = "\n  ".join(f'%s{i} = "llvm.insertvalue"(%s{i - 1}, %x) <{{position = array<i64: {i}>}}> : ({STRUCT}, f32) -> {STRUCT}'
                         for i in range(32)).replace("%s-1", "%u")
    text = f"""func.func @whole(%x: f32) -> {STRUCT} {{
  %u = llvm.mlir.undef : {STRUCT}
  {chain}
  %v = "llvm.extractvalue"(%s31) <{{position = array<i64: 3>}}> : ({STRUCT}) -> f32
  func.return %s31 : {STRUCT}
}}"""
    llvm_ir = emit_llvm_ir(Parser(context(), text).parse_module())
    assert llvm_ir.count("= insertvalue") == 32 and "extractvalue" not in llvm_ir


_GEMM = '''
import tilec
import tilec.language as T


@tilec.jit(out_idx=[-1], target="sm_90a")
def matmul(M, N, K, block_M=128, block_N=256, block_K=64, num_stages=3, threads=256):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_f = T.alloc_fragment((block_M, block_N), T.float32)
            T.use_swizzle(panel_size=10, enable=True)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main
'''
"""The reference gemm (../shared/kernels/gemm.py) with its tile arguments, sizes left free."""

_BUILD = '''
import gc, os, sys
os.environ["TILEC_DISABLE_CACHE"] = "1"
from tilec.targets.nvptx import ptxas

events = []  # "ptxas" (started), "ptxas-done", "gc<generation>"


class Ptxas(ptxas.subprocess.Popen):
    def __init__(self, cmd, *a, **k):
        events.append("ptxas")
        super().__init__(cmd, *a, **k)

    def communicate(self, *a, **k):
        try:
            return super().communicate(*a, **k)
        finally:
            events.append("ptxas-done")


ptxas.subprocess.Popen = Ptxas
gc.callbacks.append(lambda phase, info: phase == "start" and events.append(f"gc{info['generation']}"))
''' + _GEMM + '''

events.clear()  # the build's own events (decorating the kernel above may run a collection of its own)
kernel = matmul(512, 512, 256)
assert "wgmma.mma_async" in kernel.get_kernel_source()
print(events.count("ptxas"), kernel._backend.cubin is not None, ",".join(events[:events.index("ptxas-done") + 1]))
print(" ".join(sorted(m for m in sys.modules if m.startswith("tilec."))))
'''


def test_building_the_reference_gemm_runs_ptxas_once_and_skips_passes_that_are_off(tmp_path):
    """The reference gemm's build (128×256×64 tiles, 3 stages, 256 threads, sm_90a) runs ptxas
    once (the cubin and the resource report come from the same run), collects the young
    generation the paused collector owes while ptxas runs (not after it), and does not import the
    passes that are off by default (tile-cluster, tile-warpgroup-pingpong) nor the lowerings it
    does not use (their source is compiled on import where bytecode is not cached)."""
    import shutil
    import subprocess
    import sys

    script = tmp_path / "build_gemm.py"
    script.write_text(_BUILD)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    runs, modules = out.stdout.strip().splitlines()[-2:]
    if shutil.which("ptxas"):
        assert runs.startswith("1 True "), runs
        # no collection during the build (paused) but the one beside ptxas
        assert runs.split()[2].endswith("ptxas,gc0,ptxas-done") and runs.split()[2].count("gc") == 1, runs
    loaded = set(modules.split())
    assert "tilec.passes.tile_warp_specialize" in loaded  # the build did run the Hopper passes
    assert not loaded & {"tilec.passes.tile_cluster", "tilec.passes.tile_warpgroup_pingpong"}
    # nor what an sm_90a gemm does not use: mma.sync's and SIMT's gemm lowerings, the reductions',
    # scans' and warpgroup turns' lowerings, math's translations, the launch-time runtime
    assert not loaded & {"tilec.passes.convert_tile_to_thread.gemm_mma", "tilec.passes.convert_tile_to_thread.gemm_simt",
                         "tilec.passes.convert_tile_to_thread.reduce", "tilec.passes.convert_tile_to_thread.scan",
                         "tilec.passes.convert_tile_to_thread.turns", "tilec.targets.nvptx.translate_math",
                         "tilec.runtime"}
    # nor the frontend's custom T.Layout and T.Parallel-privatization modules
    assert not loaded & {"tilec.frontend.custom_layout", "tilec.frontend.parallel_vars"}


def _same_op(a, b) -> None:
    assert (type(a), a.operands, [r.type for r in a.results], a.properties, a.attributes, a.successors,
            len(a.regions)) == (type(b), b.operands, [r.type for r in b.results], b.properties, b.attributes,
                                b.successors, len(b.regions))


def test_fast_ops_build_what_the_op_constructors_build():
    """tilec.dialects.fast_ops skips IRDL's builder; the ops must be the constructors' own."""
    from tilec.dialects import fast_ops
    from xdsl.dialects import arith, memref, vector
    from xdsl.dialects.builtin import Float32Type, IndexType, IntegerAttr, MemRefType, VectorType, i32
    from xdsl.ir import Block

    block = Block(arg_types=[IndexType(), IndexType(), i32, i32, MemRefType(Float32Type(), [8]), Float32Type()])
    x, y, a, b, mem, f = block.args
    binaries = [c for c in vars(arith).values() if isinstance(c, type) and issubclass(c, arith.SignlessIntegerBinaryOperation)
                and getattr(c, "name", None)]
    assert {arith.AddiOp, arith.MuliOp, arith.DivUIOp, arith.XOrIOp, arith.ShLIOp} <= set(binaries)
    for cls in binaries:
        _same_op(fast_ops.binary(cls, x, y), cls(x, y))
        _same_op(fast_ops.binary(cls, a, b), cls(a, b))
    _same_op(fast_ops.constant(IntegerAttr(3, IndexType()), IndexType()), arith.ConstantOp(IntegerAttr(3, IndexType()), IndexType()))
    _same_op(fast_ops.load(mem, [x]), memref.LoadOp.get(mem, [x]))
    _same_op(fast_ops.store(f, mem, [x]), memref.StoreOp.get(f, mem, [x]))
    vec = VectorType(Float32Type(), [4])
    vmem = MemRefType(Float32Type(), [16])
    block.insert_arg(vmem, len(block.args))
    block.insert_arg(vec, len(block.args))
    vm, v = block.args[-2:]
    _same_op(fast_ops.vector_load(vm, [x], vec), vector.LoadOp(vm, [x], vec))
    _same_op(fast_ops.vector_store(v, vm, [x]), vector.StoreOp(v, vm, [x]))
    _same_op(fast_ops.broadcast(f, vec), vector.BroadcastOp(f, vec))
    _same_op(fast_ops.insert(f, v, 2, vec), vector.InsertOp(f, v, [2], vec))
    _same_op(fast_ops.extract(v, 3, Float32Type()), vector.ExtractOp(v, [3], Float32Type()))
    for op in (fast_ops.binary(arith.AddiOp, x, y), fast_ops.insert(f, v, 2, vec), fast_ops.extract(v, 3, Float32Type())):
        op.verify()


def test_the_lowering_builds_its_index_arithmetic_and_fragment_accesses_with_fast_ops(tmp_path, monkeypatch):
    """Most of the addi/muli/constant/load/store ops of a lowered gemm come from fast_ops, not
    through IRDL's builder (the lowering's own index arithmetic and fragment accesses)."""
    import collections
    import sys

    from tilec.compiler import lower
    from tilec.target import resolve_target
    from xdsl.irdl import operations

    script = tmp_path / "gemm_kernel.py"
    script.write_text(_GEMM)
    sys.path.insert(0, str(tmp_path))
    try:
        import gemm_kernel
    finally:
        sys.path.remove(str(tmp_path))
    program = gemm_kernel.matmul.build_program(256, 256, 128)
    built = collections.Counter()
    init = operations.irdl_op_init
    monkeypatch.setattr(operations, "irdl_op_init", lambda self, op_def, **kw: (built.update([op_def.name]),
                                                                                 init(self, op_def, **kw))[1])
    lowered = lower.lower_to_thread(program, resolve_target("sm_90a"), {}, dump_dir="")
    kinds = ("arith.addi", "arith.muli", "arith.constant", "memref.load", "memref.store", "vector.insert",
             "vector.broadcast", "vector.store")
    emitted = collections.Counter(op.name for op in lowered.thread.walk() if op.name in kinds)
    assert sum(emitted.values()) > 500
    assert sum(built[k] for k in kinds) < sum(emitted.values()) / 4, (built, emitted)


def test_dataclass_methods_compile_once_per_text_and_behave_as_before():
    """`import tilec` makes `dataclasses` compile each generated method's text once per process
    (tilec.dataclass_code: 850 distinct texts of 1462 in a cold gemm build); two classes with the
    same fields share the code of `__eq__` (not the function), and the methods behave as the
    generated ones do (frozen, eq, hash, repr, defaults, default factories, and annotations that
    are the field types, not strings: no `__future__` flag leaks into the generated code)."""
    import dataclasses
    import typing

    import pytest

    import tilec  # noqa: F401
    from tilec import dataclass_code

    assert dataclass_code.is_installed()

    def make(name):
        @dataclasses.dataclass(frozen=True)
        class P:
            x: int
            y: list = dataclasses.field(default_factory=list)
            z: str = "z"

        P.__qualname__ = name
        return P

    a, b = make("A"), make("B")
    assert a.__eq__ is not b.__eq__ and a.__eq__.__code__ is b.__eq__.__code__
    p, q = a(1), a(1)
    assert p == q and p != b(1) and p.y == [] and p.y is not q.y and p.z == "z"
    assert repr(p) == "A(x=1, y=[], z='z')"
    assert hash(a(1, (), "w")) == hash(a(1, (), "w"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    # the fields' own annotations (strings here, under this file's `annotations` future), not `_type_x`
    assert a.__init__.__annotations__ == {**{f.name: f.type for f in dataclasses.fields(a)}, "return": None}
    assert typing.get_type_hints(b.__init__) == {"x": int, "y": list, "z": str, "return": type(None)}


def test_walk_ops_is_xdsl_walk_as_a_list():
    """`tilec.dialects.walk_ops` (the thread passes' walk, 2.5x faster than xDSL's generators)
    visits the ops of xDSL's `walk()` in the same order: nested regions, several blocks."""
    from tilec.dialects import walk_ops

    text = """builtin.module {
  func.func @f(%n: index, %c: i1) {
    %0 = arith.constant 0 : index
    %1 = arith.constant 1 : index
    scf.for %i = %0 to %n step %1 {
      scf.if %c {
        %2 = arith.addi %i, %i : index
      } else {
        %3 = arith.muli %i, %i : index
      }
    }
    cf.br ^bb1
  ^bb1:
    func.return
  }
}
"""
    from xdsl.dialects.cf import Cf

    ctx = context()
    ctx.load_dialect(Cf)
    module = Parser(ctx, text).parse_module()
    assert walk_ops(module) == list(module.walk())
    assert [op.name for op in walk_ops(module)][-3:] == ["scf.yield", "cf.br", "func.return"]


_DATACLASSES = '''
import dataclasses, os, sys
import tilec
from tilec import dataclass_code


@dataclasses.dataclass(frozen=True)
class P:
    x: int
    y: str = "y"


assert P(1) == P(1) and repr(P(1)) == "P(x=1, y='y')" and P.__init__.__annotations__["x"] is int
print(dataclass_code._state["new"], len(dataclass_code._CODE))
'''


def test_dataclass_code_is_cached_across_processes_as_bytecode_is(tmp_path):
    """The generated methods' code objects are written beside tilec's bytecode (here under
    PYTHONPYCACHEPREFIX) by a process that compiled new texts, and read by the next one, which
    compiles none; under PYTHONDONTWRITEBYTECODE nothing is written; a damaged file is ignored."""
    import os
    import subprocess
    import sys

    script = tmp_path / "classes.py"
    script.write_text(_DATACLASSES)

    def run(prefix, **env):
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                             env={**environ, "PYTHONPYCACHEPREFIX": str(prefix), **env})
        assert out.returncode == 0, out.stderr
        new, known = map(int, out.stdout.split())
        return new, known, sorted(p.name for p in prefix.rglob("dataclass_code*.codes"))

    new, known, files = run(tmp_path / "pyc")
    assert new > 0 and len(files) == 1
    again, known_again, _ = run(tmp_path / "pyc")
    assert again == 0 and known_again >= known
    (codes,) = (tmp_path / "pyc").rglob("dataclass_code*.codes")
    codes.write_bytes(codes.read_bytes()[:100])  # damaged: ignored, compiled anew, rewritten
    assert run(tmp_path / "pyc")[0] > 0 and run(tmp_path / "pyc")[0] == 0
    assert run(tmp_path / "nowrite", PYTHONDONTWRITEBYTECODE="1")[2] == []
