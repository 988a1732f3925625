"""The sweep's part of the report: the summary (win shares, geomeans, classes, worst cells),
the kernels our op chose, and the table of every cell."""

from __future__ import annotations

import collections
import dataclasses

from bench.cases import dims_text, shape_text
from bench.summary import LONG_CELL_MS, OURS, PEERS, SHORT_CELL_MS, TOLERANCE, TUNED, SweepSummary, summarize

VIEW_LEGEND = (
    "Each row is one cell: `shape` is the input's (the view's, when strided), `dims` the "
    "permutation, and the result is `x.permute(dims).contiguous()` of a fresh random input. "
    "Views (the `view` column; empty = a contiguous input): `offset dD+K` = a slice starting K "
    "elements in along dim D (a storage offset; on the innermost dim the rows are unaligned "
    "too), `step dD:K` = every K-th element along dim D, `T(A,B) base` = a base stored with "
    "dims A and B swapped, `expand dD` = dim D broadcast (stride 0).")
CLASS_LEGEND = (
    "Classes: `TTC` = the TTC/HPTT/cuTT suite (19 permutations x 3 shapes, float32, "
    "/work/shared/TTC-SUITE.md, in torch's row-major terms); `images` = NCHW <-> NHWC image "
    "batches, C = 2-4 (C = 1 is already contiguous when permuted, so it drops out); `random` = "
    "the seeded random sweep, ranks 3-6 (bench/sweep_cases.py); `2-D` = its matrices, "
    "tall-skinny and short-wide among them. Inductor generates no code for complex dtypes, so "
    "compile's complex128 cells run ATen's copy.")


def fmt(v) -> str:
    return "" if v is None else f"{v:.2f}"


def shares_table(s: SweepSummary, label: dict) -> list[str]:
    from bench.report import markdown_table
    peers = list(s.shares)
    rows = [["ours >= peer", *(s.shares[p].text(s.shares[p].wins) for p in peers)],
            [f"ours >= peer - {TOLERANCE}", *(s.shares[p].text(s.shares[p].near) for p in peers)]]
    if s.tuned:
        rows += [["ours autotuned >= peer", *(s.tuned[p].text(s.tuned[p].wins) for p in peers)],
                 [f"ours autotuned >= peer - {TOLERANCE}", *(s.tuned[p].text(s.tuned[p].near) for p in peers)]]
    if s.long:
        rows += [[f"ours >= peer - {TOLERANCE}, cells of clone >= {LONG_CELL_MS * 1e3:.0f} us",
                  *(s.long[p].text(s.long[p].near) for p in peers)]]
    if s.paced:
        rows += [[f"ours >= peer - {TOLERANCE}, short cells timed paced",
                  *(s.paced[p].text(s.paced[p].near) for p in peers)]]
    return [markdown_table(["cells where", *(label.get(p, p) for p in peers)], rows)]


def geomean_table(s: SweepSummary, label: dict) -> list[str]:
    from bench.report import markdown_table
    ops = list(s.geomeans)
    rows = [["all", str(s.cells), *(fmt(s.geomeans[o]) for o in ops)]]
    rows += [[c.group, str(c.cells), *(fmt(c.geomeans[o]) for o in ops)] for c in s.classes]
    return [markdown_table(["class", "cells", *(label.get(o, o) for o in ops)], rows)]


def class_shares_table(s: SweepSummary, label: dict) -> list[str]:
    from bench.report import markdown_table
    peers = list(s.shares)
    rows = [[c.group, *(c.shares[p].text(c.shares[p].wins) for p in peers),
             *(c.shares[p].text(c.shares[p].near) for p in peers)] for c in s.classes]
    header = ["class", *(f"ours >= {label.get(p, p)}" for p in peers),
              *(f"ours >= {label.get(p, p)} - {TOLERANCE}" for p in peers)]
    return [markdown_table(header, rows)]


def worst_table(s: SweepSummary, peer: str, label: dict) -> list[str]:
    from bench.report import explain_text, markdown_table
    rows = [[w.cell.group, w.cell.name, shape_text(w.cell.shape), w.cell.view.text(),
             dims_text(w.cell.dims), w.cell.dtype, fmt(w.ours) or "failed", fmt(w.peer),
             fmt(w.rel), explain_text(w.explain)]
            for w in s.worst.get(peer, [])]
    if not rows:
        return [f"No cell has both ours and {peer} measured."]
    header = ["class", "cell", "shape", "view", "dims", "dtype", "ours", label.get(peer, peer),
              f"time({peer}) / time(ours)", "kernel (explain)"]
    if not any(r[-1] for r in rows):
        header, rows = header[:-1], [r[:-1] for r in rows]
    return [markdown_table(header, rows, left_cols=6)]


def kernel_counts(results) -> dict[str, int]:
    """How often our op chose each kernel (from cute_transpose.explain)."""
    counts: collections.Counter = collections.Counter()
    for r in results:
        if r.op == OURS and r.explain and "kernel" in r.explain:
            counts[str(r.explain["kernel"])] += 1
    return dict(counts.most_common())


def tuned_kernel(row) -> str:
    """The kernel autotuning picked for the cell (its explain, taken with autotuning on)."""
    r = row.get(TUNED)
    return str(r.explain.get("kernel", "")) if r is not None and r.explain else ""


def sweep_markdown(section) -> list[str]:
    """The report's "Sweep" section."""
    from bench.report import (DIMS, DTYPE, GROUP, KERNEL, NAME, SHAPE, VIEW, Column, cells_table,
                              columns_legend, markdown_table)
    TUNED_KERNEL = Column("autotuned kernel", tuned_kernel)
    title = "## Sweep: `x.permute(dims).contiguous()` on the TTC suite, image batches and " \
            "random shapes"
    if section.skipped:
        return [title, "", f"Skipped: {section.skipped}."]
    ops = tuple(spec.name for spec in section.specs)
    label = {spec.name: spec.label for spec in section.specs}
    s = summarize(section.results, ops)
    notes = section.notes
    lines = [title, "", section.timing]
    if notes.get("compile_graphs") is not None:
        lines += ["", f"torch.compile compiled {notes['compile_graphs']} graphs."]
    slow = {k: v for k, v in notes.get("first_call_s", {}).items() if v >= 0.5}
    if slow:
        lines += ["", "Seconds spent in each op's first (checked) calls, where compilation and "
                  "autotuning happen: " + ", ".join(f"{k} {v:.0f}" for k, v in slow.items()) + "."]
    lines += ["", f"{s.cells} cells. Ours = `cute_transpose.permute`. `ours >= peer` compares "
              "ratios to clone from the same cell; `- 0.01` allows ours to be slower by a "
              "hundredth of clone's speed. A peer's share counts the cells where both have a "
              "number (a failed ours counts as a loss). The last row counts only cells whose "
              f"clone takes {LONG_CELL_MS * 1e3:.0f} us or more, where an op's host time stays "
              "hidden behind the L2 flush before each call (under it, torch.compile's "
              "dynamic-shape graphs can measure their host time: bench/summary.py)."
              + (" The row timed paced takes every cell, with the paced times of the short cells "
                 f"(whose fastest op takes under {SHORT_CELL_MS * 1e3:.0f} us; harness.paced_timer: every op's launch "
                 "queued well before the GPU reaches it; in do_bench an op whose host path "
                 "takes about as long as the flush launches just in time, and such a launch "
                 "measured about 0.4 us less for the same kernel: docs/PERFORMANCE.md)."
                 if s.paced else ""), "",
              *shares_table(s, label), "",
              "Geomean ratio to clone, over the cells where the column has a number:", "",
              *geomean_table(s, label), "", "Shares per class:", "",
              *class_shares_table(s, label)]
    for peer in s.worst:
        lines += ["", f"Worst 10 cells against {label.get(peer, peer)}:", "",
                  *worst_table(s, peer, label)]
    counts = kernel_counts(section.results)
    if counts:
        lines += ["", "Kernels our op chose (`cute_transpose.explain`):", "",
                  markdown_table(["kernel", "cells"], [[k, str(n)] for k, n in counts.items()])]
    lines += ["", "### Every cell", "", CLASS_LEGEND, "", VIEW_LEGEND, "",
              cells_table(section.results, section.specs,
                          [GROUP, NAME, SHAPE, VIEW, DIMS, DTYPE],
                          (KERNEL, *((TUNED_KERNEL,) if TUNED in ops else ()))), "",
              *columns_legend(section.specs)]
    return lines


def summary_json(results) -> dict:
    """The summary's numbers for the JSON."""
    s = summarize(results)
    share = lambda sh: dataclasses.asdict(sh)  # noqa: E731
    return {
        "cells": s.cells,
        "geomean_ratio": s.geomeans,
        "shares": {p: share(v) for p, v in s.shares.items()},
        "autotuned_shares": {p: share(v) for p, v in s.tuned.items()},
        "long_cell_ms": LONG_CELL_MS,
        "long_shares": {p: share(v) for p, v in s.long.items()},
        "paced_shares": {p: share(v) for p, v in s.paced.items()},
        "tolerance": TOLERANCE,
        "classes": [{"group": c.group, "cells": c.cells, "geomean_ratio": c.geomeans,
                     "shares": {p: share(v) for p, v in c.shares.items()}} for c in s.classes],
        "worst": {p: [{"case": w.cell.name, "shape": w.cell.shape, "dims": w.cell.dims,
                       "dtype": w.cell.dtype, "view": w.cell.view.text(), "ours": w.ours,
                       "peer": w.peer, "peer_time_over_ours": w.rel} for w in ws]
                  for p, ws in s.worst.items()},
        "kernels": kernel_counts(results),
        "peers": list(PEERS),
    }
