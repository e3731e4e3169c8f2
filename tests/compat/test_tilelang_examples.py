"""A CPU subset of TileLang's own example suite, run unmodified through `python -m tilec.compat`.

Each case runs one of TileLang's test functions (which calls an example's `main()`, which
checks its kernels against torch) in a subprocess, with torch's CUDA calls mapped to the CPU
and the kernels on the interpreter (`--cuda-on-cpu`). The examples are test data in
../shared/tilelang-examples, copied to a scratch folder, never into the project; the cases
skip where that folder is absent. The subset is examples that pass on the CPU within a few
seconds each, need no package beyond tilec's test dependencies (no triton), and between them
use the TileLang semantics tilec implements for them; the whole suite is
`tools/run_tilelang_examples.py`.
"""

import os
import shutil
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.pardir,
                        "shared", "tilelang-examples")

CASES = [  # each a few seconds on the interpreter; what it covers besides the kernels themselves
    "elementwise/test_example_elementwise.py::test_example_elementwise_add",
    "gemm/test_example_gemm.py::test_example_gemm",
    "gemm_splitk/test_example_gemm_splitk.py::test_example_tilelang_gemm_splitk",
    "gemm_splitk/test_example_gemm_splitk.py::test_example_tilelang_gemm_splitk_vectorize_atomicadd",
    "seer_attention/test_block_sparse_attn_tilelang.py::test_block_sparse_attn_tilelang",
    "attention_sink/test_example_attention_sink.py::test_example_mha_sink_fwd_bhsd_full_attn",
    "grouped_gemm/test_example_grouped_gemm.py::test_example_grouped_gemm_bwd_small",
    "grouped_gemm/test_example_grouped_gemm.py::test_example_grouped_gemm_fwd_small",  # comprehensions
    "blocksparse_gemm/test_example_blocksparse_gemm.py::test_example_blocksparse_gemm",
    "norm/test_rms_norm.py::test_rms_norm",
    "topk/test_topk_tilelang.py::test_topk_tilelang",
    "deepseek_nsa/test_example_tilelang_nsa.py::test_example_tilelang_nsa_fwd_decode",  # loop-variable scopes
    "flash_attention/test_example_flash_attention.py::test_example_mha_bwd_bhsd",  # T.Layout of a global tensor
    "cast/test_example_cast.py::test_example_group_per_split_token_cast_to_fp8",  # slices from a T.alloc_var
    "analyze/test_example_analyze.py::test_example_gemm_analyze",  # tilec.tools.Analyzer
    "analyze/test_example_analyze.py::test_example_conv_analyze",  # T.im2col, T.Tensor views
    "gdn/test_example_gdn_compilation.py::test_example_cumsum_compilation",
    # T.ws roles run concurrently on the interpreter, meeting at mbarriers (barrier arrays, stage views)
    "warp_specialize/test_example_warp_specialize.py::test_example_warp_specialize_gemm_barrierpipe_stage2",
    "warp_specialize/test_example_warp_specialize.py::test_example_warp_specialize_gemm_copy_1_gemm_0",
]


@pytest.fixture(scope="session")
def examples(tmp_path_factory):
    if not os.path.isdir(EXAMPLES):
        pytest.skip("TileLang's examples (../shared/tilelang-examples) are not here")
    copy = tmp_path_factory.mktemp("tilelang-examples") / "examples"
    shutil.copytree(EXAMPLES, copy)
    return copy


@pytest.mark.parametrize("case", CASES)
def test_tilelang_example_runs_unmodified_on_the_cpu(examples, case, tmp_path):
    path, test = case.split("::")
    env = dict(os.environ, TILEC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TILEC_VERIFY", None)  # the examples' own speed: the suite verifies passes elsewhere
    proc = subprocess.run([sys.executable, "-m", "tilec.compat", "--cuda-on-cpu", "-m", "pytest", "-q", "-x",
                           "-p", "no:cacheprovider", f"{os.path.basename(path)}::{test}"],
                          cwd=examples / os.path.dirname(path), env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{case} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    assert "1 passed" in proc.stdout, f"{case} did not run:\n{proc.stdout[-2000:]}"
