"""Program structure: prim_func, tensors, sizes, macros and the kernel launch."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from tilec.dtypes import DType, as_dtype

from ._builtin import builtin
from .dtypes import is_pointer


class _Arith:
    """Arithmetic on a size that is not known yet builds a `SizeExpr` (e.g. `M // block_M` in an eager
    kernel's annotations, before the caller's tensors bind M)."""

    def _op(self, op, other, reflected=False):
        return SizeExpr(op, (other, self) if reflected else (self, other))

    def __add__(self, o): return self._op("+", o)
    def __radd__(self, o): return self._op("+", o, True)
    def __sub__(self, o): return self._op("-", o)
    def __rsub__(self, o): return self._op("-", o, True)
    def __mul__(self, o): return self._op("*", o)
    def __rmul__(self, o): return self._op("*", o, True)
    def __floordiv__(self, o): return self._op("//", o)
    def __rfloordiv__(self, o): return self._op("//", o, True)
    def __truediv__(self, o): return self._op("/", o)
    def __rtruediv__(self, o): return self._op("/", o, True)
    def __mod__(self, o): return self._op("%", o)
    def __rmod__(self, o): return self._op("%", o, True)
    def __neg__(self): return SizeExpr("-", (0, self))


@dataclass(frozen=True)
class Symbol(_Arith):
    """A named size: `T.dynamic("M")` (bound at run time) or `T.const("M")` (a specialization key)."""

    name: str
    dynamic: bool = True
    dtype: str = "int32"

    def __repr__(self) -> str:
        return f"T.{'dynamic' if self.dynamic else 'const'}({self.name!r})"


@dataclass(frozen=True, eq=False)
class SizeExpr(_Arith):
    """An expression of sizes not bound yet (`op` over `args`: "+", "//", "ceildiv", "max", ...)."""

    op: str
    args: tuple

    def __repr__(self) -> str:
        a = ", ".join(map(repr, self.args))
        return f"({self.args[0]!r} {self.op} {self.args[1]!r})" if len(self.args) == 2 and not self.op.isalpha() \
            else f"{self.op}({a})"

    def symbols(self) -> list[Symbol]:
        """The Symbols the expression reads, each once."""
        found: list[Symbol] = []
        for a in self.args:
            for s in (a.symbols() if isinstance(a, SizeExpr) else [a] if isinstance(a, Symbol) else []):
                if s not in found:
                    found.append(s)
        return found

    def evaluate(self, sizes: dict[str, int]) -> int:
        """Its value once every symbol has one in `sizes` (a KeyError names the first that has not)."""
        vals = [a.evaluate(sizes) if isinstance(a, SizeExpr) else sizes[a.name] if isinstance(a, Symbol) else a
                for a in self.args]
        return _SIZE_OPS[self.op](*vals)

    def affine(self) -> tuple[Symbol, int, int] | None:
        """(s, a, b) when the expression is a * s + b of one symbol s and integers a != 0, b."""
        form = _affine(self)
        if form is None or form[0] is None or form[1] == 0:
            return None
        return form


_SIZE_OPS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
             "//": lambda x, y: x // y, "%": lambda x, y: x % y, "/": lambda x, y: x // y,
             "ceildiv": lambda x, y: -(-x // y), "max": max, "min": min}


def _affine(e):
    """(symbol or None, a, b): e = a * symbol + b, or None when it is not affine in one symbol."""
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return None, 0, e
    if isinstance(e, Symbol):
        return e, 1, 0
    if not isinstance(e, SizeExpr) or e.op not in ("+", "-", "*") or len(e.args) != 2:
        return None
    x, y = _affine(e.args[0]), _affine(e.args[1])
    if x is None or y is None or (x[0] is not None and y[0] is not None and x[0] != y[0]):
        return None
    sym = x[0] if x[0] is not None else y[0]
    if e.op == "+":
        return sym, x[1] + y[1], x[2] + y[2]
    if e.op == "-":
        return sym, x[1] - y[1], x[2] - y[2]
    if x[0] is not None and y[0] is not None:  # s * s
        return None
    if x[0] is None:
        x, y = y, x
    return sym, x[1] * y[2], x[2] * y[2]  # (a s + b) * c


def is_symbolic(value) -> bool:
    """Whether `value` is a size not bound yet (a Symbol or an expression of one)."""
    return isinstance(value, Symbol | SizeExpr)


def dynamic(name: str, dtype: str = "int32") -> Symbol | tuple[Symbol, ...]:
    """A size known only at run time, bound from the tensors' shapes at each call ("M, N": a tuple)."""
    names = [n.strip() for n in str(name).split(",")]
    syms = tuple(Symbol(n, True, str(dtype)) for n in names)
    return syms[0] if len(syms) == 1 else syms


symbolic = dynamic


class TensorMeta(type):
    def __getitem__(cls, item):
        shape, dtype = item
        return cls(shape, dtype)


class Tensor(metaclass=TensorMeta):
    """A global tensor parameter: `T.Tensor((M, K), T.float16)` or `T.Tensor[[M, K], "float16"]`."""

    def __init__(self, shape, dtype="float32"):
        if not isinstance(shape, list | tuple):  # one size: an int, a T.const / T.dynamic, `(batch)`
            shape = (shape,)
        self.shape = tuple(shape)
        self.pointers = is_pointer(dtype)  # `T.Tensor([n], T.ptr)`: a table of addresses, int64 as in TileLang
        self.dtype: DType | None = as_dtype("int64" if self.pointers else dtype)
        self.raw_dtype = dtype

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape}, {self.dtype!r})"


Buffer = Tensor


class _ScopedBufferMeta(type):
    def __getitem__(cls, item):
        shape, dtype = item
        return cls(shape, dtype)


class _ScopedBuffer(metaclass=_ScopedBufferMeta):
    """The annotation of a `T.macro` parameter that takes an on-chip buffer (documentation only:
    a macro's parameters take whatever the call passes). Not a kernel parameter: kernels take
    global tensors (T.Tensor)."""

    scope = ""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
        self.dtype: DType | None = as_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.{type(self).__name__}({self.shape}, {self.dtype!r})"


class SharedBuffer(_ScopedBuffer):
    """`K_shared: T.SharedBuffer([stages, bn, dim], dtype)`: a macro parameter taking a shared tile."""

    scope = "shared"


class FragmentBuffer(_ScopedBuffer):
    """`acc: T.FragmentBuffer([bm, bn], dtype)`: a macro parameter taking a fragment."""

    scope = "local.fragment"


class LocalBuffer(_ScopedBuffer):
    """`x: T.LocalBuffer([n], dtype)`: a macro parameter taking a per-thread buffer."""

    scope = "local"


class AnnotationError(Exception):
    """A parameter annotation that does not evaluate; the frontend reports it at the kernel."""

    def __init__(self, name: str, text: str, error: Exception):
        self.name, self.text, self.error = name, text, error
        super().__init__(f"the annotation of parameter `{name}` ({text}) does not evaluate: "
                         f"{type(error).__name__}: {error}")


class PrimFunc:
    """A kernel function whose tensor parameters are annotated in its signature."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def param_specs(self) -> list[tuple[str, Any]]:
        """(name, annotation) for each parameter; string annotations are evaluated."""
        hints = dict(getattr(self.fn, "__annotations__", {}))
        namespace = dict(self.fn.__globals__)
        if self.fn.__closure__:
            for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__):
                try:
                    namespace[name] = cell.cell_contents
                except ValueError:
                    pass
        specs = []
        for name in inspect.signature(self.fn).parameters:
            ann = hints.get(name)
            if isinstance(ann, str) and not isinstance(ann, DType):
                try:
                    ann = eval(ann, namespace)  # noqa: S307 - the user's own annotation
                except Exception as e:  # noqa: BLE001 - any mistake in the annotation is the user's
                    raise AnnotationError(name, ann, e) from None
            specs.append((name, ann))
        return specs

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a T.prim_func: compile it with tilec.compile(...) or return it "
            "from a @tilec.jit factory, then call the kernel"
        )


def prim_func(fn=None, **_options) -> PrimFunc:
    """Marks a function as a kernel with tensor parameters annotated in its signature."""
    if fn is None:
        return lambda f: PrimFunc(f)
    return PrimFunc(fn)


class Macro:
    """A function inlined at each call inside a kernel (`@T.macro`)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"T.macro {self.__name__} is only callable inside a kernel")


def macro(fn=None, **_options):
    """Marks a helper to be inlined into the kernels that call it."""
    if fn is None:
        return lambda f: Macro(f)
    return Macro(fn)


@builtin
def const(names: str):
    """Declares compile-time sizes, bound from the tensors' shapes: `M, N = T.const("M, N")`."""


@builtin
def empty(shape, dtype="float32"):
    """Declares an output tensor of an eager kernel; `return` it."""


@builtin
def Kernel(*grid, threads=128, is_cpu=False, prelude=None):
    """Launches a grid of blocks: `with T.Kernel(gx, gy, threads=128) as (bx, by):`."""


@builtin
def get_thread_binding(dim: int = 0):
    """The thread's index within the block along `dim`."""


@builtin
def thread_binding(start, stop=None, thread=None, annotations=None):
    """`T.thread_binding(0, n, thread="threadIdx.x")`: the thread's index along that axis (plus
    `start`); `stop - start` must be the block's thread count there."""


@builtin
def get_block_binding(dim: int = 0):
    """The block's index along `dim` (the same value `T.Kernel` yields)."""
