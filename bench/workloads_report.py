"""The workloads' part of the report: the layout copies of each model's forward pass, timed
copy by copy, and summed per forward pass (each copy's time times the copies of its kind)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from bench.summary import OURS, TUNED, by_cell, summarize

PER_PASS_OPS = ("clone", "eager", OURS, TUNED)


@dataclass
class PassTime:
    """One model's layout copies in one forward pass: how many, and the µs each op takes for
    all of them (None where an op has no time on some cell: it failed, or did not run)."""

    group: str
    copies: int
    distinct: int
    us: dict[str, Optional[float]]


def pass_times(results, calls: dict[str, int]) -> list[PassTime]:
    """Per model (cell group): the sum over its cells of calls x time, per op."""
    from bench.workloads import cell_key
    groups: dict[str, PassTime] = {}
    for cell, row in by_cell(results).items():
        n = calls.get(cell_key(cell), 1)
        t = groups.setdefault(cell.group, PassTime(cell.group, 0, 0, {op: 0.0 for op in PER_PASS_OPS}))
        t.copies += n
        t.distinct += 1
        for op in PER_PASS_OPS:
            r = row.get(op)
            ok = r is not None and r.status == "ok" and t.us[op] is not None
            t.us[op] = t.us[op] + n * r.ms * 1e3 if ok else None
    return list(groups.values())


def fmt_us(v: Optional[float]) -> str:
    return "" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def speedup(t: PassTime, op: str) -> str:
    e, o = t.us.get("eager"), t.us.get(op)
    return f"{e / o:.2f}" if e and o else ""


def pass_table(times: list[PassTime], notes: dict) -> list[str]:
    from bench.report import markdown_table
    models = notes.get("workloads", {})
    ops = [op for op in PER_PASS_OPS if any(t.us.get(op) is not None for t in times)]
    header = ["model", "dtype", "one forward pass", "copies (distinct)",
              *(f"{op} µs" for op in ops), "eager / ours", *(["eager / autotuned"] if TUNED in ops else [])]
    rows = []
    for t in times:
        m = models.get(t.group, {})
        rows.append([t.group, m.get("dtype", ""), m.get("batch", ""), f"{t.copies} ({t.distinct})",
                     *(fmt_us(t.us.get(op)) for op in ops), speedup(t, OURS),
                     *([speedup(t, TUNED)] if TUNED in ops else [])])
    complete = [t for t in times if all(t.us.get(op) is not None for op in ops)]
    if len(complete) > 1:  # the models every op has a time for, summed
        total = PassTime("all", sum(t.copies for t in complete), sum(t.distinct for t in complete),
                         {op: sum(t.us[op] for t in complete) for op in ops})
        rows.append(["all", "", "", str(total.copies), *(fmt_us(total.us[op]) for op in ops),
                     speedup(total, OURS), *([speedup(total, TUNED)] if TUNED in ops else [])])
    return [markdown_table(header, rows, left_cols=4)]


def workloads_markdown(section) -> list[str]:
    """The report's "Workloads" section."""
    from bench.report import (DIMS, DTYPE, GROUP, KERNEL, NAME, SHAPE, VIEW, Column, cells_table,
                              columns_legend, markdown_table)
    from bench.sweep_report import shares_table, worst_table
    from bench.workloads import cell_key
    title = "## Workloads: the layout copies of real models' forward passes"
    notes = section.notes
    skipped_models = notes.get("skipped_models", {})
    skipped_lines = ([f"Models not run: " + "; ".join(f"{k} ({v})" for k, v in skipped_models.items()) + "."]
                     if skipped_models else [])
    if section.skipped:
        return [title, "", f"Skipped: {section.skipped}.", *([""] + skipped_lines if skipped_lines else [])]
    none = [k for k, m in notes.get("workloads", {}).items() if not m.get("copies")]
    if none:
        skipped_lines += [f"Models whose forward pass made no layout copy: {', '.join(none)}."]
    ops = tuple(spec.name for spec in section.specs)
    label = {spec.name: spec.label for spec in section.specs}
    s = summarize(section.results, ops)
    calls = notes.get("calls", {})
    CALLS = Column("copies / pass", lambda row: str(calls.get(cell_key(next(iter(row.values())).cell), "")))
    lines = [title, "", section.timing, "",
             "Each model ran one forward pass (randomly initialised, gradients off) under a dispatch "
             "mode that recorded every copy of a strided view into a new contiguous tensor "
             "(`.contiguous()`, or a `reshape` that cannot view): its sizes, strides, offset and "
             "dtype, and how often the pass made it (bench/workloads.py). Each distinct copy is one "
             "cell below, laid out exactly as the model had it: `shape` and `dims` say it as "
             "`x.permute(dims).contiguous()`, with x the copied view's dims ordered by stride, and "
             "a `strides (...)+offset` view where x is not itself contiguous (a slice of a packed "
             "qkv, say). Per forward pass, each op's time is the sum over the model's cells of "
             "copies x the cell's time; each copy is timed alone with the L2 flushed, where in the "
             "model its input may still sit in the L2.", *(x for line in skipped_lines for x in ("", line)),
             "", *pass_table(pass_times(section.results, calls), notes), "",
             f"{s.cells} distinct copies. Ours = `cute_transpose.permute` on the cell:", "",
             *shares_table(s, label), ""]
    for peer in s.worst:
        lines += [f"Worst 10 cells against {label.get(peer, peer)}:", "", *worst_table(s, peer, label), ""]
    lines += ["### Every copy", "",
              cells_table(section.results, section.specs, [GROUP, NAME, SHAPE, VIEW, DIMS, DTYPE],
                          (CALLS, KERNEL)), "",
              *columns_legend(section.specs),
              "- `copies / pass`: how many times one forward pass makes this copy"]
    return lines


def workloads_json(section) -> dict:
    """The section's notes and per-pass sums, for the JSON."""
    times = pass_times(section.results, section.notes.get("calls", {}))
    return {**section.notes,
            "per_pass_us": {t.group: {"copies": t.copies, "distinct": t.distinct, **t.us} for t in times}}
