#!/usr/bin/env python3
"""The Tile kernel's five tile shapes on a seeded grid of random batched transposes, beside the
shape the chooser picks (csrc/choose.cpp, tile_shape): the measurement behind that rule.

    PYTHONPATH=python python3 bench/tile_shapes.py [--shapes 360] [--seed 7] [--out FILE.json]
    PYTHONPATH=python python3 bench/tile_shapes.py --small [--shapes 300] [--seed 8]
    PYTHONPATH=python python3 bench/tile_shapes.py --mid [--shapes 150] [--seed 11]

Each shape: an element size of 1-16 bytes (in turn), m and n of 8-4096 elements (log-uniform,
whole 16-byte vectors), a batch that brings the tensor to 64-256 MiB, as (B, m, n) permuted
(0, 2, 1) or (A, m, B, n) permuted (2, 0, 3, 1). Every shape the Tile kernel can run in a given
tile shape (tiles at least a quarter full) is checked bit-exactly and timed beside clone
(do_bench median, L2 flushed). The summary: the geomean over the grid of each shape's time and
of the chooser's pick as a share of the best shape's speed on each tensor.

--small: small work instead, 2^16-2^20 elements with m and n of 8-2048, and three more
candidates: the Small tile shape (a quarter of the square tile), the lean kernel and ATen's copy
(csrc/choose.cpp, small_transpose, says which small work runs). The summary adds each
candidate's speed against ATen's copy by element count (the measurement behind that rule), and
the lean kernel's against what `permute` ran. --mid: the same on 2^20-2^22 elements, just above
small work.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.harness import Progress, do_bench_timer, ext, random_input, same_bits
from bench.summary import geomean

SHAPES = ("square", "tall", "wide", "narrow", "short")
SMALL_SHAPES = SHAPES + ("small",)
OTHERS = ("lean", "aten")  # --small: the kernels timed beside the tile shapes
DTYPES = (torch.uint8, torch.bfloat16, torch.float32, torch.float64, torch.complex128)


SMALL_BAND = (16, 20)  # --small: log2 of the element counts
MID_BAND = (20, 22)    # --mid: just above small work


def grid(count: int, seed: int, small: bool = False,
         band: tuple[int, int] = SMALL_BAND) -> list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype]]:
    """(shape, dims, dtype) of `count` random batched transposes: 64-256 MiB, or with `small`
    2^band[0]-2^band[1] elements."""
    rng = random.Random(seed)
    cells = []
    for i in range(count):
        dtype = DTYPES[i % len(DTYPES)]
        E = torch.empty((), dtype=dtype).element_size()
        V = max(1, 16 // E)
        elements = 2 ** rng.uniform(*band) if small else 2 ** rng.uniform(26, 28) / E

        def side() -> int:
            return max(V, round(2 ** rng.uniform(3, 11 if small and band == SMALL_BAND else 12) / V) * V)
        m, n = side(), side()
        while m * n > elements:
            m = max(V, m // 2 // V * V)
        batch = max(1, int(elements // (m * n)))
        if batch >= 4 and rng.random() < 0.5:
            a = max(2, round(batch ** rng.uniform(0.2, 0.8)))
            cells.append(((a, m, max(1, batch // a), n), (2, 0, 3, 1), dtype))
        else:
            cells.append(((batch, m, n), (0, 2, 1), dtype))
    return cells


def picked_shape(x: torch.Tensor, dims: Sequence[int]) -> Optional[str]:
    """The tile shape the chooser gives the Tile kernel on permute(x, dims) (None: no Tile)."""
    try:
        config = json.loads(torch.ops.cute_transpose._explain(x, list(dims), 90, "tile"))["config"]
    except RuntimeError:  # the Tile kernel cannot run it
        return None
    return next((s for s in SHAPES if f" {s} tile" in config), None)


def chosen(info: dict) -> str:
    """What permute runs, in the names of `ratios`: "aten", a tile shape, or another kernel."""
    info = info.get("cuda", info)
    if info["kernel"] != "tile":
        return info["kernel"]
    return next((s for s in SMALL_SHAPES if f" {s} tile" in info["config"]), "tile")


def measure(count: int, seed: int, small: bool = False, band: tuple[int, int] = SMALL_BAND) -> list[dict]:
    cute_transpose = ext()
    device = torch.device("cuda")
    timer = do_bench_timer(8, 30)
    rows = []
    progress = Progress(count)
    for shape, dims, dtype in grid(count, seed, small, band):
        progress.start(f"{shape} {dims} {dtype}")
        x = random_input(shape, dtype, device)
        expected = x.permute(dims)
        clone_ms = timer(lambda: x.clone())
        ratios = {}
        for s in (SMALL_SHAPES + OTHERS) if small else SHAPES:
            name = s if s in OTHERS else f"tile/{s}"
            try:
                out = torch.ops.cute_transpose._permute_with(x, list(dims), name)
            except RuntimeError:  # tiles less than a quarter full, or no vectors fit
                continue
            if not same_bits(out, expected):
                raise SystemExit(f"tile_shapes.py: {name} WRONG on {shape} {dims} {dtype}")
            del out
            ratios[s] = clone_ms / timer(lambda name=name: torch.ops.cute_transpose._permute_with(x, list(dims), name))
        rows.append({"shape": shape, "dims": dims, "dtype": str(dtype).removeprefix("torch."),
                     "picked": picked_shape(x.to("meta"), dims), "ratios": ratios,
                     "chosen": chosen(cute_transpose.explain(x, list(dims)))})
        del x, expected
        progress.done()
    progress.close()
    return rows


def best_tile(row: dict) -> float:
    """The best tile shape's ratio on a row (0: none ran)."""
    return max((v for k, v in row["ratios"].items() if k not in OTHERS), default=0.0)


def small_summary(rows: list[dict]) -> str:
    """--small: each candidate's speed against ATen's copy (geomean, and how many shapes ran it
    more than 5% slower), by element count: under 2^18, 2^18-2^19, 2^19-2^20."""
    out = ["", "Against ATen's copy (geomean of speed ratios; shapes more than 5% slower):", "",
           "| elements | shapes | " + " | ".join(SMALL_SHAPES) + " | best tile shape | lean |",
           "|---|---:|" + "---:|" * (len(SMALL_SHAPES) + 2)]
    mid = any(math.prod(r["shape"]) >= 2 ** SMALL_BAND[1] for r in rows)  # --mid
    bands = ((19, 20), (20, 21), (21, 22)) if mid else ((0, 18), (18, 19), (19, 20))
    for lo, hi in bands:
        band = [r for r in rows if "aten" in r["ratios"] and 2 ** lo <= math.prod(r["shape"]) < 2 ** hi]
        cells = []
        for s in SMALL_SHAPES + ("best", "lean"):
            vs = [(best_tile(r) if s == "best" else r["ratios"][s]) / r["ratios"]["aten"] for r in band
                  if (s in r["ratios"] or (s == "best" and best_tile(r)))]
            cells.append(f"{geomean(vs) or math.nan:.2f} ({sum(v < 0.95 for v in vs)}/{len(vs)})")
        out.append(f"| {f'2^{lo}-2^{hi}' if lo else f'under 2^{hi}'} | {len(band)} | " + " | ".join(cells) + " |")
    picked = [(r["chosen"], r["ratios"][r["chosen"]] / r["ratios"]["aten"]) for r in rows
              if "aten" in r["ratios"] and r["chosen"] in r["ratios"]]
    picks = [v for _, v in picked]
    tiles = [v for kernel, v in picked if kernel != "aten"]
    lean = [r["ratios"]["lean"] / r["ratios"][r["chosen"]] for r in rows if "lean" in r["ratios"] and r["chosen"] in r["ratios"]]
    out += ["", f"lean against permute's pick: {geomean(lean) or math.nan:.3f} x over {len(lean)} shapes, "
            f"{sum(v < 0.95 for v in lean)} more than 5% slower, {sum(v > 1.05 for v in lean)} more than 5% faster"]
    out += ["", f"permute's pick (csrc/choose.cpp, small_transpose): {geomean(picks) or math.nan:.3f} x "
            f"ATen's copy over {len(picks)} shapes, {sum(v < 0.95 for v in picks)} more than 5% slower; "
            f"on the {len(tiles)} where it runs a kernel of ours {geomean(tiles) or math.nan:.3f} x "
            f"(worst {min(tiles, default=math.nan):.2f} x)"]
    return "\n".join(out)


def summary(rows: list[dict], small: bool = False) -> str:
    """Per tile shape and for the chooser's pick: the geomean, over the tensors where two or more
    shapes ran, of its speed as a share of the best shape's, and how many fell under 0.95."""
    every = rows
    rows = [dict(r, ratios={k: v for k, v in r["ratios"].items() if k not in OTHERS}) for r in rows]
    rows = [r for r in rows if len(r["ratios"]) >= 2]

    def line(name: str, share: list[float]) -> str:
        return f"| {name:8s} | {len(share):5d} | {geomean(share) or math.nan:.3f} | {sum(s < 0.95 for s in share):5d} |"
    out = [f"{len(rows)} tensors where two or more tile shapes run.", "",
           "| shape    | ran   | share of best | under 0.95 |", "|---|---:|---:|---:|"]
    for s in SMALL_SHAPES if small else SHAPES:
        out.append(line(s, [r["ratios"][s] / max(r["ratios"].values()) for r in rows if s in r["ratios"]]))
    out.append(line("picked", [r["ratios"][r["picked"]] / max(r["ratios"].values())
                               for r in rows if r["picked"] in r["ratios"]]))
    return "\n".join(out) + (small_summary(every) if small else "")


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", type=int, default=360, help="random tensors [360]")
    p.add_argument("--seed", type=int, default=7, help="grid seed [7]")
    p.add_argument("--small", action="store_true", help="small work: 2^16-2^20 elements, with Small tiles, lean and ATen's copy")
    p.add_argument("--mid", action="store_true", help="as --small, on 2^20-2^22 elements")
    p.add_argument("--out", type=Path, help="also write the measurements as JSON")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("tile_shapes.py: needs a CUDA GPU")
    small = args.small or args.mid
    rows = measure(args.shapes, args.seed, small, MID_BAND if args.mid else SMALL_BAND)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print(summary(rows, small))
    return 0


if __name__ == "__main__":
    sys.exit(main())
