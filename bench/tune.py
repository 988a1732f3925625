#!/usr/bin/env python3
"""Measure every candidate kernel of cute_transpose's permute on a grid of synthetic shapes and
write the chooser's table: the fastest kernel per shape class.

Run from the repository root on the GPU the table is for (about 4 minutes on an H100)::

    PYTHONPATH=python python bench/tune.py                # -> csrc/tuning/sm_<cc>.inc,
                                                          #    bench/results/<gpu>-tune.md and
                                                          #    <gpu>-tune.json.gz (every timing)
    PYTHONPATH=python python bench/tune.py --dry-run      # the plumbing, on the CPU
    PYTHONPATH=python python bench/tune.py --rerank RUN.json.gz [RUN2.json.gz ...] --reclassify
                                                          # the table again from saved runs
    PYTHONPATH=python python bench/tune.py --thin RUN.json.gz [...] --cells THIN.json
                                                          # (CPU) shapes for the thin classes,
    PYTHONPATH=python python bench/tune.py --cells THIN.json --report .../<gpu>-tune-thin.md
                                                          # then measured like a grid
    PYTHONPATH=python python bench/tune.py --layouts 40 --report .../<gpu>-tune-layouts.md
                                                          # the layout copies of real models
                                                          #    (bench/layout_grid.py), as a grid

For each shape of the grid (bench/tune_grid.py): the class key comes from
``cute_transpose.explain(x, dims)["class"]``; every kernel of ``cute_transpose.KERNELS`` runs
through ``torch.ops.cute_transpose._permute_with(x, dims, kernel)``, is checked bit-exactly
against ``x.permute(dims).contiguous()`` and timed beside torch clone (do_bench median, short
warmup and rep). A kernel that raises RuntimeError cannot run that shape (n/a). Per class, each
kernel's score is the geomean of time(clone) / time(kernel) over the class's shapes it ran, and
the kernels are ranked by how close they come to the best kernel on each shape they ran (the
chooser takes the first in the ranking that can run a plan); a kernel with any wrong result is
left out.

--fake replaces the chooser's API (until it lands, and on the CPU where _permute_with may be
missing) with a small stand-in, to test this script's plumbing.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from bench.cases import Cell, Dims, View  # noqa: E402
from bench.dense_grid import dense_batch_cells  # noqa: E402
from bench.harness import (OpSpec, Progress, Result, do_bench_timer, ext,  # noqa: E402
                           meta_input, perf_counter_timer, run_cell)
from bench.ops import CLONE  # noqa: E402
from bench.report import sanitize  # noqa: E402
from bench.tune_grid import MAIN_BANDS, TUNE_SEED, VIEW_KINDS, by_chooser_class, tune_cells  # noqa: E402
from bench.layout_grid import layout_cells  # noqa: E402
from bench.summary import by_cell  # noqa: E402
from bench.tune_table import (FEW_SHAPES, SMALL_WORK, Holdout, SavedResult, aggregate, class_holdout,  # noqa: E402
                              class_key, families, holdout, inc_text, picked, read_run,
                              report_markdown, run_stem, saved_results, tally, tune_json, write_run)

DRY_MAX_NUMEL = 1 << 12

# A kernel's standing on a shape is its ratio over the best ratio any kernel reached there. A
# result whose standing is under RETIME_BELOW x the kernel's median standing over the other
# shapes of its class is timed again. Most such results stand (the kernels' standing does vary
# within a class); the second timing only has to tell a disturbed result from a slow one.
RETIME_BELOW = 0.75


@dataclasses.dataclass(frozen=True)
class Chooser:
    """The chooser's Python API: candidate kernels, a permute by a named kernel, the
    explanation of a choice (its "class" key above all), a cell's class without running it, and
    whether the chooser offers a kernel for a cell at all."""

    kernels: tuple[str, ...]
    permute_with: Callable[[torch.Tensor, Dims, str], torch.Tensor]
    explain: Callable[[torch.Tensor, Dims], dict]
    classify: Callable[[Cell], str]
    source: str
    offers: Callable[[Cell, str], bool] = lambda cell, kernel: True
    config: Callable[[Cell, str], str] = lambda cell, kernel: ""  # a named kernel's configuration
    pick: Callable[[Cell], Optional[str]] = lambda cell: None  # the kernel the chooser runs a cell with


def cuda_arch() -> int:
    """The GPU's compute capability as the chooser numbers it (90 for sm_90); 90 without one."""
    if not torch.cuda.is_available():
        return 90
    major, minor = torch.cuda.get_device_capability()
    return 10 * major + minor


def real_chooser() -> Optional[Chooser]:
    """cute_transpose's chooser API, or None where this build does not have it yet."""
    ct = ext()
    if not (hasattr(ct, "KERNELS") and hasattr(ct, "explain")
            and hasattr(torch.ops.cute_transpose, "_permute_with")):
        return None
    arch = cuda_arch()

    def explain(cell: Cell, kernel: str) -> str:
        x = meta_input(cell.shape, cell.dtype, cell.view)
        return torch.ops.cute_transpose._explain(x, list(cell.dims), arch, kernel)

    def offers(cell: Cell, kernel: str) -> bool:
        try:
            return bool(json.loads(explain(cell, kernel))["offered"])
        except RuntimeError:  # the kernel cannot run the cell
            return False

    def config(cell: Cell, kernel: str) -> str:
        try:
            return json.loads(explain(cell, kernel))["config"]
        except RuntimeError:
            return ""
    @functools.lru_cache(maxsize=1)  # classify and pick ask about the same cell in turn
    def choice(cell: Cell) -> dict:
        return json.loads(explain(cell, ""))
    return Chooser(tuple(ct.KERNELS),
                   lambda x, dims, k: torch.ops.cute_transpose._permute_with(x, list(dims), k),
                   lambda x, dims: dict(ct.explain(x, list(dims))),
                   lambda cell: choice(cell)["class"], "cute_transpose", offers, config,
                   lambda cell: choice(cell)["kernel"])


def fake_class(x: torch.Tensor, dims: Dims) -> str:
    """A stand-in class key: element size, whether the innermost dim stays, short innermost
    sides."""
    keep = dims[-1] == x.dim() - 1
    short_in, short_out = x.shape[-1] <= 16, x.shape[dims[-1]] <= 16
    side = "rows" if keep else f"tile{'/in:short' if short_in else ''}" \
                               f"{'/out:short' if short_out else ''}"
    return f"e{x.element_size()}/{side}"


def fake_permute_with(x: torch.Tensor, dims: Dims, kernel: str) -> torch.Tensor:
    """Stand-in kernels: 'aten' (torch), 'ours' (cute_transpose.permute), and 'rows', which
    only runs permutes that keep the innermost dim (it raises RuntimeError otherwise)."""
    if kernel == "ours":
        return torch.ops.cute_transpose.permute(x, list(dims))
    if kernel == "rows" and dims[-1] != x.dim() - 1:
        raise RuntimeError("fake 'rows' kernel: the innermost dim must stay innermost")
    if kernel in ("aten", "rows"):
        return x.permute(dims).contiguous()
    raise RuntimeError(f"fake chooser: no kernel {kernel!r}")


def fake_chooser() -> Chooser:
    return Chooser(("aten", "ours", "rows"), fake_permute_with,
                   lambda x, dims: {"class": fake_class(x, dims), "kernel": "ours",
                                    "config": "", "reason": "fake chooser"},
                   lambda cell: fake_class(meta_input(cell.shape, cell.dtype, cell.view), cell.dims),
                   "fake", config=lambda cell, kernel: f"{cell.shape[0]} rows")


def probe(chooser: Chooser, device: torch.device) -> Optional[str]:
    """Why the chooser cannot run on this device (None when it can): one tiny permute."""
    x = torch.arange(6, device=device, dtype=torch.float32).reshape(2, 3)
    try:
        chooser.explain(x, (1, 0))
        for k in chooser.kernels:
            try:
                chooser.permute_with(x, (1, 0), k)
                return None
            except RuntimeError:
                continue
        return "no kernel runs a 2x3 transpose"
    except (NotImplementedError, RuntimeError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__


def resolve_chooser(args: argparse.Namespace, device: torch.device) -> Chooser:
    """--fake, else the real API; the CPU dry run falls back to the fake where the real one is
    missing or has no CPU kernels."""
    if args.fake:
        return fake_chooser()
    real = real_chooser()
    why = "this build has no cute_transpose.KERNELS / explain / _permute_with" if real is None \
        else probe(real, device)
    if why is None:
        return real
    if args.dry_run:
        print(f"tune.py: {why}; the dry run uses the fake chooser (--fake)", file=sys.stderr)
        return fake_chooser()
    sys.exit(f"tune.py: {why}. Run with --fake to test the plumbing.")


def kernel_specs(chooser: Chooser) -> list[OpSpec]:
    """Clone (the baseline, which also records the class key), then one op per kernel."""
    def make(kernel: str):
        return lambda cell: (lambda x: chooser.permute_with(x, cell.dims, kernel))
    return [dataclasses.replace(CLONE, explained=True),
            *(OpSpec(k, "permute", make(k), f"kernel {k}", may_refuse=True)
              for k in chooser.kernels)]


def shrink(cell: Cell, max_numel: int) -> Cell:
    """The dry run's tiny version of a cell."""
    from bench.sweep_cases import shrink_cell
    return shrink_cell(cell, max_numel)


def measure(cells: list[Cell], chooser: Chooser, timer, device: torch.device,
            budget_s: float) -> tuple[list[Result], int]:
    """Every kernel on every cell until the time budget is spent; (results, cells measured)."""
    specs = kernel_specs(chooser)
    progress = Progress(len(cells))
    started, results, done = time.perf_counter(), [], 0
    for cell in cells:
        if time.perf_counter() - started > budget_s:
            print(f"\ntune.py: time budget of {budget_s:.0f} s spent after {done} of "
                  f"{len(cells)} shapes", file=sys.stderr)
            break
        progress.start(f"{cell.name} {'x'.join(map(str, cell.shape))}")
        results += run_cell(cell, specs, timer, device, explain=chooser.explain)
        done += 1
        progress.done()
    progress.close()
    return results, done


def suspects(results: list, kernels: tuple[str, ...], below: float = RETIME_BELOW) -> dict:
    """{cell: kernels} whose standing on the cell (ratio over the cell's best ratio) is under
    `below` x the kernel's median standing over the other shapes of its class (two or more)."""
    cells = by_cell(results)
    members: dict[str, list] = collections.defaultdict(list)
    for cell, row in cells.items():
        if (key := class_key(row)) is not None:
            members[key].append(cell)
    found: dict = collections.defaultdict(set)
    for group in members.values():
        standing = {}
        for c in group:
            ok = {k: r.ratio for k, r in cells[c].items() if k in kernels and r.status == "ok" and r.ratio}
            standing[c] = {k: v / max(ok.values()) for k, v in ok.items()}
        for c, mine in standing.items():
            for k, v in mine.items():
                others = [s[k] for o, s in standing.items() if o != c and k in s]
                if len(others) >= 2 and v < below * statistics.median(others):
                    found[c].add(k)
    return dict(found)


def retime(cells: dict, chooser: Chooser, timer, device: torch.device) -> dict:
    """{(cell, kernel): ratio} timed again for each cell's kernels, beside a fresh clone."""
    specs = {s.name: s for s in kernel_specs(chooser)}
    again: dict = {}
    if not cells:
        return again
    progress = Progress(len(cells))
    for cell, kernels in cells.items():
        progress.start(f"again: {cell.name} {'x'.join(map(str, cell.shape))}")
        for r in run_cell(cell, [specs["clone"], *(specs[k] for k in sorted(kernels))], timer, device):
            if r.op != "clone" and r.status == "ok" and r.ratio:
                again[(cell, r.op)] = r.ratio
        progress.done()
    progress.close()
    return again


def timed_again(first: float, ms: float, again: float, detail: str) -> dict:
    """A result's fields (first at ratio `first`, `ms`) after a second timing at ratio `again`,
    the first kept in `detail`: the time scales with the ratio, since clone's time is the same."""
    return {"detail": detail, "ms": ms * first / again, "ratio": again}


def kept_faster(first: float, ms: float, again: float) -> dict:
    """A result's fields after a second timing at ratio `again` beat the first, `first`."""
    return timed_again(first, ms, again, f"timed again: {again:.3f} of clone, first {first:.3f}")


def retimed_note(timed: int, faster: int) -> str:
    return (f"{timed} results under {RETIME_BELOW} x their kernel's usual standing in their class timed "
            f"again, {faster} faster the second time")


def saved_cell(cell: tuple) -> Cell:
    """The Cell of a saved row's (case, shape, dims, dtype, view)."""
    case, shape, dims, dtype, view = cell
    return Cell("tune", case, shape, dims, dtype, View.parse(view), case)


def changed(results: list, kernel: str, where: str, saved: Optional[list] = None,
            config: str = "", config_of: Callable[[tuple, str], str] = lambda cell, kernel: "",
            offers: Optional[Callable[[tuple, str], bool]] = None, beside: Sequence[str] = ()) -> dict:
    """{cell: kernels} for every shape `kernel` ran, in the classes matching `where`; with the
    `saved` results, only the shapes whose class differs there; with `config`, only the shapes
    where the kernel's configuration (config_of, this build's) matches it. A kernel the saved
    run never timed on a shape (a kernel added since, or one timed on other classes only) is
    taken there wherever `offers` (this build's) offers it. The `beside` kernels join each shape
    where they ran, to be timed beside it."""
    before = {cell: class_key(row) for cell, row in by_cell(saved).items()} if saved is not None else {}
    cells = by_cell(results)

    def runs(cell, row) -> bool:
        if kernel in row and row[kernel].status == "ok":
            return True
        return offers is not None and offers(cell, kernel)  # new to the shape, or refused it before
    return {cell: {kernel, *(k for k in beside if k in row and row[k].status == "ok")}
            for cell, row in cells.items()
            if re.search(where, class_key(row) or "") and runs(cell, row)
            and (saved is None or before.get(cell) != class_key(row))
            and (not config or re.search(config, config_of(cell, kernel)))}


def added_row(clone: dict, kernel: str, ratio: float) -> dict:
    """A saved run's row for a kernel it never timed, timed now at `ratio` of clone."""
    return {**clone, "kernel": kernel, "status": "ok", "ms": clone["ms"] / ratio, "ratio": ratio,
            "detail": f"timed after the run: {ratio:.3f} of clone", "explain": None}


def retime_saved(args: argparse.Namespace, chooser: Chooser, timer, device: torch.device) -> int:
    """--retime: the suspects of saved runs (classed by this build) timed again; the faster of the
    two timings kept, in place, with the first in the row's detail. With --remeasure, the named
    kernel's every result (in the --where classes) timed again and replaced."""
    for path in args.retime:
        saved = read_run(path)
        as_saved = saved_results(saved)
        results = reclassified(as_saved, chooser)
        added = args.remeasure is not None and not any(r.op == args.remeasure for r in as_saved)
        found = (changed(results, args.remeasure, args.where, as_saved if args.moved else None, args.config,
                         lambda cell, kernel: chooser.config(saved_cell(cell), kernel),
                         lambda cell, kernel: chooser.offers(saved_cell(cell), kernel), args.beside)
                 if args.remeasure else suspects(results, chooser.kernels))
        if args.cells:  # only the listed shapes
            listed = set(listed_cells(args.cells))
            found = {cell: ks for cell, ks in found.items() if saved_cell(cell) in listed}
        again = retime({saved_cell(c): ks for c, ks in found.items()}, chooser, timer, device)
        faster = revived = 0
        cell_of = lambda row: saved_cell((row["case"], tuple(row["shape"]), tuple(row["dims"]), row["dtype"],
                                          row["view"]))
        clone_ms = {cell_of(row): row["ms"] for row in saved["rows"] if row["kernel"] == "clone"}
        for row in saved["rows"]:
            new = again.get((cell_of(row), row["kernel"]))
            if new is not None and args.remeasure and row["status"] != "ok":  # it refused the shape before
                row.update(status="ok", detail=f"runs after a change to the kernel: {new:.3f} of clone",
                           ratio=new, ms=clone_ms[cell_of(row)] / new)
                revived += 1
            elif new is not None and args.remeasure:
                row.update(timed_again(row["ratio"], row["ms"], new, f"timed again after a change to the "
                                       f"kernel: {new:.3f} of clone, {row['ratio']:.3f} before"))
            elif new is not None and row["ratio"] and new > row["ratio"]:
                row.update(kept_faster(row["ratio"], row["ms"], new))
                faster += 1
        had = {(cell_of(row), row["kernel"]) for row in saved["rows"]}
        first = [added_row(row, args.remeasure, new) for row in list(saved["rows"])
                 if row["kernel"] == "clone" and (cell_of(row), args.remeasure) not in had
                 and (new := again.get((cell_of(row), args.remeasure)))] if args.remeasure else []
        saved["rows"] += first
        if added:
            kernels = saved["meta"]["kernels"]
            saved["meta"]["kernels"] = [k for k in chooser.kernels if k in kernels or k == args.remeasure] + \
                [k for k in kernels if k not in chooser.kernels]
        if args.remeasure:
            timed = sum(1 for ks in again if ks[1] == args.remeasure)
            note = (f"{args.remeasure} {'timed, new to this run,' if added else 'timed again after a change to it'}"
                    f" on its {timed} shapes" + (f" ({len(first)} of them new to it)" if first and not added else "")
                    + (f" ({revived} of them refused before)" if revived else "")
                    + (f" of the classes matching `{args.where}`" if args.where else "")
                    + (f" where its configuration matches `{args.config}`" if args.config else "")
                    + (" that this build puts in another class" if args.moved else "")
                    + (f" listed in {args.cells.name}" if args.cells else "")
                    + (f", beside {', '.join(args.beside)} timed again" if args.beside else ""))
            saved["meta"]["retimed"] = "; ".join(filter(None, (saved["meta"].get("retimed"), note)))
        else:
            saved["meta"]["retimed"] = retimed_note(len(again), faster)
        write_run(path, json.dumps(saved, indent=1, default=str) + "\n")
        print(f"{path}: {saved['meta']['retimed']}", file=sys.stderr)
    return 0


def default_paths(args: argparse.Namespace, device_name: str) -> None:
    if args.dry_run:
        folder = Path("/tmp/tune-dry")
        args.out = args.out or folder / "sm_cpu.inc"
        args.report = args.report or folder / f"{sanitize(device_name)}-tune.md"
        return
    major, minor = torch.cuda.get_device_capability()
    args.out = args.out or REPO_ROOT / "csrc" / "tuning" / f"sm_{major}{minor}.inc"
    args.report = args.report or REPO_ROOT / "bench" / "results" / f"{sanitize(device_name)}-tune.md"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="the .inc table [csrc/tuning/sm_<major><minor>.inc]")
    p.add_argument("--report", type=Path, help="the markdown report [bench/results/<gpu>-tune.md]")
    p.add_argument("--per-class", type=int, default=3,
                   help="shapes drawn per grid class (bench/tune_grid.py) [3]")
    p.add_argument("--per-key", type=int, default=6,
                   help="of those, at most this many per class of the chooser [6]")
    p.add_argument("--max-shapes", type=int, default=2600, help="at most this many shapes [2600]")
    p.add_argument("--budget-s", type=float, default=430.0,
                   help="stop measuring new shapes after this many seconds [430: the whole "
                        "default grid on an H100, inside one 10-minute call with the build]")
    p.add_argument("--seed", type=int, default=TUNE_SEED, help=f"grid seed [{TUNE_SEED}]")
    p.add_argument("--small", action="store_true",
                   help="measure the small-work grid instead of the main one: shapes of 2^14-2^20 "
                        "elements, which the chooser puts in its '.s' classes (bench/tune_grid.py)")
    p.add_argument("--layouts", type=int, default=0, metavar="PER_FAMILY",
                   help="measure the layouts grid instead of the main one: this many shapes of each "
                        "kind of layout copy real models make (bench/layout_grid.py: window and grid "
                        "partitions, packed and split attention heads, channels-last maps, ...)")
    p.add_argument("--dense-batches", type=int, default=0, metavar="COUNT",
                   help="measure this many shapes of the dense-batch grid instead of the main one: "
                        "batches of small matrices, each whole on both sides (bench/dense_grid.py)")
    p.add_argument("--view", choices=VIEW_KINDS, default="",
                   help="a grid of the 'view' classes alone, every input a view of this kind (a run "
                        "that adds shapes to the classes it marks, such as broadcast inputs)")
    p.add_argument("--warmup", type=int, default=5, help="do_bench warmup per kernel, ms [5]")
    p.add_argument("--rep", type=int, default=20, help="do_bench measuring time per kernel, ms [20]")
    p.add_argument("--rerank", type=Path, nargs="+", metavar="TUNE_JSON",
                   help="no measuring: rank the kernels of saved runs (tune.json, or tune.json.gz) again (several "
                        "runs, such as grids of different --seed, rank over all their shapes) and "
                        "write the table (--out, default csrc/tuning/sm_90.inc) and report")
    p.add_argument("--reclassify", action="store_true",
                   help="with --rerank: put each saved shape in the class this build's chooser "
                        "gives it (after a change of the class key), not the saved one, and count "
                        "a kernel it no longer offers for a shape as unable to run it")
    p.add_argument("--holdout", action="store_true",
                   help="with --rerank: also print how the ranking rules do on shapes left out of "
                        "their class, one at a time")
    p.add_argument("--retime", type=Path, nargs="+", metavar="TUNE_JSON",
                   help="on the GPU: time the suspect results of saved runs (tune.json or .json.gz) again "
                        "(far below the kernel's usual standing in their class, by this build's "
                        "classes) and keep the faster timing, in place")
    p.add_argument("--remeasure", metavar="KERNEL",
                   help="with --retime: after a change to KERNEL, time it again on every saved shape "
                        "it ran (of the classes matching --where) and replace its timing, instead of "
                        "timing the suspects again")
    p.add_argument("--beside", nargs="+", default=[], metavar="KERNEL",
                   help="with --remeasure: also time these kernels again on the same shapes, beside "
                        "the same fresh clone, so that their ratios and the remeasured kernel's come "
                        "from one run (a kernel new to the saved run is timed where this build "
                        "offers it, its rows added)")
    p.add_argument("--where", default="", metavar="REGEX",
                   help="with --remeasure: only the shapes whose class (this build's) matches REGEX")
    p.add_argument("--config", default="", metavar="REGEX",
                   help="with --remeasure: only the shapes where this build's configuration of the "
                        "kernel (explain's config) matches REGEX (a change that reaches some of a "
                        "class's shapes, such as a new tile walk)")
    p.add_argument("--moved", action="store_true",
                   help="with --remeasure: only the shapes whose class this build changed (a kernel "
                        "change that also moved its shapes between classes)")
    p.add_argument("--replay", type=Path, nargs="+", metavar="TUNE_JSON",
                   help="no measuring: how the sm_90 table of this build picks on the shapes of saved runs "
                        "(say, one grid measured on two GPUs): the pick over the best kernel and over ATen's "
                        "copy, each run on its own timings, over the shapes every run measured")
    p.add_argument("--thin", type=Path, nargs="+", metavar="TUNE_JSON",
                   help="no measuring: find the classes of saved runs (this build's classes) whose "
                        "first kernel ran on fewer than --thin-shapes of their shapes, draw grid shapes "
                        "(seeds --seed, --seed + 1, ...) where that kernel runs until it has run on that many, "
                        "and write them to --cells")
    p.add_argument("--draws", type=int, default=200, help="with --thin: at most this many grids drawn [200]")
    p.add_argument("--thin-shapes", type=int, default=FEW_SHAPES, metavar="N",
                   help=f"with --thin: a class is thin where its first kernel ran on fewer than N of its "
                        f"shapes; shapes are drawn until it has run on N [{FEW_SHAPES}]")
    p.add_argument("--cells", type=Path, metavar="JSON",
                   help="the shapes --thin writes; without --thin, measure these shapes instead of "
                        "a drawn grid; with --retime, time only those of them in the saved runs")
    p.add_argument("--dry-run", action="store_true",
                   help="on the CPU, tiny shapes, perf_counter timing; writes under /tmp/tune-dry")
    p.add_argument("--fake", action="store_true",
                   help="use a stand-in chooser API (plumbing test; its table means nothing)")
    return p.parse_args(argv)


def offered(results: list, chooser: Chooser, cell_of: Callable = lambda cell: cell) -> list:
    """The results with a kernel the chooser does not offer for a shape (csrc/choose.h,
    offered()) counted as unable to run it ("n/a"): a tuning run measures every kernel wherever
    it runs, so that a later rule can be ranked again from the same measurements."""
    return [dataclasses.replace(r, status="n/a", ratio=None)
            if r.status == "ok" and r.op in chooser.kernels and not chooser.offers(cell_of(r.cell), r.op) else r
            for r in results]


def reclassified(results: list[SavedResult], chooser: Chooser) -> list[SavedResult]:
    """The saved results as this build's chooser sees them (meta tensors): each shape in the
    class it gives it, with the kernel it picks for it (which small work's replay takes), and a
    kernel it does not offer for a shape counted as unable to run it."""
    keys: dict[tuple, tuple[str, Optional[str]]] = {}
    out = []
    for r in results:
        if r.explain is not None:
            if r.cell not in keys:
                keys[r.cell] = chooser.classify(saved_cell(r.cell)), chooser.pick(saved_cell(r.cell))
            key, kernel = keys[r.cell]
            r = dataclasses.replace(r, explain={**r.explain, "class": key, **({"kernel": kernel} if kernel else {})})
        out.append(r)
    return offered(out, chooser, saved_cell)


def replayed(results: list[SavedResult], kernels: tuple[str, ...], arch: int = 0) -> dict[tuple, Optional[tuple]]:
    """{saved shape: (pick / best kernel, pick / ATen's copy)} for each saved shape (small work
    left out) run by the kernel this build's chooser picks for it on a GPU of `arch`: by default
    one without a table, which follows the fixed rule; 90, the sm_90 table. None where the saved
    run has no correct result of that kernel."""
    picks: dict[tuple, Optional[tuple]] = {}
    for cell, row in by_cell(results).items():
        key = class_key(row)
        if key is None or key.endswith(SMALL_WORK):
            continue
        c = saved_cell(cell)
        x = meta_input(c.shape, c.dtype, c.view)
        kernel = json.loads(torch.ops.cute_transpose._explain(x, list(c.dims), arch, ""))["kernel"]
        r = row.get(kernel)
        ran = kernel in kernels and r is not None and r.status == "ok" and r.ratio
        picks[cell] = picked(row, [kernel], kernels) if ran else None
    return picks


def rule_replay(results: list[SavedResult], kernels: tuple[str, ...], arch: int = 0) -> tuple[Holdout, int]:
    """replayed()'s picks tallied, and the shapes where the pick was not measured, counted."""
    picks = replayed(results, kernels, arch).values()
    return tally([p for p in picks if p is not None]), sum(p is None for p in picks)


def replay(args: argparse.Namespace) -> int:
    """--replay: the sm_90 table's picks on the shapes of saved runs, each run on its own
    measurements, over the shapes every run measured with the pick among them: runs of one grid
    on two GPUs compare shape for shape (the case names are left out of the match)."""
    if real_chooser() is None:
        sys.exit("tune.py: --replay needs this build's chooser (cute_transpose.explain)")
    runs = [read_run(path) for path in args.replay]
    picks = [{cell[1:]: p for cell, p in replayed(saved_results(run), tuple(run["meta"]["kernels"]), 90).items()}
             for run in runs]
    shared = set.intersection(*({cell for cell, p in run.items() if p is not None} for run in picks))
    print(f"the sm_90 table's picks on {len(shared)} shapes that every run measured (small work left out):")
    for path, run, p in zip(args.replay, runs, picks):
        print(f"  {path.name} ({run['meta']['device_name']}): {tally([p[c] for c in shared]).figures()}")
    return 0


def first_kernel_runs(results: list, kernels: tuple[str, ...]) -> dict[str, tuple[str, int]]:
    """{class: (its first kernel, how many of its shapes that kernel ran)} for the classes beyond
    small work whose first kernel is not ATen's copy."""
    return {c.key: (c.winner, c.score(c.winner).ok) for c in aggregate(results, kernels)
            if c.ranking and c.winner != "aten" and not c.key.endswith(SMALL_WORK)}


def thin_classes(results: list, kernels: tuple[str, ...], shapes: int = FEW_SHAPES) -> dict[str, str]:
    """{class: its first kernel} for the classes whose first kernel (not ATen's copy) ran on
    fewer than `shapes` of their shapes: the chooser runs every shape of the class that kernel
    can run on the evidence of one or two (it may be offered on few of the class's tuning shapes,
    such as the tile kernel where most would be less than a quarter full)."""
    return {key: kernel for key, (kernel, ran) in first_kernel_runs(results, kernels).items() if ran < shapes}


def thin_cells(thin: dict[str, str], chooser: Chooser, seed: int, draws: int, shapes: int = FEW_SHAPES,
               have: Optional[dict[str, int]] = None) -> list[Cell]:
    """Grid shapes (seeds `seed`, `seed` + 1, ..., at most `draws` grids) for the `thin` classes,
    among those its first kernel runs: `shapes` per class, or, given the shapes it `have` run
    already, as many as it lacks of `shapes`; so that the next ranking of the class sees that
    kernel on that many more or in all."""
    wanted = {key: shapes - (have or {}).get(key, 0) for key in thin}
    cells: list[Cell] = []
    for s in range(seed, seed + draws):
        for cell in tune_cells(3, s, MAIN_BANDS):
            key = chooser.classify(cell)
            if wanted.get(key) and chooser.offers(cell, thin[key]):
                cells.append(dataclasses.replace(cell, name=f"{cell.name} s{s}"))
                wanted[key] -= 1
        if not any(wanted.values()):
            break
    return cells


def write_thin(args: argparse.Namespace) -> int:
    """--thin: the thin classes of saved runs (this build's classes) and shapes drawn for them,
    written to --cells for a GPU run to measure."""
    chooser = real_chooser()
    if chooser is None or args.cells is None:
        sys.exit("tune.py: --thin needs this build's chooser (cute_transpose.explain) and --cells FILE")
    runs = [read_run(path) for path in args.thin]
    kernels = tuple(dict.fromkeys(k for run in runs for k in run["meta"]["kernels"]))
    runs_of = first_kernel_runs(reclassified([r for run in runs for r in saved_results(run)], chooser), kernels)
    have = {key: ran for key, (_, ran) in runs_of.items() if ran < args.thin_shapes}
    thin = {key: runs_of[key][0] for key in have}
    cells = thin_cells(thin, chooser, args.seed, args.draws, args.thin_shapes, have)
    reached = collections.Counter(chooser.classify(c) for c in cells)
    args.cells.write_text(cells_json(cells))
    print(f"tune.py: {len(thin)} thin classes; {len(cells)} shapes for {len(reached)} of them "
          f"({sum(have[k] + n >= args.thin_shapes for k, n in reached.items())} now with {args.thin_shapes}) "
          f"-> {args.cells}", file=sys.stderr)
    return 0


def cells_json(cells: list[Cell]) -> str:
    """A --cells file: each shape as a saved run names it."""
    return json.dumps([{"case": c.name, "shape": list(c.shape), "dims": list(c.dims), "dtype": c.dtype,
                        "view": c.view.text()} for c in cells], indent=0)


def listed_cells(path: Path) -> list[Cell]:
    """The shapes of a --cells file (written by --thin, or listed by hand for --retime)."""
    return [saved_cell((c["case"], tuple(c["shape"]), tuple(c["dims"]), c["dtype"], c["view"]))
            for c in json.loads(path.read_text())]


def rerank(args: argparse.Namespace) -> int:
    """The table and report again from saved tune.json files, with the current ranking rule."""
    runs = [read_run(path) for path in args.rerank]
    how = "re-classified and re-ranked" if args.reclassify else "re-ranked"
    meta = {**runs[0]["meta"],
            "chooser": runs[0]["meta"]["chooser"] + f" ({how} from {', '.join(p.name for p in args.rerank)})",
            "shapes": sum(run["meta"]["shapes"] for run in runs),
            "grid_shapes": sum(run["meta"]["grid_shapes"] for run in runs),
            "seconds": round(sum(run["meta"]["seconds"] for run in runs), 1),
            # every run's kernels: a run may have timed one the others did not (lean: the small grid)
            "kernels": list(dict.fromkeys(k for run in runs for k in run["meta"]["kernels"]))}
    if len(runs) > 1:
        meta["seed"] = ", ".join(str(run["meta"]["seed"]) for run in runs)
        meta["retimed"] = "; ".join(f"{path.name}: {run['meta']['retimed']}" for path, run in zip(args.rerank, runs)
                                    if run["meta"].get("retimed"))
    results = [r for run in runs for r in saved_results(run)]
    if args.reclassify:
        chooser = real_chooser()
        if chooser is None:
            sys.exit("tune.py: --reclassify needs this build's chooser (cute_transpose.explain)")
        results = reclassified(results, chooser)
    classes = aggregate(results, tuple(meta["kernels"]))
    lines = classes + families(results, tuple(meta["kernels"]))
    if args.holdout:
        print(holdout(results, tuple(meta["kernels"])).text())
        print(class_holdout(results, tuple(meta["kernels"])).text())
        if args.reclassify:
            rule, unmeasured = rule_replay(results, tuple(meta["kernels"]))
            print(f"the fixed rule (a GPU without a table) on {rule.shapes} shapes: {rule.figures()} "
                  f"({unmeasured} shapes where its pick was not measured left out)")
    out = args.out or REPO_ROOT / "csrc" / "tuning" / "sm_90.inc"
    report = args.report or args.rerank[0].with_name(run_stem(args.rerank[0]) + ".md")
    for path, text in ((out, inc_text(lines, meta)), (report, report_markdown(lines, meta))):
        path.write_text(text)
        print(f"wrote {path}", file=sys.stderr)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.rerank:
        return rerank(args)
    if args.thin:
        return write_thin(args)
    if args.replay:
        return replay(args)
    if not args.dry_run and not torch.cuda.is_available():
        sys.exit("tune.py: no CUDA GPU; --dry-run tests the plumbing on the CPU")
    device = torch.device("cpu") if args.dry_run else torch.device("cuda")
    device_name = "CPU dry-run" if args.dry_run else torch.cuda.get_device_name(device)
    default_paths(args, device_name)
    chooser = resolve_chooser(args, device)
    timer = perf_counter_timer(1, 3) if args.dry_run else do_bench_timer(args.warmup, args.rep)
    if args.retime:
        return retime_saved(args, chooser, timer, device)
    bands = ("micro",) if args.small else MAIN_BANDS
    if args.cells:
        drawn = cells = listed_cells(args.cells)
        print(f"tune.py: {len(cells)} shapes of {args.cells}", file=sys.stderr)
    elif args.layouts:
        drawn = cells = layout_cells(args.layouts, args.seed)
        print(f"tune.py: {len(cells)} shapes of the layouts grid", file=sys.stderr)
    elif args.dense_batches:
        drawn = cells = dense_batch_cells(args.dense_batches, args.seed)
        print(f"tune.py: {len(cells)} shapes of the dense-batch grid", file=sys.stderr)
    else:
        drawn = tune_cells(args.per_class, args.seed, bands, args.view)
        cells = by_chooser_class(drawn, chooser.classify, args.per_key, args.max_shapes)
        print(f"tune.py: {len(cells)} of {len(drawn)} grid shapes, at most {args.per_key} per chooser "
              f"class", file=sys.stderr)
    if args.dry_run:
        cells = [shrink(c, DRY_MAX_NUMEL) for c in cells]
    started = time.perf_counter()
    results, measured = measure(cells, chooser, timer, device, args.budget_s)
    ranked = offered(results, chooser)  # the offered results are the same objects as in `results`
    again = retime(suspects(ranked, chooser.kernels), chooser, timer, device)
    for r in results:
        if (new := again.get((r.cell, r.op))) is not None and new > r.ratio:
            for field, value in kept_faster(r.ratio, r.ms, new).items():
                setattr(r, field, value)
    classes = aggregate(ranked, chooser.kernels)
    meta = {"device_name": device_name, "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "chooser": chooser.source, "kernels": list(chooser.kernels),
            "seed": (f"{args.cells.name} (--thin)" if args.cells else
                     f"{args.seed} (--layouts {args.layouts})" if args.layouts else
                     f"{args.seed} (--dense-batches {args.dense_batches})" if args.dense_batches else args.seed),
            "bands": (["layouts"] if args.layouts and not args.cells else
                      ["dense batches"] if args.dense_batches and not args.cells else list(bands)),
            **({"view": args.view} if args.view else {}),
            "shapes": measured, "grid_shapes": len(cells), "drawn": len(drawn),
            "per_class": args.per_class, "per_key": args.per_key,
            "seconds": round(time.perf_counter() - started, 1),
            "retimed": retimed_note(len(again), sum(r.detail.startswith("timed again") for r in results)),
            "timing": ("time.perf_counter median of 3 runs (CPU dry run)" if args.dry_run else
                       f"triton.testing.do_bench median, warmup {args.warmup} ms, rep {args.rep} "
                       "ms, L2 flushed before each call")}
    lines = classes + families(ranked, chooser.kernels)
    for path, text in ((args.out, inc_text(lines, meta)),
                       (args.report, report_markdown(lines, meta)),
                       (args.report.with_name(args.report.stem + ".json.gz"), tune_json(classes, results, meta))):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_run(path, text)
        print(f"wrote {path}", file=sys.stderr)
    bad = [r for r in results if r.status == "WRONG"]
    for r in bad:
        print(f"WRONG: kernel {r.op} on {r.where()}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
