"""Temporary re-export of the old `tilec.pipeline.lower_to_thread` (3-tuple form).

The pass list is `tilec.compiler.pass_list`, the lowering `tilec.compiler.lower`. Remove this
file when tests/fuzz/harness.py and bench/bench_memory.py call `tilec.compiler.lower`.
"""

from __future__ import annotations


def lower_to_thread(program, target, pass_configs: dict):
    """(thread module, LaunchSpec, {stage: function printing it}), as the old API returned."""
    from tilec.compiler import lower

    lowered = lower.lower_to_thread(program, target, pass_configs)
    return lowered.thread, lowered.spec, {stage: (lambda s=stage: lowered.stage(s)) for stage in lower.STAGES}
