"""The report: one table writer for every section, each section's markdown, the JSON, and the
files under bench/results.

Every table has one row per cell and one column per op; a cell reads ``GB/s (ratio)``, with
GB/s = 2 x bytes / time and ratio = time(torch clone) / time(op) from the same cell (higher is
better). A status replaces the number where the op has none: WRONG (failed the bit-exact check,
not timed), error, n/a (the op does not support the cell), skipped (too large for free memory,
or a permute that is already contiguous).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from bench.cases import GOAL_TEXT, TINY_SHAPE, Cell, View, dims_text, shape_text
from bench.harness import OpSpec, Result
from bench.summary import Row, by_cell, geomean, goal_met, ratio
from bench import sweep_report, workloads_report


@dataclass
class Section:
    """One section of the benchmark: its cells and ops, how it was timed, what came out."""

    key: str                        # matrix | permute | sweep | workloads | cpu
    cells: list[Cell]
    specs: list[OpSpec]
    timing: str = ""                # how the section was timed, for its header
    results: list[Result] = field(default_factory=list)
    skipped: str = ""               # why the section did not run ("" when it ran)
    notes: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# The table writer
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """A descriptive column: its header and its text for one row (the ops' results by name)."""

    header: str
    text: Callable[[Row], str]


def format_gbps(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def cell_text(r: Result) -> str:
    """'GB/s (ratio)' for a measured op, else its status in one word."""
    if r.status != "ok":
        return r.status.split(":")[0]
    return format_gbps(r.gbps) + (f" ({r.ratio:.2f})" if r.ratio is not None else "")


def markdown_table(header: list[str], rows: list[list[str]], left_cols: int = 1) -> str:
    """A column-aligned markdown table; columns from `left_cols` on are right-aligned."""
    widths = [max(map(len, col)) for col in zip(header, *rows)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i < left_cols else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 2) if i < left_cols else "-" * (w + 1) + ":"
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *map(line, rows)])


def cells_table(results: list[Result], specs: list[OpSpec], lead: list[Column],
                trail: tuple[Column, ...] = (), footer: bool = True) -> str:
    """Rows = cells (in run order), columns = the lead columns, one per op, then the trail
    columns; a last row with each op's geomean ratio to clone."""
    rows = by_cell(results).values()
    trail = tuple(c for c in trail if any(c.text(row) for row in rows))  # drop empty columns
    lines = [[c.text(row) for c in lead]
             + [cell_text(row[s.name]) if s.name in row else "" for s in specs]
             + [c.text(row) for c in trail] for row in rows]
    if footer:
        means = [geomean(r for row in rows if (r := ratio(row, s.name)) is not None)
                 for s in specs]
        lines.append(["geomean ratio", *[""] * (len(lead) - 1),
                      *(f"{g:.2f}" if g else "" for g in means), *[""] * len(trail)])
    return markdown_table([c.header for c in lead] + [s.label for s in specs]
                          + [c.header for c in trail], lines, left_cols=len(lead))


def first(row: Row) -> Result:
    return next(iter(row.values()))


def explained(row: Row) -> Optional[dict]:
    return next((r.explain for r in row.values() if r.explain), None)


def kernel_text(row: Row) -> str:
    """The kernel our op chose, from cute_transpose.explain ('' where the build has none)."""
    return explain_text(explained(row))


def explain_text(info: Optional[dict]) -> str:
    """'kernel k=v,...' from an explain() dict."""
    if not info:
        return ""
    if "error" in info:
        return "explain: " + info["error"][:40]
    config = info.get("config")
    config = "" if config in (None, "", {}) else " " + (
        ",".join(f"{k}={v}" for k, v in config.items()) if isinstance(config, dict) else str(config))
    return f"{info.get('kernel', '?')}{config}"


SHAPE = Column("shape", lambda row: shape_text(first(row).cell.shape))
DTYPE = Column("dtype", lambda row: first(row).cell.dtype)
DIMS = Column("dims", lambda row: dims_text(first(row).cell.dims))
NAME = Column("row", lambda row: first(row).cell.name)
VIEW = Column("view", lambda row: first(row).cell.view.text())
GROUP = Column("class", lambda row: first(row).cell.group)
KERNEL = Column("kernel (explain)", kernel_text)


def columns_legend(specs: list[OpSpec]) -> list[str]:
    return ["Columns:", *(f"- `{s.label}`: {s.description}" for s in specs)]


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------

def matrix_markdown(section: Section, tiny: list[Result], tiny_calls: int) -> list[str]:
    lines = ["## Matrices: `x.transpose(-2, -1).contiguous()`", "", section.timing, "",
             cells_table(section.results, section.specs, [SHAPE, DTYPE]), "",
             *columns_legend(section.specs)]
    if tiny:
        rows = [[r.op, f"{r.ms * 1e3:.2f}" if r.status == "ok" else r.status] for r in tiny]
        lines += ["", f"## Host-inclusive time per call, {shape_text(TINY_SHAPE)} float32 "
                      f"({tiny_calls} back-to-back calls between two synchronisations)", "",
                  markdown_table(["op", "µs / call"], rows)]
    return lines


GOAL_MARKS = {True: "✓", False: "✗", None: "–"}
GOAL = Column("goal", lambda row: GOAL_MARKS[goal_met(row)])
PERMUTE_SHAPE = Column("shape", lambda row: shape_text(first(row).cell.shape)
                       + (" strided" if first(row).cell.view.kind != "contiguous" else ""))


def permute_markdown(section: Section) -> list[str]:
    title = "## Permutations: `x.permute(dims).contiguous()`"
    if section.skipped:
        return [title, "", f"Skipped: {section.skipped}."]
    verdicts = [goal_met(row) for row in by_cell(section.results).values()]
    met, judged = verdicts.count(True), sum(v is not None for v in verdicts)
    unjudged = len(verdicts) - judged
    return [
        title, "", section.timing, "",
        f"Goal: {GOAL_TEXT}. Met on {met} of {judged} rows"
        + (f" ({unjudged} more cannot be judged here: –)" if unjudged else "") + ".",
        "",
        "Each row: one random input of the shape shown, contiguous except the strided one (a "
        "slice of a packed (B, S, 3, H, D) qkv, taken as is), permuted by dims.",
        "",
        cells_table(section.results, section.specs, [NAME, PERMUTE_SHAPE, DIMS, DTYPE],
                    (GOAL, KERNEL)),
        "",
        *columns_legend(section.specs),
        f"- `goal`: ✓ meets \"{GOAL_TEXT}\", ✗ misses it, – cannot be judged here",
        "- `kernel (explain)`: the kernel `cute_transpose.permute` chose "
        "(`cute_transpose.explain`, where the build has it)",
    ]


def ours_vs_torch(row: Row) -> str:
    o, e = row.get("ours"), row.get("eager")
    if o is None or e is None or o.status != "ok" or e.status != "ok":
        return ""
    return f"{e.ms / o.ms:.2f}"


def cpu_markdown(section: Section) -> list[str]:
    trail = (Column("ours ms", lambda row: f"{row['ours'].ms:.1f}" if ratio(row, "ours") else ""),
             Column("torch ms", lambda row: f"{row['eager'].ms:.1f}" if ratio(row, "eager") else ""),
             Column("speed ours/torch", ours_vs_torch))
    return ["## CPU: ours against torch at full size, on the CPU", "", section.timing, "",
            cells_table(section.results, section.specs, [NAME, SHAPE, DIMS, DTYPE], trail,
                        footer=False), "",
            *columns_legend(section.specs),
            "- `speed ours/torch`: time(torch) / time(ours); above 1 ours is faster"]


def render_markdown(meta: dict, sections: dict[str, Section], tiny: list[Result]) -> str:
    """The report printed to stdout and written to <gpu-name>.md, one part per section run."""
    lines = [
        f"# cute_transpose benchmark: {meta['device_name']}", "",
        f"{meta['date']} | torch {meta['torch']} | CUDA {meta['cuda']} | triton {meta['triton']} "
        f"| cute_transpose {meta['cute_transpose']} | run took {meta['duration_s']:.1f} s", "",
        *([f"**Interrupted: {meta['interrupted']}.** The tables below hold the cells measured "
           "before it stopped.", ""] if meta.get("interrupted") else []),
        "Every cell: GB/s = 2 x bytes / time, and in brackets the ratio time(torch clone) / "
        "time(op) from the same cell (higher is better). WRONG = failed the bit-exact check "
        "(not timed); n/a = unsupported; skipped = too large for free memory.",
    ]
    parts = {"cpu": lambda s: cpu_markdown(s),
             "matrix": lambda s: matrix_markdown(s, tiny, meta["tiny_calls"]),
             "permute": permute_markdown,
             "sweep": sweep_report.sweep_markdown,
             "workloads": workloads_report.workloads_markdown}
    for key in ("cpu", "matrix", "permute", "sweep", "workloads"):
        if key in sections:
            lines += ["", *parts[key](sections[key])]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# JSON and files
# --------------------------------------------------------------------------------------------

def result_json(r: Result) -> dict:
    """One row, flat: the cell's fields, then the op's."""
    c = r.cell
    return {"section": c.section, "case": c.name, "shape": c.shape, "dims": c.dims,
            "dtype": c.dtype, "view": dataclasses.asdict(c.view), "group": c.group,
            "op": r.op, "status": r.status, "ms": r.ms, "gbps": r.gbps, "ratio": r.ratio,
            "detail": r.detail, "first_s": r.first_s, "explain": r.explain,
            **({"paced_ms": r.paced_ms, "paced_ratio": r.paced_ratio} if r.paced_ms is not None else {})}


def payload(meta: dict, sections: dict[str, Section], tiny: list[Result]) -> dict:
    """Everything measured. Keys: meta, results (matrix rows), tiny, permute, permute_goal,
    sweep, sweep_summary, workloads, workloads_summary, cpu_rows; each present where its
    section ran."""
    out: dict = {"meta": meta}
    if "matrix" in sections:
        out["results"] = [result_json(r) for r in sections["matrix"].results]
        out["tiny"] = [{**result_json(r), "us_per_call": r.ms * 1e3 if r.ms else None}
                       for r in tiny]
    if "permute" in sections:
        s = sections["permute"]
        out["permute"] = [result_json(r) for r in s.results]
        out["permute_goal"] = {
            "goal": GOAL_TEXT, "skipped": s.skipped or None,
            "rows": [{"case": first(row).cell.name, "dtype": first(row).cell.dtype,
                      "shape": first(row).cell.shape, "dims": first(row).cell.dims,
                      "met": goal_met(row)} for row in by_cell(s.results).values()]}
    if "sweep" in sections:
        s = sections["sweep"]
        out["sweep"] = [result_json(r) for r in s.results]
        out["sweep_summary"] = {**sweep_report.summary_json(s.results), **s.notes}
    if "workloads" in sections:
        s = sections["workloads"]
        out["workloads"] = [result_json(r) for r in s.results]
        out["workloads_summary"] = {**workloads_report.workloads_json(s), "skipped": s.skipped or None}
    if "cpu" in sections:
        out["cpu_rows"] = [result_json(r) for r in sections["cpu"].results]
    return out


# Where each section's rows sit in the JSON (payload()).
SECTION_ROWS = {"cpu": "cpu_rows", "matrix": "results", "permute": "permute", "sweep": "sweep",
                "workloads": "workloads"}


def result_of(row: dict) -> Result:
    """One JSON row (result_json) as the Result it was written from."""
    cell = Cell(row["section"], row["case"], tuple(row["shape"]), tuple(row["dims"]), row["dtype"],
                View(**row["view"]), row["group"])
    return Result(cell, row["op"], row["status"], row["ms"], row["gbps"], row["ratio"], row["detail"],
                  row["first_s"], row["explain"], row.get("paced_ms"), row.get("paced_ratio"))


def load_run(path: Path, specs_of: Callable[[str, bool], list[OpSpec]]) -> tuple[dict, dict[str, Section], list[Result]]:
    """A saved run (the JSON write_outputs wrote) as the meta, sections and 256x256 rows it was
    written from, so that its report can be written again by this code without measuring
    anything. specs_of(section key, dry run) gives a section's op list; the ops that have rows
    are kept, in its order."""
    data = json.loads(Path(path).read_text())
    meta = data["meta"]
    sections: dict[str, Section] = {}
    for key, name in SECTION_ROWS.items():
        if name not in data:
            continue
        results = [result_of(row) for row in data[name]]
        ran = {r.op for r in results}
        cells = list(dict.fromkeys(r.cell for r in results))
        s = Section(key, cells, [spec for spec in specs_of(key, meta["dry_run"]) if spec.name in ran],
                    meta["timing"].get(key, ""), results)
        if key == "permute":
            s.skipped = (data.get("permute_goal") or {}).get("skipped") or ""
        if key == "sweep":
            summary = data.get("sweep_summary") or {}
            s.notes = {k: summary[k] for k in ("first_call_s", "compile_graphs") if k in summary}
        if key == "workloads":
            summary = data.get("workloads_summary") or {}
            s.notes = {k: summary[k] for k in ("calls", "workloads", "skipped_models") if k in summary}
            s.skipped = summary.get("skipped") or ""
        sections[key] = s
    tiny = [result_of(row) for row in data.get("tiny", [])]
    return meta, sections, tiny


def sanitize(name: str) -> str:
    """A file name from a device name: 'NVIDIA H100 80GB HBM3' -> 'NVIDIA_H100_80GB_HBM3'."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "device"


def write_outputs(out_dir: Path, meta: dict, sections: dict[str, Section], tiny: list[Result],
                  markdown: str) -> list[Path]:
    """<out>/<gpu>.json (raw numbers), .md (the printed report), and the charts of the sections
    that ran: .png (matrices), -permute.png, -sweep.png, -workloads.png. A run of the sweep
    (or the workloads) alone writes <gpu>-sweep.json and -sweep.md (-workloads.*), so that it
    does not overwrite the other sections' files."""
    from bench import charts

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / sanitize(meta["device_name"])
    alone = set(sections) & {"sweep", "workloads"} if len(sections) == 1 else set()
    report = stem.with_name(f"{stem.name}-{alone.pop()}") if alone else stem
    paths = [report.with_suffix(".json"), report.with_suffix(".md")]
    paths[0].write_text(json.dumps(payload(meta, sections, tiny), indent=1, default=str) + "\n")
    paths[1].write_text(markdown)
    device = meta["device_name"]
    plots = [("matrix", stem.with_suffix(".png"), charts.plot_matrix_chart,
              f"Transpose bandwidth: {device}"),
             ("permute", stem.with_name(stem.name + "-permute.png"), charts.plot_permute_chart,
              f"x.permute(dims).contiguous(), ratio to clone: {device}"),
             ("sweep", stem.with_name(stem.name + "-sweep.png"), charts.plot_sweep_chart,
              f"Sweep, ratio to clone per cell: {device}"),
             ("workloads", stem.with_name(stem.name + "-workloads.png"),
              lambda results, specs, title, path: charts.plot_workloads_chart(
                  results, specs, title, path, sections["workloads"].notes.get("calls", {})),
              f"Real models' layout copies: {device}")]
    for key, path, plot, title in plots:
        s = sections.get(key)
        if s is not None and s.results and plot(s.results, s.specs, title, path):
            paths.append(path)
    return paths
