"""Where the reference kernels (shared/kernels) are: TILEC_SHARED_KERNELS, the device machine's
.gpu/kernels, or ../shared/kernels beside the checkout."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reference_kernels() -> str:
    for path in (os.environ.get("TILEC_SHARED_KERNELS", ""), os.path.join(ROOT, ".gpu", "kernels"),
                 os.path.join(os.path.dirname(ROOT), "shared", "kernels")):
        if path and os.path.isdir(path):
            return path
    raise SystemExit("the reference kernels (shared/kernels) are not here; set TILEC_SHARED_KERNELS")
