"""Running cells: inputs, the bit-exact check, timers, memory checks and the one cell runner.

Every section of the benchmark runs its cells through `run_cell`: build the cell's input from
fresh random data, check each op bit-exactly against ``x.permute(dims).contiguous()`` (a copy
op against its own input), time the ops that pass, and return one `Result` row per op with
GB/s and the ratio to torch clone from the same cell.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import torch

from bench.cases import GiB, Cell, Dims, Shape, View, base_shape, footprint_bytes, shape_text

REPO_ROOT = Path(__file__).resolve().parents[1]
TORCH_DTYPES = {"uint8": torch.uint8, "bfloat16": torch.bfloat16, "float16": torch.float16,
                "float32": torch.float32, "float64": torch.float64,
                "complex128": torch.complex128}
MEMORY_SLACK_BYTES = GiB          # a cell needs its footprint + this much free GPU memory
CHECK_SLAB_BYTES = 256 << 20      # the check builds its reference in slabs of at most this size

TensorFn = Callable[[torch.Tensor], torch.Tensor]
Timer = Callable[[Callable[[], object]], float]  # returns milliseconds per call


def ext():
    """The cute_transpose package, imported on first use (from the checkout's python/ folder when
    it is not installed), so that the pure-Python parts of the benchmark import without it."""
    try:
        import cute_transpose
    except ImportError:
        sys.path.append(str(REPO_ROOT / "python"))
        import cute_transpose
    return cute_transpose


# --------------------------------------------------------------------------------------------
# Inputs and the check
# --------------------------------------------------------------------------------------------

def random_input(shape: Shape, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Random data, never all zeros: normal floats (and complex), random bytes for uint8."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.randint(0, 256, shape, dtype=dtype, device=device)


def apply_view(base: torch.Tensor, shape: Shape, view: View) -> torch.Tensor:
    """The cell's input, taken from `base` (of base_shape(shape, view)) as `view` says."""
    d, a = view.dim, view.amount
    if view.kind == "offset":
        return base.narrow(d, a, shape[d])
    if view.kind == "step":
        index = [slice(None)] * base.dim()
        index[d] = slice(None, None, a)
        return base[tuple(index)]
    if view.kind == "transposed":
        return base.transpose(d, a)
    if view.kind == "expand":
        return base.expand(shape)
    if view.kind == "packed":
        return base.select(d, 1)
    if view.kind == "strided":
        return base.as_strided(shape, view.strides, view.offset)
    return base


def meta_input(shape: Shape, dtype: str, view: View) -> torch.Tensor:
    """A cell's input as a meta tensor: its sizes, strides and offset, no data (the chooser's
    class and choice need nothing more)."""
    base = torch.empty(base_shape(shape, view), dtype=TORCH_DTYPES[dtype], device="meta")
    return apply_view(base, shape, view)


def make_input(cell: Cell, device: torch.device) -> torch.Tensor:
    """Fresh random data laid out as the cell says."""
    base = random_input(base_shape(cell.shape, cell.view), TORCH_DTYPES[cell.dtype], device)
    x = apply_view(base, cell.shape, cell.view)
    assert tuple(x.shape) == cell.shape, (x.shape, cell)
    return x


def slabs(shape: Shape, itemsize: int, limit: int) -> Iterator[tuple]:
    """Indices that cut a contiguous tensor of `shape` into row-major pieces of at most `limit`
    bytes each (or one innermost row when a row alone is larger)."""
    inner, k = itemsize, len(shape)
    while k > 0 and inner * shape[k - 1] <= limit:
        inner *= shape[k - 1]
        k -= 1
    if k == 0:
        yield ()
        return
    step = max(1, limit // inner)
    for lead in itertools.product(*map(range, shape[:k - 1])):
        for start in range(0, shape[k - 1], step):
            yield (*lead, slice(start, start + step))


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """The bits of a contiguous tensor as a flat uint8 tensor (any dtype, bool and complex too)."""
    return t.reshape(-1).view(torch.uint8)


def same_bits(out: torch.Tensor, expected: torch.Tensor) -> bool:
    """`out` is contiguous and bit-for-bit equal to `expected`, which may be any view (the
    reference is built slab by slab, so the check needs little memory beyond the two)."""
    if out.shape != expected.shape or out.dtype != expected.dtype or not out.is_contiguous():
        return False
    if out.numel() == 0:
        return True
    return all(torch.equal(as_bytes(out[i]), as_bytes(expected[i].contiguous()))
               for i in slabs(tuple(out.shape), out.element_size(), CHECK_SLAB_BYTES))


# --------------------------------------------------------------------------------------------
# Timers
# --------------------------------------------------------------------------------------------

def do_bench_timer(warmup_ms: int, rep_ms: int) -> Timer:
    """GPU timing: Triton's do_bench (median, L2 flushed before every call)."""
    from triton.testing import do_bench

    return lambda fn: do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")


def paced_timer(calls: int = 64, lead_cycles: int = 600_000) -> Timer:
    """GPU time of one call with every op's launch queued the same way, whatever its host time:
    before each call the GPU's queue is drained (a synchronisation), then the L2 flush and a GPU
    wait of `lead_cycles` clock cycles (300 us at 2 GHz) are queued, then the call between two
    events. The call's kernels are therefore queued well before the GPU reaches them, for a fast
    host path and a slow one alike. Median over `calls` calls.

    do_bench queues its calls back to back instead: an op with a fast host path runs far ahead of
    the GPU, while one whose host path takes about as long as the flush launches just before the
    GPU needs it -- and on the H100 the same kernel measured about 0.4 us less when launched that
    way (docs/PERFORMANCE.md, "Launched just in time"): a few percent of a few-microsecond cell,
    earned by a slow host path. (torch.cuda._sleep, the GPU wait, is a private helper of torch's
    own tests.)"""
    state: dict = {}

    def time_ms(fn: Callable[[], object]) -> float:
        if "cache" not in state:
            state["cache"] = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        cache = state["cache"]
        for _ in range(3):
            fn()
        samples = []
        for _ in range(calls):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            cache.zero_()
            torch.cuda._sleep(lead_cycles)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        return statistics.median(samples)
    return time_ms


def perf_counter_timer(warmup: int = 2, runs: int = 9) -> Timer:
    """CPU timing: median of a few time.perf_counter measurements."""
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


def permute_ops(x: torch.Tensor, dims: Dims, kernels: Sequence[str]) -> dict[str, Callable[[], torch.Tensor]]:
    """clone, eager, ours (the chooser's pick) and each of `kernels` forced by name, on x permuted
    by dims (the grid scripts' ops)."""
    dims = list(dims)
    named = lambda name: lambda: torch.ops.cute_transpose._permute_with(x, dims, name)  # noqa: E731
    ops = {"clone": lambda: x.clone(), "eager": lambda: x.permute(dims).contiguous(),
           "ours": lambda: torch.ops.cute_transpose.permute(x, dims)}
    return {**ops, **{name: named(name) for name in kernels}}


def check_ops(ops: dict[str, Callable[[], torch.Tensor]], expected: torch.Tensor, may_refuse: Callable[[str], bool],
              where: str) -> None:
    """Every op but clone bit-exact against `expected`; one that cannot run the permute (a
    RuntimeError) leaves `ops` where may_refuse(name) allows it. Stops the script on anything else."""
    for name in [n for n in ops if n != "clone"]:
        try:
            ok = same_bits(ops[name](), expected)
        except RuntimeError:
            ok = may_refuse(name)
            del ops[name]
        if not ok:
            raise SystemExit(f"{where}: {name} WRONG")


def best_of_rounds(ops: dict[str, Callable[[], object]], timer: Timer, rounds: int = 3) -> dict[str, float]:
    """Every op timed in turn, `rounds` times (in reverse order every other round): each op's
    fastest time, in microseconds (a one-off stall of the machine costs a round, not the shape)."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    for round_ in range(rounds):
        for name in (list(ops) if round_ % 2 == 0 else list(ops)[::-1]):
            times[name].append(timer(ops[name]))
    return {name: round(min(t) * 1e3, 3) for name, t in times.items()}


def grid_script_main(argv: Optional[Sequence[str]], doc: str, seed: int, grid_lines: Callable[..., list[str]],
                     measure: Callable[..., list[dict]], summary: Callable[[list[dict]], str],
                     flags: Optional[dict[str, str]] = None) -> int:
    """The command line of a script that times a seeded grid of random shapes
    (bench/interleave_small.py, bench/lanes_small.py, bench/near_broadcast.py): --seed, --budget
    (seconds of timing) and --out (the rows as JSON); the summary last. Without a GPU it lists the
    grid's first shapes. `flags`: switches of the script's own (name: help), passed to grid_lines
    and measure as keyword arguments."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of timing, at most")
    parser.add_argument("--out", type=Path, help="write the rows as JSON")
    for name, text in (flags or {}).items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    args = parser.parse_args(argv)
    options = {name: getattr(args, name) for name in flags or {}}
    if not torch.cuda.is_available():
        print("This script times CUDA kernels; this machine has no GPU. The grid it would time:")
        print("\n".join("  " + line for line in grid_lines(args.seed, **options)[:10]))
        return 0
    rows = measure(args.seed, args.budget, **options)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(summary(rows))
    return 0


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def host_loop_timer(device: torch.device, calls: int, loops: int = 5) -> Timer:
    """Host-inclusive time per call: `calls` back-to-back calls between two synchronisations
    (launch and dispatch overhead count), median over `loops` loops."""
    def time_ms(fn: Callable[[], object]) -> float:
        for _ in range(min(calls, 50)):
            fn()
        samples = []
        for _ in range(loops):
            synchronize(device)
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            synchronize(device)
            samples.append((time.perf_counter() - start) * 1e3 / calls)
        return statistics.median(samples)
    return time_ms


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------

def bytes_fit(footprint: int, device: torch.device) -> bool:
    """`footprint` bytes + 1 GiB of slack fit in free GPU memory (always true on the CPU)."""
    if device.type != "cuda":
        return True
    free, _ = torch.cuda.mem_get_info(device)
    return footprint + MEMORY_SLACK_BYTES <= free


def release_memory(device: torch.device, collect: bool = False) -> None:
    """Give cached GPU memory back, so the next cell's memory check sees it. `collect` also
    runs the garbage collector (slow with torch.compile loaded: a tenth of a second or more),
    needed only where an exception's traceback may still hold tensors."""
    if collect:
        gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------
# Ops, results and the cell runner
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSpec:
    """One benchmarked op. `make(cell)` returns the function to time on that cell.

    role "copy": runs on a contiguous tensor of the cell's bytes and must return it unchanged
    (clone, the ratio baseline, is one). role "permute": runs on the cell's input and must equal
    ``x.permute(dims).contiguous()`` bit for bit.
    """

    name: str
    role: str
    make: Callable[[Cell], TensorFn]
    description: str
    gpu_only: bool = False
    applies: Callable[[Cell], bool] = lambda cell: True
    may_refuse: bool = False        # a RuntimeError means "unsupported here" (n/a), not a bug
    explained: bool = False         # record cute_transpose.explain(x, dims) with this op's row
    tuned: bool = False             # runs with cute_transpose.autotune() on (and is explained so)
    header: str = ""                # the table header, where it differs from the name

    @property
    def label(self) -> str:
        return self.header or SHORT_LABELS.get(self.name, self.name)


SHORT_LABELS = {
    "naive_coalesced_read": "naive_cr",
    "naive_coalesced_write": "naive_cw",
    "bank_conflict_read": "bank_r",
    "bank_conflict_write": "bank_w",
}


@dataclass
class Result:
    """One op on one cell. ratio = time(torch clone) / time(op), same cell; first_s = wall time
    of the first, checked call (compilation and autotuning happen there)."""

    cell: Cell
    op: str
    status: str                     # ok | WRONG | n/a | error | skipped: <why>
    ms: Optional[float] = None
    gbps: Optional[float] = None
    ratio: Optional[float] = None
    detail: str = ""
    first_s: Optional[float] = None
    explain: Optional[dict] = None
    paced_ms: Optional[float] = None     # a short cell timed again by paced_timer
    paced_ratio: Optional[float] = None  # clone's paced time / this op's

    @property
    def bad(self) -> bool:
        return self.status in ("WRONG", "error")

    def where(self) -> str:
        """The cell, for messages."""
        c = self.cell
        view = f" {c.view.text()}" if c.view.text() else ""
        return f"{c.section} {c.name} {shape_text(c.shape)}{view} {c.dims} {c.dtype}"


def first_line(e: BaseException) -> str:
    """An exception in one line, for a table's footnote or the stderr summary."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def explain_cell(x: torch.Tensor, dims: Dims) -> Optional[dict]:
    """cute_transpose.explain(x, dims) where this build has it (the kernel our op chose)."""
    explain = getattr(ext(), "explain", None)
    if explain is None:
        return None
    try:
        return dict(explain(x, list(dims)))
    except Exception as e:  # noqa: BLE001  (a report field, never fatal)
        return {"error": first_line(e)}


Explain = Callable[[torch.Tensor, Dims], Optional[dict]]


def poison_next_block(like: torch.Tensor, device: torch.device) -> None:
    """Fill with 0xFF bytes the block of GPU memory that an output of `like`'s size most likely
    gets next (the caching allocator hands a freed block of the same size back first), so that
    an op that leaves elements unwritten shows them, instead of the right answer an earlier op
    left in that block."""
    if device.type == "cuda":
        torch.empty(like.numel() * like.element_size(), dtype=torch.uint8, device=device).fill_(0xFF)


def run_op(spec: OpSpec, cell: Cell, x: torch.Tensor, source: torch.Tensor,
           timer: Timer, device: torch.device, explain: Explain = explain_cell,
           again: Optional[list] = None) -> Result:
    """Check one op, then time it if its output is right; `again` collects (result, call) of an
    op that was timed, to time it again."""
    arg, expected = (source, source) if spec.role == "copy" else (x, x.permute(cell.dims))
    result = Result(cell, spec.name, "ok")
    wrong = "output differs from " + ("its input" if spec.role == "copy" else "x.permute(dims).contiguous()")
    try:
        fn = spec.make(cell)
        poison_next_block(expected, device)
        start = time.perf_counter()
        out = fn(arg)
        synchronize(device)
        result.first_s = time.perf_counter() - start
        if not same_bits(out, expected):
            result.status, result.detail = "WRONG", wrong
            return result
        del out
        call = lambda: fn(arg)  # noqa: E731
        result.ms = timer(call)
        poison_next_block(expected, device)  # and once more after the timed launches
        if not same_bits(fn(arg), expected):
            result.status, result.detail, result.ms = "WRONG", wrong + " after it was timed", None
            return result
        if again is not None:
            again.append((result, call))
    except Exception as e:  # noqa: BLE001  (recorded in the results, never fatal)
        refused = (spec.may_refuse and isinstance(e, RuntimeError)
                   and not isinstance(e, torch.OutOfMemoryError))
        result.status, result.detail = ("n/a" if refused else "error"), first_line(e)
    if spec.explained:  # after the first call: an autotuned op's pick is known then
        with ext().autotune() if spec.tuned else contextlib.nullcontext():
            result.explain = explain(x, cell.dims)
    return result


def add_metrics(results: list[Result], nbytes: int) -> None:
    """GB/s (2 * bytes moved / time) and the ratio to torch clone of the same cell (of the
    paced times too, where the cell has them)."""
    clone = next((r for r in results if r.op == "clone" and r.status == "ok"), None)
    for r in results:
        if r.status == "ok":
            r.gbps = 2 * nbytes / r.ms / 1e6
            r.ratio = clone.ms / r.ms if clone else None
            if clone is not None and clone.paced_ms and r.paced_ms:
                r.paced_ratio = clone.paced_ms / r.paced_ms


def run_cell(cell: Cell, specs: Sequence[OpSpec], timer: Timer, device: torch.device,
             explain: Explain = explain_cell, rounds: int = 1,
             short: Optional[tuple[float, int]] = None, paced: Optional[Timer] = None) -> list[Result]:
    """Every op that applies to the cell, on one fresh random input. `explain(x, dims)` is
    recorded with the rows of the ops marked `explained`. With `rounds` > 1 the ops are timed
    that many times, in turn (every op once, then every op again, in reverse order every other
    round), and each keeps its fastest time: a one-off stall of the machine then costs a round,
    not the cell. With `short` = (ms, n), a cell whose fastest op took under `ms` in the first
    round is timed in at least `n` rounds: a few-microsecond kernel's median moves by several
    percent from one do_bench call to the next, more than the differences being measured; and
    with `paced` too, such a cell's ops are each timed once more by it (paced_ms, paced_ratio)."""
    specs = [s for s in specs if s.applies(cell)]
    if not bytes_fit(footprint_bytes(cell), device):
        return [Result(cell, s.name, "skipped: too large") for s in specs]
    x = make_input(cell, device)
    if x.permute(cell.dims).is_contiguous():
        return [Result(cell, s.name, "skipped: already contiguous") for s in specs]
    source = x if x.is_contiguous() else x.contiguous()  # the copy ops' input
    timed: list = []
    results = [run_op(s, cell, x, source, timer, device, explain, timed) for s in specs]
    is_short = bool(short and timed and min(result.ms for result, _ in timed) < short[0])
    if is_short:
        rounds = max(rounds, short[1])
    for again in range(1, rounds):
        for result, call in (timed[::-1] if again % 2 else timed):
            result.ms = min(result.ms, timer(call))
    if is_short and paced is not None:
        for result, call in timed:
            result.paced_ms = paced(call)
    del x, source
    release_memory(device, collect=any(r.status == "error" for r in results))
    add_metrics(results, cell.nbytes)
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
            self.bar.set_postfix_str(label[:60])
        else:
            print(f"\r[{self.count + 1}/{self.total}] {label[:60]:<60}", end="",
                  file=sys.stderr, flush=True)

    def done(self) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            print(file=sys.stderr)


def run_cells(cells: Sequence[Cell], specs: Sequence[OpSpec], timer: Timer,
              device: torch.device, progress: Progress, rounds: int = 1,
              short: Optional[tuple[float, int]] = None, paced: Optional[Timer] = None,
              results: Optional[list[Result]] = None) -> list[Result]:
    """run_cell for every cell, under the progress bar. Each cell's results are added to
    `results` (a new list if None) as soon as it is done, so that a run stopped midway keeps
    the cells it finished."""
    results = [] if results is None else results
    for cell in cells:
        progress.start(f"{cell.section}: {cell.name} {shape_text(cell.shape)} {cell.dtype}")
        results += run_cell(cell, specs, timer, device, rounds=rounds, short=short, paced=paced)
        progress.done()
    return results


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside the block, SIGTERM (a `timeout`, a job scheduler) stops the run as Ctrl-C does."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
