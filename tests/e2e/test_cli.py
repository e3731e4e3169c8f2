"""The `tilec` command line: `tilec compile` on kernel files, `tilec opt` on its output.

Kernels live in tests/e2e/kernels/: cli_kernels.py (a prim_func factory and an
eager kernel) and broken_kernel.py (a kernel with a deliberate mistake on the
line marked `# ERR`).
"""

import subprocess
import sys
from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
GOOD = KERNELS / "cli_kernels.py"
BROKEN = KERNELS / "broken_kernel.py"


def _tilec(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tilec.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def row_scale_mlir(tmp_path_factory) -> Path:
    """`tilec compile` of the factory, written with -o."""
    out = tmp_path_factory.mktemp("cli") / "row_scale.mlir"
    proc = _tilec(
        "compile",
        GOOD,
        "--kernel",
        "row_scale",
        "-D",
        "M=256",
        "-D",
        "N=128",
        "-D",
        "dtype=bfloat16",
        "--emit",
        "tile",
        "-o",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    return out


def test_compile_factory_with_defines(row_scale_mlir):
    text = row_scale_mlir.read_text()
    assert (
        "func.func @main(%A: !tile.tensor<256x128xbf16>, %B: !tile.tensor<256x128xbf16>)"
        in text
    )
    assert "tile.kernel (%bx) in (%0) threads [128, 1, 1]" in text
    assert "tile.alloc : !tile.buffer<64x128xf32, fragment>" in text
    assert "tile.parallel (%i, %j) in [64, 128]" in text


def test_compile_eager_kernel_to_stdout():
    proc = _tilec(
        "compile",
        GOOD,
        "--kernel",
        "vector_add",
        "-D",
        "N=1024",
        "-D",
        "block=512",
        "--emit",
        "tile",
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (
        "func.func @vector_add(%A: !tile.tensor<1024xf32>, %B: !tile.tensor<1024xf32>, "
        in out
    )
    assert "%0 = arith.constant 2 : index" in out  # ceildiv(1024, 512), folded
    assert "tile.parallel (%i) in [512]" in out


def test_opt_prints_compiled_ir_back_unchanged(row_scale_mlir):
    proc = _tilec("opt", row_scale_mlir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == row_scale_mlir.read_text()


def test_opt_reads_stdin_with_dash(row_scale_mlir):
    proc = _tilec("opt", "-", stdin=row_scale_mlir.read_text())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == row_scale_mlir.read_text()


def test_opt_reads_stdin_without_file_argument(row_scale_mlir):
    proc = _tilec("opt", stdin=row_scale_mlir.read_text())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == row_scale_mlir.read_text()


def test_opt_unknown_pass_lists_known_passes(row_scale_mlir):
    proc = _tilec("opt", row_scale_mlir, "-p", "unknown-pass")
    assert proc.returncode == 1
    assert "unknown-pass" in proc.stderr
    assert "known passes:" in proc.stderr
    assert "canonicalize" in proc.stderr and "cse" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_compile_located_error_without_traceback():
    lines = BROKEN.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "# ERR" in text)
    col = len(lines[line - 1]) - len(lines[line - 1].lstrip()) + 1
    proc = _tilec("compile", BROKEN, "--emit", "tile")
    assert proc.returncode == 1
    assert proc.stdout == ""
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{BROKEN}:{line}:{col}: error: ")
    assert "T.copy shapes differ: src (64, 32) vs dst (64, 64)" in first
    assert "Traceback" not in proc.stderr


def test_compile_unknown_kernel_name_lists_kernels():
    proc = _tilec("compile", GOOD, "--kernel", "no_such_kernel")
    assert proc.returncode == 1
    assert "no @tilec.jit function or T.prim_func named 'no_such_kernel'" in proc.stderr
    assert "row_scale" in proc.stderr and "vector_add" in proc.stderr
    assert "Traceback" not in proc.stderr


# The emitted form follows the output's extension: .mlir (tile), .ll, .ptx, .cubin; --emit thread too.
@pytest.mark.parametrize("suffix,marker", [(".ll", "ptx_kernel"), (".ptx", ".entry main")])
def test_compile_to_llvm_and_ptx_by_extension(tmp_path, suffix, marker):
    out = tmp_path / f"row_scale{suffix}"
    proc = _tilec("compile", GOOD, "--kernel", "row_scale", "-D", "M=256", "-D", "N=128", "--arch", "sm_90a",
                  "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert marker in text
    if suffix == ".ptx":
        assert ".target sm_90a" in text


def test_compile_thread_level_ir():
    proc = _tilec("compile", GOOD, "--kernel", "row_scale", "-D", "M=256", "-D", "N=128", "--emit", "thread")
    assert proc.returncode == 0, proc.stderr
    assert "nvvm.kernel" in proc.stdout and "gpu.thread_id" in proc.stdout


def test_compile_to_cubin(tmp_path, ptxas):
    out = tmp_path / "row_scale.cubin"
    proc = _tilec("compile", GOOD, "--kernel", "row_scale", "-D", "M=256", "-D", "N=128", "--arch", "sm_80",
                  "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"\x7fELF")


def test_compile_writes_a_launch_manifest(tmp_path):
    """`-o k.ptx` also writes k.json: what a deployment needs to launch without Python."""
    import json

    out = tmp_path / "add.ptx"
    proc = _tilec("compile", GOOD, "--kernel", "row_scale", "-D", "M=256", "-D", "N=128", "-o", out)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "add.json").read_text())
    assert manifest["image"] == "add.ptx" and manifest["kernel"] == "main"
    assert manifest["block"] == [128, 1, 1]
    assert [p["name"] for p in manifest["params"]] == ["A", "B"]
    assert manifest["params"][0]["shape"] == [256, 128]
    assert manifest["args"] == [{"tensor": 0}, {"tensor": 1}]
    from tilec.compiler.launch import GridExpr

    grid = GridExpr(manifest["grid"]["steps"], manifest["grid"]["outputs"])
    assert grid.evaluate({}) == (4, 1, 1)
    assert manifest["grid"]["persistent"] is False and manifest["grid"]["cluster"] == 1


def test_a_persistent_kernels_manifest_gives_its_balanced_grid(tmp_path):
    """sm_90a's gemm runs persistent: the manifest says so, and how many blocks to launch."""
    import json

    from tilec.compiler.launch import GridExpr

    out = tmp_path / "gemm.ptx"
    proc = _tilec("compile", GOOD, "--kernel", "gemm", "-D", "M=8192", "-D", "N=4096", "-D", "K=256",
                  "--arch", "sm_90a", "-o", out)
    assert proc.returncode == 0, proc.stderr
    g = json.loads((tmp_path / "gemm.json").read_text())["grid"]
    assert g["persistent"] is True and g["balanced"] is True and g["cluster"] == 1
    assert g["formula"] == "(ceildiv(32 * 64 * 1, ceildiv(32 * 64 * 1, min(32 * 64 * 1, multiprocessors))), 1, 1)"
    grid = GridExpr(g["steps"], g["outputs"], g["persistent"], g["cluster"], g["balanced"])
    assert grid.evaluate({}, 132) == (128, 1, 1)  # 2048 tiles, 16 each


def test_compile_writes_the_build_for_any_sizes_of_a_dynamic_kernel(tmp_path):
    """One image for every call: without a launcher to check the sizes, `tilec compile` writes the build that
    takes any run-time sizes (no TMA over a tensor whose row is a run-time size), not the aligned one
    the JIT runs where the sizes are 16-byte multiples (size_variants.py)."""
    import json

    out = tmp_path / "dyn.ptx"
    proc = _tilec("compile", GOOD, "--kernel", "dynamic_gemm", "--arch", "sm_90a", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "wgmma.mma_async" in text and "cp.async.bulk.tensor" not in text
    manifest = json.loads((tmp_path / "dyn.json").read_text())
    assert manifest["params"][0]["shape"] == ["m", "k"]
