"""Statistics over result rows: geomeans, win shares, worst cells, per-class breakdowns, and
the permutation rows' goal verdicts.

All ratios are time(torch clone) / time(op) from the same cell (higher is better), so ours
beats a peer on a cell when our ratio is at least the peer's. Plain Python over `Result` rows.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from bench.cases import GOAL_RATIO_TO_CLONE, Cell

OURS = "permute"
TUNED = "autotuned"       # ours with cute_transpose.autotune() on
PEERS = ("eager", "compile", "triton")
TOLERANCE = 0.01          # "ours >= peer - 0.01": within one hundredth of clone's speed
# Cells whose clone takes at least this long: there an op's host time (Python, guards, dispatch)
# stays hidden behind do_bench's L2 flush before each call, and the timing is the GPU's. Under
# it a peer with a slow host path -- torch.compile's dynamic-shape graphs -- measures its host:
# between two sweeps of the same code its ratio moved by more than 10% on 132 of 322 cells, from
# 0.06 to 1.20 of clone on the same few-microsecond cell.
LONG_CELL_MS = 0.020
# Sweep cells whose fastest op takes less than this are timed in more rounds (bench.py's
# --sweep-short-rounds), and paced (harness.paced_timer).
SHORT_CELL_MS = 0.020
GROUP_ORDER = ("TTC", "random", "images", "2-D")

Row = dict  # op name -> Result, for one cell


def geomean(values: Iterable[float]) -> Optional[float]:
    values = list(values)
    return math.exp(statistics.fmean(map(math.log, values))) if values else None


def by_cell(results: Iterable) -> dict[Cell, Row]:
    """The results of each cell, in run order, by op."""
    rows: dict[Cell, Row] = {}
    for r in results:
        rows.setdefault(r.cell, {})[r.op] = r
    return rows


def ratio(row: Row, op: str) -> Optional[float]:
    r = row.get(op)
    return r.ratio if r is not None else None


def paced_ratio(row: Row, op: str) -> Optional[float]:
    """The op's ratio to clone by the paced timing where the cell has one (its short cells:
    harness.paced_timer), else by do_bench."""
    r = row.get(op)
    if r is None:
        return None
    return r.paced_ratio if r.paced_ratio is not None else r.ratio


Value = Callable[[Row, str], Optional[float]]  # ratio or paced_ratio


def ours_failed(row: Row, ours: str = OURS) -> bool:
    """Our op ran on the cell but has no number: a wrong result or an error."""
    r = row.get(ours)
    return r is not None and r.status in ("WRONG", "error", "n/a")


def ours_vs(row: Row, peer: str, ours: str = OURS, value: Value = ratio) -> Optional[float]:
    """time(peer) / time(ours) on one cell: > 1 where ours is faster; 0 where ours failed;
    None where either has no number for another reason (skipped, not applicable)."""
    p = value(row, peer)
    if p is None or ours not in row:
        return None
    if ours_failed(row, ours):
        return 0.0
    o = value(row, ours)
    return o / p if o is not None else None


@dataclass
class Share:
    """How often ours >= a peer, over the cells where both have a number (or ours failed)."""

    peer: str
    compared: int = 0
    wins: int = 0             # ratio(ours) >= ratio(peer)
    near: int = 0             # ratio(ours) >= ratio(peer) - TOLERANCE

    def text(self, n: int) -> str:
        return f"{n}/{self.compared} ({n / self.compared:.0%})" if self.compared else "–"


def share(rows: Iterable[Row], peer: str, tolerance: float = TOLERANCE, ours: str = OURS,
          value: Value = ratio) -> Share:
    s = Share(peer)
    for row in rows:
        rel = ours_vs(row, peer, ours, value)
        if rel is None:
            continue
        s.compared += 1
        o, p = (value(row, ours) or 0.0), value(row, peer)
        s.wins += o >= p
        s.near += o >= p - tolerance
    return s


def geomeans(rows: list[Row], ops: Iterable[str]) -> dict[str, Optional[float]]:
    """Geomean ratio to clone per op, over the cells where that op has a number."""
    return {op: geomean(r for row in rows if (r := ratio(row, op)) is not None) for op in ops}


@dataclass
class Worst:
    cell: Cell
    ours: Optional[float]
    peer: float
    rel: float                # time(peer) / time(ours)
    explain: Optional[dict] = None  # the kernel our op chose, where known


def worst(rows: Iterable[Row], peer: str, n: int = 10) -> list[Worst]:
    """The n cells where ours does worst against `peer` (lowest time(peer) / time(ours))."""
    found = [Worst(next(iter(row.values())).cell, ratio(row, OURS), ratio(row, peer), rel,
                   row[OURS].explain)
             for row in rows if (rel := ours_vs(row, peer)) is not None]
    return sorted(found, key=lambda w: w.rel)[:n]


@dataclass
class ClassStats:
    group: str
    cells: int
    geomeans: dict[str, Optional[float]]
    shares: dict[str, Share]


@dataclass
class SweepSummary:
    cells: int
    geomeans: dict[str, Optional[float]]
    shares: dict[str, Share]
    worst: dict[str, list[Worst]] = field(default_factory=dict)
    classes: list[ClassStats] = field(default_factory=list)
    tuned: dict[str, Share] = field(default_factory=dict)  # the same shares for TUNED, where it ran
    long: dict[str, Share] = field(default_factory=dict)   # the shares over cells of LONG_CELL_MS or more
    paced: dict[str, Share] = field(default_factory=dict)  # the shares by paced_ratio, where cells have one


def summarize(results: Iterable, ops: tuple[str, ...] = ("clone", *PEERS, OURS, TUNED),
              worst_n: int = 10) -> SweepSummary:
    """The sweep's summary: overall, the worst cells against eager and compile, and per class."""
    rows = list(by_cell(results).values())
    peers = [p for p in PEERS if p in ops]
    groups = {next(iter(row.values())).cell.group for row in rows}
    order = [g for g in GROUP_ORDER if g in groups] + sorted(groups - set(GROUP_ORDER))
    classes = []
    for g in order:
        members = [row for row in rows if next(iter(row.values())).cell.group == g]
        classes.append(ClassStats(g, len(members), geomeans(members, ops),
                                  {p: share(members, p) for p in peers}))
    return SweepSummary(
        cells=len(rows),
        geomeans=geomeans(rows, ops),
        shares={p: share(rows, p) for p in peers},
        worst={p: worst(rows, p, worst_n) for p in ("eager", "compile") if p in peers},
        classes=classes,
        tuned={p: share(rows, p, ours=TUNED) for p in peers} if TUNED in ops else {},
        long={p: share([row for row in rows if long_cell(row)], p) for p in peers},
        paced=({p: share(rows, p, value=paced_ratio) for p in peers}
               if any(r.paced_ratio is not None for row in rows for r in row.values()) else {}),
    )


def long_cell(row: Row) -> bool:
    """Whether the cell's clone took LONG_CELL_MS or more."""
    clone = row.get("clone")
    return clone is not None and clone.ms is not None and clone.ms >= LONG_CELL_MS


# --------------------------------------------------------------------------------------------
# The permutation rows' goal
# --------------------------------------------------------------------------------------------

def goal_met(row: Row) -> Optional[bool]:
    """One permutation row against GOAL_TEXT. False as soon as one part of the goal is missed
    (a WRONG or failed permute misses it); None where a number the verdict needs is missing: a
    skipped row, a failed clone or torch.compile, or the CPU demo (no torch.compile)."""
    p, c = row.get(OURS), row.get("compile")
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
