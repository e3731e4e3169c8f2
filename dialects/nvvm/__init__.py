"""tilec's subset of MLIR's NVVM dialect: the NVIDIA-specific ops of thread-level IR.

Upstream documentation: https://mlir.llvm.org/docs/Dialects/NVVMDialect/

Op names, operand order and attribute spellings follow upstream so that the generic form of
tilec's thread-level IR is accepted by `mlir-opt`. Pointer operands are `!llvm.ptr<AS>` as
upstream (3 = shared, 1 = global); thread-level IR gets the base pointer of a memref with
`builtin.unrealized_conversion_cast %m : memref<…> to !llvm.ptr<AS>` (see
`targets/nvptx/translate.py`). Only what tilec emits is defined: `attrs.py` (enums, operand checks), `ops.py`
(Ampere-class ops and wgmma), `hopper.py` (mbarriers, TMA, setmaxnreg, named barriers, stmatrix). Deviations from upstream are commented where they happen.

```mlir
%v = "nvvm.shfl.sync"(%mask, %x, %off, %clamp) <{kind = #nvvm<shfl_kind bfly>}>
    : (i32, f32, i32, i32) -> f32
```
"""


from xdsl.ir import Dialect

from .attrs import *  # noqa: F403
from .attrs import (
    LoadCacheModifierAttr,
    MMALayoutAttr,
    MMAShapeAttr,
    MMATypeAttr,
    ProxyKindAttr,
    ReduxKindAttr,
    SetMaxRegisterActionAttr,
    SharedSpaceAttr,
    ShflKindAttr,
)
from .hopper import *  # noqa: F403
from .hopper import HOPPER_OPS
from .ops import *  # noqa: F403
from .ops import (
    SREG_OPS,
    Barrier0Op,
    BarWarpSyncOp,
    CpAsyncCommitGroupOp,
    CpAsyncOp,
    CpAsyncWaitGroupOp,
    FenceProxyOp,
    LdMatrixOp,
    MmaSyncOp,
    RcpApproxFtzF32Op,
    ReduxSyncOp,
    ShflSyncOp,
    VoteBallotOp,
    WgmmaCommitGroupSyncAlignedOp,
    WgmmaFenceAlignedOp,
    WgmmaMmaAsyncOp,
    WgmmaWaitGroupSyncOp,
)

NVVM = Dialect(
    "nvvm",
    [
        *SREG_OPS.values(),
        ShflSyncOp,
        ReduxSyncOp,
        VoteBallotOp,
        RcpApproxFtzF32Op,
        Barrier0Op,
        BarWarpSyncOp,
        FenceProxyOp,
        CpAsyncOp,
        CpAsyncCommitGroupOp,
        CpAsyncWaitGroupOp,
        LdMatrixOp,
        MmaSyncOp,
        WgmmaFenceAlignedOp,
        WgmmaCommitGroupSyncAlignedOp,
        WgmmaWaitGroupSyncOp,
        WgmmaMmaAsyncOp,
        *HOPPER_OPS,
    ],
    [
        ShflKindAttr,
        ReduxKindAttr,
        ProxyKindAttr,
        SharedSpaceAttr,
        LoadCacheModifierAttr,
        MMALayoutAttr,
        MMATypeAttr,
        MMAShapeAttr,
        SetMaxRegisterActionAttr,
    ],
)
