"""`tilec.carver.arch.CUDA`: the device model `tilec.tools.Analyzer` estimates with (TileLang's
`carver.arch.CUDA`, there also the search space of its schedule search, which tilec does not have).

Peak rates are per compute capability (dense fp16/bf16 tensor-core flops per SM per clock, a
typical boost clock, the memory bandwidth of the common part), the SM count from the device.
Numbers for an estimate, not a measurement.
"""

from __future__ import annotations

from tilec.carver.arch import driver

# (dense fp16 tensor flops per SM per clock, boost clock in GHz, memory bandwidth in bytes/s)
_ARCH = {
    (8, 0): (2048, 1.41, 1.555e12),  # A100
    (8, 6): (1024, 1.70, 0.936e12),  # RTX 3090 / A40
    (8, 9): (1024, 2.52, 1.008e12),  # RTX 4090 / L40
    (9, 0): (4096, 1.83, 3.35e12),  # H100 SXM (an H200 has 4.8e12)
}


class CUDA:
    """A CUDA GPU as the analyzer sees it: `CUDA("cuda")` models the visible one."""

    def __init__(self, target="cuda", device_id: int = 0):
        import torch

        if str(target).split()[0] not in ("cuda", "nvidia/cuda") and not str(target).startswith("cuda"):
            raise ValueError(f"tilec.carver.arch.CUDA models a CUDA GPU, got target {target!r}")
        major, minor = torch.cuda.get_device_capability(device_id)
        self.compute_capability = (major, minor)
        self.sm_count = driver.get_num_sms(device_id)
        per_clock, ghz, bandwidth = _ARCH.get((major, minor)) or _ARCH[min(_ARCH, key=lambda a: abs(a[0] - major))]
        self.peak_flops = per_clock * ghz * 1e9 * self.sm_count
        self.bandwidth = bandwidth
        self.smem_cap = driver.get_shared_memory_per_block(device_id)

    def __repr__(self) -> str:
        cc = ".".join(map(str, self.compute_capability))
        return f"CUDA(sm {cc}, {self.sm_count} SMs, {self.peak_flops / 1e12:.0f} TFLOPS, {self.bandwidth / 1e9:.0f} GB/s)"
