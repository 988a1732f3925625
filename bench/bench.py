#!/usr/bin/env python3
"""Benchmark the cute_transpose kernels against torch, torch.compile and Triton on one GPU.

Run from the repository root (after building the extension)::

    PYTHONPATH=python python bench/bench.py             # full run: ~3 min on an H100 for the
                                                        # matrices, ~1 min more for the
                                                        # permutations; longer with cold
                                                        # Triton/Inductor caches
    PYTHONPATH=python python bench/bench.py --quick     # a subset: ~1.5 min
    PYTHONPATH=python python bench/bench.py --dry-run   # CPU plumbing test with tiny shapes
    PYTHONPATH=python python bench/bench.py --permute-only   # only the permutations section
    PYTHONPATH=python python bench/bench.py --no-permute     # only the matrix section

For every shape x dtype cell, each op is first checked bit-exactly against
``x.transpose(-2, -1).contiguous()`` (or ``x`` for the copies), then timed with
``triton.testing.do_bench`` (median, L2 flushed before each call). A cell reads
``GB/s (ratio)`` with GB/s = 2 * x.nbytes / time and ratio = time(torch clone) / time(op) from the
same run. A small host-overhead measurement (256x256 float32, back-to-back calls) follows.

A second section, "Permutations", times ``x.permute(dims).contiguous()`` on the layouts of
bench/permute_cases.py (attention heads, NCHW <-> NHWC, rank-4/5, a strided packed-qkv slice):
torch clone of a contiguous tensor of the same size (the ratio baseline), eager, torch.compile
and ``cute_transpose.permute``, each checked bit-exactly against eager first, and marks each row
against the goal in permute_cases.GOAL_TEXT.

Results go to stdout (markdown tables) and to <out>/<gpu-name>.{json,md,png}, plus
<out>/<gpu-name>-permute.png (the permutation rows' ratios to clone).
The exit status is non-zero when any op produced a wrong result or failed unexpectedly.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import importlib
import importlib.metadata
import json
import math
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
# Run as a script, this folder leads sys.path, and its profile.py (the ncu table) would shadow
# the standard library's `profile`, which torch.compile imports. Import this folder's modules as
# the package `bench` (from the repository root) instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402
try:
    import cute_transpose
except ImportError:  # not on PYTHONPATH: fall back to the checkout's python/ folder
    sys.path.append(str(REPO_ROOT / "python"))
    import cute_transpose

from bench.permute_cases import (GOAL_RATIO_TO_CLONE, GOAL_TEXT, PERMUTE_CASES,  # noqa: E402
                                 PermuteCase)

Shape = tuple[int, ...]
TensorFn = Callable[[torch.Tensor], torch.Tensor]

GiB = 1 << 30
DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
    "uint8": torch.uint8,
}
DEFAULT_SHAPES: tuple[Shape, ...] = ((32768, 32768), (8192, 8192), (4096, 4096), (8192, 32768),
                                     (32768, 8192), (1000, 3001), (64, 1024, 1024))
DEFAULT_DTYPES = ("float32", "bfloat16", "float16", "float64", "uint8")
QUICK_SHAPES: tuple[Shape, ...] = ((8192, 8192), (1000, 3001))
QUICK_DTYPES = ("float32", "bfloat16")
DRY_SHAPES: tuple[Shape, ...] = ((64, 96), (3, 33, 65))
DRY_DTYPES = ("float32", "uint8")
QUICK_PERMUTE_DTYPES = ("bfloat16",)  # --quick runs each permutation row in one dtype
HEADLINE_SHAPES: tuple[Shape, ...] = ((32768, 32768), (8192, 8192))  # the chart's subplots
TINY_SHAPE: Shape = (256, 256)

MEMORY_SLACK_BYTES = GiB          # a cell needs 2 * x.nbytes + this much free GPU memory
CHECK_SLAB_BYTES = 256 << 20      # the correctness check compares slabs of at most this size
SHORT_LABELS = {                  # table headers for the long variant names
    "naive_coalesced_read": "naive_cr",
    "naive_coalesced_write": "naive_cw",
    "bank_conflict_read": "bank_r",
    "bank_conflict_write": "bank_w",
}
ALL_OP_NAMES = ("clone", "copy", "eager", "compile", "triton", *cute_transpose.VARIANTS, "transpose")


# --------------------------------------------------------------------------------------------
# The ops under test
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSpec:
    """One benchmarked op. `make` is called once per cell and returns the function to time."""

    name: str                       # key in the JSON and the --ops choices
    expects: str                    # "copy": result equals x; "transpose": equals x^T
    make: Callable[[], TensorFn]
    description: str
    gpu_only: bool = False

    @property
    def label(self) -> str:
        return SHORT_LABELS.get(self.name, self.name)


def torch_clone(x: torch.Tensor) -> torch.Tensor:
    """The bandwidth baseline every ratio refers to."""
    return x.clone()


def eager_transpose(x: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes."""
    return x.transpose(-2, -1).contiguous()


def make_compiled_transpose() -> TensorFn:
    """torch.compile of eager_transpose; reset first so each cell compiles afresh, with no
    recompilation limit in the way (the compile itself happens on the first call)."""
    torch._dynamo.reset()
    return torch.compile(eager_transpose, dynamic=False, fullgraph=True)


def import_sibling(name: str):
    """Import bench/<name>.py as bench.<name> (see the sys.path note at the top)."""
    return importlib.import_module(f"bench.{name}")


def make_triton_transpose() -> TensorFn:
    """The autotuned Triton kernel, imported lazily (Triton is not needed for --dry-run)."""
    return import_sibling("triton_transpose").triton_transpose


def cute_op(name: str) -> Callable[[], TensorFn]:
    return lambda: getattr(torch.ops.cute_transpose, name)


def best_transpose(x: torch.Tensor) -> torch.Tensor:
    """The extension's dispatching `transpose` op, on the last two dims."""
    return torch.ops.cute_transpose.transpose(x, -2, -1)


def all_op_specs() -> list[OpSpec]:
    """Every op this build offers, in table order."""
    specs = [
        OpSpec("clone", "copy", lambda: torch_clone, "torch `x.clone()`: the baseline of every ratio"),
        OpSpec("copy", "copy", cute_op("copy"), "`cute_transpose.copy`: same-shape copy, the ceiling"),
        OpSpec("eager", "transpose", lambda: eager_transpose, "`x.transpose(-2, -1).contiguous()`"),
        OpSpec("compile", "transpose", make_compiled_transpose,
               "`torch.compile` of eager (dynamic=False, compiled per cell)", gpu_only=True),
        OpSpec("triton", "transpose", make_triton_transpose,
               "autotuned Triton tile transpose (bench/triton_transpose.py)", gpu_only=True),
    ]
    specs += [OpSpec(v, "transpose", cute_op(v), f"`cute_transpose.{v}`") for v in cute_transpose.VARIANTS]
    if hasattr(torch.ops.cute_transpose, "transpose"):
        specs.append(OpSpec("transpose", "transpose", lambda: best_transpose,
                            "`cute_transpose.transpose`: the best kernel for the shape"))
    return specs


def select_ops(requested: Optional[Sequence[str]], dry_run: bool) -> list[OpSpec]:
    """The ops to run: all (or the requested ones), torch clone always (it is the baseline)."""
    specs = all_op_specs()
    available = {s.name for s in specs}
    for name in sorted(set(requested or ()) - available):
        warnings.warn(f"op {name!r} is not available in this build; skipping it")
    wanted = {"clone", *(requested or available)}
    selected = [s for s in specs if s.name in wanted]
    if dry_run and requested:
        for s in selected:
            if s.gpu_only:
                warnings.warn(f"op {s.name!r} needs a GPU; --dry-run skips it")
    return [s for s in selected if not (dry_run and s.gpu_only)]


# --------------------------------------------------------------------------------------------
# Inputs, checks, timers
# --------------------------------------------------------------------------------------------

def random_input(shape: Shape, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Random data (never an all-zero tensor): normal floats, or random bytes for uint8."""
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.randint(0, 256, shape, dtype=dtype, device=device)


def outputs_match(out: torch.Tensor, x: torch.Tensor, expects: str) -> bool:
    """Bit-exact comparison (uint8 views) of `out` with x (expects="copy") or x^T.

    The reference is built slab by slab, so the check needs at most a few hundred MiB beyond
    x and out.
    """
    expected = x if expects == "copy" else x.transpose(-2, -1)
    if out.shape != expected.shape or out.dtype != x.dtype or not out.is_contiguous():
        return False
    if out.numel() == 0:
        return True
    rows, cols = expected.shape[-2:]
    out3, exp3 = out.reshape(-1, rows, cols), expected.reshape(-1, rows, cols)  # views
    step = max(1, CHECK_SLAB_BYTES // max(1, cols * x.element_size()))
    return all(
        torch.equal(out3[b, r:r + step].view(torch.uint8),
                    exp3[b, r:r + step].contiguous().view(torch.uint8))
        for b in range(out3.shape[0]) for r in range(0, rows, step))


Timer = Callable[[Callable[[], object]], float]  # returns milliseconds per call


def do_bench_timer(warmup_ms: int, rep_ms: int) -> Timer:
    """GPU timing: Triton's do_bench (median, L2 flushed before every call)."""
    from triton.testing import do_bench

    return lambda fn: do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")


def perf_counter_timer(warmup: int = 2, runs: int = 9) -> Timer:
    """CPU timing for --dry-run: median of a few time.perf_counter measurements."""
    def time_ms(fn: Callable[[], object]) -> float:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e3)
        return statistics.median(samples)
    return time_ms


def host_loop_timer(device: torch.device, calls: int, loops: int = 5) -> Timer:
    """Host-inclusive time per call: `calls` back-to-back calls between two synchronisations
    (launch and dispatch overhead count), median over `loops` loops."""
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def time_ms(fn: Callable[[], object]) -> float:
        for _ in range(min(calls, 50)):
            fn()
        samples = []
        for _ in range(loops):
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            samples.append((time.perf_counter() - start) * 1e3 / calls)
        return statistics.median(samples)
    return time_ms


# --------------------------------------------------------------------------------------------
# Running the cells
# --------------------------------------------------------------------------------------------

@dataclass
class Result:
    """One op on one shape x dtype cell."""

    shape: Shape
    dtype: str
    op: str
    status: str                     # ok | WRONG | n/a | error | skipped: too large
    ms: Optional[float] = None
    gbps: Optional[float] = None
    ratio: Optional[float] = None   # time(torch clone) / time(op), same cell
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.status in ("WRONG", "error")

    def where(self) -> str:
        """The cell, for messages."""
        return f"{shape_text(self.shape)} {self.dtype}"


def first_line(e: Exception) -> str:
    """An exception in one line, for a table's footnote or the stderr summary."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def run_op(spec: OpSpec, x: torch.Tensor, timer: Timer) -> tuple[str, Optional[float], str]:
    """Check one op on x, then time it if correct. Returns (status, ms, detail)."""
    try:
        fn = spec.make()
        if not outputs_match(fn(x), x, spec.expects):
            return "WRONG", None, "output differs from the reference"
        return "ok", timer(lambda: fn(x)), ""
    except Exception as e:  # noqa: BLE001  (recorded in the results, never fatal)
        detail = first_line(e)
        unsupported = (spec.name == "tma" and isinstance(e, RuntimeError)
                       and not isinstance(e, torch.OutOfMemoryError))
        return ("n/a" if unsupported else "error"), None, detail


def measure(spec: OpSpec, x: torch.Tensor, dtype_name: str, timer: Timer) -> Result:
    """run_op as a Result row."""
    status, ms, detail = run_op(spec, x, timer)
    return Result(tuple(x.shape), dtype_name, spec.name, status, ms, detail=detail)


def add_metrics(results: list[Result], nbytes: int) -> None:
    """Fill in GB/s (2 * bytes moved / time) and the ratio to torch clone of the same cell."""
    clone_ms = next((r.ms for r in results if r.op == "clone" and r.status == "ok"), None)
    for r in results:
        if r.status != "ok":
            continue
        r.gbps = 2 * nbytes / r.ms / 1e6
        r.ratio = clone_ms / r.ms if clone_ms else None


def fits_in_memory(nbytes: int, device: torch.device) -> bool:
    """The skip rule: input + output + 1 GiB of slack must fit in free GPU memory."""
    return bytes_fit(2 * nbytes, device)


def bytes_fit(footprint: int, device: torch.device) -> bool:
    """`footprint` bytes + 1 GiB of slack fit in free GPU memory (always true on the CPU)."""
    if device.type != "cuda":
        return True
    free, _ = torch.cuda.mem_get_info(device)
    return footprint + MEMORY_SLACK_BYTES <= free


def release_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_cell(shape: Shape, dtype_name: str, specs: list[OpSpec], timer: Timer,
             device: torch.device) -> list[Result]:
    """All ops on one random input of `shape` and dtype."""
    dtype = DTYPES[dtype_name]
    nbytes = math.prod(shape) * dtype.itemsize
    if not fits_in_memory(nbytes, device):
        return [Result(shape, dtype_name, s.name, "skipped: too large") for s in specs]
    x = random_input(shape, dtype, device)
    results = [measure(spec, x, dtype_name, timer) for spec in specs]
    del x
    release_memory(device)
    add_metrics(results, nbytes)
    return results


class Progress:
    """A progress bar over cells: tqdm when installed, else a one-line counter on stderr."""

    def __init__(self, total: int):
        self.total, self.count = total, 0
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="cell", file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            self.bar = None

    def start(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(label)
        else:
            print(f"\r[{self.count + 1}/{self.total}] {label:<40}", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            print(file=sys.stderr)


def run_cells(cells: Sequence[tuple], label: Callable[..., str], run_one: Callable[..., list],
              progress: Progress) -> list:
    """run_one(*cell) for every cell, under the progress bar (label(*cell) names the cell)."""
    results: list = []
    for cell in cells:
        progress.start(label(*cell))
        results += run_one(*cell)
        progress.done()
    return results


def run_all(cells: list[tuple[Shape, str]], specs: list[OpSpec], timer: Timer,
            device: torch.device, progress: Progress) -> list[Result]:
    return run_cells(cells, lambda shape, dtype_name: f"{shape_text(shape)} {dtype_name}",
                     lambda shape, dtype_name: run_cell(shape, dtype_name, specs, timer, device),
                     progress)


def run_tiny(device: torch.device, calls: int) -> list[Result]:
    """Host-inclusive µs per call of the eager transpose and the `transpose` op (if present) on
    a 256x256 float32 tensor, where launch and dispatch overhead dominate."""
    x = random_input(TINY_SHAPE, torch.float32, device)
    timer = host_loop_timer(device, calls)
    tiny_specs = [s for s in all_op_specs() if s.name in ("eager", "transpose")]
    results = [measure(spec, x, "float32", timer) for spec in tiny_specs]
    del x
    return results


# --------------------------------------------------------------------------------------------
# Reporting: table, JSON, chart
# --------------------------------------------------------------------------------------------

def shape_text(shape: Shape) -> str:
    return "x".join(map(str, shape))


def format_gbps(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def cell_text(r: Result) -> str:
    """'GB/s (ratio)' for a measured op, else its status in one word."""
    if r.status != "ok":
        return r.status.split(":")[0]
    return format_gbps(r.gbps) + (f" ({r.ratio:.2f})" if r.ratio is not None else "")


def geomean(values: list[float]) -> Optional[float]:
    return math.exp(statistics.fmean(map(math.log, values))) if values else None


def markdown_table(header: list[str], rows: list[list[str]], left_cols: int = 1) -> str:
    """A column-aligned markdown table; columns from `left_cols` on are right-aligned."""
    widths = [max(map(len, col)) for col in zip(header, *rows)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i < left_cols else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 2) if i < left_cols else "-" * (w + 1) + ":"
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *map(line, rows)])


def results_table(results: list[Result], specs: list[OpSpec]) -> str:
    """Rows = shape x dtype, columns = ops, cells 'GB/s (ratio)', plus a geomean-ratio row."""
    by_cell: dict[tuple[Shape, str], dict[str, Result]] = {}
    for r in results:
        by_cell.setdefault((r.shape, r.dtype), {})[r.op] = r
    rows = [[shape_text(shape), dtype, *(cell_text(ops[s.name]) if s.name in ops else "" for s in specs)]
            for (shape, dtype), ops in by_cell.items()]
    ratios = [geomean([r.ratio for r in results if r.op == s.name and r.ratio]) for s in specs]
    rows.append(["geomean ratio", "", *(f"{g:.2f}" if g else "" for g in ratios)])
    return markdown_table(["shape", "dtype", *(s.label for s in specs)], rows, left_cols=2)


def tiny_table(tiny: list[Result]) -> str:
    rows = [[r.op, f"{r.ms * 1e3:.2f}" if r.status == "ok" else r.status] for r in tiny]
    return markdown_table(["op", "µs / call"], rows)


def render_markdown(meta: dict, results: list[Result], tiny: list[Result], specs: list[OpSpec],
                    permute: Optional[PermuteSection]) -> str:
    """The report printed to stdout and written to <gpu-name>.md: the matrix section (absent
    with --permute-only, which leaves no results), then the permutations (absent with
    --no-permute)."""
    timing = meta["timing"]
    lines = [
        f"# cute_transpose benchmark: {meta['device_name']}",
        "",
        f"{meta['date']} | torch {meta['torch']} | CUDA {meta['cuda']} | triton {meta['triton']} "
        f"| cute_transpose {meta['cute_transpose']} | run took {meta['duration_s']:.1f} s",
        "",
        f"Timing: {timing['method']}. Each cell: GB/s = 2 x bytes / time, and in brackets the "
        "ratio time(torch clone) / time(op) from the same run (higher is better). "
        "WRONG = failed the bit-exact check (not timed); n/a = unsupported shape.",
    ]
    if results:
        lines += [
            "",
            results_table(results, specs),
            "",
            "Columns:",
            *(f"- `{s.label}`: {s.description}" for s in specs),
        ]
    if tiny:
        lines += [
            "",
            f"## Host-inclusive time per call, {shape_text(TINY_SHAPE)} float32 "
            f"({meta['tiny_calls']} back-to-back calls between two synchronisations)",
            "",
            tiny_table(tiny),
        ]
    if permute is not None:
        lines += ["", *permute_markdown(permute)]
    return "\n".join(lines) + "\n"


def headline_shapes(results: list[Result], limit: int = 2) -> list[Shape]:
    """The chart's shapes: the headline shapes that were measured, else the largest measured."""
    measured = {r.shape for r in results if r.status == "ok"}
    chosen = [s for s in HEADLINE_SHAPES if s in measured]
    return chosen or sorted(measured, key=math.prod, reverse=True)[:limit]


LINE_STYLES = {  # ops drawn as a horizontal line over each dtype group instead of a bar
    "copy": dict(color="black", linestyle="-", linewidth=2, label="cute_transpose.copy (ceiling)"),
    "clone": dict(color="crimson", linestyle="--", linewidth=1.5, label="torch clone"),
}


def draw_shape(ax, shape: Shape, lookup: dict, dtypes: list[str], bar_ops: list[str], colors) -> None:
    """One subplot: per dtype group, a bar per op (or its status where it has no number) and
    the copy/clone bandwidths as horizontal lines."""
    width = 0.84 / max(1, len(bar_ops))
    for g, dtype in enumerate(dtypes):
        for i, op in enumerate(bar_ops):
            r = lookup.get((shape, dtype, op))
            x = g + (i - (len(bar_ops) - 1) / 2) * width
            if r is not None and r.status == "ok":
                ax.bar(x, r.gbps, width, color=colors[i])
            elif r is not None:
                ax.text(x, 0, " " + r.status.split(":")[0], rotation=90, ha="center",
                        va="bottom", fontsize=7, color="dimgray")
        for op, style in LINE_STYLES.items():
            r = lookup.get((shape, dtype, op))
            if r is not None and r.status == "ok":
                ax.hlines(r.gbps, g - 0.46, g + 0.46, **{k: v for k, v in style.items() if k != "label"})
    ax.set_ylim(0, ax.get_ylim()[1] * 1.06)  # headroom above the tallest bar or line
    ax.set_xticks(range(len(dtypes)), dtypes)
    ax.set_ylabel("GB/s  (2 x bytes / time)")
    ax.set_title(shape_text(shape))
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def plot_chart(results: list[Result], specs: list[OpSpec], title: str, path: Path) -> bool:
    """Grouped bars (one bar per op, one group per dtype, y = GB/s) for each headline shape, with
    our copy's and torch clone's bandwidth drawn as horizontal lines over each group."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        warnings.warn("matplotlib is not installed: no chart written")
        return False
    shapes = headline_shapes(results)
    if not shapes:
        warnings.warn("nothing was measured: no chart written")
        return False
    lookup = {(r.shape, r.dtype, r.op): r for r in results}
    dtypes = list(dict.fromkeys(r.dtype for r in results))
    bar_ops = [s.name for s in specs if s.name not in LINE_STYLES]
    cmap = matplotlib.colormaps["tab20"]
    colors = [cmap(k % 20) for k in (*range(0, 20, 2), *range(1, 20, 2))][:len(bar_ops)]

    fig, axes = plt.subplots(len(shapes), 1, squeeze=False,
                             figsize=(max(8.0, 2.4 * len(dtypes)), 4.2 * len(shapes)))
    for ax, shape in zip(axes[:, 0], shapes):
        draw_shape(ax, shape, lookup, dtypes, bar_ops, colors)
    handles = [Patch(color=c, label=op) for op, c in zip(bar_ops, colors)]
    handles += [Line2D([], [], **style) for op, style in LINE_STYLES.items()
                if any(s.name == op for s in specs)]
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=9)
    fig.suptitle(title)
    return save_figure(fig, path)


def save_figure(fig, path: Path) -> bool:
    """Lays out, writes and closes a chart; True (it was written)."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True


def package_version(name: str) -> Optional[str]:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_meta(args: argparse.Namespace, device: torch.device, device_name: str) -> dict:
    method = ("time.perf_counter median (CPU dry run)" if args.dry_run else
              f"triton.testing.do_bench median, warmup {args.warmup} ms, rep {args.rep} ms, "
              "L2 flushed before each call")
    return {
        "device_name": device_name,
        "device": str(device),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": package_version("triton"),
        "cute_transpose": getattr(cute_transpose, "__version__", None),
        "dry_run": args.dry_run,
        "timing": {"method": method, **({} if args.dry_run else
                                        {"warmup_ms": args.warmup, "rep_ms": args.rep})},
        "tiny_calls": args.tiny_calls,
        "command": " ".join(sys.argv),
    }


def sanitize(name: str) -> str:
    """A file name from a device name: 'NVIDIA H100 80GB HBM3' -> 'NVIDIA_H100_80GB_HBM3'."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "device"


def write_outputs(out_dir: Path, meta: dict, results: list[Result], tiny: list[Result],
                  specs: list[OpSpec], permute: Optional[PermuteSection],
                  markdown: str) -> list[Path]:
    """<out>/<gpu-name>.json (raw numbers), .md (the printed report), .png (the matrix chart)
    and -permute.png (the permutations chart), each chart where its section ran."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / sanitize(meta["device_name"])
    payload = {"meta": meta,
               "results": [dataclasses.asdict(r) for r in results],
               "tiny": [{**dataclasses.asdict(r), "us_per_call": r.ms * 1e3 if r.ms else None}
                        for r in tiny],
               **(permute_json(permute) if permute is not None else {})}
    paths = [stem.with_suffix(".json"), stem.with_suffix(".md")]
    paths[0].write_text(json.dumps(payload, indent=1) + "\n")
    paths[1].write_text(markdown)
    png = stem.with_suffix(".png")
    if results and plot_chart(results, specs, f"Transpose bandwidth: {meta['device_name']}", png):
        paths.append(png)
    permute_png = stem.with_name(stem.name + "-permute.png")
    if permute is not None and permute.results and plot_permute_chart(
            permute, f"x.permute(dims).contiguous(), ratio to clone: {meta['device_name']}",
            permute_png):
        paths.append(permute_png)
    return paths


# --------------------------------------------------------------------------------------------
# The permutations section: x.permute(dims).contiguous() on the rows of permute_cases.py
# --------------------------------------------------------------------------------------------

Dims = tuple[int, ...]
PermuteCell = tuple[PermuteCase, str]  # a case and one of its dtypes: one row of the table


@dataclass(frozen=True)
class PermuteOpSpec:
    """One op of the permutations section. `make(dims)` is called once per row and returns the
    function to time."""

    name: str
    expects: str                    # "copy": runs on a contiguous tensor and must return it;
                                    # "permute": runs on the row's input, must equal eager
    make: Callable[[Dims], TensorFn]
    description: str
    gpu_only: bool = False


def eager_permute(dims: Dims) -> TensorFn:
    """What a PyTorch user writes, and the reference every op of the section is checked against."""
    return lambda x: x.permute(dims).contiguous()


def make_compiled_permute(dims: Dims) -> TensorFn:
    """torch.compile of eager_permute, reset first (as make_compiled_transpose) so that each row
    compiles afresh for its own shape and strides. The check's call compiles it and do_bench's
    warmup warms it, so compilation is never timed."""
    torch._dynamo.reset()
    return torch.compile(eager_permute(dims), dynamic=False, fullgraph=True)


def cute_permute(dims: Dims) -> TensorFn:
    return lambda x: torch.ops.cute_transpose.permute(x, list(dims))


PERMUTE_OPS: tuple[PermuteOpSpec, ...] = (
    PermuteOpSpec("clone", "copy", lambda dims: torch_clone,
                  "torch `x.clone()` of a contiguous tensor of the row's size: the baseline of "
                  "every ratio"),
    PermuteOpSpec("eager", "permute", eager_permute,
                  "`x.permute(dims).contiguous()`, also the reference of the bit-exact check"),
    PermuteOpSpec("compile", "permute", make_compiled_permute,
                  "`torch.compile` of eager (fullgraph, dynamic=False, compiled per row)",
                  gpu_only=True),
    PermuteOpSpec("permute", "permute", cute_permute, "`cute_transpose.permute(x, dims)`"),
)


@dataclass
class PermuteResult(Result):
    """One op on one permutation row; `shape` is the input's (the view's, when strided)."""

    case: str = ""
    dims: Dims = ()
    strided: bool = False

    def where(self) -> str:
        return f"{self.case} ({shape_text(self.shape)}) {self.dtype}"


@dataclass
class PermuteSection:
    """The section as the report sees it: its ops and results, or why it did not run."""

    specs: list[PermuteOpSpec]
    results: list[PermuteResult] = dataclasses.field(default_factory=list)
    skipped: str = ""               # why the section did not run ("" when it ran)


def permute_section(args: argparse.Namespace) -> Optional[PermuteSection]:
    """The section's ops; None with --no-permute (no section at all). A build without the
    permute op (it lands separately from the transpose ops) gives a section that says so."""
    if args.no_permute:
        return None
    if not hasattr(torch.ops.cute_transpose, "permute"):
        return PermuteSection([], skipped="this build of cute_transpose has no "
                                          "`torch.ops.cute_transpose.permute` op")
    return PermuteSection([s for s in PERMUTE_OPS if not (args.dry_run and s.gpu_only)])


def resolve_permute_cells(args: argparse.Namespace) -> list[PermuteCell]:
    """Each case in each of its dtypes, case-major; with --dtypes only those listed, with
    --quick bfloat16 only. The CPU demo shrinks every shape, so it finishes in seconds."""
    wanted = args.dtypes or (QUICK_PERMUTE_DTYPES if args.quick else None)
    cases = [c.shrunk() if args.dry_run else c for c in PERMUTE_CASES]
    return [(c, d) for c in cases for d in c.dtypes if wanted is None or d in wanted]


def permute_input(case: PermuteCase, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The row's input: random data in a tensor of the case's parent shape, and for a packed
    case its slice 1 along the packed dim, a strided view that the ops take as is."""
    parent = random_input(case.parent_shape, dtype, device)
    return parent if case.packed is None else parent.select(case.packed[0], 1)


def permute_footprint(case: PermuteCase, itemsize: int) -> int:
    """The bytes one row holds at once: the input's storage, a contiguous copy of a strided
    input (clone's source), the eager reference and one op's output."""
    nbytes = case.numel * itemsize
    contiguous_copy = nbytes if case.packed is not None else 0
    return math.prod(case.parent_shape) * itemsize + contiguous_copy + 2 * nbytes


def same_bits(out: torch.Tensor, expected: torch.Tensor) -> bool:
    """`out` is contiguous and bit-for-bit equal to `expected` (compared as bytes, so NaN
    payloads and the sign of zero count)."""
    if out.shape != expected.shape or out.dtype != expected.dtype or not out.is_contiguous():
        return False
    return torch.equal(out.reshape(-1).view(torch.uint8),
                       expected.contiguous().reshape(-1).view(torch.uint8))


def run_permute_op(spec: PermuteOpSpec, x: torch.Tensor, source: torch.Tensor,
                   reference: torch.Tensor, dims: Dims,
                   timer: Timer) -> tuple[str, Optional[float], str]:
    """Check one op (a copy on the contiguous `source`, a permutation on x), then time it if
    correct. Returns (status, ms, detail)."""
    arg, expected = (source, source) if spec.expects == "copy" else (x, reference)
    try:
        fn = spec.make(dims)
        if not same_bits(fn(arg), expected):
            return "WRONG", None, "output differs from " + ("its input" if spec.expects == "copy"
                                                            else "eager")
        return "ok", timer(lambda: fn(arg)), ""
    except Exception as e:  # noqa: BLE001  (recorded in the results, never fatal)
        return "error", None, first_line(e)


def run_permute_cell(case: PermuteCase, dtype_name: str, specs: list[PermuteOpSpec],
                     timer: Timer, device: torch.device) -> list[PermuteResult]:
    """All ops of the section on one random input of the case, in one dtype."""
    dtype = DTYPES[dtype_name]

    def result(op: str, status: str, ms: Optional[float] = None, detail: str = "") -> PermuteResult:
        return PermuteResult(case.shape, dtype_name, op, status, ms, detail=detail, case=case.name,
                             dims=case.dims, strided=case.packed is not None)

    if not bytes_fit(permute_footprint(case, dtype.itemsize), device):
        return [result(s.name, "skipped: too large") for s in specs]
    x = permute_input(case, dtype, device)
    source = x.contiguous()  # clone's input: x itself unless x is strided
    reference = x.permute(case.dims).contiguous()
    results = [result(s.name, *run_permute_op(s, x, source, reference, case.dims, timer))
               for s in specs]
    del x, source, reference
    release_memory(device)
    add_metrics(results, case.numel * dtype.itemsize)
    return results


def run_permute_all(cells: list[PermuteCell], specs: list[PermuteOpSpec], timer: Timer,
                    device: torch.device, progress: Progress) -> list[PermuteResult]:
    return run_cells(cells, lambda case, dtype_name: f"{case.name} {dtype_name}",
                     lambda case, dtype_name: run_permute_cell(case, dtype_name, specs, timer, device),
                     progress)


def dims_text(dims: Dims) -> str:
    return "(" + ",".join(map(str, dims)) + ")"


def permute_rows(results: list[PermuteResult]) -> dict[tuple[str, str], dict[str, PermuteResult]]:
    """The results by row (case, dtype), in run order, then by op."""
    rows: dict[tuple[str, str], dict[str, PermuteResult]] = {}
    for r in results:
        rows.setdefault((r.case, r.dtype), {})[r.op] = r
    return rows


def goal_met(ops: dict[str, PermuteResult]) -> Optional[bool]:
    """One row against GOAL_TEXT. False as soon as one part of the goal is missed (a WRONG or
    failed permute misses it); None where a number the verdict needs is missing: a skipped row,
    a failed clone or torch.compile, or the CPU demo, which has no torch.compile."""
    p, c = ops.get("permute"), ops.get("compile")
    if p is None or p.status.startswith("skipped"):
        return None
    if p.status != "ok":
        return False
    if p.ratio is not None and p.ratio < GOAL_RATIO_TO_CLONE:
        return False
    if c is not None and c.status == "ok" and c.ms <= p.ms:
        return False
    if p.ratio is None or c is None or c.status != "ok":
        return None
    return True


GOAL_MARKS = {True: "✓", False: "✗", None: "–"}


def permute_table(section: PermuteSection) -> str:
    """Rows = case x dtype, columns = ops ('GB/s (ratio)') and the goal mark, plus a
    geomean-ratio row."""
    specs = section.specs
    rows = []
    for ops in permute_rows(section.results).values():
        first = next(iter(ops.values()))
        shape = shape_text(first.shape) + (" strided" if first.strided else "")
        rows.append([first.case, shape, dims_text(first.dims), first.dtype,
                     *(cell_text(ops[s.name]) if s.name in ops else "" for s in specs),
                     GOAL_MARKS[goal_met(ops)]])
    ratios = [geomean([r.ratio for r in section.results if r.op == s.name and r.ratio])
              for s in specs]
    rows.append(["geomean ratio", "", "", "", *(f"{g:.2f}" if g else "" for g in ratios), ""])
    return markdown_table(["row", "shape", "dims", "dtype", *(s.name for s in specs), "goal"],
                          rows, left_cols=4)


def permute_markdown(section: PermuteSection) -> list[str]:
    """The report's "Permutations" section."""
    title = "## Permutations: `x.permute(dims).contiguous()`"
    if section.skipped:
        return [title, "", f"Skipped: {section.skipped}."]
    verdicts = [goal_met(ops) for ops in permute_rows(section.results).values()]
    met, judged = verdicts.count(True), sum(v is not None for v in verdicts)
    unjudged = len(verdicts) - judged
    return [
        title,
        "",
        f"Goal: {GOAL_TEXT}. Met on {met} of {judged} rows"
        + (f" ({unjudged} more cannot be judged here: –)" if unjudged else "") + ".",
        "",
        "Each row: one random input of the shape shown, contiguous except the strided one (a "
        "slice of a packed (B, S, 3, H, D) qkv, taken as is), permuted by dims. Cells as above: "
        "GB/s = 2 x bytes / time, and the ratio time(clone) / time(op) from the same row. "
        "WRONG = differs bit-wise from eager (not timed).",
        "",
        permute_table(section),
        "",
        "Columns:",
        *(f"- `{s.name}`: {s.description}" for s in section.specs),
        f"- `goal`: ✓ meets \"{GOAL_TEXT}\", ✗ misses it, – cannot be judged here",
    ]


def plot_permute_chart(section: PermuteSection, title: str, path: Path) -> bool:
    """Horizontal bars, one group per row: each op's ratio to clone, with clone (1.0) and the
    goal as vertical lines. Twenty-odd rows of four numbers are hard to compare in a table."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        warnings.warn("matplotlib is not installed: no permutation chart written")
        return False
    rows = permute_rows(section.results)
    if not any(r.ratio for r in section.results):
        warnings.warn("no permutation row was measured: no permutation chart written")
        return False
    bar_ops = [s.name for s in section.specs if s.name != "clone"]
    colors = [matplotlib.colormaps["tab10"](k) for k in range(len(bar_ops))]
    height = 0.84 / max(1, len(bar_ops))

    fig, ax = plt.subplots(figsize=(9.0, 1.5 + 0.13 * len(rows) * (len(bar_ops) + 1)))
    for g, ops in enumerate(rows.values()):
        for i, op in enumerate(bar_ops):
            r = ops.get(op)
            y = g + (i - (len(bar_ops) - 1) / 2) * height
            if r is not None and r.ratio is not None:
                ax.barh(y, r.ratio, height, color=colors[i])
            elif r is not None:  # no number: say why where the bar would be
                ax.text(0.01, y, r.status.split(":")[0] if r.status != "ok" else "no clone",
                        va="center", fontsize=7, color="dimgray")
    ax.axvline(1.0, color="crimson", linestyle="--", linewidth=1.5)
    ax.axvline(GOAL_RATIO_TO_CLONE, color="black", linestyle=":", linewidth=1.5)
    ax.set_yticks(range(len(rows)), [f"{case} {dtype} {GOAL_MARKS[goal_met(ops)]}"
                                     for (case, dtype), ops in rows.items()], fontsize=8)
    ax.invert_yaxis()  # first row on top, as in the table
    ax.set_xlabel("ratio to torch clone = time(clone) / time(op)  (higher is better)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=c, label=op) for op, c in zip(bar_ops, colors)]
    handles += [Line2D([], [], color="crimson", linestyle="--", label="torch clone"),
                Line2D([], [], color="black", linestyle=":",
                       label=f"goal: {GOAL_RATIO_TO_CLONE:.2f} x clone")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title(title)
    return save_figure(fig, path)


def permute_json(section: PermuteSection) -> dict:
    """The JSON's keys for the section: every op's result, and each row's verdict."""
    return {
        "permute": [dataclasses.asdict(r) for r in section.results],
        "permute_goal": {
            "goal": GOAL_TEXT,
            "skipped": section.skipped or None,
            "rows": [{"case": case, "dtype": dtype, "shape": next(iter(ops.values())).shape,
                      "dims": next(iter(ops.values())).dims, "met": goal_met(ops)}
                     for (case, dtype), ops in permute_rows(section.results).items()],
        },
    }


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def parse_shape(text: str) -> Shape:
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
                   help="a subset: 8192x8192 and 1000x3001, float32 and bfloat16; the "
                        "permutation rows in bfloat16 only")
    p.add_argument("--shapes", nargs="+", type=parse_shape, metavar="MxN",
                   help="shapes such as 8192x8192 or 64x1024x1024 (overrides the default set)")
    p.add_argument("--dtypes", nargs="+", choices=list(DTYPES), metavar="DTYPE",
                   help=f"dtypes, from {', '.join(DTYPES)} (overrides the default set; the "
                        "permutation rows keep those of their own dtypes that are listed)")
    p.add_argument("--ops", nargs="+", choices=ALL_OP_NAMES, metavar="OP",
                   help=f"ops of the matrix section to run, from {', '.join(ALL_OP_NAMES)} "
                        "(torch clone always runs: it is the ratio baseline)")
    p.add_argument("--out", type=Path, help="output folder [default: bench/results, "
                   "or /tmp/bench-dry with --dry-run]")
    p.add_argument("--warmup", type=int, default=25, help="do_bench warmup per op, ms [default: 25]")
    p.add_argument("--rep", type=int, default=100,
                   help="do_bench measuring time per op, ms [default: 100]")
    p.add_argument("--tiny-calls", type=int, help="calls per loop in the 256x256 host-overhead "
                   "measurement [default: 2000, 200 with --dry-run]")
    p.add_argument("--dry-run", action="store_true",
                   help="run on the CPU with tiny shapes and perf_counter timing (no Triton, "
                        "no torch.compile) to test the plumbing")
    section = p.add_mutually_exclusive_group()
    section.add_argument("--permute-only", action="store_true",
                         help="run only the permutations section (no matrices, no host-overhead "
                              "measurement)")
    section.add_argument("--no-permute", action="store_true",
                         help="skip the permutations section")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = Path("/tmp/bench-dry") if args.dry_run else REPO_ROOT / "bench" / "results"
    if args.tiny_calls is None:
        args.tiny_calls = 200 if args.dry_run else 2000
    return args


def resolve_cells(args: argparse.Namespace) -> list[tuple[Shape, str]]:
    """The shape x dtype cells, shape-major."""
    shapes, dtypes = ((DRY_SHAPES, DRY_DTYPES) if args.dry_run else
                      (QUICK_SHAPES, QUICK_DTYPES) if args.quick else
                      (DEFAULT_SHAPES, DEFAULT_DTYPES))
    return [(s, d) for s in (args.shapes or shapes) for d in (args.dtypes or dtypes)]


def setup_device(dry_run: bool) -> tuple[torch.device, str]:
    """The device to run on and its name (for the report and the file names)."""
    if dry_run:
        return torch.device("cpu"), "CPU dry-run"
    if not torch.cuda.is_available():
        sys.exit("bench.py: no CUDA device (use --dry-run to test the plumbing on the CPU)")
    if not cute_transpose.has_cuda_kernels():
        sys.exit("bench.py: cute_transpose was built without its CUDA kernels")
    device = torch.device("cuda", torch.cuda.current_device())
    return device, torch.cuda.get_device_name(device)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print("bench.py: no CUDA GPU on this machine, so this is the CPU demo instead: every op on "
              "tiny shapes, checked bit-exactly against torch and timed on the CPU. The benchmark "
              "itself needs a GPU.", file=sys.stderr)
        args = parse_args([*argv, "--dry-run"])
    device, device_name = setup_device(args.dry_run)
    torch.manual_seed(0)
    specs = select_ops(args.ops, args.dry_run)
    timer = perf_counter_timer() if args.dry_run else do_bench_timer(args.warmup, args.rep)
    cells = [] if args.permute_only else resolve_cells(args)
    permute = permute_section(args)
    permute_cells = resolve_permute_cells(args) if permute and not permute.skipped else []
    if permute and not permute.skipped and not permute_cells:
        permute.skipped = "no permutation row comes in any of the dtypes asked for (--dtypes)"

    started = time.perf_counter()
    progress = Progress(len(cells) + len(permute_cells))  # one bar over both sections
    results = run_all(cells, specs, timer, device, progress)
    if permute_cells:
        permute.results = run_permute_all(permute_cells, permute.specs, timer, device, progress)
    progress.close()
    tiny = run_tiny(device, args.tiny_calls) if cells else []
    meta = collect_meta(args, device, device_name)
    meta["duration_s"] = round(time.perf_counter() - started, 1)

    markdown = render_markdown(meta, results, tiny, specs, permute)
    print(markdown)
    for path in write_outputs(args.out, meta, results, tiny, specs, permute, markdown):
        print(f"wrote {path}", file=sys.stderr)

    bad = [r for r in results + tiny + (permute.results if permute else []) if r.bad]
    for r in bad:
        print(f"{r.status}: {r.op} on {r.where()}: {r.detail}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
