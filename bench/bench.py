#!/usr/bin/env python3
"""Benchmark the cute_transpose kernels against torch, torch.compile and Triton on one GPU.

Run from the repository root (after building the extension)::

    PYTHONPATH=python python bench/bench.py                 # every section
    PYTHONPATH=python python bench/bench.py --quick         # a subset of every section
    PYTHONPATH=python python bench/bench.py --sweep-only    # only the sweep
    PYTHONPATH=python python bench/bench.py --dry-run       # the CPU demo

Sections, each a list of cells (one problem: shape, dtype, input layout, permutation) run by
one cell runner (bench/harness.py): every op is checked bit-exactly against
``x.permute(dims).contiguous()`` on fresh random data, then timed beside torch clone.

- Matrices: ``x.transpose(-2, -1).contiguous()`` by every variant, eager, torch.compile (static
  shapes) and the autotuned Triton kernel; then host-inclusive time per call on 256x256.
- Permutations: the layouts real models move between (bench/cases.py), with a goal per row.
- Sweep: the TTC/HPTT/cuTT suite, image batches, model layouts at inference sizes and a seeded
  random sweep of awkward shapes and strided views (bench/sweep_cases.py), with a summary
  against eager, torch.compile (dynamic shapes) and Triton.
- Workloads: the layout copies real models (timm, torchvision, transformers, where installed)
  make in one forward pass, captured as they run, then timed copy by copy and per pass
  (bench/workloads.py).

Without a GPU, bench.py runs the CPU demo instead: every section on tiny shapes, checked
bit-exactly and timed on the CPU, plus full-size CPU rows (ours against torch).

Results go to stdout (markdown) and to <out>/<gpu>.{md,json,png}, <gpu>-permute.png and
<gpu>-sweep.png, <gpu>-workloads.png (--sweep-only: <gpu>-sweep.{md,json,png}; --workloads-only:
<gpu>-workloads.{md,json,png}). The exit status is non-zero when any op gave a wrong result or failed
unexpectedly.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
# Run as a script, this folder leads sys.path, and its profile.py (the ncu table) would shadow
# the standard library's `profile`, which torch.compile imports. Import this folder's modules as
# the package `bench` (from the repository root) instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from bench import cases, ops, workloads  # noqa: E402
from bench.harness import (Progress, Result, do_bench_timer, ext, host_loop_timer,  # noqa: E402
                           paced_timer, perf_counter_timer, run_cell, run_cells, sigterm_as_interrupt)
from bench.report import Section, load_run, render_markdown, write_outputs  # noqa: E402
from bench.summary import SHORT_CELL_MS  # noqa: E402
from bench.sweep_cases import SWEEP_SEED, sweep_cells  # noqa: E402

MATRIX_DTYPES = ("float32", "bfloat16", "float16", "float64", "uint8", "complex128")


def parse_shape(text: str) -> cases.Shape:
    """'8192x8192' or '64x1024x1024' -> a shape of rank >= 2."""
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: expected e.g. 8192x8192") from None
    if len(shape) < 2 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: need rank >= 2 and positive dims")
    return shape


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="a subset: 8192x8192 and 1000x3001 in float32 and bfloat16; the "
                        "permutation rows in bfloat16; a reduced sweep")
    p.add_argument("--shapes", nargs="+", type=parse_shape, metavar="MxN",
                   help="matrix shapes such as 8192x8192 or 64x1024x1024")
    p.add_argument("--dtypes", nargs="+", choices=MATRIX_DTYPES, metavar="DTYPE",
                   help=f"dtypes, from {', '.join(MATRIX_DTYPES)}, of the matrix section; the "
                        "permutation rows keep those of their own dtypes that are listed; the "
                        "sweep is fixed")
    p.add_argument("--ops", nargs="+", choices=ops.matrix_op_names(), metavar="OP",
                   help=f"ops of the matrix section, from {', '.join(ops.matrix_op_names())} "
                        "(torch clone always runs: it is the ratio baseline)")
    p.add_argument("--out", type=Path, help="output folder [default: bench/results, "
                   "or /tmp/bench-dry for the CPU demo]")
    p.add_argument("--warmup", type=int, default=25,
                   help="do_bench warmup per op, ms, matrix and permutation sections [25]")
    p.add_argument("--rep", type=int, default=100,
                   help="do_bench measuring time per op, ms, matrix and permutation sections [100]")
    p.add_argument("--sweep-warmup", type=int, default=10, help="do_bench warmup, sweep [10]")
    p.add_argument("--sweep-rep", type=int, default=40, help="do_bench measuring time, sweep [40]")
    p.add_argument("--sweep-rounds", type=int, default=2,
                   help="sweep: time every op of a cell this many times, in turn, and keep each "
                        "op's fastest [2]")
    p.add_argument("--sweep-short-rounds", type=int, default=6,
                   help=f"sweep: rounds for cells whose fastest op takes under "
                        f"{SHORT_CELL_MS * 1000:.0f} us [6]")
    p.add_argument("--sweep-seed", type=int, metavar="N",
                   help="the sweep's random cells alone, drawn from seed N instead of the committed "
                        "sweep's: shapes no tuning run or committed result holds, an out-of-sample "
                        "check of the chooser (write them elsewhere with --out)")
    p.add_argument("--tiny-calls", type=int, help="calls per loop in the 256x256 host-overhead "
                   "measurement [default: 2000, 200 in the CPU demo]")
    p.add_argument("--dry-run", action="store_true",
                   help="the CPU demo: tiny shapes, perf_counter timing, no Triton, no "
                        "torch.compile, plus full-size CPU rows (ours against torch)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--permute-only", action="store_true", help="only the permutation rows")
    only.add_argument("--sweep-only", action="store_true", help="only the sweep")
    only.add_argument("--workloads-only", action="store_true",
                      help="only the workloads: the layout copies of real models' forward passes")
    p.add_argument("--no-permute", action="store_true", help="skip the permutation rows")
    p.add_argument("--no-sweep", action="store_true", help="skip the sweep")
    p.add_argument("--no-workloads", action="store_true", help="skip the workloads")
    p.add_argument("--render", type=Path, metavar="RUN.json",
                   help="measure nothing: write the report, JSON and charts of a saved run again "
                        "with this code (to --out, default bench/results), e.g. after a change "
                        "to the report")
    args = p.parse_args(argv)
    if ((args.permute_only and args.no_permute) or (args.sweep_only and args.no_sweep)
            or (args.workloads_only and args.no_workloads)):
        p.error("an --X-only option contradicts --no-X")
    if args.out is None:
        args.out = Path("/tmp/bench-dry") if args.dry_run else REPO_ROOT / "bench" / "results"
    if args.tiny_calls is None:
        args.tiny_calls = 200 if args.dry_run else 2000
    return args


def wanted_sections(args: argparse.Namespace) -> list[str]:
    """The sections to run, in run order."""
    if args.permute_only:
        return ["permute"]
    if args.sweep_only:
        return ["sweep"]
    if args.workloads_only:
        return ["workloads"]
    keys = (["cpu"] if args.dry_run else []) + ["matrix", "permute", "sweep", "workloads"]
    return [k for k in keys if not (k == "permute" and args.no_permute)
            and not (k == "sweep" and args.no_sweep) and not (k == "workloads" and args.no_workloads)]


def do_bench_text(warmup: int, rep: int) -> str:
    return (f"Timing: triton.testing.do_bench median, warmup {warmup} ms, rep {rep} ms, "
            "L2 flushed before each call.")


CPU_TIMING = "Timing: time.perf_counter median of 9 runs after 2 warmups, on the CPU."
STATIC = " torch.compile: static shapes (dynamic=False), compiled per cell."


def cpu_section(args: argparse.Namespace) -> Section:
    return Section("cpu", cases.cpu_cells(), ops.cpu_row_ops(),
                   f"Timing: time.perf_counter median of 5 runs after 1 warmup, "
                   f"{torch.get_num_threads()} CPU threads.")


def matrix_section(args: argparse.Namespace) -> Section:
    shapes, dtypes = ((cases.DRY_SHAPES, cases.DRY_DTYPES) if args.dry_run else
                      (cases.QUICK_SHAPES, cases.QUICK_DTYPES) if args.quick else
                      (cases.DEFAULT_SHAPES, cases.DEFAULT_DTYPES))
    cells = cases.matrix_cells(tuple(args.shapes or shapes), tuple(args.dtypes or dtypes))
    return Section("matrix", cells, ops.select_matrix_ops(args.ops, args.dry_run),
                   CPU_TIMING if args.dry_run else do_bench_text(args.warmup, args.rep) + STATIC)


def permute_section(args: argparse.Namespace) -> Section:
    dtypes = tuple(args.dtypes) if args.dtypes else (
        cases.QUICK_PERMUTE_DTYPES if args.quick else None)
    cells = cases.permute_cells(dtypes, shrink=args.dry_run)
    s = Section("permute", cells, ops.permute_ops(args.dry_run),
                CPU_TIMING if args.dry_run else do_bench_text(args.warmup, args.rep) + STATIC)
    if not cells:
        s.skipped = "no permutation row comes in any of the dtypes asked for (--dtypes)"
    return s


def sweep_section(args: argparse.Namespace, compiles: ops.DynamicCompiles) -> Section:
    cells = sweep_cells("dry" if args.dry_run else "quick" if args.quick else "full", args.sweep_seed)
    drawn = ("" if args.sweep_seed is None else
             f"Random cells alone, drawn from seed {args.sweep_seed} (the committed sweep's are drawn from "
             f"seed {SWEEP_SEED}, beside the TTC suite, image batches and model layouts). ")
    timing = drawn + (CPU_TIMING if args.dry_run else sweep_timing_text(args) + (
        " torch.compile ran with **dynamic shapes** (dynamic=True): compiled once per rank, "
        "permutation, dtype and view and reused across sizes (the matrix and permutation "
        "sections compile with static shapes). Those short cells are also timed paced: the GPU's "
        "queue drained before each call and the call queued behind the flush and a 300-us GPU wait, "
        "so that every op's launch reaches the GPU early, however long its host path takes "
        "(bench/harness.py, paced_timer)."))
    return Section("sweep", cells, ops.sweep_ops(args.dry_run, compiles), timing)


def sweep_timing_text(args: argparse.Namespace) -> str:
    """How the sweep and the workloads time their cells."""
    return (do_bench_text(args.sweep_warmup, args.sweep_rep)
            + " (shorter than the other sections, to fit the sweep in minutes), "
            f"in {args.sweep_rounds} rounds: every op of a cell timed in turn, {args.sweep_rounds} times "
            "(in reverse order every other round), keeping each op's fastest median (a one-off stall "
            "of the machine then costs a round, not the cell); cells whose fastest op takes under "
            f"{SHORT_CELL_MS * 1000:.0f} us in {max(args.sweep_rounds, args.sweep_short_rounds)} rounds "
            "(a few-microsecond kernel's median moves by several percent between do_bench calls).")


def workloads_section(args: argparse.Namespace, device: torch.device) -> Section:
    """The layout copies of real models, captured on `device` now (the GPU only: the CPU demo
    says why it has none)."""
    s = Section("workloads", [], ops.workload_ops(), "" if args.dry_run else sweep_timing_text(args))
    if args.dry_run:
        s.skipped = "the CPU demo runs no models (the workloads need the GPU)"
        return s
    found = workloads.capture_workloads(device, quick=args.quick)
    s.cells = found.cells
    s.notes = {"calls": found.calls, "workloads": found.workloads, "skipped_models": found.skipped}
    if not found.workloads:
        s.skipped = "no model could run (timm, torchvision and transformers are optional; install them)"
    return s


def build_sections(args: argparse.Namespace, compiles: ops.DynamicCompiles,
                   device: torch.device) -> dict[str, Section]:
    """Each wanted section with its cells, ops and timing text (nothing timed yet; the workloads'
    cells are captured from the models' forward passes here)."""
    builders = {"cpu": cpu_section, "matrix": matrix_section, "permute": permute_section,
                "sweep": lambda a: sweep_section(a, compiles),
                "workloads": lambda a: workloads_section(a, device)}
    sections = {key: builders[key](args) for key in wanted_sections(args)}
    for key in ("permute", "sweep", "workloads"):
        if key in sections and not hasattr(torch.ops.cute_transpose, "permute"):
            sections[key].skipped = ("this build of cute_transpose has no "
                                     "`torch.ops.cute_transpose.permute` op")
    for s in sections.values():
        if s.skipped:
            s.cells = []
    return sections


def section_timer(key: str, args: argparse.Namespace):
    if args.dry_run:
        return perf_counter_timer(1, 5) if key == "cpu" else perf_counter_timer()
    if key in ("sweep", "workloads"):
        return do_bench_timer(args.sweep_warmup, args.sweep_rep)
    return do_bench_timer(args.warmup, args.rep)


def run_tiny(device: torch.device, calls: int) -> list[Result]:
    """Host-inclusive µs per call of the eager transpose and the `transpose` op (if present) on
    a 256x256 float32 tensor, where launch and dispatch overhead dominate."""
    cell = cases.Cell("tiny", "256x256", cases.TINY_SHAPE, (1, 0), "float32")
    specs = [s for s in ops.matrix_ops() if s.name in ("eager", "transpose")]
    return run_cell(cell, specs, host_loop_timer(device, calls), device)


def first_call_seconds(results: list[Result]) -> dict[str, float]:
    """Wall seconds of each op's first (checked) calls, summed: compilation and autotuning."""
    totals: dict[str, float] = {}
    for r in results:
        if r.first_s is not None:
            totals[r.op] = totals.get(r.op, 0.0) + r.first_s
    return totals


def package_version(name: str) -> Optional[str]:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_meta(args: argparse.Namespace, device: torch.device, device_name: str,
                 sections: dict[str, Section]) -> dict:
    return {
        "device_name": device_name,
        "device": str(device),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": package_version("triton"),
        "cute_transpose": getattr(ext(), "__version__", None),
        "dry_run": args.dry_run,
        "timing": {key: s.timing for key, s in sections.items()},
        "tiny_calls": args.tiny_calls,
        "command": " ".join(sys.argv),
    }


def setup_device(dry_run: bool) -> tuple[torch.device, str]:
    """The device to run on and its name (for the report and the file names)."""
    if dry_run:
        return torch.device("cpu"), "CPU dry-run"
    if not ext().has_cuda_kernels():
        sys.exit("bench.py: cute_transpose was built without its CUDA kernels")
    device = torch.device("cuda", torch.cuda.current_device())
    return device, torch.cuda.get_device_name(device)


def section_specs(key: str, dry_run: bool) -> list[ops.OpSpec]:
    """Every op a section can run (a saved run keeps those it has rows of)."""
    if key == "cpu":
        return ops.cpu_row_ops()
    if key == "matrix":
        return ops.select_matrix_ops(None, dry_run)
    if key == "permute":
        return ops.permute_ops(dry_run)
    if key == "workloads":
        return ops.workload_ops()
    return ops.sweep_ops(dry_run, ops.DynamicCompiles())


def render(run: Path, out: Path) -> int:
    """--render: a saved run's report, JSON and charts, written again by this code."""
    meta, sections, tiny = load_run(run, section_specs)
    markdown = render_markdown(meta, sections, tiny)
    print(markdown)
    for path in write_outputs(out, meta, sections, tiny, markdown):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.render:
        return render(args.render, args.out)
    if not args.dry_run and not torch.cuda.is_available():
        print("bench.py: no CUDA GPU on this machine, so this is the CPU demo instead: every "
              "section on tiny shapes, checked bit-exactly against torch and timed on the CPU, "
              "plus full-size CPU rows. The benchmark itself needs a GPU.", file=sys.stderr)
        args = parse_args([*argv, "--dry-run"])
    device, device_name = setup_device(args.dry_run)
    torch.manual_seed(0)
    compiles = ops.DynamicCompiles()
    sections = build_sections(args, compiles, device)

    started = time.perf_counter()
    progress = Progress(sum(len(s.cells) for s in sections.values()))  # one bar over all
    tiny: list[Result] = []
    interrupted = ""
    try:
        with sigterm_as_interrupt():
            for key, s in sections.items():
                sweep = key in ("sweep", "workloads") and not args.dry_run
                s.results = []  # filled cell by cell: a stopped run reports what it measured
                run_cells(s.cells, s.specs, section_timer(key, args), device, progress,
                          rounds=args.sweep_rounds if sweep else 1,
                          short=(SHORT_CELL_MS, args.sweep_short_rounds) if sweep else None,
                          paced=paced_timer() if key == "sweep" and not args.dry_run else None, results=s.results)
                if key == "matrix" and s.cells:
                    tiny = run_tiny(device, args.tiny_calls)
                if key == "sweep":
                    s.notes = {"first_call_s": first_call_seconds(s.results),
                               **({} if args.dry_run else {"compile_graphs": compiles.graphs()})}
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: write what was measured, then say so
        interrupted = f"stopped after {progress.count} of {progress.total} cells"
        for s in sections.values():
            measured = {r.cell for r in s.results}
            s.cells = [c for c in s.cells if c in measured]
    progress.close()
    meta = collect_meta(args, device, device_name, sections)
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    if interrupted:
        meta["interrupted"] = interrupted

    markdown = render_markdown(meta, sections, tiny)
    print(markdown)
    for path in write_outputs(args.out, meta, sections, tiny, markdown):
        print(f"wrote {path}", file=sys.stderr)

    bad = [r for s in sections.values() for r in s.results if r.bad] + [r for r in tiny if r.bad]
    for r in bad:
        print(f"{r.status}: {r.op} on {r.where()}: {r.detail}", file=sys.stderr)
    if interrupted:
        print(f"bench.py: {interrupted}; the files above hold those cells", file=sys.stderr)
        return 130
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
