"""The `tilec` command: `tilec compile` (Python kernel → IR or code) and `tilec opt` (IR → passes → IR).

    tilec compile kernel.py [--kernel NAME] [-D M=4096 ...] [--emit tile] [-o out.mlir]
    tilec opt in.mlir -p canonicalize,cse [--split-input-file] [--verify-diagnostics]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import os
import re
import sys

from tilec.errors import TilecError

_EMIT_BY_EXT = {".mlir": "tile", ".ll": "llvm", ".ptx": "ptx", ".cubin": "cubin"}
_SPLIT = re.compile(r"^// -----\s*$", re.M)
_EXPECTED = re.compile(r"//\s*expected-(error|warning|note|remark)(@[+-]\d+|@above|@below)?\s*\{\{(.*?)\}\}")


# --------------------------------------------------------------------------- #
# tilec compile
# --------------------------------------------------------------------------- #


def _define(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise TilecError(f"-D {text}: expected NAME=VALUE")
    name, value = text.split("=", 1)
    try:
        return name.strip(), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name.strip(), value  # a bare word such as float16 stays a string


def _load_module(path: str):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise TilecError(f"no such file: {path}")
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def find_kernel(module, name: str | None):
    from tilec.jit import JITFunction
    from tilec.language.program import PrimFunc

    kernels = {k: v for k, v in vars(module).items() if isinstance(v, JITFunction | PrimFunc)}
    if name is not None:
        if name not in kernels:
            raise TilecError(f"no @tilec.jit function or T.prim_func named {name!r} in {module.__file__}",
                             hint=f"found: {', '.join(sorted(kernels)) or 'none'}")
        return kernels[name]
    if len(kernels) != 1:
        raise TilecError(f"{module.__file__} defines {len(kernels)} kernels; choose one with --kernel",
                         hint=f"found: {', '.join(sorted(kernels)) or 'none'}")
    return next(iter(kernels.values()))


def build_program(kernel, defines: dict):
    """The KernelProgram of a @jit function (factory or eager) or a prim_func, for `defines`."""
    from tilec.frontend import build_prim_func
    from tilec.jit import JITFunction

    if isinstance(kernel, JITFunction):
        return kernel.build_program(**defines)
    return build_prim_func(kernel)


def cmd_compile(args) -> int:
    defines = dict(_define(d) for d in args.define)
    emit = args.emit or _EMIT_BY_EXT.get(os.path.splitext(args.output or "")[1], "tile")
    kernel = find_kernel(_load_module(args.file), args.kernel)
    program = build_program(kernel, defines)
    if emit == "tile":
        from tilec.dialects import print_ir

        text = print_ir(program.module)
    else:
        from tilec.jit import JITKernel
        from tilec.target import resolve_target

        # one image for every call: the build for any sizes (no launcher here checks them, size_variants.py)
        compiled = JITKernel(program, resolve_target(args.arch or "sm_90a"), {"tilec.aligned_sizes": False})
        text = compiled._backend.emit(emit)
        if emit in ("ptx", "cubin") and args.output not in (None, "-"):
            with open(os.path.splitext(args.output)[0] + ".json", "w", encoding="utf-8") as f:
                json.dump(manifest(compiled, os.path.basename(args.output)), f, indent=2)
    if args.output in (None, "-"):
        sys.stdout.write(text if isinstance(text, str) else text.decode("latin1"))
    else:
        with open(args.output, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
    return 0


def manifest(kernel, image: str) -> dict:
    """How to launch a compiled kernel without Python: the deployment manifest next to its PTX/cubin.

    `params` are the kernel's tensors in order (name, dtype, shape with size names for
    dynamic dims, whether it is an output); `args` is the launch argument list (a tensor's
    device pointer, or an int64 size); `grid` computes the grid from the sizes (each step is
    [op, operands...] over earlier steps; `size` reads a size by name).
    """
    from tilec.compiler.launch import ARG_KINDS
    from tilec.language.program import Symbol
    from tilec.language.structure import SizeExpr

    def dim(d):  # an int, a size's name, or {"op", "args"} over those (`seq_len * 32`)
        if isinstance(d, SizeExpr):
            return {"op": d.op, "args": [dim(a) for a in d.args]}
        return d.name if isinstance(d, Symbol) else d

    spec, program = kernel._backend.spec, kernel.program
    return {
        "format": "tilec-kernel-1",
        "image": image,
        "kernel": spec.kernel_name,
        "arch": kernel.target.arch,
        "block": list(spec.block),
        "dynamic_shared_memory_bytes": spec.smem_bytes,
        "params": [{"name": p.name, "dtype": p.dtype.name, "output": p.is_output,
                    "shape": [dim(d) for d in p.shape]} for p in program.params],
        "args": [ARG_KINDS[kind].manifest(v) for kind, v in spec.args],
        # persistent: launch min(tiles, multiprocessors) blocks (a multiple of `cluster`), 1-D; balanced: then
        # ceildiv(tiles, ceildiv(tiles, that)), rounded up to whole clusters; else the grid as is
        "grid": {"steps": spec.grid.program, "outputs": spec.grid.outputs, "persistent": spec.grid.persistent,
                 "cluster": spec.grid.cluster, "balanced": spec.grid.balanced, "formula": str(spec.grid)},
    }


# --------------------------------------------------------------------------- #
# tilec opt
# --------------------------------------------------------------------------- #


def _parse(text: str, filename: str = "<input>", lines: dict | None = None, position: list | None = None):
    """Parses IR, giving each op without a location its file:line:col, as mlir-opt does."""
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    from tilec.dialects import context

    class LocatingParser(Parser):
        def parse_operation(self):
            start = self._current_token.span.start
            try:
                op = super().parse_operation()
            except VerifyException:
                if position is not None and not position:
                    position.append(start)  # the innermost op being parsed
                raise
            line = _line_of(text, start)
            col = start - (text.rfind("\n", 0, start) + 1) + 1
            if isinstance(op.location, UnknownLoc):
                op.location = FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(col))
            if lines is not None:
                lines[id(op)] = line
            return op

    return LocatingParser(context(), text).parse_module()


def _run_pipeline(text: str, pipeline: str, generic: bool, filename: str = "<input>") -> str:
    from xdsl.passes import PassPipeline
    from xdsl.printer import Printer

    from tilec import passes
    from tilec.dialects import context

    ctx = context()
    module = _parse(text, filename)
    module.verify()
    if pipeline:
        try:
            pipe = PassPipeline.parse_spec(passes.PASSES, pipeline)
        except ValueError as e:
            raise TilecError(str(e), hint=f"known passes: {', '.join(sorted(passes.PASSES))}") from None
        pipe.apply(ctx, module)
        module.verify()
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _diagnostics(text: str, pipeline: str) -> list[tuple[int, str]]:
    """(line, message) of each verifier or pass error in `text`."""
    from xdsl.utils.exceptions import ParseError, VerifyException

    lines: dict[int, int] = {}
    position: list[int] = []
    try:
        module = _parse(text, "<chunk>", lines, position)
    except ParseError as e:
        return [(_line_of(text, e.span.start), str(e.msg) if hasattr(e, "msg") else str(e))]
    except VerifyException as e:  # a type or attribute rejected while it was parsed
        return [(_line_of(text, position[0]), str(e))]
    found = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            found.append((lines.get(id(op), 0), str(e)))
    if not found and pipeline:
        try:
            _run_pipeline(text, pipeline, False)
        except (TilecError, VerifyException) as e:
            loc = getattr(e, "loc", None)
            found.append((loc.line if loc else 0, getattr(e, "msg", str(e))))
    return found


def _verify_diagnostics(chunk: str, offset: int, pipeline: str) -> list[str]:
    expected = []
    for m in _EXPECTED.finditer(chunk):
        line = _line_of(chunk, m.start())
        where = m.group(2) or ""
        if where in ("@above",):
            line -= 1
        elif where in ("@below",):
            line += 1
        elif where:
            line += int(where[1:])
        expected.append((line, m.group(3)))
    got = _diagnostics(chunk, pipeline)
    problems = []
    for line, msg in expected:
        if not any(gl == line and msg in gm for gl, gm in got):
            near = "; ".join(f"line {gl + offset}: {gm.splitlines()[0]}" for gl, gm in got) or "no error"
            problems.append(f"line {line + offset}: expected error {{{{{msg}}}}} not produced (got: {near})")
    for gl, gm in got:
        if not any(gl == line and msg in gm for line, msg in expected):
            problems.append(f"line {gl + offset}: unexpected error: {gm.splitlines()[0]}")
    return problems


def cmd_opt(args) -> int:
    text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    chunks = _SPLIT.split(text) if args.split_input_file else [text]
    offsets, pos = [], 0
    for chunk in chunks:
        offsets.append(_line_of(text, text.find(chunk, pos)) - 1 if chunk else 0)
        pos += len(chunk)
    if args.verify_diagnostics:
        problems = []
        for chunk, offset in zip(chunks, offsets):
            problems += _verify_diagnostics(chunk, offset, args.passes)
        for p in problems:
            print(f"{args.file}:{p}", file=sys.stderr)
        return 1 if problems else 0
    outputs = [_run_pipeline(chunk, args.passes, args.generic, args.file) for chunk in chunks]
    sys.stdout.write("// -----\n".join(outputs))
    return 0


def _pass_help() -> str:
    from tilec import passes

    rows = []
    for name, get in sorted(passes.PASSES.items()):
        doc = (get().__doc__ or "").strip().splitlines()
        rows.append(f"  {name:32} {doc[0] if doc else ''}")
    return "passes:\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tilec", description="tilec: a tile-IR GPU compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile a Python kernel to IR or code")
    c.add_argument("file")
    c.add_argument("--kernel", help="the @tilec.jit function or T.prim_func to compile")
    c.add_argument("-D", dest="define", action="append", default=[], metavar="NAME=VALUE",
                   help="a factory argument, compile-time argument or T.const size")
    c.add_argument("--emit", choices=["tile", "thread", "llvm", "ptx", "cubin"])
    c.add_argument("--arch", help="sm_80, sm_90 or sm_90a (default sm_90a)")
    c.add_argument("-o", "--output")
    o = sub.add_parser("opt", help="run passes on a .mlir file", epilog=None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("file", nargs="?", default="-")
    o.add_argument("-p", "--passes", default="", help="comma-separated pipeline, e.g. canonicalize,cse")
    o.add_argument("--split-input-file", action="store_true")
    o.add_argument("--verify-diagnostics", action="store_true")
    o.add_argument("--generic", action="store_true", help="print the generic op form")
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["opt"] and ("-h" in argv or "--help" in argv):
        o.epilog = _pass_help()
    args = parser.parse_args(argv)
    try:
        return cmd_compile(args) if args.command == "compile" else cmd_opt(args)
    except TilecError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except Exception as e:  # parse errors of IR files and the like, without a traceback
        from tilec import config

        if config.DEBUG:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
