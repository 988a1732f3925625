"""The report's charts (matplotlib, imported lazily; without it no chart is written).

- <gpu>.png: matrix bandwidth, grouped bars per dtype for the headline shapes
- <gpu>-permute.png: each permutation row's ratio to clone, per op
- <gpu>-sweep.png: the sweep's distribution: ours against torch.compile per cell, and each
  op's sorted ratios
- <gpu>-workloads.png: each model's layout copies per forward pass, ours and autotuned against
  eager, and ours against eager per copy
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from bench.cases import GOAL_RATIO_TO_CLONE, HEADLINE_SHAPES, shape_text
from bench.summary import GROUP_ORDER, OURS, by_cell, goal_met, ratio

GOAL_MARKS = {True: "✓", False: "✗", None: "–"}
LINE_STYLES = {  # ops drawn as a horizontal line over each dtype group instead of a bar
    "copy": dict(color="black", linestyle="-", linewidth=2, label="cute_transpose.copy (ceiling)"),
    "clone": dict(color="crimson", linestyle="--", linewidth=1.5, label="torch clone"),
}


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None (with a warning) when not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        warnings.warn("matplotlib is not installed: no chart written")
        return None


def save_figure(fig, path: Path) -> bool:
    """Lays out, writes and closes a chart; True (it was written)."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------
# Matrices
# --------------------------------------------------------------------------------------------

def headline_shapes(results, limit: int = 2) -> list:
    """The chart's shapes: the headline shapes that were measured, else the largest measured."""
    measured = {r.cell.shape for r in results if r.status == "ok"}
    chosen = [s for s in HEADLINE_SHAPES if s in measured]
    return chosen or sorted(measured, key=math.prod, reverse=True)[:limit]


def draw_shape(ax, shape, lookup: dict, dtypes: list[str], bar_ops: list[str], colors) -> None:
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
                ax.hlines(r.gbps, g - 0.46, g + 0.46,
                          **{k: v for k, v in style.items() if k != "label"})
    ax.set_ylim(0, ax.get_ylim()[1] * 1.06)  # headroom above the tallest bar or line
    ax.set_xticks(range(len(dtypes)), dtypes)
    ax.set_ylabel("GB/s  (2 x bytes / time)")
    ax.set_title(shape_text(shape))
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def plot_matrix_chart(results, specs, title: str, path: Path) -> bool:
    """Grouped bars (one bar per op, one group per dtype, y = GB/s) for each headline shape, with
    our copy's and torch clone's bandwidth drawn as horizontal lines over each group."""
    plt = pyplot()
    shapes = headline_shapes(results)
    if plt is None or not shapes:
        return False
    import matplotlib
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    lookup = {(r.cell.shape, r.cell.dtype, r.op): r for r in results}
    dtypes = list(dict.fromkeys(r.cell.dtype for r in results))
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


# --------------------------------------------------------------------------------------------
# Permutation rows
# --------------------------------------------------------------------------------------------

def plot_permute_chart(results, specs, title: str, path: Path) -> bool:
    """Horizontal bars, one group per row: each op's ratio to clone, with clone (1.0) and the
    goal as vertical lines."""
    plt = pyplot()
    if plt is None or not any(r.ratio for r in results):
        return False
    import matplotlib
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    rows = list(by_cell(results).values())
    bar_ops = [s.name for s in specs if s.name != "clone"]
    colors = [matplotlib.colormaps["tab10"](k) for k in range(len(bar_ops))]
    height = 0.84 / max(1, len(bar_ops))

    fig, ax = plt.subplots(figsize=(9.0, 1.5 + 0.13 * len(rows) * (len(bar_ops) + 1)))
    for g, row in enumerate(rows):
        for i, op in enumerate(bar_ops):
            r = row.get(op)
            y = g + (i - (len(bar_ops) - 1) / 2) * height
            if r is not None and r.ratio is not None:
                ax.barh(y, r.ratio, height, color=colors[i])
            elif r is not None:  # no number: say why where the bar would be
                ax.text(0.01, y, r.status.split(":")[0] if r.status != "ok" else "no clone",
                        va="center", fontsize=7, color="dimgray")
    ax.axvline(1.0, color="crimson", linestyle="--", linewidth=1.5)
    ax.axvline(GOAL_RATIO_TO_CLONE, color="black", linestyle=":", linewidth=1.5)
    labels = [f"{row_cell(row).name} {row_cell(row).dtype} {GOAL_MARKS[goal_met(row)]}"
              for row in rows]
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
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


def row_cell(row):
    return next(iter(row.values())).cell


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------

def draw_scatter(ax, rows: list, peer: str, colors: dict) -> None:
    """Ours (y) against a peer (x), one dot per cell, colored by class, with the diagonal."""
    top = 0.0
    for group, color in colors.items():
        pts = [(ratio(row, peer), ratio(row, OURS)) for row in rows
               if row_cell(row).group == group
               and ratio(row, peer) is not None and ratio(row, OURS) is not None]
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, s=14, alpha=0.7, color=color, label=f"{group} ({len(pts)})")
            top = max(top, *xs, *ys)
    top = max(1.1, top * 1.05)
    ax.plot([0, top], [0, top], color="black", linewidth=1, label="ours = " + peer)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"{peer}: ratio to clone")
    ax.set_ylabel("ours (cute_transpose.permute): ratio to clone")
    ax.set_title(f"ours against {peer}, one dot per cell (above the line: ours faster)",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")


def draw_sorted(ax, rows: list, ops: list[str]) -> None:
    """Each op's ratios to clone, sorted: how much of the sweep reaches a given ratio."""
    for op in ops:
        values = sorted(r for row in rows if (r := ratio(row, op)) is not None)
        if values:
            xs = [(i + 0.5) / len(values) for i in range(len(values))]
            ax.plot(xs, values, label=f"{op} ({len(values)} cells)",
                    linewidth=2.5 if op == OURS else 1.5)
    ax.axhline(1.0, color="crimson", linestyle="--", linewidth=1, label="torch clone")
    ax.set_xlabel("fraction of the cells the op ran on (sorted by ratio)")
    ax.set_ylabel("ratio to clone = time(clone) / time(op)")
    ax.set_title("sorted ratios per op (higher is better)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def plot_sweep_chart(results, specs, title: str, path: Path) -> bool:
    """Left: ours against torch.compile per cell (against eager where compile did not run).
    Right: sorted ratio curves per op."""
    plt = pyplot()
    if plt is None or not any(r.ratio for r in results):
        return False
    import matplotlib
    rows = list(by_cell(results).values())
    names = [s.name for s in specs]
    peer = "compile" if any(ratio(row, "compile") for row in rows) else "eager"
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.0, 5.8))
    draw_scatter(left, rows, peer, group_colors(rows))
    draw_sorted(right, rows, [n for n in names if n != "clone"])
    fig.suptitle(title)
    return save_figure(fig, path)


def group_colors(rows: list) -> dict:
    """A color per cell group: the sweep's classes in their order, then any others."""
    import matplotlib
    present = {row_cell(row).group for row in rows}
    groups = [g for g in GROUP_ORDER if g in present] + sorted(present - set(GROUP_ORDER))
    cmap = matplotlib.colormaps["tab10" if len(groups) <= 10 else "tab20"]
    return {g: cmap(k % cmap.N) for k, g in enumerate(groups)}


# --------------------------------------------------------------------------------------------
# The workloads
# --------------------------------------------------------------------------------------------

def plot_workloads_chart(results, specs, title: str, path: Path, calls: dict) -> bool:
    """Left: each model's layout copies in one forward pass, time against eager's (bars).
    Right: ours against eager, one dot per distinct copy, colored by model."""
    from bench.workloads_report import pass_times
    plt = pyplot()
    if plt is None or not any(r.ratio for r in results):
        return False
    rows = list(by_cell(results).values())
    times = [t for t in pass_times(results, calls) if t.us.get("eager")]
    ops = [op for op in (OURS, "autotuned") if any(t.us.get(op) for t in times)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.0, 0.9 + 0.42 * max(len(times), 10)))
    height = 0.8 / max(1, len(ops))
    for k, op in enumerate(ops):
        ys = [i + (k - (len(ops) - 1) / 2) * height for i in range(len(times))]
        speed = [t.us["eager"] / t.us[op] if t.us.get(op) else 0.0 for t in times]
        bars = left.barh(ys, speed, height=height, label=op)
        for bar, t, v in zip(bars, times, speed):
            if v:
                left.text(v + 0.01, bar.get_y() + bar.get_height() / 2,
                          f"{v:.2f} ({t.us[op]:.0f} µs)", va="center", fontsize=7)
    left.axvline(1.0, color="black", linewidth=1, label="eager")
    left.set_xlim(0, 1.3 * max([1.0] + [t.us["eager"] / t.us[op] for t in times for op in ops if t.us.get(op)]))
    left.set_yticks(range(len(times)), [f"{t.group}\n{t.copies} copies" for t in times], fontsize=7)
    left.invert_yaxis()
    left.set_xlabel("time(eager) / time(op), all of one forward pass's layout copies")
    left.set_title("per forward pass (right of the line: faster than eager)", fontsize=9)
    left.grid(axis="x", alpha=0.3)
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3)
    draw_scatter(right, rows, "eager", group_colors(rows))
    fig.suptitle(title)
    return save_figure(fig, path)
