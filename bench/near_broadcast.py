#!/usr/bin/env python3
"""Broadcast permutes that the H100's rule for near neighbours moves from ATen's copy to the
gather kernel, on a seeded grid of random shapes: the measurement behind that rule
(csrc/choose.cpp, near_broadcast; docs/PERFORMANCE.md, "Broadcast picks whose neighbours lie near").

    PYTHONPATH=python python3 bench/near_broadcast.py [--seed 4] [--big] [--far] [--budget 100] [--out FILE.json]

Each shape: a random permute of three to five dims, one of them expanded (stride 0) to 2-64, of
uint8, bfloat16, float16 or float32 elements, 2^21-2^26 of them (--big: 2^26-2^28), kept where
the H100's chooser runs it in gather by that rule (the copy route, or a reach of 2-1023 from input
rows of 64 bytes or more; --far: kept instead where the chooser leaves ATen's copy on a transpose
of input rows of 64 bytes or more at a reach of 1024-4095, the band past the rule's bound). Copy
routes and transposes alternate, so that a budget cut keeps both. Each shape's permute (the
pick), ATen's copy and gather by name and eager permute are checked bit-exactly against torch,
then timed beside clone (do_bench median, L2 flushed), round-robin, the better of two rounds.
The summary: gather's speed against ATen's copy (the pick before the rule) and the pick's against
eager, by route, element type and reach.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.cases import Cell, View
from bench.harness import (Progress, best_of_rounds, check_ops, do_bench_timer, ext, grid_script_main, make_input,
                           meta_input, permute_ops)
from bench.summary import geomean

DTYPES = ("uint8", "bfloat16", "float16", "float32")
SIZES = {False: (21, 26), True: (26, 28)}  # log2 of the element count; True: --big
RULE = "neighbours lie near"  # in explain()'s reason where the rule moved the pick
FAR = (1024, 4096)  # --far: the reaches past the rule's bound (kNearBroadcastReach)
INPUT_ROW = 64  # bytes: the rule's least input row (kNearBroadcastInputRow)


def reach(info: dict) -> Optional[int]:
    """The least output stride, in plan elements, over the dims the input reads with a nonzero
    stride under one 32-byte sector (None where there are none)."""
    near = [out for _, stride, out in info["dims"] if stride != 0 and stride * info["element_size"] < 32]
    return min(near, default=None)


def draw(rng: random.Random, big: bool) -> tuple[tuple[int, ...], tuple[int, ...], str, View]:
    """One random broadcast permute: (shape, dims, dtype, view)."""
    rank = rng.randint(3, 5)
    total = rng.uniform(*SIZES[big])
    expanded = rng.randrange(rank)
    repeats = int(round(2 ** rng.uniform(1, 6)))
    weights = [rng.random() ** 2 for _ in range(rank - 1)]
    rest = total - math.log2(repeats)
    sizes = [max(2, int(round(2 ** (rest * w / sum(weights))))) for w in weights]
    shape = tuple(sizes[:expanded] + [repeats] + sizes[expanded:])
    dims = list(range(rank))
    while dims == list(range(rank)):
        rng.shuffle(dims)
    return shape, tuple(dims), rng.choice(DTYPES), View("expand", expanded, 0)


def kept(info: dict, far: bool) -> bool:
    """Whether the grid keeps a shape the H100's chooser explains as `info`: one the rule moved to
    gather, or (far) one of ATen's copy past the rule's reach, from input rows of INPUT_ROW bytes or more."""
    if not far:
        return info["kernel"] == "gather" and RULE in info["reason"]
    near = reach(info)
    return (info["kernel"] == "aten" and info["route"] != "copy" and near is not None and FAR[0] <= near < FAR[1]
            and info["dims"][info["n"]][0] * info["element_size"] >= INPUT_ROW)


def grid(seed: int, big: bool = False, far: bool = False, want: int = 400, tries: Optional[int] = None) -> list[dict]:
    """The shapes of `tries` draws that the grid keeps (at most `want`), as rows without timings,
    copy routes and transposes alternating."""
    tries = tries or (80000 if far else 20000)  # one draw in about 500 lands in the far band
    rng = random.Random(seed)
    low, high = SIZES[big]
    rows = []
    for _ in range(tries):
        shape, dims, dtype, view = draw(rng, big)
        if not 2 ** low <= math.prod(shape) <= 2 ** high:
            continue
        info = ext().explain(meta_input(shape, dtype, view), list(dims))["cuda"]
        if kept(info, far):
            rows.append({"shape": list(shape), "dims": list(dims), "dtype": dtype, "view": ["expand", view.dim, 0],
                         "route": info["route"], "reach": reach(info), "class": info["class"]})
            if len(rows) >= want:
                break
    copies = [r for r in rows if r["route"] == "copy"]
    others = [r for r in rows if r["route"] != "copy"]
    return [r for pair in itertools.zip_longest(others, copies) for r in pair if r is not None]


def measure(seed: int, budget_s: float, big: bool = False, far: bool = False) -> list[dict]:
    device, timer, start = torch.device("cuda"), do_bench_timer(5, 20), time.time()
    cells, rows = grid(seed, big, far), []
    progress = Progress(len(cells))
    for row in cells:
        if time.time() - start > budget_s:
            break
        progress.start(f"{row['shape']} {row['dims']} {row['dtype']}")
        x = make_input(Cell("near broadcast", "", tuple(row["shape"]), tuple(row["dims"]), row["dtype"],
                            View("expand", row["view"][1], 0)), device)
        ops = permute_ops(x, row["dims"], ("aten", "gather"))
        check_ops(ops, x.permute(row["dims"]), lambda name: False, f"near_broadcast.py, {row}")
        rows.append({**row, "chosen": ext().explain(x, row["dims"])["kernel"], "us": best_of_rounds(ops, timer, rounds=2)})
        del x
        progress.done()
    progress.close()
    return rows


def summary(rows: list[dict]) -> str:
    """gather against ATen's copy (geomean, how many more than 5% slower, the slowest), the
    pick against eager, and both of clone's speed, by route, element type and reach."""
    out = [f"{len(rows)} shapes.", "",
           "| shapes | count | gather / ATen's copy | more than 5% slower | slowest | pick / eager | ATen's copy, of clone | gather, of clone |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    groups = [("copy route", lambda r: r["route"] == "copy"), ("transposes", lambda r: r["route"] != "copy")]
    groups += [(d, lambda r, d=d: r["dtype"] == d) for d in DTYPES]
    groups += [(f"reach {lo}-{hi - 1}", lambda r, lo=lo, hi=hi: r["route"] != "copy" and lo <= r["reach"] < hi)
               for lo, hi in ((2, 64), (64, 256), (256, 1024), (1024, 2048), (2048, 4096))]
    for label, keep in groups + [("every", lambda r: True)]:
        some = [r for r in rows if keep(r)]
        if not some:
            continue
        speed = [r["us"]["aten"] / r["us"]["gather"] for r in some]
        of_clone = lambda op: geomean(r["us"]["clone"] / r["us"][op] for r in some)  # noqa: E731
        out.append(f"| {label} | {len(some)} | {geomean(speed):.3f} | {sum(v < 1 / 1.05 for v in speed)} | "
                   f"{min(speed):.3f} | {geomean(r['us']['eager'] / r['us']['ours'] for r in some):.3f} | "
                   f"{of_clone('aten'):.3f} | {of_clone('gather'):.3f} |")
    return "\n".join(out)


def grid_lines(seed: int, big: bool = False, far: bool = False) -> list[str]:
    """The grid's shapes in words."""
    return [f"{r['shape']} expanded in dim {r['view'][1]}, permuted {r['dims']}, {r['dtype']} ({r['route']}, "
            f"reach {r['reach']})" for r in grid(seed, big, far)]


def main(argv: Optional[Sequence[str]] = None) -> int:
    flags = {"big": "2^26-2^28 elements", "far": "ATen's copy at reaches of 1024-4095"}
    return grid_script_main(argv, __doc__, 4, grid_lines, measure, summary, flags=flags)


if __name__ == "__main__":
    sys.exit(main())
