"""Every `pass_configs` key tilec accepts, and what it does with each: the one table.

Each key has a fate:

- **honoured**: tilec does what the key asks. Either a part of the build acts on it (the pass
  list, the LLVM translation, ptxas, the IR dump), or the request holds by construction (it
  disables something tilec never does; `why` says which, and whoever adds that thing wires
  the key).
- **not applicable**: the key asks for a mechanism tilec does not have (a TVM pass, a debug
  print, a CUDA-C compiler). A value in `inert` (TileLang's default, or a value that asks for
  nothing) is accepted silently; any other value is accepted and reported by name: a
  `TilecWarning` through `warnings`, and a warning on the `tilec` logger (TILEC_LOG).
- **refused**: dropping the key could change what the user gets, and tilec cannot do it: a
  value outside `inert` is a located error.

A key that is not in the table is an error ("unknown pass-config key", with the closest name).
Keys are TileLang's strings (`PassConfigKey.X.value`), or tilec's own "tilec.*".

Light on purpose (no IR imports): `@tilec.jit` checks its configs at decoration.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass

from tilec import config
from tilec.errors import SourceLoc, TilecError, TilecWarning

HONOURED, NOT_APPLICABLE, REFUSED = "honoured", "not applicable", "refused"

_BOOL = (True, False)


@dataclass(frozen=True)
class Key:
    """One accepted key: its name, TileLang's `PassConfigKey` attribute, its fate and why."""

    name: str
    attr: str  # the PassConfigKey member name (TileLang's, or tilec's own for "tilec.*")
    fate: str
    why: str
    values: tuple | None = None  # honoured keys: the values tilec acts on (None: any)
    inert: tuple = (None, False)  # not applicable / refused keys: values that ask for nothing


def _honoured(name, attr, why, values=_BOOL):
    return Key(name, attr, HONOURED, why, values)


def _na(name, attr, why, inert=(None, False)):
    return Key(name, attr, NOT_APPLICABLE, why, inert=inert)


_NO_TIR = "tilec runs no TVM TIR passes (its own passes are listed by `tilec opt --help`)"

KEYS: dict[str, Key] = {k.name: k for k in (
    # ---- honoured: acted on ----------------------------------------------------------------
    _honoured("tilec.enable_mma", "TILEC_ENABLE_MMA",
              "tensor-core gemm (mma.sync m16n8k16) on sm_80+; on by default, False selects the SIMT gemm"),
    _honoured("tilec.enable_wgmma", "TILEC_ENABLE_WGMMA",
              "wgmma m64nNk16 on sm_90a where the operands allow (on by default there)"),
    _honoured("tilec.async_wgmma", "TILEC_ASYNC_WGMMA",
              "the program's own asynchronous wgmmas (T.wgmma_gemm, T.gemm(wg_wait=N)) are left running as "
              "written until T.wait_wgmma (on by default); False completes each where it stands, as before "
              "session 28 (a comparison point)"),
    _honoured("tilec.persistent", "TILEC_PERSISTENT",
              "warp-specialized gemm kernels become persistent: one block per multiprocessor loops over the "
              "tiles, the next tile's TMA loads overlapping this one's epilogue (by default for loops of one "
              "gemm: on the H200 4096x4096x1024 54 vs 64 us, 4096^3 198 vs 202, run s6f; False turns it off, "
              "True asks for it for any kernel that fits, attention included: +5-7 % at S=1024, 5-14 % slower "
              "causal, run s8c)"),
    _honoured("tilec.balanced_waves", "TILEC_BALANCED_WAVES",
              "a persistent kernel launches the fewest blocks that run its tiles in as many rounds, every block "
              "as many tiles, the rest of the multiprocessors free (on by default: on the H200 even at 8192^3 and "
              "4096^3, 2 % faster at 3072x3072x4096, sustained, run s12b); False launches one block per "
              "multiprocessor"),
    _honoured("tilec.alternate_k", "TILEC_ALTERNATE_K",
              "tile-alternate-k: a persistent gemm's producer loads the k-tiles of the tiles a block runs in odd "
              "rounds last to first, so that a round starts on the operand tiles the round before ended with, "
              "still in L2 (the sum reassociated: results agree to rounding; on an H100 at 8192^3 7.6 % fewer "
              "DRAM bytes, 0.4-0.6 % faster sustained, run s19c; on by default; False keeps every round "
              "forwards)"),
    _honoured("tilec.pingpong", "TILEC_PINGPONG",
              "a warp-specialized gemm kernel of one warpgroup runs persistent as two consumer warpgroups on "
              "alternate tiles, one's epilogue under the other's gemms (on by default on sm_90a; False turns it "
              "off)"),
    _honoured("tilec.per_copy_tma", "TILEC_PER_COPY_TMA",
              "a T.Pipelined wgmma loop with a copy TMA cannot take (a stride of no 16-byte multiple) is "
              "warp-specialized all the same, that copy by the producer warpgroup's threads (cp.async onto the "
              "stage's mbarrier), the others by TMA (on by default: on the H200 6-30 % faster than cp.async stages at "
              "4096x4100x4096 and 4100x4096x4100, run s15a; False leaves such a loop whole to cp.async stages)"),
    _honoured("tilec.aligned_sizes", "TILEC_ALIGNED_SIZES",
              "a kernel whose tensors have run-time inner sizes (K of A[M, K]) is built for sizes of 16-byte "
              "multiples (TMA, 16-byte copies, warp specialization), the launcher checking each call's sizes and "
              "running, for others, a build for the multiples they have, made at the first such call (on by default for "
              "the JIT; `tilec compile`, whose one image must take any sizes, writes the build for any sizes); "
              "False builds for any sizes only"),
    _honoured("tilec.cluster", "TILEC_CLUSTER",
              "tile-cluster (off by default: plain kernels 2-15 % slower than unclustered on the H200, "
              "persistent ones even to 1 % slower at 8192^3, run s11a): the blocks (or a persistent kernel's tiles) "
              "of a warp-specialized kernel that load the same operand tile pair into clusters of two and load it "
              "once, by TMA multicast"),
    _honoured("tilec.warpgroup_pingpong", "TILEC_WARPGROUP_PINGPONG",
              "tile-warpgroup-pingpong: the consumer warpgroups of one tile (attention's 256 threads) take turns at "
              "the two gemms of their loop, one's softmax under the other's gemms. Not given: on the loops the "
              "softmax overlap rotated (on the H200 causal D=128 attention 0.81 -> 0.90x cuDNN, non-causal even, "
              "run s7b); True: on every loop that fits (the loop as written ran 15 % slower with it, causal 46 %, "
              "run s5f); False: off"),
    _honoured("tilec.operand_rings", "TILEC_OPERAND_RINGS",
              "tile-warp-specialize gives the staged tiles of different gemms a full/empty mbarrier ring each "
              "(FlashAttention-3's K and V pipelines; off by default until measured): Q K^T waits for K only, "
              "K's stage is released once S is computed, V's once P V is done"),
    _honoured("tilec.softmax_overlap", "TILEC_SOFTMAX_OVERLAP",
              "FlashAttention-3's intra-warpgroup overlap (implies tilec.operand_rings; on by default: on the H200 "
              "D=128 S=8192 attention 0.94 vs 0.75x cuDNN, D=256 1.00 vs 0.85, D=64 0.79 vs 0.78, run s7b): the "
              "warp-specialized attention loop is rotated so that each warpgroup issues Q K_j^T and "
              "P_{j-1} V_{j-1} together and runs the softmax of S_j while P V runs; False keeps the loop as written"),
    _honoured("tilec.split_masks", "TILEC_SPLIT_MASKS",
              "tile-split-masks (on by default): a loop's T.Parallel mask that is uniformly true for a prefix or "
              "suffix of its iterations (causal attention's diagonal) runs unmasked there; False keeps every mask"),
    _honoured("tilec.longest_first", "TILEC_LONGEST_FIRST",
              "tile-longest-first (on by default): a kernel whose loop runs longer in higher block indices (causal "
              "attention) launches its blocks from the last index, so the grid ends on the short ones; False "
              "keeps the hardware's order"),
    _honoured("tilec.tma_store", "TILEC_TMA_STORE",
              "tile-stage-epilogue (on by default): a warp-specialized kernel's result, staged in shared memory, "
              "goes out by TMA stores (cp.async.bulk.tensor, one thread, asynchronous) where TMA can write the "
              "destination; False stores it in the consumer threads' 16-byte stores"),
    _honoured("tilec.stmatrix", "TILEC_STMATRIX",
              "the consumers of a warp-specialized kernel store 16-bit accumulator fragments into shared memory "
              "(the staged epilogue) by stmatrix, four 8x8 matrices a warp instruction, where the fragment's layout "
              "allows (on by default); False stores each thread's pairs 4 bytes at a time"),
    _honoured("tl.disable_wgmma", "TL_DISABLE_WGMMA", "keeps tile-select-mma off wgmma, even with tilec.enable_wgmma"),
    _honoured("tl.enable_fast_math", "TL_ENABLE_FAST_MATH",
              "approximate NVVM math (ex2/lg2/rsqrt .ftz, tanh.approx) in the LLVM translation"),
    _honoured("tl.disable_fast_math", "TL_DISABLE_FAST_MATH", "overrides tl.enable_fast_math"),
    _honoured("tilec.fp_contract", "TILEC_FP_CONTRACT",
              "f32/f16 multiplies and adds may contract into fused multiply-adds (on by default, as nvcc's "
              "--fmad=true, which TileLang's builds use); False rounds each separately (compile flag --fmad=false)"),
    _honoured("tl.config_index_bitwidth", "TL_CONFIG_INDEX_BITWIDTH",
              "the width of index arithmetic (default: 32 where every tensor is static and small, else 64)",
              (32, 64)),
    _honoured("tl.ptxas_register_usage_level", "TL_PTXAS_REGISTER_USAGE_LEVEL",
              "passed to ptxas as --register-usage-level (not applied, with a warning, when the driver "
              "compiles the PTX for want of ptxas)", tuple(range(11))),
    _honoured("tl.enable_ptxas_verbose_output", "TL_ENABLE_PTXAS_VERBOSE_OUTPUT",
              "prints ptxas -v's report (registers, spills, shared memory) on stderr after each build"),
    _honoured("tl.enable_dump_ir", "TL_ENABLE_DUMP_IR",
              "writes the IR after every pass and every stage into tl.dump_ir_path (as TILEC_DUMP_IR does)"),
    _honoured("tl.dump_ir_path", "TL_DUMP_IR_DIR", "the folder for tl.enable_dump_ir (default ./dump_ir)", None),
    # ---- honoured: the Hopper work reads them; they hold today (no TMA, no warp specialization yet)
    _honoured("tl.disable_tma_lower", "TL_DISABLE_TMA_LOWER", "no T.copy is lowered to TMA"),
    _honoured("tl.disable_warp_specialized", "TL_DISABLE_WARP_SPECIALIZED", "no producer/consumer warp groups"),
    # ---- honoured by construction: they disable what tilec never does ------------------------
    _honoured("tl.disable_vectorize_256", "TL_DISABLE_VECTORIZE_256",
              "tilec emits no 256-bit loads or stores (an sm_100 feature)"),
    _honoured("tl.disable_dynamic_tail_split", "TL_DISABLE_DYNAMIC_TAIL_SPLIT",
              "tilec splits no loop tails: accesses past a dynamic end are predicated"),
    _honoured("tl.disable_shuffle_elect", "TL_DISABLE_SHUFFLE_ELECT", "tilec emits no elect.sync"),
    _honoured("tl.disable_loop_unswitching", "TL_DISABLE_LOOP_UNSWITCHING", "tilec unswitches no loop"),
    _honoured("tl.disable_data_race_check", "TL_DISABLE_DATA_RACE_CHECK", "tilec has no data-race check"),
    _honoured("tl.disable_buffer_init_check", "TL_DISABLE_BUFFER_INIT_CHECK", "tilec has no buffer-init check"),
    _honoured("tl.disable_prelower_semantic_check", "TL_DISABLE_PRELOWER_SEMANTIC_CHECK",
              "tilec's checks are its frontend's and verifiers' (located errors), not a pre-lower pass"),
    _honoured("tl.disable_out_of_bound_warning", "TL_DISABLE_OUT_OF_BOUND_WARNING",
              "tilec prints no out-of-bound warnings"),
    # ---- not applicable: warned about unless inert ----------------------------------------------
    _na("tl.disable_thread_storage_sync", "TL_DISABLE_THREAD_STORAGE_SYNC",
        "tilec still inserts the barriers its shared-memory accesses need (tile-insert-barriers): correct, "
        "possibly slower than hand-placed ones"),
    _na("tl.disable_safe_memory_legalize", "TL_DISABLE_SAFE_MEMORY_ACCESS",
        "tilec still predicates every global access tile-legalize-bounds cannot prove in bounds"),
    _na("tl.disable_safe_copy_predication", "TL_DISABLE_SAFE_COPY_PREDICATION",
        "tilec still predicates every global access tile-legalize-bounds cannot prove in bounds"),
    _na("tl.disable_shared_memory_reuse", "TL_DISABLE_SHARED_MEMORY_REUSE",
        "tile-plan-shared-memory always lets buffers that are never alive together share bytes"),
    _na("tl.enable_aggressive_shared_memory_merge", "TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE",
        "tile-plan-shared-memory has one placement (liveness-based reuse, largest buffer first)"),
    _na("tl.debug_merge_shared_memory_allocations", "TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS",
        "no debug print of the shared-memory plan: get_ir('tile-opt') shows every buffer's offset"),
    _na("tl.dynamic_alignment", "TL_DYNAMIC_ALIGNMENT", "tilec checks each call's dynamic sizes and runs a build for "
        "the multiples of 16 bytes they have (tilec.aligned_sizes), assuming no alignment it has not checked"),
    _na("tl.enable_lower_ldgstg", "TL_ENABLE_LOWER_LDGSTG",
        "tilec's global accesses are LLVM loads and stores; the NVPTX backend picks the instructions"),
    _na("tl.enable_lower_ldgstg_predicated", "TL_ENABLE_LOWER_LDGSTG_PREDICATED",
        "tilec's global accesses are LLVM loads and stores; the NVPTX backend picks the instructions"),
    _na("tl.enable_async_copy", "TL_ENABLE_ASYNC_COPY",
        "tilec uses cp.async for the stages of T.Pipelined loops on sm_80+ and nowhere else", inert=(None, True)),
    _na("tl.disable_index_type_promotion", "TL_DISABLE_INDEX_TYPE_PROMOTION",
        "use tl.config_index_bitwidth to choose the index width"),
    _na("tl.enable_debug_output", "TL_ENABLE_DEBUG_OUTPUT", "no debug output: TILEC_DUMP_IR=dir writes every stage"),
    _na("tl.ast_print_enable", "TL_AST_PRINT_ENABLE", "no TIR to print: get_ir('tile') prints the tile IR"),
    _na("tl.layout_visualization_enable", "TL_LAYOUT_VISUALIZATION_ENABLE",
        "no layout plots: get_ir('tile-opt') prints every #tile.fragment"),
    _na("tl.layout_visualization_formats", "TL_LAYOUT_VISUALIZATION_FORMATS",
        "no layout plots: get_ir('tile-opt') prints every #tile.fragment", inert=(None, "")),
    _na("tl.enable_vectorize_planner_verbose", "TL_ENABLE_VECTORIZE_PLANNER_VERBOSE", "no vectorize planner"),
    _na("tl.enable_reducer_plan_verbose", "TL_ENABLE_REDUCER_PLAN_VERBOSE", "no reducer planner"),
    _na("tl.reducer_force_baseline", "TL_REDUCER_FORCE_BASELINE", "no reducer planner"),
    _na("tl.layout_cost_model", "TL_LAYOUT_COST_MODEL", "tile-infer-layout has no cost model to choose"),
    _na("tl.enable_fp32x2_reduction", "TL_ENABLE_FP32X2_REDUCTION", "an sm_100 feature", inert=(None, True, False)),
    _na("tl.enable_auto_unroll", "TL_ENABLE_AUTO_UNROLL", "the NVPTX backend unrolls what LLVM chooses to"),
    _na("tl.emit_line_directives", "TL_EMIT_LINE_DIRECTIVES", "tilec generates no CUDA C to put #line into"),
    _na("tl.enable_auto_warp_specialization", "TL_ENABLE_AUTO_WARP_SPECIALIZATION",
        "tilec has no automatic warp-specialization scheduler"),
    _na("tl.enable_auto_schedule", "TL_ENABLE_AUTO_SCHEDULE", "an Ascend option", inert=(None, True, False)),
    _na("tl.pass_profile", "TL_PASS_PROFILE", "no per-pass timing"),
    _na("tl.pass_profile_threshold_ms", "TL_PASS_PROFILE_THRESHOLD_MS", "no per-pass timing", inert=(None, 0)),
    _na("tl.Simplify", "TL_SIMPLIFY", _NO_TIR, inert=(None, {})),
    _na("tl.force_let_inline", "TL_FORCE_LET_INLINE", _NO_TIR),
    _na("tl.loop_unswitching_allow_non_trivial_else", "TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE", _NO_TIR),
    _na("tl.if_stmt_binding_inline_replayable_binds", "TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS", _NO_TIR,
        inert=(None, True)),
    _na("tl.storage_rewrite_detect_inplace", "TL_STORAGE_REWRITE_DETECT_INPLACE", _NO_TIR),
    *(_na(f"{ns}.{key}", attr, _NO_TIR, inert=inert) for ns in ("tir", "tirx") for key, attr, inert in (
        ("enable_equiv_terms_in_cse_tir", "TIR_ENABLE_EQUIV_TERMS_IN_CSE", (None, True)),
        ("disable_cse_tir", "TIR_DISABLE_CSE", (None, False)),
        ("Simplify", "TIR_SIMPLIFY", (None, True)),
        ("disable_storage_rewrite", "TIR_DISABLE_STORAGE_REWRITE", (None, False)),
        ("disable_vectorize", "TIR_DISABLE_VECTORIZE", (None, False)),
        ("use_async_copy", "TIR_USE_ASYNC_COPY", (None, True)),
        ("enable_debug", "TIR_ENABLE_DEBUG", (None, False)),
        ("merge_static_smem", "TIR_MERGE_STATIC_SMEM", (None, True)),
        ("noalias", "TIR_NOALIAS", (None, True)))),
    _na("cuda.kernels_output_dir", "CUDA_KERNELS_OUTPUT_DIR",
        "tilec generates PTX, not CUDA C: tl.enable_dump_ir or TILEC_DUMP_IR=dir writes it", inert=(None, "")),
    # ---- refused: errors unless inert ------------------------------------------------------
    *(Key(f"{ns}.add_lower_pass", "TIR_ADD_LOWER_PASS", REFUSED,
          "tilec cannot run TVM lowering passes on its IR", inert=(None, (), [])) for ns in ("tir", "tirx")),
    Key("tl.device_compile_flags", "TL_DEVICE_COMPILE_FLAGS", REFUSED,
        "tilec compiles no CUDA C (no nvcc or NVRTC: LLVM emits the PTX), so flags for that compiler cannot apply",
        inert=(None, "", (), [])),
)}

_HINTS = {"tl.device_compile_flags": "remove it; for --use_fast_math set tl.enable_fast_math"}


def _is_inert(value, inert: tuple) -> bool:
    return any(value == v and (type(value) is type(v) or v in (None, 0) and type(value) is int) for v in inert)


def report(msg: str, loc: SourceLoc | None) -> None:
    """A `TilecWarning` at `loc` (once per place), and the same on the `tilec` logger."""
    from tilec.log import logger

    logger.warning("%s%s", f"{loc}: " if loc is not None else "", msg)
    if loc is None:
        warnings.warn(msg, TilecWarning, stacklevel=4)
    else:
        warnings.warn_explicit(msg, TilecWarning, loc.file, loc.line, module="tilec", registry=_REGISTRY)


_REGISTRY: dict = {}  # `warnings` shows each warning once per kernel definition


def check_pass_configs(pass_configs, loc: SourceLoc | None, compile_flags=None) -> dict:
    """`pass_configs` with its keys as strings, after checking each against the table (see above),
    over the configs that `compile_flags` ask for (`compile_flag_configs`; explicit keys win)."""
    configs = {**compile_flag_configs(compile_flags, loc),
               **{getattr(k, "value", k): v for k, v in dict(pass_configs or {}).items()}}
    for name, value in configs.items():
        key = KEYS.get(name)
        if key is None:
            close = difflib.get_close_matches(str(name), KEYS, n=1)
            raise TilecError(f"unknown pass-config key {name!r}", loc=loc,
                             hint=f"did you mean {close[0]!r}?" if close else
                             "tilec.compiler.pass_configs.KEYS lists the keys tilec accepts")
        if key.fate == HONOURED:
            allowed = key.values
            if allowed is not None and not any(value == a and type(value) in (type(a), int) for a in allowed):
                raise TilecError(f"pass config {name!r} = {value!r}: the value must be one of "
                                 f"{', '.join(map(repr, allowed))}", loc=loc)
            continue
        if _is_inert(value, key.inert):
            continue
        if key.fate == REFUSED:
            raise TilecError(f"pass config {name!r} = {value!r} is not supported: {key.why}", loc=loc,
                             hint=_HINTS.get(name, f"remove {name!r} from pass_configs"))
        report(f"pass config {name!r} = {value!r} is not applicable to tilec and is ignored: {key.why}", loc)
    return configs


def dump_dir(configs: dict) -> str | None:
    """Where a build writes its IR: TILEC_DUMP_IR, else tl.dump_ir_path when tl.enable_dump_ir is set."""
    if config.DUMP_IR:
        return config.DUMP_IR
    if configs.get("tl.enable_dump_ir"):
        return configs.get("tl.dump_ir_path") or "dump_ir"
    return None


# ------------------------------------------------------------------------- compile flags

_FLAG_CONFIGS = {
    "--use_fast_math": {"tl.enable_fast_math": True}, "-use_fast_math": {"tl.enable_fast_math": True},
    "--fmad=false": {"tilec.fp_contract": False}, "-fmad=false": {"tilec.fp_contract": False},
    "--fmad=true": {"tilec.fp_contract": True}, "-fmad=true": {"tilec.fp_contract": True},
}
"""nvcc flags that change what a kernel computes, as the pass configs tilec honours for them."""

_NO_EFFECT_PREFIXES = ("-O", "-D", "-U", "-W", "-I", "-std=", "--std=", "-lineinfo", "--generate-line-info", "-g",
                       "-Xcompiler", "--expt-relaxed-constexpr", "--expt-extended-lambda", "-DNDEBUG")
"""nvcc flags with nothing to act on in tilec: it always optimizes, and compiles no CUDA C++ (no
preprocessor, host compiler or headers): accepted without a word."""


def compile_flag_configs(flags, loc: SourceLoc | None) -> dict:
    """The pass configs that TileLang's `compile_flags` (nvcc's) ask for: `--use_fast_math`,
    `--fmad=false|true`; flags with nothing to act on in tilec (optimization levels, macros,
    warnings, include paths, line info) are accepted; any other flag (`--ptxas-options=...`,
    `-maxrregcount=...`) is reported as ignored, by name."""
    if flags is None:
        return {}
    if isinstance(flags, str):
        flags = flags.split()
    configs: dict = {}
    for flag in flags:
        if not isinstance(flag, str):
            raise TilecError(f"compile_flags holds {flag!r}, not a string", loc=loc,
                             hint='pass nvcc flags as strings, e.g. compile_flags=["-O3", "--use_fast_math"]')
        flag = flag.strip()
        if flag in _FLAG_CONFIGS:
            configs.update(_FLAG_CONFIGS[flag])
        elif not flag or flag.startswith(_NO_EFFECT_PREFIXES):
            continue
        else:
            report(f"compile flag {flag!r} is not applicable to tilec and is ignored (tilec honours --use_fast_math "
                   f"and --fmad=false|true; it builds PTX through LLVM, not nvcc)", loc)
    return configs
