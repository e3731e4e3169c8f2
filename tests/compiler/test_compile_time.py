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
    from the two wgmmas and the wait (129 without: InstCombine folds the other 33 again)."""
    llvm_ir = emit_llvm_ir(Parser(context(), _accumulating_wgmma()).parse_module())
    assert llvm_ir.count("= extractvalue") == 96, llvm_ir.count("= extractvalue")
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


_BUILD = '''
import os, sys
os.environ["TILEC_DISABLE_CACHE"] = "1"
import tilec
import tilec.language as T
from tilec.targets.nvptx import ptxas

runs = []
run = ptxas.subprocess.run
ptxas.subprocess.run = lambda cmd, *a, **k: runs.append(cmd) or run(cmd, *a, **k)


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


kernel = matmul(512, 512, 256)
assert "wgmma.mma_async" in kernel.get_kernel_source()
print(len(runs), kernel._backend.cubin is not None)
print(" ".join(sorted(m for m in sys.modules if m.startswith("tilec."))))
'''


def test_building_the_reference_gemm_runs_ptxas_once_and_skips_passes_that_are_off(tmp_path):
    """The reference gemm's build (128×256×64 tiles, 3 stages, 256 threads, sm_90a) runs ptxas
    once (the cubin and the resource report come from the same run), and does not import the
    passes that are off by default (tile-cluster, tile-warpgroup-pingpong: their source is
    compiled on import where bytecode is not cached)."""
    import shutil
    import subprocess
    import sys

    script = tmp_path / "build_gemm.py"
    script.write_text(_BUILD)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    runs, modules = out.stdout.strip().splitlines()[-2:]
    if shutil.which("ptxas"):
        assert runs == "1 True", runs
    loaded = set(modules.split())
    assert "tilec.passes.tile_warp_specialize" in loaded  # the build did run the Hopper passes
    assert not loaded & {"tilec.passes.tile_cluster", "tilec.passes.tile_warpgroup_pingpong"}
