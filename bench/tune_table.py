"""bench/tune.py's arithmetic and outputs: per-class scores, the ranking per class, the .inc
table the C++ chooser includes, and the markdown/JSON reports. Plain Python over `Result`
rows (no torch)."""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from bench.summary import by_cell, geomean

# A class measured on fewer shapes also ranks its kernels on the shapes of its nearest classes
# (`neighbours`), so that one shape does not decide it alone where a neighbour exists. A class
# left under FEW_SHAPES keeps its own ranking: deferring those to the nearest class with enough
# shapes picked 0.902 of the best kernel under leave-one-out over both H100 grids, keeping them
# 0.922. The cost shows on the permutation table's rank-5 bfloat16 row: its class has one
# tuning shape and no neighbour, and `box` runs the row at 0.32 of clone (eager 0.51).
FEW_SHAPES = 3
# Kernels within TIE of each other's rank score are ordered by PREFERENCE: the same kernel then
# wins on a tie in every run (2%: the spread between runs of the same cell on the H100). The
# kernels that reach copy speed wherever they run come first; then torch's own copy, which is
# what the user would have run (a tie with it is no gain); then the kernels whose speed depends
# most on the exact sizes.
TIE = 0.02
PREFERENCE = ("tile", "interleave", "rows", "tma", "pipelined", "aten", "realign", "split", "box", "padded", "gather")
# The promise is never to lose to torch. A kernel's shortfall against ATen's copy is the
# geomean, over the class's shapes both ran, of min(kernel / aten, 1): its losses, with its wins
# counted as ties. A kernel whose shortfall is worse than 1 - GUARD ranks after "aten" (which runs
# every shape), unless it ran at ADVANTAGE x ATen's copy's speed or more over the class (geomean):
# then ATen's copy would lose far more on the class's other shapes than the kernel loses on its
# few. GUARD = 5%: beyond the run-to-run spread of the tuning shapes. Leave-one-out over the three
# H100 grids (`holdout`, 7725 shapes):
#   rule                          pick/best  pick/aten  slower than aten by >5%  under half the best
#   no rule                       0.943      1.463      496                      173
#   the shortfall alone           0.931      1.444      286                      249
#   the shortfall, ADVANTAGE 2    0.933      1.448      287                      234
# Without the advantage, the float32 TTC permutes of dims 15-52 went to ATen's copy (0.08-0.6 of
# clone) for the split kernel's losses of 13-27% on 3 of its class's 12 shapes, where it won by
# 1.5-8x on the other 9 (0.8 of clone on the TTC cases).
GUARD = 0.05
ADVANTAGE = 2.0
# A class ranked on few shapes, even with its neighbours', keeps a kernel ahead of ATen's copy
# only where it ran at a margin over ATen's speed there (geomean): THIN_MARGINS holds (under this
# many shapes, the margin). Few shapes are thin evidence against the default of running torch's
# own copy. Under FEW_SHAPES, leave-one-out over the four H100 grids: 279 picks slower than ATen's
# copy by more than 5% (284 without), 0.942 of the best kernel (0.943); the permutation table's
# rank-5 (0,3,1,4,2) bfloat16 row had run `box` at 0.32 of clone (eager 0.50) on the strength of
# one shape where box ran 0.52, ATen 0.47. From FEW_SHAPES to THIN_SHAPES, leave-one-out over the
# seven H100 grids (11612 shapes; pick/best, pick/aten, slower than aten by more than 5%):
#   no margin there      0.924  1.434  444        1.1 under 8   0.924  1.433  413
#   1.15 under 8         0.924  1.433  396        1.1 under 10  0.924  1.433  399
#   1.15 under 10        0.923  1.432  377        1.25 under 8  0.920  1.427  385
# (each class held out whole: 626 before, 620 with 1.15 under 8). On the random cells of another
# seed (bench.py --sweep-seed 20261128) it moves 7 of 216 cells from `gather` to ATen's copy, and
# 3 of the committed sweep's. Timed again on the H100 (best of 4 rounds): five (4,2,0,3,1)
# bfloat16 broadcast permutes, four of them behind eager by 9-21% on `gather`, now at its speed;
# and five broadcast or offset transposes where `gather` had won, now at eager's speed too
# (1.96 -> 0.71, 1.38 -> 1.07, 1.25 -> 0.86, 1.12 -> 0.90, 0.69 -> 0.61 of clone).
THIN_SHAPES = 8
THIN_MARGINS = ((FEW_SHAPES, 1.25), (THIN_SHAPES, 1.15))
# A class the table lacks takes the ranking of its family (family()): the tuning shapes of every
# class that differs from it only in its tile-fill bucket and interleave flag, broadcast classes
# apart from the others unless they have fewer than FEW_SHAPES shapes, ranked as one class
# (csrc/choose.cpp, family_keys()). Its shapes are evidence at one remove, so that ranking keeps
# a kernel ahead of ATen's copy only where the kernel ran at LENT_MARGIN x ATen's speed or more
# over the family. Each class of the five H100 grids held out whole (`class_holdout`):
#   lookup                               shapes  pick/best  pick/aten  slower than aten by >5%
#   nearest class with an entry (before)  4854    0.862      1.419      605
#   family                                4854    0.903      1.487      292
#   fixed rule (no nearest class, before) 3775    0.813      1.322      432
#   family                                3799    0.829      1.346      335
# (the nearest class: without the fill bucket, then also without the interleave flag, a
# broadcast class among broadcast classes first: one class of a few shapes, thin evidence).
# Margins, the same way with a prototype of the family lookup over the first 4854 shapes: none
# 510 losses, 1.05 430, 1.1 355, 1.2 296, at 0.860, 0.861, 0.861 and 0.854 of the best kernel.
LENT_MARGIN = 1.1
# Small work (the class key's ".s": under 2^20 elements) runs ATen's copy whatever its class's
# scores (csrc/choose.cpp, kSmallWork, has the measurements), but for the copy route's rows in
# vectors wider than the element, from an unbroadcast input, which run "rows" (small_rows()
# there; SMALL_ROWS here), and for transposes whose loads move 16-byte vectors into lean tiles
# at least half full, from an unbroadcast input, which run "lean" (small_transpose()): a rule on
# each shape that its class key does not tell, so the holdout replays the kernel the chooser
# picked for the shape (its explain, this build's with --reclassify). Such classes rank "aten"
# alone, or "rows" then "aten", with the scores' order in their note, and stay out of the .inc
# table (the chooser never reads them).
SMALL_WORK = ".s"
SMALL_ROWS = re.compile(r"^c\.e(\d+)\.o\d\.w(\d+)\.s$")  # its element size, then its vector width
FAMILY = ".*"  # the suffix of a family's key in the table (family())
BROADCAST = re.compile(r"\.b(?=\.|$)")  # a class key's broadcast flag
INC_LINE = re.compile(r'^\{"((?:[^"\\]|\\.)*)", "((?:[^"\\]|\\.)*)"\},(?:\s*//.*)?$')


@dataclass
class KernelScore:
    """One kernel on one class: how its shapes went, and its geomean ratio to clone over the
    shapes it ran correctly."""

    kernel: str
    ok: int = 0
    na: int = 0               # raised RuntimeError: cannot run that shape
    wrong: int = 0
    error: int = 0
    geomean: Optional[float] = None

    def text(self, shapes: int) -> str:
        if self.wrong or self.error:
            return "WRONG" if self.wrong else "error"
        if not self.ok:
            return "n/a"
        cover = "" if self.ok == shapes else f" ({self.ok}/{shapes})"
        return (f"{self.geomean:.2f}" if self.geomean is not None else "?") + cover


@dataclass
class ClassResult:
    key: str
    shapes: int
    scores: list[KernelScore]
    chosen_now: dict[str, int] = field(default_factory=dict)  # explain()'s kernel, by count
    ranking: list[str] = field(default_factory=list)           # best first: the .inc line
    note: str = ""
    lent: list[str] = field(default_factory=list)  # the ranking lent to a class the table lacks, if not `ranking`

    @property
    def winner(self) -> Optional[str]:
        return self.ranking[0] if self.ranking else None

    @property
    def runner_up(self) -> Optional[str]:
        return self.ranking[1] if len(self.ranking) > 1 else None

    def score(self, kernel: Optional[str]) -> Optional[KernelScore]:
        return next((s for s in self.scores if s.kernel == kernel), None)


def class_key(row: dict) -> Optional[str]:
    """The class key recorded with a shape's rows (from explain), or None."""
    info = next((r.explain for r in row.values() if r.explain), None)
    key = info.get("class") if info else None
    return str(key) if key is not None else None


def neighbours(key: str) -> list[str]:
    """The classes nearest to `key`, nearest first: without its tile-fill bucket, then also
    without its interleave flag (the C++ chooser's class key). A broadcast class looks among
    broadcast classes first, then among the others: broadcast inputs read a small footprint,
    which changes the ranking most (the gather kernel ran broadcast shapes at up to 1.3 of
    clone and the same shapes unbroadcast at 0.2)."""
    def stripped(key: str) -> list[str]:
        found = []
        for flag in (r"\.f[12](?=\.|$)", r"\.I[eg]?(?=\.|$)"):
            nearer = re.sub(flag, "", found[-1] if found else key)
            if nearer != (found[-1] if found else key):
                found.append(nearer)
        return found
    if not BROADCAST.search(key):
        return stripped(key)
    plain = BROADCAST.sub("", key)
    return stripped(key) + [plain] + stripped(plain)


def relatives(keys: Iterable[str]) -> dict[str, list[str]]:
    """For each class a key reduces to (itself or a neighbour), the keys that reduce to it: a
    class pools with the class `near` and with the siblings that differ from it only in the
    flags stripped to reach `near` (t.x.f2.Ie.b and t.x.f2.Ig.b both reduce to t.x.b). Broadcast
    and other classes stay apart: a broadcast key reduces to an unbroadcast one only as a
    broadcast class's last resort, and is not pooled there."""
    kin: dict[str, list[str]] = collections.defaultdict(list)
    for key in sorted(keys):
        for near in (key, *neighbours(key)):
            if bool(BROADCAST.search(near)) == bool(BROADCAST.search(key)):
                kin[near].append(key)
    return kin


def family(key: str, broadcast: Optional[bool] = None) -> str:
    """The key of a class's family in the table: the class key without its tile-fill bucket and
    interleave flag, with its broadcast flag (or, given `broadcast`, with that one), then FAMILY:
    t.e2.o0.i2.w2.f2.Ig.b -> t.e2.o0.i2.w2.b.*. A class the table lacks looks up its own
    family, then the other broadcast flag's (csrc/choose.cpp, family_keys())."""
    plain = re.sub(r"\.f[12](?=\.|$)|\.I[eg]?(?=\.|$)", "", key)
    has_b = BROADCAST.search(plain) is not None
    if broadcast is not None and broadcast != has_b:
        plain = BROADCAST.sub("", plain) if has_b else re.sub(r"(\.s)?$", r".b\1", plain, count=1)
    return plain + FAMILY


def family_keys(key: str) -> tuple[str, str]:
    """The table entries a class the table lacks looks up, in order: its family, then the other
    broadcast flag's."""
    return family(key), family(key, broadcast=BROADCAST.search(key) is None)


def families(results: Iterable, kernels: tuple[str, ...]) -> list[ClassResult]:
    """Each family's ranking (family()), over the shapes of all its classes, as the table lends it
    to a class it lacks: a kernel stays ahead of ATen's copy only at LENT_MARGIN x its speed.
    Small work, which never reaches the table, has none."""
    members: dict[str, set] = collections.defaultdict(set)
    pooled = []
    for row in by_cell(results).values():
        key = class_key(row)
        if key is None or key.endswith(SMALL_WORK):
            continue
        members[fam := family(key)].add(key)
        pooled += [dataclasses.replace(r, explain={**r.explain, "class": fam}) if r.explain else r
                   for r in row.values()]
    ranked = aggregate(pooled, kernels)
    for c in ranked:
        behind = [k for k in c.ranking[:c.ranking.index("aten")] if k not in c.lent[:c.lent.index("aten")]] \
            if c.lent and "aten" in c.ranking else []
        c.ranking, c.lent = c.lent or c.ranking, []
        c.note = "; ".join(filter(None, [
            f"family of {len(members[c.key])} class{'es' if len(members[c.key]) != 1 else ''}",
            f"{','.join(behind)} behind aten: not {LENT_MARGIN} x aten" if behind else "", c.note]))
    return ranked


def aggregate(results: Iterable, kernels: tuple[str, ...]) -> list[ClassResult]:
    """Scores per class key and kernel, and each class's ranking, sorted by key. A class of
    fewer than FEW_SHAPES shapes takes in the shapes of its neighbours until it has that many."""
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for row in by_cell(results).values():
        key = class_key(row)
        clone = row.get("clone")
        if key is not None and clone is not None and clone.status == "ok":
            groups[key].append(row)
    kin = relatives(groups)
    classes = []
    for key in sorted(groups):
        rows, pooled, taken = list(groups[key]), [], {key}
        for near in neighbours(key):
            if len(rows) >= FEW_SHAPES:
                break
            for other in kin.get(near, ()):
                if other not in taken:
                    taken.add(other)
                    rows += groups[other]
                    pooled.append(f"{other} ({len(groups[other])})")
        scores = [score(rows, k) for k in kernels]
        chosen = collections.Counter(str(r.explain.get("kernel")) for row in groups[key]
                                     for r in row.values() if r.explain)
        c = ClassResult(key, len(rows), scores, dict(chosen.most_common()))
        rank(c, rows)
        if pooled:
            c.note = "; ".join(filter(None, [f"{len(groups[key])} own, with " + ", ".join(pooled), c.note]))
        classes.append(c)
    return classes


@dataclass
class Holdout:
    """How the ranking rules generalise: each shape held out in turn, its class ranked without
    it, and the held-out shape run by that ranking's first kernel that ran it (holdout()); or
    each class held out whole, as a class the table lacks (class_holdout())."""
    shapes: int
    vs_best: float       # geomean of the pick's ratio over the best kernel's, on that shape
    vs_aten: float       # geomean of the pick's ratio over ATen's copy's
    slower_than_aten: int  # picks slower than ATen's copy by more than GUARD
    classes: Optional[int] = None  # held out whole (class_holdout), else None

    def text(self) -> str:
        held = (f"{self.shapes} shapes held out" if self.classes is None else
                f"{self.classes} classes held out whole, their {self.shapes} shapes run by their family's pick")
        return f"{held}: {self.figures()}"

    def figures(self) -> str:
        if not self.shapes:
            return "no shape to score"
        vs_aten = f"{self.vs_aten:.3f} x ATen's copy" if self.vs_aten is not None else "ATen's copy not measured"
        return (f"the pick reaches {self.vs_best:.3f} of the best kernel and {vs_aten}; slower than "
                f"ATen's copy by more than {GUARD:.0%} on {self.slower_than_aten}")


def tally(picks: list[tuple[float, Optional[float]]], classes: Optional[int] = None) -> Holdout:
    """A Holdout from each held-out shape's (pick / best, pick / ATen's copy or None)."""
    vs_aten = [a for _, a in picks if a is not None]
    return Holdout(len(picks), geomean([b for b, _ in picks]), geomean(vs_aten),
                   sum(a < 1 - GUARD for a in vs_aten), classes)


def picked(row: dict, ranking: list[str], kernels: tuple[str, ...]) -> Optional[tuple[float, Optional[float]]]:
    """How a shape does with `ranking`'s first kernel that ran it: its ratio over the best
    kernel's and over ATen's copy's (None where ATen's copy did not run)."""
    ok = {k: r.ratio for k, r in row.items() if k in kernels and r.status == "ok" and r.ratio}
    pick = next((k for k in ranking if k in ok), "aten" if "aten" in ok else None)
    if pick is None:
        return None
    return ok[pick] / max(ok.values()), ok[pick] / ok["aten"] if "aten" in ok else None


def members_by_class(cells: dict) -> dict[str, list]:
    """The cells of each class key (cells without one are left out)."""
    members: dict[str, list] = collections.defaultdict(list)
    for cell, row in cells.items():
        if (key := class_key(row)) is not None:
            members[key].append(cell)
    return members


def holdout(results: Iterable, kernels: tuple[str, ...]) -> Holdout:
    """Leave-one-out over the shapes of `results` (see Holdout)."""
    cells = by_cell(results)
    members = members_by_class(cells)
    kin = relatives(members)
    picks = []
    for key, held in members.items():
        pool = list(dict.fromkeys(k for near in (key, *neighbours(key)) for k in kin.get(near, ())))
        for cell in held:
            if key.endswith(SMALL_WORK):  # the chooser's rule, whatever the other shapes did
                picks.append(picked(cells[cell], small_work_ranking(key, chosen_kernel(cells[cell])), kernels))
                continue
            others = [r for k in pool for c in members.get(k, ()) if c != cell for r in cells[c].values()]
            ranking = {c.key: c.ranking for c in aggregate(others, kernels)}.get(key, ["aten"])
            picks.append(picked(cells[cell], ranking, kernels))
    return tally([p for p in picks if p is not None])


def class_holdout(results: Iterable, kernels: tuple[str, ...]) -> Holdout:
    """Leave-one-class-out: each class held out whole, the way a shape class that no tuning run
    reached meets the table. Its shapes run the ranking its family (family()) lends, ranked over
    the family's other classes; where no other class has its broadcast flag, the other flag's
    family (the chooser's lookup, csrc/choose.cpp family_keys()). A class with no other class
    in either is left out: the chooser's fixed rule runs it; so is small work, which never
    reaches the table."""
    cells = by_cell(results)
    members = members_by_class(cells)
    clan: dict[str, list[str]] = collections.defaultdict(list)  # both broadcast flags together
    for key in members:
        if not key.endswith(SMALL_WORK):
            clan[family(key, broadcast=False)].append(key)
    picks, classes = [], 0
    for key, held in members.items():
        if key.endswith(SMALL_WORK):
            continue
        others = [r for k in clan[family(key, broadcast=False)] if k != key for c in members[k] for r in cells[c].values()]
        table = {c.key: c.ranking for c in families(others, kernels) if c.winner}  # the .inc's family lines
        near = next((f for f in family_keys(key) if f in table), None)
        if near is not None:
            classes += 1
            picks += [p for cell in held if (p := picked(cells[cell], table[near], kernels)) is not None]
    return tally(picks, classes)


def score(rows: list[dict], kernel: str) -> KernelScore:
    s = KernelScore(kernel)
    ratios = []
    for row in rows:
        r = row.get(kernel)
        status = r.status if r is not None else "n/a"
        if status == "ok":
            s.ok += 1
            if r.ratio is not None:
                ratios.append(r.ratio)
        elif status == "WRONG":
            s.wrong += 1
        elif status == "error":
            s.error += 1
        else:
            s.na += 1
    s.geomean = geomean(ratios)
    return s


def shortfall(vs_aten: list[float]) -> float:
    """The geomean of min(ratio, 1) over a kernel's ratios to ATen's copy: 1.0 when it never
    lost, whatever it won."""
    return geomean([min(r, 1.0) for r in vs_aten])


def rank(c: ClassResult, rows: list[dict]) -> None:
    """The class's kernels, best first. A kernel's rank score is the geomean, over the shapes
    it ran, of its ratio over the best ratio any kernel reached on that shape: 1.0 means best
    wherever it runs; scores within TIE are ordered by PREFERENCE. A kernel whose shortfall
    against "aten" (see GUARD) is worse than 1 - GUARD ranks after it (`unsafe`), unless it is
    ADVANTAGE x as fast as "aten" over the class. The chooser takes the first kernel that can
    run a plan, so a kernel that runs only some shapes ranks by how it does on those. (Ranking
    the kernels after it on the shapes it leaves them cut held-out losses but moved sweep cells
    to slower kernels on the few shapes left: docs/PERFORMANCE.md, "Classes ranked on one or two
    shapes".) A kernel with a wrong result or an error on any shape is left out (never chosen)."""
    clean = {s.kernel for s in c.scores if not s.wrong and not s.error and s.ok and s.geomean}
    relative: dict[str, list[float]] = collections.defaultdict(list)
    vs_aten: dict[str, list[float]] = collections.defaultdict(list)
    for row in rows:
        ok = {k: r.ratio for k, r in row.items() if k in clean and r.status == "ok" and r.ratio}
        best = max(ok.values(), default=None)
        for k, ratio in ok.items():
            relative[k].append(ratio / best)
            if "aten" in ok:
                vs_aten[k].append(ratio / ok["aten"])
    scores = {k: geomean(v) for k, v in relative.items()}
    losses = {k: sum(r < 1 - GUARD for r in v) for k, v in vs_aten.items()}
    unsafe = sorted((k for k, v in vs_aten.items() if shortfall(v) < 1 - GUARD and geomean(v) < ADVANTAGE),
                    key=lambda k: -scores[k])
    safe = {k: v for k, v in scores.items() if k not in unsafe}
    c.ranking = []
    while safe:
        # The best kernel, or, within TIE of it (run-to-run spread), the one listed first in
        # PREFERENCE: the measurement cannot tell them apart there.
        best = max(safe.values())
        near = [k for k in safe if safe[k] >= best * (1 - TIE)]
        pick = min(near, key=lambda k: (PREFERENCE.index(k) if k in PREFERENCE else len(PREFERENCE), -safe[k]))
        c.ranking.append(pick)
        del safe[pick]
        if pick == "aten":
            break  # it runs every shape: nothing after it is ever chosen
    c.ranking += sorted(safe, key=safe.get, reverse=True) + unsafe
    margin = next((m for below, m in THIN_MARGINS if len(rows) < below), None)
    if (margin is not None and c.ranking and c.ranking[0] != "aten" and "aten" in c.ranking
            and (geomean(vs_aten[c.ranking[0]]) or 0.0) < margin):
        c.ranking = ["aten"] + [k for k in c.ranking if k != "aten"]
        c.note = f"few shapes: {c.ranking[1]} is not {margin} x aten"
    if "aten" in c.ranking:  # the ranking as a family lends it to a class the table lacks (LENT_MARGIN)
        kept = [k for k in c.ranking[:c.ranking.index("aten")] if (geomean(vs_aten[k]) or 0.0) >= LENT_MARGIN]
        lent = kept + ["aten"] + [k for k in c.ranking if k not in kept and k != "aten"]
        c.lent = lent if lent != c.ranking else []
    if not c.ranking:
        c.note = "no kernel ran a shape correctly"
    elif c.score(c.winner).ok < c.shapes:
        c.note = f"{c.winner} runs {c.score(c.winner).ok}/{c.shapes} shapes; the next takes the rest"
    lost = [f"{k} on {losses[k]}/{len(vs_aten[k])}" for k in c.ranking[:c.ranking.index("aten")]
            if losses.get(k)] if "aten" in c.ranking else []
    if lost:  # kept ahead of aten, but slower than it by more than GUARD on some shapes
        c.note = "; ".join(filter(None, [c.note, "slower than aten " + ", ".join(lost)]))
    if c.key.endswith(SMALL_WORK) and c.ranking:
        c.ranking, c.lent, c.note = small_work_ranking(c.key), [], f"small work; by score {','.join(c.ranking)}"
        if c.key.startswith("t."):
            c.note += "; lean on its shapes loaded in 16-byte vectors into tiles half full"


def small_work_ranking(key: str, chosen: Optional[str] = None) -> list[str]:
    """What a small-work class runs (SMALL_WORK): "rows" on the copy route where its vectors are
    wider than the element and the input has no broadcast dim; "lean" on a shape where the
    chooser picked it (`chosen`: the kernel a shape's explain names; the class key cannot tell);
    else ATen's copy."""
    rows = SMALL_ROWS.match(key)
    if rows and int(rows.group(2)) > int(rows.group(1)):
        return ["rows", "aten"]
    return ["lean", "aten"] if chosen == "lean" else ["aten"]


def chosen_kernel(row: dict) -> Optional[str]:
    """The kernel the chooser picked for a shape, as its rows' explain recorded it."""
    info = next((r.explain for r in row.values() if r.explain), None)
    return info.get("kernel") if info else None


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------

def c_string(text: str) -> str:
    """`text` as the body of a C++ string literal. Class keys and kernel names are printable
    ASCII (anything else raises ValueError); quotes and backslashes are escaped."""
    if not (text.isascii() and text.isprintable()):
        raise ValueError(f"not printable ASCII: {text!r}")
    return text.replace("\\", "\\\\").replace('"', '\\"')


def inc_line(c: ClassResult) -> str:
    """`{"class", "kernel,kernel,..."},  // comment`: the ranking, best first."""
    comment = ", ".join(f"{k} {c.score(k).geomean:.2f}" for k in c.ranking)
    comment += f"; {c.shapes} shape{'s' if c.shapes != 1 else ''}"
    if c.note:
        comment += f" ({c.note})"
    return f'{{"{c_string(c.key)}", "{c_string(",".join(c.ranking))}"}},  // {comment}'


def inc_text(classes: list[ClassResult], meta: dict) -> str:
    """The table the C++ chooser includes: one initializer line per class with a ranking, and
    per family (families()), for the classes the table lacks."""
    lines = [f"// Generated by bench/tune.py on {meta['device_name']}, torch {meta['torch']}, "
             f"{meta['date']}: the candidate kernels per shape class, best first",
             "// (comments: geomean ratio to clone over the shapes each ran). Do not edit by hand; "
             "rerun bench/tune.py."]
    if meta.get("chooser") == "fake":
        lines.append("// FAKE chooser (--fake): a plumbing test, not a table to commit.")
    lines.append(f"// Small-work classes (\"{SMALL_WORK}\") are left out: they run ATen's copy, rows or lean "
                 "(choose.cpp, kSmallWork, small_rows(), small_transpose()).")
    lines.append(f"// Keys ending in \"{FAMILY}\" are families: what a class the table lacks runs "
                 "(tune_table.py, family(), LENT_MARGIN).")
    lines += [inc_line(c) for c in classes if c.winner and not c.key.endswith(SMALL_WORK)]
    return "\n".join(lines) + "\n"


def parse_inc(text: str) -> list[tuple[str, str]]:
    """(class key, ranking) of every initializer line; raises ValueError on a line that is
    neither a comment, blank, nor an initializer."""
    entries = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        m = INC_LINE.match(line)
        if m is None:
            raise ValueError(f"line {n} is not an initializer: {line!r}")
        entries.append(tuple(re.sub(r"\\(.)", r"\1", g) for g in m.groups()))
    return entries


def report_markdown(classes: list[ClassResult], meta: dict) -> str:
    """Every class, every candidate's geomean, the winner; what each column means."""
    from bench.report import markdown_table
    kernels = meta["kernels"]
    rows = [[c.key, ", ".join(f"{k} {n}" for k, n in c.chosen_now.items()), str(c.shapes),
             *(c.score(k).text(c.shapes) for k in kernels), c.winner or "–",
             c.runner_up or "", "; ".join(filter(None, [
                 c.note, "few shapes" if c.shapes < FEW_SHAPES else ""]))]
            for c in classes]
    lines = [
        f"# Kernel tuning: {meta['device_name']}", "",
        f"{meta['date']} | torch {meta['torch']} | chooser: {meta['chooser']} | "
        f"{meta['shapes']} of {meta['grid_shapes']} grid shapes measured (seed {meta['seed']}) "
        f"in {meta['seconds']:.0f} s", "",
        f"Timing: {meta['timing']}. Each kernel's number is the geomean over the class's shapes "
        "of time(torch clone) / time(kernel) (higher is better). The winner is the best kernel "
        "that ran correctly on every shape of its class.", "",
        *([f"Timed again: {meta['retimed']}.", ""] if meta.get("retimed") else []),
        markdown_table(["class", "chosen now", "shapes", *kernels, "winner", "runner-up",
                        "note"], rows, left_cols=2), "",
        "Columns:",
        "- `class`: the class key `cute_transpose.explain(x, dims)` gave the shapes",
        "- `chosen now`: the kernel explain() reported for the class's shapes, with counts (the "
        "table in use while tuning)",
        "- `shapes`: shapes of the grid (bench/tune_grid.py) that fell in the class",
        "- one column per kernel: its geomean ratio to clone; `(k/n)` = it ran on k of the n "
        "shapes (the others raised: it cannot run them); `n/a` = it ran on none; `WRONG` = a "
        "result differed from `x.permute(dims).contiguous()` (never a winner)",
        f"- `note`: `few shapes` = fewer than {FEW_SHAPES} shapes measured: a weak verdict; "
        f"`family of n classes` = a family's row (key ending in `{FAMILY}`), the shapes of its n "
        f"classes ranked as one: what a class the table lacks runs; `k behind aten` = a kernel "
        f"it ranks after ATen's copy, having run under {LENT_MARGIN} x its speed there",
    ]
    return "\n".join(lines) + "\n"


def tune_json(classes: list[ClassResult], results: list, meta: dict) -> str:
    """Everything measured: meta, each class with its scores, and each shape's rows."""
    rows = [{"case": r.cell.name, "shape": r.cell.shape, "dims": r.cell.dims,
             "dtype": r.cell.dtype, "view": r.cell.view.text(), "kernel": r.op,
             "status": r.status, "ms": r.ms, "ratio": r.ratio, "detail": r.detail,
             "explain": r.explain} for r in results]
    return json.dumps({"meta": meta, "classes": [asdict(c) for c in classes], "rows": rows},
                      indent=1, default=str) + "\n"


@dataclass(frozen=True)
class SavedResult:
    """A row of tune.json, as aggregate() reads it (for --rerank)."""
    cell: tuple
    op: str
    status: str
    ratio: Optional[float]
    explain: Optional[dict]


def read_run(path: Path) -> dict:
    """A saved tuning run (tune.json), gzip-compressed where its name ends in .gz (the committed
    runs are: they shrink 10-20 x, and the device machine takes a working tree of 64 MiB)."""
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def write_run(path: Path, text: str) -> None:
    """`text` (a tuning run's JSON) to `path`, compressed where its name ends in .gz (with no
    time stamp in the header, so that the same run writes the same bytes)."""
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    else:
        path.write_text(text)


def run_stem(path: Path) -> str:
    """A saved run's name without .json or .json.gz: the name its report takes."""
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name


def saved_results(saved: dict) -> list[SavedResult]:
    """The rows of a tune.json, one result per (shape, kernel)."""
    return [SavedResult((r["case"], tuple(r["shape"]), tuple(r["dims"]), r["dtype"], r["view"]), r["kernel"],
                        r["status"], r["ratio"], r["explain"]) for r in saved["rows"]]

