"""Differential fuzzing on the GPU: generated kernels, interp vs GPU vs a float64 reference.

    python bench/fuzz_gpu.py --seed 0 --cases 10000            # on the GPU machine (target cuda)
    python bench/fuzz_gpu.py --seed 0 --cases 500 --target sim --workers 2   # the same on the CPU

Case `seed + n` is tests/fuzz's `generate(seed + n)`: the same kernel and data everywhere, so
`python -m fuzz.generate SEED` (from tests/) prints any of them.  Each case runs on the
interpreter and on the target; each result is judged against the program's float64
reference (forward error bounds per dtype, outputs poisoned with NaN: see
tests/fuzz/harness.py).  Cases run in worker processes; a worker that dies (a sticky CUDA
error, a segfault) costs only the case it was running, which is reported as a crash.

Prints the counts by kind and by thread count and every failure; writes, under `--out`
(default $OUT/fuzz_gpu or ./fuzz_gpu_out), one runnable `<target>_seed<N>.py` per failure
(the kernel's source, the verdict in a header comment) and `summary.json`.
`--no-avoid` also generates the constructs of known, unfixed bugs (tests/fuzz/known.py);
`--ptxas sm_90a` also assembles every case with ptxas (works without a GPU); `--time-limit S`
stops cleanly before a capped session ends and says where to resume.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

CRASH_MARKERS = ("CUDA", "cuda", "illegal", "launch failed")


def _worker(target: str, kinds, conn, ptxas: str | None = None) -> None:
    """Runs the seeds the parent sends (None: stop), answering each with ("done", seed, result,
    leaving): `leaving` when a CUDA error may have poisoned the context and the worker exits."""
    from fuzz.generate import generate
    from fuzz.harness import assemble_case, run_case

    device = "cuda" if target not in ("sim", "interp") else "cpu"
    conn.send(("ready", None))
    while (seed := conn.recv()) is not None:
        t0 = time.time()
        try:
            case = generate(seed, kinds)
            ref = case.prog.reference(case.data())
            verdicts = {}
            for tgt, dev in (("interp", "cpu"), (target, device)):
                o = run_case(case, tgt, dev, reference=ref, features=tgt == "sim")
                verdicts[tgt] = {"status": o.status, "message": o.message[:4000], "worst": o.worst,
                                 "normwise": o.normwise, "features": o.features}
            if ptxas:
                o = assemble_case(case, ptxas)
                verdicts[f"ptxas-{ptxas}"] = {"status": o.status, "message": o.message[:4000] if not o.ok else ""}
            result = {"kind": case.kind, "threads": case.threads, "configs": case.prog.pass_configs,
                      "tags": {k: v for k, v in case.prog.tags.items() if not k.startswith("_")},
                      "verdicts": verdicts, "source": case.source, "seconds": time.time() - t0}
        except Exception as e:  # noqa: BLE001 -- a generator or harness failure is a result too
            result = _lost(target, "harness", repr(e))
        tv = result["verdicts"].get(target, {})
        leaving = device == "cuda" and tv.get("status") in ("crash", "internal", "harness") and \
            any(m in tv.get("message", "") for m in CRASH_MARKERS)
        conn.send(("done", seed, result, leaving))
        if leaving:
            return  # the CUDA context may be poisoned: the parent starts a fresh worker


def _lost(target: str, status: str, message: str) -> dict:
    return {"kind": "?", "threads": 0, "configs": {}, "tags": {}, "source": "", "seconds": 0.0,
            "verdicts": {target: {"status": status, "message": message}}}


def _run(seeds: list[int], target: str, kinds, workers: int, on_result, deadline: float | None = None,
         ptxas: str | None = None) -> list[int]:
    """Hands `seeds` out to `workers` processes one at a time, replacing any worker that dies
    mid-case (the case is reported as a crash); stops at `deadline` (a time.time()) and
    returns the seeds not run."""
    ctx = mp.get_context("spawn")
    todo = list(reversed(seeds))
    live = {}  # connection -> {"proc", "current"}

    def start():
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(target, kinds, child, ptxas), daemon=True)
        p.start()
        child.close()
        live[parent] = {"proc": p, "current": None}

    def feed(conn):
        st = live[conn]
        st["current"] = todo.pop() if todo else None
        conn.send(st["current"])
        if st["current"] is None:
            st["proc"].join(timeout=30)
            del live[conn]

    for _ in range(min(workers, len(seeds))):
        start()
    while live:
        if deadline is not None and time.time() > deadline:
            left = list(todo)
            for st in live.values():
                st["proc"].terminate()
                st["proc"].join(timeout=10)
                if st["current"] is not None:
                    left.append(st["current"])
            return sorted(left)
        for conn in mp.connection.wait(list(live), timeout=5):
            st = live[conn]
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg = ("died", None)
            if msg[0] == "done":
                st["current"] = None
                on_result(msg[1], msg[2])
            if msg[0] == "ready" or (msg[0] == "done" and not msg[3]):
                feed(conn)
                continue
            st["proc"].join(timeout=10)  # the worker died, or left after a CUDA error
            del live[conn]
            if st["current"] is not None:
                on_result(st["current"], _lost(target, "crash", f"worker died (exit {st['proc'].exitcode})"))
            if todo:
                start()
    return []


def _table(title: str, rows: dict, columns: list[str]) -> str:
    widths = [max(9, len(c)) for c in columns]
    lines = [title, f"{'':>14} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths))]
    for key in sorted(rows, key=lambda k: (isinstance(k, str), k)):
        lines.append(f"{key!s:>14} " + " ".join(f"{rows[key].get(c, 0):>{w}}" for c, w in zip(columns, widths)))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="first case seed")
    ap.add_argument("--cases", type=int, default=1000, help="number of cases")
    ap.add_argument("--target", default="cuda", help="cuda (default), sm_80, sm_90a or sim")
    ap.add_argument("--workers", type=int, default=1, help="worker processes (1 per GPU is right for cuda)")
    ap.add_argument("--kinds", default=None, help="comma-separated kinds (default: all)")
    ap.add_argument("--out", default=None, help="where failing kernels and summary.json go")
    ap.add_argument("--no-avoid", action="store_true", help="also generate the constructs of known bugs")
    ap.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    ap.add_argument("--ptxas", default=None, metavar="ARCH",
                    help="also assemble every case for ARCH (sm_80, sm_90a) with ptxas: no GPU needed")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="stop after this many seconds and report the seeds not run (for capped sessions)")
    args = ap.parse_args(argv)
    if args.no_avoid:
        os.environ["TILEC_FUZZ_KNOWN"] = "hit"
    out_dir = args.out or os.path.join(os.environ.get("OUT", "."), "fuzz_gpu" if "OUT" in os.environ else
                                       "fuzz_gpu_out")
    os.makedirs(out_dir, exist_ok=True)
    kinds = args.kinds.split(",") if args.kinds else None
    seeds = list(range(args.seed, args.seed + args.cases))
    targets = ["interp", args.target] + ([f"ptxas-{args.ptxas}"] if args.ptxas else [])
    by_kind = collections.defaultdict(collections.Counter)
    by_threads = collections.defaultdict(collections.Counter)
    by_tag = collections.defaultdict(collections.Counter)
    by_feature = collections.defaultdict(collections.Counter)
    failures = []
    t0 = time.time()
    done = [0]

    def on_result(seed: int, r: dict) -> None:
        done[0] += 1
        worst = "ok"
        for tgt in targets:
            v = r["verdicts"].get(tgt)
            if v is None:
                continue
            by_kind[r["kind"]][f"{tgt}:{v['status']}"] += 1
            if tgt == args.target:
                by_threads[r["threads"]][v["status"]] += 1
                for k, val in r["tags"].items():
                    by_tag[f"{k}={val}"][v["status"]] += 1
                for feat in v.get("features", ()):
                    by_feature[f"{r['kind']}:{feat}"][v["status"]] += 1
            if v["status"] != "ok":
                worst = v["status"]
                failures.append({"seed": seed, "target": tgt, **{k: r[k] for k in ("kind", "threads", "configs")},
                                 "status": v["status"], "message": v["message"]})
                path = os.path.join(out_dir, f"{tgt}_seed{seed}.py")
                with open(path, "w") as f:
                    header = [(f"# tilec fuzz case seed {seed} ({r['kind']}, threads {r['threads']}, "
                               f"pass_configs {r['configs']}): {tgt} -> {v['status']}")]
                    header += [f"# {line}" for line in v["message"].splitlines()]
                    header.append(f"# regenerate: cd tests && python -m fuzz.generate {seed}")
                    f.write("\n".join(header) + "\n" + r["source"])
        if not args.quiet:
            print(f"[{done[0]}/{len(seeds)} {time.time() - t0:6.0f}s] seed {seed} {r['kind']} threads {r['threads']}: "
                  f"{worst}", flush=True)

    deadline = None if args.time_limit is None else t0 + args.time_limit
    left = _run(seeds, args.target, kinds, max(1, args.workers), on_result, deadline, args.ptxas)
    elapsed = time.time() - t0
    statuses = sorted({s for c in by_kind.values() for s in c})
    print()
    print(_table("by kind (target:verdict)", by_kind, statuses))
    print()
    print(_table(f"by thread count ({args.target})", by_threads, sorted({s for c in by_threads.values() for s in c})))
    if by_feature:
        print()
        print(_table(f"lowering features used ({args.target}, kind:feature)", by_feature,
                     sorted({s for c in by_feature.values() for s in c})))
    print()
    print(f"{done[0]} cases of seeds {args.seed}..{args.seed + args.cases - 1} on interp and {args.target} in "
          f"{elapsed:.0f} s; {len(failures)} failures")
    if left:
        print(f"time limit: {len(left)} cases not run; resume with --seed {left[0]} "
              f"--cases {args.seed + args.cases - left[0]} (summary.json lists them)")
    for f in sorted(failures, key=lambda f: f["seed"]):
        print(f"\n--- seed {f['seed']} {f['kind']} threads {f['threads']} {f['configs']}: {f['target']} {f['status']}\n"
              f"{f['message'][:2000]}\n(source: {os.path.join(out_dir, f['target'] + '_seed' + str(f['seed']) + '.py')})")
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump({"seed": args.seed, "cases": args.cases, "run": done[0], "not_run": left, "target": args.target,
                   "seconds": elapsed,
                   "by_kind": by_kind, "by_threads": {str(k): v for k, v in by_threads.items()},
                   "by_tag": by_tag, "by_feature": by_feature, "failures": failures}, fh, indent=1, default=dict)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
