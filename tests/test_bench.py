"""The benchmark's pure-Python parts, on the CPU: the TTC conversion, the sweep's and the tuning
grid's cells, input views, the bit check, the summary statistics, and the tuning table."""

import collections
import dataclasses
import gzip
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import cases, harness, interleave_small, lanes_small, near_broadcast, summary, sweep_cases, sweep_report, tile_shapes, tune_grid, tune_table  # noqa: E402
from bench.cases import Cell, View  # noqa: E402
from bench.harness import OpSpec, Result, make_input, run_cell, same_bits, slabs  # noqa: E402

# ----------------------------------------------------------------------------------------------
# The TTC suite


def column_major_transpose(p, sizes):
    """The suite's own definition, in numpy: a Fortran-ordered tensor of `sizes`, output dim i
    = input dim p[i], stored Fortran-ordered. Returns (input bytes, output bytes) in memory order."""
    a = np.arange(math.prod(sizes)).reshape(sizes, order="F")
    return a.flatten(order="F"), np.transpose(a, p).flatten(order="F")


@pytest.mark.parametrize("p, sizes", [(p, s[0]) for p, s in cases.TTC_COLUMN_MAJOR])
def test_ttc_conversion_moves_the_same_bytes_as_numpy(p, sizes):
    small = tuple(2 + (i * 3 + d) % 5 for i, d in enumerate(sizes))  # the same perm, tiny sizes
    src, dst = column_major_transpose(p, small)
    shape, dims = cases.column_major_to_torch(p, small)
    x = src.reshape(shape)  # the same memory, read row-major
    assert np.array_equal(np.transpose(x, dims).flatten(), dst)


def test_ttc_rows_match_the_published_table():
    rows = {(c.dims, c.shape) for c in cases.ttc_cells()}
    assert len(cases.ttc_cells()) == 57 and len(rows) == 57
    for dims, shape in [((1, 0), (7264, 7264)), ((1, 0), (1216, 43408)),
                        ((2, 0, 3, 1), (75, 96, 75, 96)), ((1, 3, 2, 0, 4), (298, 28, 28, 8, 32)),
                        ((1, 5, 4, 0, 3, 2), (15, 15, 112, 15, 5, 32)),
                        ((5, 4, 3, 2, 1, 0), (32, 15, 15, 15, 15, 32))]:
        assert (dims, shape) in rows
    assert {c.dtype for c in cases.ttc_cells()} == {"float32"}


# ----------------------------------------------------------------------------------------------
# The sweep's cells


@pytest.fixture(scope="module")
def full_sweep():
    return sweep_cases.sweep_cells("full")


def random_part(cells):
    return [c for c in cells if c.group in ("random", "2-D")]


def test_sweep_is_deterministic(full_sweep):
    assert sweep_cases.sweep_cells("full") == full_sweep
    quick = sweep_cases.sweep_cells("quick")
    assert set(random_part(quick)) <= set(random_part(full_sweep))  # a prefix of the families


def test_random_sweep_coverage(full_sweep):
    rand = random_part(full_sweep)
    assert len(rand) >= 200
    assert {len(c.shape) for c in rand} == {2, 3, 4, 5, 6}
    assert {cases.ITEMSIZE[c.dtype] for c in rand} == {1, 2, 4, 8, 16}
    assert {c.view.kind for c in rand} >= {"contiguous", "offset", "step", "transposed", "expand"}
    assert any(1 <= c.shape[-1] <= 4 for c in rand)                  # innermost input dim
    assert any(1 <= c.shape[c.dims[-1]] <= 4 for c in rand)          # innermost output dim
    assert any(1 in c.shape for c in rand)
    assert any(c.shape[-1] == 1 for c in rand) or any(c.shape[c.dims[-1]] == 1 for c in rand)
    two_d = [c for c in rand if len(c.shape) == 2]
    assert any(2 <= min(c.shape) <= 8 and c.shape[0] < c.shape[1] for c in two_d)  # short-wide
    assert any(2 <= min(c.shape) <= 8 and c.shape[0] > c.shape[1] for c in two_d)  # tall-skinny
    assert any(c.shape[-1] * cases.ITEMSIZE[c.dtype] % 16 for c in two_d)       # unaligned rows
    assert any(c.shape[-1] * cases.ITEMSIZE[c.dtype] % 16 == 0 for c in two_d)  # aligned rows
    for c in rand:
        assert 2 ** 16 <= c.numel <= 2 ** 28 and c.nbytes <= 2 * cases.GiB


def test_sweep_seed_draws_random_cells_the_committed_sweep_lacks(full_sweep):
    other = sweep_cases.sweep_cells("full", seed=7)
    assert other == sweep_cases.sweep_cells("full", seed=7)
    assert {c.group for c in other} <= {"random", "2-D"}  # no TTC, images or model layouts
    assert len(other) >= 0.9 * len(random_part(full_sweep))
    assert not {(c.shape, c.dims, c.dtype) for c in other} & {(c.shape, c.dims, c.dtype) for c in full_sweep}
    assert not any(cases.permuted_is_contiguous(c) for c in other)


def test_sweep_skips_permutes_that_are_already_contiguous(full_sweep):
    assert not any(cases.permuted_is_contiguous(c) for c in full_sweep)
    images = [c for c in full_sweep if c.group == "images"]
    assert {c.shape[1] if c.name == "NCHW->NHWC" else c.shape[3] for c in images} == {2, 3, 4}
    assert Cell("sweep", "NCHW->NHWC", (64, 3, 224, 224), cases.NCHW_TO_NHWC, "uint8",
                group="images") in images
    assert Cell("sweep", "NHWC->NCHW", (64, 299, 299, 3), cases.NHWC_TO_NCHW, "uint8",
                group="images") in images  # odd sides: planes off the 16-byte grid
    assert cases.permuted_is_contiguous(
        Cell("sweep", "", (64, 1, 224, 224), cases.NCHW_TO_NHWC, "uint8"))


def test_sweep_has_the_model_layouts(full_sweep):
    models = [c for c in full_sweep if c.group == "models"]
    assert [c.name for c in models] == [name for name, *_ in cases.MODEL_LAYOUTS]
    assert any(c.numel < 2 ** 20 for c in models) and any(c.numel >= 2 ** 20 for c in models)  # small work, and not
    assert {c.dtype for c in models} == {"bfloat16", "float16", "float32"}
    assert any(c.dims == (0, 2, 1, 3) for c in models) and any(c.dims == (0, 1, 3, 2) for c in models)


def test_compiled_graphs_are_bounded(full_sweep):
    keys = {(c.dims, c.dtype, c.view) for c in full_sweep}
    assert len(keys) <= 70


# ----------------------------------------------------------------------------------------------
# Views, the check, the runner

VIEWS = [View(), View("offset", 2, 3), View("offset", 0, 1), View("step", 1, 2),
         View("transposed", 2, 0), View("expand", 1), View("packed", 1, 3),
         View("strided", strides=(40, 1, 5), offset=3)]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.kind + str(v.dim))
def test_view_geometry_matches_torch(view):
    cell = Cell("t", "", (3, 4, 5), (2, 0, 1), "float32", view)
    x = make_input(cell, torch.device("cpu"))
    strides, offset = cases.view_strides(cell.shape, view)
    assert x.stride() == strides and x.storage_offset() == offset
    for dims in [(0, 1, 2), (1, 0, 2), (2, 1, 0), (0, 2, 1)]:
        c = Cell("t", "", cell.shape, dims, "float32", view)
        assert cases.permuted_is_contiguous(c) == x.permute(dims).is_contiguous()


def test_slabs_cover_every_element_once():
    shape = (3, 5, 7)
    seen = torch.zeros(shape, dtype=torch.int32)
    for limit in (4, 28, 100, 10 ** 6):
        seen.zero_()
        for index in slabs(shape, 4, limit):
            seen[index] += 1
        assert bool((seen == 1).all())


def test_same_bits_compares_bytes():
    x = torch.randn(4, 6, dtype=torch.complex128)
    ref = x.t()
    out = ref.contiguous()
    assert same_bits(out, ref)
    out.view(torch.uint8).view(-1)[17] ^= 1
    assert not same_bits(out, ref)
    z = torch.zeros(2, 3)
    assert not same_bits(-z.t().contiguous(), z.t())  # -0.0 is not 0.0
    assert not same_bits(z.contiguous(), z.t())         # wrong shape


def test_run_cell_checks_then_times():
    cell = Cell("t", "", (5, 7), (1, 0), "float32", View("offset", 1, 1))
    wrong = OpSpec("wrong", "permute", lambda c: lambda x: x.t().contiguous() + 1, "")
    refuses = OpSpec("refuses", "permute", lambda c: lambda x: torch.empty(0).view(3),
                     "", may_refuse=True)
    good = OpSpec("good", "permute", lambda c: lambda x: x.permute(c.dims).contiguous(), "")
    clone = OpSpec("clone", "copy", lambda c: lambda x: x.clone(), "")
    rows = {r.op: r for r in run_cell(cell, [clone, wrong, refuses, good], lambda fn: 1.0,
                                      torch.device("cpu"), explain=lambda x, d: None)}
    assert rows["wrong"].status == "WRONG" and rows["refuses"].status == "n/a"
    assert rows["good"].status == "ok" and rows["good"].ratio == 1.0
    assert rows["clone"].gbps == pytest.approx(2 * 35 * 4 / 1e6)


def test_an_op_wrong_after_its_timed_launches_is_wrong():
    """The output is checked again after the timing: a kernel right on its first launch and not
    on later ones (a launch that silently does nothing, a walk that skips tiles) is not timed."""
    cell = Cell("t", "", (5, 7), (1, 0), "float32")
    calls = []

    def first_right(c):
        def run(x):
            calls.append(1)
            out = x.permute(c.dims).contiguous()
            return out if len(calls) == 1 else out.index_fill_(0, torch.tensor([2]), 0.0)
        return run
    flaky = OpSpec("flaky", "permute", first_right, "")
    clone = OpSpec("clone", "copy", lambda c: lambda x: x.clone(), "")
    rows = {r.op: r for r in run_cell(cell, [clone, flaky], lambda fn: 1.0, torch.device("cpu"),
                                      explain=lambda x, d: None)}
    assert len(calls) == 2  # checked, (timer), checked again
    assert rows["flaky"].status == "WRONG" and "after it was timed" in rows["flaky"].detail
    assert rows["flaky"].ms is None and rows["flaky"].ratio is None
    assert rows["clone"].status == "ok"


def test_run_cell_times_in_rounds_and_keeps_each_ops_fastest():
    cell = Cell("t", "", (5, 7), (1, 0), "float32")
    good = OpSpec("good", "permute", lambda c: lambda x: x.permute(c.dims).contiguous(), "")
    clone = OpSpec("clone", "copy", lambda c: lambda x: x.clone(), "")
    times = iter([2.0, 9.0, 1.0, 3.0, 4.0, 0.5])  # clone, good; good, clone (reversed); clone, good
    calls = []

    def timer(fn):
        calls.append(fn)
        return next(times)
    rows = {r.op: r for r in run_cell(cell, [clone, good], timer, torch.device("cpu"),
                                      explain=lambda x, d: None, rounds=3)}
    assert len(calls) == 6 and rows["clone"].ms == 2.0 and rows["good"].ms == 0.5
    assert rows["good"].ratio == pytest.approx(4.0)


def test_short_cells_take_more_rounds_in_alternating_order(monkeypatch):
    import bench.harness
    monkeypatch.setattr(bench.harness, "same_bits", lambda out, expected: True)
    cell = Cell("t", "", (5, 7), (1, 0), "float32")
    specs = [OpSpec(name, "copy", (lambda n: lambda c: lambda x: n)(name), "") for name in ("a", "b")]
    order = []

    def timer_of(ms):
        def timer(fn):
            order.append(fn())  # each op returns its name
            return ms
        return timer
    run_cell(cell, specs, timer_of(0.01), torch.device("cpu"), explain=lambda x, d: None,
             rounds=2, short=(0.02, 4))
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]  # 4 rounds, every other reversed
    order.clear()
    run_cell(cell, specs, timer_of(0.05), torch.device("cpu"), explain=lambda x, d: None,
             rounds=2, short=(0.02, 4))
    assert order == ["a", "b", "b", "a"]  # not short: the 2 rounds asked for


def test_short_cells_alone_are_timed_paced_too_and_get_a_paced_ratio():
    cell = Cell("t", "", (5, 7), (1, 0), "float32")
    good = OpSpec("good", "permute", lambda c: lambda x: x.permute(c.dims).contiguous(), "")
    clone = OpSpec("clone", "copy", lambda c: lambda x: x.clone(), "")
    paced_calls = []

    def paced(fn):
        paced_calls.append(fn().shape)  # each op's own call: clone's (5, 7), good's (7, 5)
        return 0.004 if len(paced_calls) == 1 else 0.008
    for ms, expect_paced in ((0.01, True), (0.05, False)):
        paced_calls.clear()
        rows = {r.op: r for r in run_cell(cell, [clone, good], lambda fn: ms, torch.device("cpu"),
                                          explain=lambda x, d: None, short=(0.02, 2), paced=paced)}
        assert rows["good"].ratio == 1.0
        if expect_paced:
            assert paced_calls == [(5, 7), (7, 5)]
            assert (rows["clone"].paced_ms, rows["good"].paced_ms) == (0.004, 0.008)
            assert rows["good"].paced_ratio == pytest.approx(0.5)
        else:  # not a short cell: no paced timing
            assert paced_calls == [] and rows["good"].paced_ms is None and rows["good"].paced_ratio is None


# ----------------------------------------------------------------------------------------------
# Summary statistics


def rows_of(group, name, ratios, status=None):
    cell = Cell("sweep", name, (2, 3), (1, 0), "float32", group=group)
    out = []
    for op, ratio in ratios.items():
        st = (status or {}).get(op, "ok")
        out.append(Result(cell, op, st, ms=1 / ratio if ratio else None,
                          ratio=ratio if st == "ok" else None))
    return out


def test_summary_statistics():
    results = (rows_of("TTC", "a", {"clone": 1, "eager": 0.5, "compile": 0.9, "permute": 0.9})
               + rows_of("TTC", "b", {"clone": 1, "eager": 0.25, "compile": 0.8, "permute": 0.795})
               + rows_of("random", "c", {"clone": 1, "eager": 0.4, "compile": 0.5,
                                         "permute": None}, status={"permute": "WRONG"}))
    s = summary.summarize(results, ("clone", "eager", "compile", "permute"))
    assert s.cells == 3
    assert (s.shares["eager"].compared, s.shares["eager"].wins) == (3, 2)   # WRONG is a loss
    assert (s.shares["compile"].wins, s.shares["compile"].near) == (1, 2)   # 0.795 >= 0.8-0.01
    assert s.geomeans["eager"] == pytest.approx((0.5 * 0.25 * 0.4) ** (1 / 3))
    assert s.geomeans["permute"] == pytest.approx((0.9 * 0.795) ** 0.5)
    assert [w.cell.name for w in s.worst["compile"]] == ["c", "b", "a"]
    assert s.worst["eager"][0].rel == 0.0
    assert [c.group for c in s.classes] == ["TTC", "random"]
    assert s.classes[0].shares["compile"].near == 2 and s.classes[1].cells == 1
    assert s.tuned == {}  # no autotuned column


def test_summary_shares_over_long_cells_leave_out_cells_whose_clone_is_short():
    # the ratios are what counts; the clone's time only sorts the cell in or out
    long = rows_of("TTC", "long", {"clone": 1, "compile": 0.9, "permute": 0.85})
    short = rows_of("random", "short", {"clone": 1, "compile": 0.1, "permute": 0.8})
    for r in short:
        r.ms = r.ms * summary.LONG_CELL_MS / 2  # a few microseconds
    s = summary.summarize(long + short, ("clone", "compile", "permute"))
    assert (s.shares["compile"].compared, s.shares["compile"].near) == (2, 1)
    assert (s.long["compile"].compared, s.long["compile"].near) == (1, 0)


def test_summary_shares_by_paced_ratio_take_it_where_a_cell_has_one():
    # a short cell where compile leads by do_bench and trails paced; a long cell without paced
    # times counts by its do_bench ratios in both rows
    short = rows_of("2-D", "short", {"clone": 1, "compile": 1.1, "permute": 1.0})
    for r, paced in zip(short, (1.0, 0.9, 1.0)):
        r.paced_ms, r.paced_ratio = r.ms, paced
    long = rows_of("TTC", "long", {"clone": 1, "compile": 0.9, "permute": 0.95})
    s = summary.summarize(short + long, ("clone", "compile", "permute"))
    assert (s.shares["compile"].compared, s.shares["compile"].near) == (2, 1)
    assert (s.paced["compile"].compared, s.paced["compile"].near) == (2, 2)
    assert summary.summarize(long, ("clone", "compile", "permute")).paced == {}  # no paced times: no row
    lines = "\n".join(sweep_report.shares_table(s, {}))
    assert "short cells timed paced" in lines and "2/2 (100%)" in lines.split("timed paced")[1]
    from bench.report import result_json, result_of
    assert result_of(result_json(short[1])) == short[1]                  # the paced times kept
    assert "paced_ms" not in result_json(long[1]) and result_of(result_json(long[1])) == long[1]


def test_summary_of_the_autotuned_column():
    results = (rows_of("TTC", "a", {"clone": 1, "eager": 0.5, "compile": 0.9, "permute": 0.8, "autotuned": 0.95})
               + rows_of("TTC", "b", {"clone": 1, "eager": 0.6, "compile": 0.7, "permute": 0.65,
                                      "autotuned": 0.5}))
    s = summary.summarize(results, ("clone", "eager", "compile", "permute", "autotuned"))
    assert (s.shares["compile"].wins, s.tuned["compile"].wins) == (0, 1)
    assert (s.tuned["eager"].compared, s.tuned["eager"].wins) == (2, 1)
    assert s.geomeans["autotuned"] == pytest.approx((0.95 * 0.5) ** 0.5)


# ----------------------------------------------------------------------------------------------
# Tuning: the grid, the winner, the .inc table


def test_tune_grid_is_deterministic_and_covers_the_features():
    cells = tune_grid.tune_cells(2)
    assert cells == tune_grid.tune_cells(2)
    assert {len(c.shape) for c in cells} == {2, 3, 4, 5}
    assert {cases.ITEMSIZE[c.dtype] for c in cells} == {1, 2, 4, 8, 16}
    assert any(c.dims[-1] == len(c.dims) - 1 for c in cells)       # keeps the innermost dim
    assert any(c.shape[-1] <= 16 for c in cells) and any(c.shape[c.dims[-1]] <= 16 for c in cells)
    assert not any(cases.permuted_is_contiguous(c) for c in cells)
    # the totals' bands, with the slack of rounding dims to their kinds and alignment
    assert all(2 ** 20 <= c.numel <= 1.05 * 2 ** 27 and c.nbytes <= cases.GiB for c in cells)
    assert not set(c.shape for c in cells) & set(c.shape for c in sweep_cases.sweep_cells())
    assert {c.view.kind for c in cells} == {"contiguous", "offset", "step", "expand", "transposed"}
    medium = [c for c in cells if " in:medium" in c.name]
    assert medium and all(48 <= c.shape[-1] * cases.ITEMSIZE[c.dtype] <= 1040 for c in medium)
    tiny = [c for c in cells if c.name.endswith(" tiny")]
    assert tiny and all(any(2 <= n <= 4 for d, n in enumerate(c.shape)
                            if d not in (len(c.shape) - 1, c.dims[-1])) for c in tiny)


def test_tune_small_work_grid_stays_under_the_chooser_threshold():
    cells = tune_grid.tune_cells(1, bands=("micro",))
    assert cells and cells == tune_grid.tune_cells(1, bands=("micro",))
    assert all(2 ** 14 <= c.numel < 2 ** 20 for c in cells)  # the chooser's ".s": under 2^20 elements
    assert {len(c.shape) for c in cells} == {2, 3, 4, 5} and {cases.ITEMSIZE[c.dtype] for c in cells} == {1, 2, 4, 8, 16}
    assert not set(c.shape for c in cells) & set(c.shape for c in tune_grid.tune_cells(1))


def test_tune_grid_of_one_view_kind():
    cells = tune_grid.tune_cells(1, seed=4246, view="expand")
    assert cells and cells == tune_grid.tune_cells(1, seed=4246, view="expand")
    assert {c.view.kind for c in cells} == {"expand"} and all(c.name.endswith(" view") for c in cells)
    assert all(c.view.dim < len(c.shape) and c.shape[c.view.dim] > 1 for c in cells)  # a real broadcast
    # the main grid draws the same shapes with or without the option
    assert tune_grid.tune_cells(1, seed=4246, view="") == tune_grid.tune_cells(1, seed=4246)


def test_small_work_classes_run_aten_or_rows_and_stay_out_of_the_table():
    results = tune_rows("t.e4.o3.i3.w4.s", {"tile": 1.5, "aten": 1.0}) + tune_rows("t.e4.o3.i3.w16", {"tile": 1.5, "aten": 1.0})
    for key in ("t.e4.o3.i3.w16.s", "t.e4.o3.i3.w16.f1.s", "t.e4.o3.i3.w16.b.s"):  # full tiles; 60-90% full; broadcast
        results += tune_rows(key, {"tile": 0.9, "aten": 1.0})
    for key in ("c.e2.o3.w16.s", "c.e4.o3.w4.s", "c.e2.o3.w16.b.s"):  # wide rows; rows of one element; broadcast
        results += tune_rows(key, {"rows": 0.9, "aten": 1.0})
    classes = {c.key: c for c in tune_table.aggregate(results, ("tile", "rows", "aten"))}
    assert classes["t.e4.o3.i3.w4.s"].ranking == ["aten"] and "by score tile,aten" in classes["t.e4.o3.i3.w4.s"].note
    assert classes["t.e4.o3.i3.w16"].ranking == ["tile", "aten"]
    # whatever their scores; lean runs the shapes the chooser gave it (small_transpose), which the key cannot tell
    assert classes["t.e4.o3.i3.w16.s"].ranking == classes["t.e4.o3.i3.w16.f1.s"].ranking == ["aten"]
    assert classes["t.e4.o3.i3.w16.b.s"].ranking == ["aten"] and "lean on its shapes" in classes["t.e4.o3.i3.w16.s"].note
    assert tune_table.small_work_ranking("t.e4.o3.i3.w16.s", "lean") == ["lean", "aten"]
    assert tune_table.small_work_ranking("t.e4.o3.i3.w16.s", "tile") == ["aten"]
    assert tune_table.small_work_ranking("c.e2.o3.w16.s", "aten") == ["rows", "aten"]
    assert classes["c.e2.o3.w16.s"].ranking == ["rows", "aten"]  # whatever its scores (csrc/choose.cpp, small_rows)
    assert classes["c.e4.o3.w4.s"].ranking == classes["c.e2.o3.w16.b.s"].ranking == ["aten"]
    meta = {"device_name": "GPU", "torch": "2.14", "date": "2026-01-01", "chooser": "cute_transpose"}
    assert tune_table.parse_inc(tune_table.inc_text(list(classes.values()), meta)) == [("t.e4.o3.i3.w16", "tile,aten")]


def test_a_class_of_few_shapes_keeps_aten_first_unless_a_kernel_clearly_beat_it():
    thin = tune_rows("t.thin", {"box": 0.52, "split": 0.45, "aten": 0.47})  # box only 1.1 x aten
    clear = tune_rows("t.clear", {"box": 0.80, "aten": 0.47})
    def one_class(key, count, box):  # `count` shapes of one class, box at `box`, aten at 0.47
        rows = [r for n in range(count) for r in tune_rows(f"{key}{'x' * n}", {"box": box, "aten": 0.47})]
        for r in rows:
            if r.explain:
                r.explain = {**r.explain, "class": key}
        return rows
    few = one_class("t.few", 3, 0.52)                             # 3-7 shapes, box 1.1 x aten: under 1.15 x
    few_clear = one_class("t.fewclear", 3, 0.56)                  # 1.19 x
    many = one_class("t.many", tune_table.THIN_SHAPES, 0.52)      # enough shapes: no margin
    classes = {c.key: c for c in tune_table.aggregate(thin + clear + few + few_clear + many, ("box", "split", "aten"))}
    assert classes["t.thin"].ranking[0] == "aten" and "few shapes" in classes["t.thin"].note
    assert classes["t.clear"].ranking == ["box", "aten"]
    assert classes["t.few"].shapes == 3 and classes["t.few"].ranking == ["aten", "box"]
    assert "is not 1.15 x aten" in classes["t.few"].note
    assert classes["t.fewclear"].ranking == ["box", "aten"]
    assert classes["t.many"].shapes == tune_table.THIN_SHAPES and classes["t.many"].ranking == ["box", "aten"]


def test_tune_keeps_a_few_shapes_of_every_chooser_class():
    cells = tune_grid.tune_cells(1)[:40]
    kind = {c: "rare" if i in (5, 30) else f"common{i % 3}" for i, c in enumerate(cells)}
    picked = tune_grid.by_chooser_class(cells, kind.__getitem__, per_key=4, limit=100)
    assert sorted(kind[c] for c in picked) == ["common0"] * 4 + ["common1"] * 4 + ["common2"] * 4 + ["rare"] * 2
    assert [kind[c] for c in picked[:4]] == ["common0", "common1", "common2", "rare"]  # round-robin
    assert picked[:3] == cells[:3] and len(set(picked)) == len(picked)
    assert tune_grid.by_chooser_class(cells, kind.__getitem__, per_key=4, limit=5) == picked[:5]


def tune_rows(key, ratios, status=None):
    cell = Cell("tune", key + str(len(ratios)) + str(sorted(ratios.items())), (2, 3), (1, 0),
                "float32")
    out = [Result(cell, "clone", "ok", ms=1.0, ratio=1.0, explain={"class": key, "kernel": "b"})]
    for k, r in ratios.items():
        st = (status or {}).get(k, "ok")
        out.append(Result(cell, k, st, ms=1 / r if r else None, ratio=r if st == "ok" else None))
    return out


def test_tune_ranks_kernels_by_how_they_do_where_they_run():
    results = (tune_rows('q"x\\y', {"a": 0.9, "b": 0.8, "c": 0.99})
               + tune_rows('q"x\\y', {"a": 0.9, "b": 0.7, "c": None}, {"c": "n/a"})
               + tune_rows("w", {"a": 0.5, "b": 0.6, "c": 0.9}, {"c": "WRONG"}))
    classes = tune_table.aggregate(results, ("a", "b", "c"))
    by_key = {c.key: c for c in classes}
    # c is best on the one shape it runs, a on the other: c, then a (which takes the rest), then b
    assert by_key['q"x\\y'].ranking == ["c", "a", "b"]
    assert by_key['q"x\\y'].score("c").text(2) == "0.99 (1/2)"
    assert by_key["w"].ranking == ["b", "a"] and by_key["w"].chosen_now == {"b": 1}  # c was wrong
    meta = {"device_name": "GPU", "torch": "2.14", "date": "2026-01-01", "chooser": "cute_transpose"}
    text = tune_table.inc_text(classes, meta)
    assert text.startswith("// Generated by bench/tune.py on GPU, torch 2.14, 2026-01-01")
    assert tune_table.parse_inc(text) == [('q"x\\y', "c,a,b"), ("w", "b,a")]
    assert '{"q\\"x\\\\y", "c,a,b"},  // c 0.99, a 0.90, b 0.75; 2 shapes (c runs 1/2 shapes' in text
    with pytest.raises(ValueError):
        tune_table.c_string("é")


def test_tune_thin_finds_classes_ranked_on_few_shapes_and_draws_shapes_for_them(tmp_path):
    from bench import tune
    results = (tune_rows("t.a", {"x": 0.9, "aten": 0.5})  # x first on the one shape of three it runs
               + tune_rows("t.a", {"x": None, "aten": 0.5}, {"x": "n/a"})
               + tune_rows("t.a", {"x": None, "aten": 0.6}, {"x": "n/a"})
               + [r for i in range(3) for r in tune_rows("t.b", {"x": 0.9 - i / 100, "aten": 0.5})]  # three
               + tune_rows("t.c", {"x": 0.4, "aten": 0.5})     # aten first
               + tune_rows("t.d.s", {"x": 0.9, "aten": 0.5}))  # small work: never the table's
    assert tune.thin_classes(results, ("x", "aten")) == {"t.a": "x"}
    # shapes drawn for t.a: float32 matrices here, where x runs on even first dims
    chooser = tune.Chooser(("x", "aten"), None, None,
                           lambda c: "t.a" if c.dtype == "float32" and len(c.shape) == 2 else "t.other", "fake",
                           lambda c, k: c.shape[0] % 2 == 0)
    cells = tune.thin_cells({"t.a": "x"}, chooser, seed=7, draws=50)
    assert len(cells) == tune_table.FEW_SHAPES
    assert all(c.dtype == "float32" and len(c.shape) == 2 and c.shape[0] % 2 == 0 for c in cells)
    assert len({(c.name, c.shape, c.dims, c.view) for c in cells}) == len(cells)
    # --thin-shapes N: a class is thin below N shapes, and is topped up to N
    assert tune.first_kernel_runs(results, ("x", "aten")) == {"t.a": ("x", 1), "t.b": ("x", 3)}
    assert tune.thin_classes(results, ("x", "aten"), shapes=5) == {"t.a": "x", "t.b": "x"}
    assert len(tune.thin_cells({"t.a": "x"}, chooser, seed=7, draws=50, shapes=5, have={"t.a": 1})) == 4
    path = tmp_path / "thin.json"
    path.write_text(tune.cells_json(cells))
    assert [(c.name, c.shape, c.dims, c.dtype, c.view) for c in tune.listed_cells(path)] == \
        [(c.name, c.shape, c.dims, c.dtype, c.view) for c in cells]


def test_tune_dry_run_writes_its_files(tmp_path):
    from bench import tune
    inc, report = tmp_path / "sm.inc", tmp_path / "tune.md"
    assert tune.main(["--dry-run", "--fake", "--max-shapes", "8", "--out", str(inc),
                      "--report", str(report)]) == 0
    entries = tune_table.parse_inc(inc.read_text())
    assert entries and all(set(ranking.split(",")) <= {"aten", "ours", "rows"} for _, ranking in entries)
    assert any(key.endswith(tune_table.FAMILY) for key, _ in entries)  # the families' lines
    assert "| class" in report.read_text()
    saved = tune_table.read_run(tmp_path / "tune.json.gz")  # every timing, compressed
    assert saved["rows"] and saved["meta"]["chooser"] == "fake"
    # --rerank reads the compressed run and names the report after it
    assert tune.main(["--rerank", str(tmp_path / "tune.json.gz"), "--out", str(tmp_path / "again.inc")]) == 0
    assert tune_table.parse_inc((tmp_path / "again.inc").read_text()) == entries
    assert (tmp_path / "tune.md").read_text().count("re-ranked from tune.json.gz") == 1


def test_a_saved_run_reads_back_plain_or_compressed(tmp_path):
    text = '{"meta": {"seed": 1}, "rows": []}\n'
    for name in ("run.json", "run.json.gz"):
        tune_table.write_run(tmp_path / name, text)
        assert tune_table.read_run(tmp_path / name) == {"meta": {"seed": 1}, "rows": []}
        assert tune_table.run_stem(tmp_path / name) == "run"
    assert (tmp_path / "run.json.gz").read_bytes()[:2] == b"\x1f\x8b"  # gzip
    first = (tmp_path / "run.json.gz").read_bytes()
    tune_table.write_run(tmp_path / "run.json.gz", text)
    assert (tmp_path / "run.json.gz").read_bytes() == first  # no time stamp: the same bytes


def test_bench_cli_sections():
    from bench import bench
    assert bench.wanted_sections(bench.parse_args(["--dry-run"])) == [
        "cpu", "matrix", "permute", "sweep", "workloads"]
    assert bench.wanted_sections(bench.parse_args(["--no-sweep", "--no-permute", "--no-workloads"])) == ["matrix"]
    assert bench.wanted_sections(bench.parse_args(["--sweep-only"])) == ["sweep"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--sweep-only", "--no-sweep"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--sweep-only", "--permute-only"])
    assert collections.Counter(c.section for c in cases.cpu_cells()) == {"cpu": 3}


def test_a_stopped_benchmark_writes_the_cells_it_measured(tmp_path, monkeypatch):
    # Ctrl-C or SIGTERM (a time limit) after three cells of the CPU demo's sweep: the run still
    # writes its files, with those cells, says it stopped, and exits 130.
    import signal
    from bench import bench
    done = []

    def stopping(*args, **kwargs):
        if len(done) == 3:
            signal.raise_signal(signal.SIGTERM)
        done.append(args[0])
        return run_cell(*args, **kwargs)

    monkeypatch.setattr(harness, "run_cell", stopping)
    assert bench.main(["--dry-run", "--sweep-only", "--out", str(tmp_path)]) == 130
    saved = json.loads((tmp_path / "CPU_dry-run-sweep.json").read_text())
    assert saved["meta"]["interrupted"].startswith("stopped after 3 of ")
    assert {(tuple(r["shape"]), r["case"]) for r in saved["sweep"]} == {(c.shape, c.name) for c in done[:3]}
    assert "**Interrupted: stopped after 3 of" in (tmp_path / "CPU_dry-run-sweep.md").read_text()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back


def test_a_saved_run_renders_again_to_the_same_report_and_json(tmp_path, monkeypatch):
    # --render measures nothing: from a run's JSON it writes the same report and JSON (every
    # section of the CPU demo, the 256x256 rows included), so a change to the report can be
    # applied to a saved run. The full-size CPU rows are cut to one small cell here.
    from bench import bench
    monkeypatch.setattr(cases, "cpu_cells", lambda: [Cell("cpu", "small", (64, 48), (1, 0), "float32")])
    assert bench.main(["--dry-run", "--out", str(tmp_path / "run")]) == 0
    saved = tmp_path / "run" / "CPU_dry-run.json"
    assert bench.main(["--render", str(saved), "--out", str(tmp_path / "again")]) == 0
    for name in ("CPU_dry-run.md", "CPU_dry-run.json"):
        assert (tmp_path / "again" / name).read_text() == (tmp_path / "run" / name).read_text(), name
    sections = {k for k in ("cpu_rows", "results", "tiny", "permute", "sweep") if json.loads(saved.read_text()).get(k)}
    assert sections == {"cpu_rows", "results", "tiny", "permute", "sweep"}


def test_tune_breaks_ties_by_preference():
    # padded is 1% ahead of tile: within the run-to-run spread, so tile (vectorized) ranks first
    results = tune_rows("t", {"padded": 0.95, "tile": 0.94, "aten": 0.40})
    classes = tune_table.aggregate(results, ("tile", "padded", "aten"))
    assert classes[0].ranking == ["tile", "padded", "aten"]
    # split is 1% ahead of aten: a tie, and torch's own copy is no loss to the user
    results = tune_rows("s", {"split": 0.80, "aten": 0.79})
    assert tune_table.aggregate(results, ("split", "aten"))[0].ranking == ["aten", "split"]


def test_tune_puts_kernels_that_lose_to_aten_after_it():
    # split wins on average but loses to aten by 14% on 1 of 2 shapes: its shortfall, the
    # geomean of min(split / aten, 1), is 0.93, worse than 1 - GUARD
    results = (tune_rows("k", {"split": 0.95, "box": 0.5, "aten": 0.40})
               + tune_rows("k", {"split": 0.60, "box": 0.5, "aten": 0.70}))
    c = tune_table.aggregate(results, ("split", "box", "aten"))[0]
    assert c.ranking == ["aten", "split", "box"]
    # the same loss in one of six shapes is a shortfall of 0.975: the kernel stays first, and
    # the note says so
    results = sum((tune_rows("k", {"tile": 0.95, "aten": 0.5 + i / 100}) for i in range(5)), [])
    results += tune_rows("k", {"tile": 0.60, "aten": 0.70})
    c = tune_table.aggregate(results, ("tile", "aten"))[0]
    assert c.ranking == ["tile", "aten"] and "slower than aten tile on 1/6" in c.note
    # a 9% loss on one of two shapes (shortfall 0.954) keeps a kernel that wins big on the other
    results = (tune_rows("k", {"tile": 0.80, "aten": 0.10})
               + tune_rows("k", {"tile": 1.05, "aten": 1.15}))
    assert tune_table.aggregate(results, ("tile", "aten"))[0].ranking == ["tile", "aten"]
    assert tune_table.shortfall([8.0, 1.05 / 1.15]) == pytest.approx((1.05 / 1.15) ** 0.5)
    results = tune_rows("t", {"padded": 0.99, "tile": 0.90, "aten": 0.40})
    assert tune_table.aggregate(results, ("tile", "padded", "aten"))[0].ranking == ["padded", "tile", "aten"]


def test_a_class_of_few_shapes_ranks_on_its_neighbours_too():
    # a broadcast class looks among broadcast classes first
    assert tune_table.neighbours("t.e4.o2.i2.w16.f2.Ie.b") == [
        "t.e4.o2.i2.w16.Ie.b", "t.e4.o2.i2.w16.b", "t.e4.o2.i2.w16.f2.Ie", "t.e4.o2.i2.w16.Ie", "t.e4.o2.i2.w16"]
    assert tune_table.neighbours("t.e4.o2.i2.w16.I") == ["t.e4.o2.i2.w16"]
    assert tune_table.neighbours("t.e4.o2.i2.w16.f1.Ig") == ["t.e4.o2.i2.w16.Ig", "t.e4.o2.i2.w16"]
    assert tune_table.neighbours("c.e1.o0.w1") == []
    assert tune_table.neighbours("t.e4.o2.i2.w16.f1.I.b.s") == [  # small work pools with small work
        "t.e4.o2.i2.w16.I.b.s", "t.e4.o2.i2.w16.b.s", "t.e4.o2.i2.w16.f1.I.s", "t.e4.o2.i2.w16.I.s",
        "t.e4.o2.i2.w16.s"]
    results = tune_rows("t.k.Ie", {"split": 0.83, "interleave": 0.54, "aten": 0.90})
    for i in range(5):
        results += tune_rows("t.k", {"split": 0.85 + i / 100, "aten": 0.45})
    by_key = {c.key: c for c in tune_table.aggregate(results, ("split", "interleave", "aten"))}
    # alone, the one shape would rank aten first (0.90 vs 0.83)
    assert by_key["t.k.Ie"].ranking[0] == "split" and by_key["t.k.Ie"].shapes == 6
    assert by_key["t.k.Ie"].note.startswith("1 own, with t.k (5)")
    assert by_key["t.k"].ranking == ["split", "aten"] and by_key["t.k"].shapes == 5


def test_a_class_of_few_shapes_pools_with_siblings_that_reduce_to_the_same_neighbour():
    # t.k.f2.Ig.b has one shape; t.k.f2.Ie.b (another interleave flag) and t.k.b reduce to the
    # same broadcast neighbour, t.k.b, and come before the unbroadcast t.k.f2.Ig
    results = tune_rows("t.k.f2.Ig.b", {"gather": 1.2, "aten": 0.6})
    results += tune_rows("t.k.f2.Ie.b", {"gather": 1.1, "aten": 0.7})
    results += tune_rows("t.k.f2.Ie.b", {"gather": 1.0, "aten": 0.8})
    for i in range(4):
        results += tune_rows("t.k.f2.Ig", {"gather": 0.2, "aten": 0.5 + i / 100})
    by_key = {c.key: c for c in tune_table.aggregate(results, ("gather", "aten"))}
    assert by_key["t.k.f2.Ig.b"].shapes == 3 and by_key["t.k.f2.Ig.b"].ranking[0] == "gather"
    assert by_key["t.k.f2.Ig.b"].note == "1 own, with t.k.f2.Ie.b (2)"
    assert tune_table.relatives(by_key)["t.k.b"] == ["t.k.f2.Ie.b", "t.k.f2.Ig.b"]


def test_a_family_is_its_classes_without_fill_and_interleave_flags():
    assert tune_table.family("t.e2.o0.i2.w2.f2.Ig.b") == "t.e2.o0.i2.w2.b.*"
    assert tune_table.family("t.e4.o2.i2.w16.f1.I") == "t.e4.o2.i2.w16.*"
    assert tune_table.family("c.e1.o0.w1") == "c.e1.o0.w1.*"
    assert tune_table.family("t.e4.o2.i2.w16.Ie", broadcast=True) == "t.e4.o2.i2.w16.b.*"
    assert tune_table.family("t.e4.o2.i2.w16.f1.b.s", broadcast=False) == "t.e4.o2.i2.w16.s.*"
    assert tune_table.family_keys("t.k.f1.Ie.b") == ("t.k.b.*", "t.k.*")
    assert tune_table.family_keys("t.k.Ig") == ("t.k.*", "t.k.b.*")


@pytest.mark.parametrize("shape, expanded, dims, dtype, case", [
    ((4, 17, 30000), 1, (0, 2, 1), torch.uint8, "own family"),            # t.e1.o1.i4.w1.f2.b
    ((3, 30000, 4, 7), None, (2, 1, 3, 0), torch.float64, "own family"),  # t.e8.o1.i1.w8.f2.Ie
    ((3001, 3, 64, 30), 2, (0, 1, 2, 3), torch.float32, "other family"),  # c.e4.o2.w8.b: no broadcast family
    ((300, 4099), 1, (0, 1), torch.uint8, ""),
    ((12, 300, 17, 33), 1, (2, 0, 3, 1), torch.float64, ""),
    ((3, 17, 30000), 0, (2, 0, 1), torch.float64, ""),
    ((3, 5, 7, 11), None, (3, 1, 2, 0), torch.int16, ""),
    ((257, 64, 257), None, (2, 1, 0), torch.uint8, ""),
])
def test_a_class_the_table_lacks_runs_its_familys_ranking(shape, expanded, dims, dtype, case):
    # A class without an entry runs its family's ranking (the family of its broadcast flag, else
    # the other's): the lookup the class holdout measured.
    import cute_transpose
    table = dict(tune_table.parse_inc((Path(__file__).parents[1] / "csrc" / "tuning" / "sm_90.inc").read_text()))
    base = [1 if d == expanded else s for d, s in enumerate(shape)]
    x = torch.empty(base, dtype=dtype, device="meta").expand(shape)
    info = cute_transpose.explain(x, dims)["cuda"]
    own = info["class"]
    family = next((k for k in tune_table.family_keys(own) if k in table), None)
    if own.endswith(".s"):  # small work: no table
        assert info["reason"].startswith("small work: "), info
    elif own in table:
        assert info["reason"].startswith(f"tuned for sm_90: class {own} ranks {table[own]}"), info
    elif family is None:
        assert info["reason"].startswith("rule: "), info
    else:
        assert info["reason"].startswith(
            f"tuned for sm_90: family {family} ranks {table[family]} (the table has no class {own})"), info
        moved = info["reason"].endswith(("each repeat one input element: run fill",  # fill's rules, after the table
                                         "not a vectored interleave: run fill")) or \
            "whose neighbours lie near in the output" in info["reason"]  # the H100's near_broadcast, after it too
        assert moved or info["kernel"] in table[family].split(","), info
    if case:  # the cases chosen to exercise the lookup
        assert own not in table and family == tune_table.family_keys(own)[case == "other family"], info


def test_a_family_keeps_a_kernel_ahead_of_aten_only_by_a_margin():
    # gather ran the family at 1.05 x ATen's copy: the class runs it, the family lends ATen's
    # copy first; at 1.2 x, both run gather
    for i, (lead, lent) in enumerate(((1.05, ["aten", "gather"]), (1.2, ["gather", "aten"]))):
        results = []
        for j in range(tune_table.THIN_SHAPES):  # enough shapes for the class to rank with no margin
            results += tune_rows(f"t.k{i}.f1", {"gather": 0.5 * lead + j / 1000, "aten": 0.5 + j / 1000})
        [c] = tune_table.aggregate(results, ("gather", "aten"))
        [f] = tune_table.families(results, ("gather", "aten"))
        assert (c.ranking, f.key, f.ranking) == (["gather", "aten"], f"t.k{i}.*", lent)
        assert tune_table.parse_inc(tune_table.inc_line(f)) == [(f"t.k{i}.*", ",".join(lent))]
    # each kernel ahead of aten is held to the margin: gather, first where it runs (one shape, at
    # 1.05 x aten), goes behind aten; tile (1.2 x aten over the family) stays ahead of it; the
    # family pools its classes' shapes (t.m.f1 and t.m.I)
    results = tune_rows("t.m.f1", {"gather": 0.63, "tile": 0.58, "aten": 0.6})
    for j in range(tune_table.THIN_SHAPES - 1):
        results += tune_rows("t.m.I", {"tile": 0.72 + j / 1000, "aten": 0.6 + j / 1000})
    [f] = tune_table.families(results, ("gather", "tile", "aten"))
    assert (f.key, f.ranking, f.shapes) == ("t.m.*", ["tile", "aten", "gather"], tune_table.THIN_SHAPES)
    assert f.note.startswith("family of 2 classes; gather behind aten: not 1.1 x aten"), f.note


def test_holdout_ranks_each_shape_without_it():
    results = []
    for i in range(3):  # "split" wins each shape, by a little less each time
        results += tune_rows("t.k", {"split": 0.9 - i / 100, "aten": 0.5})
    results += tune_rows("t.k", {"split": 0.4, "aten": 0.8})  # a shape where aten wins
    h = tune_table.holdout(results, ("split", "aten"))
    # Holding out a split shape leaves the aten shape among the others: split loses to aten on 1
    # of 3 (over the guard's fifth), so aten ranks first and runs the held-out shape. Holding out
    # the aten shape leaves three split wins: split runs it, at half aten's speed.
    assert h.shapes == 4 and h.slower_than_aten == 1
    assert h.vs_best == pytest.approx((0.5 / 0.9 * 0.5 / 0.89 * 0.5 / 0.88 * 0.5) ** 0.25)
    assert h.vs_aten == pytest.approx(0.5 ** (1 / 4))
    assert "4 shapes held out" in h.text()
    # a shape without a class key (explain gave none) is left out, not an error
    unclassed = [dataclasses.replace(r, explain=None) for r in tune_rows("t.none", {"split": 0.7, "aten": 0.6})]
    assert tune_table.holdout(results + unclassed, ("split", "aten")).shapes == 4


def test_holdout_runs_small_work_by_the_kernel_the_chooser_picked_for_each_shape():
    # Small work runs the chooser's rule, not a ranking: lean where explain says the chooser took
    # it for that shape (small_transpose), ATen's copy on the class's other shapes, whatever the
    # class's scores.
    def rows(shape, chosen):
        cell = Cell("tune", f"s{shape}", shape, (1, 0), "float32")
        return [Result(cell, "clone", "ok", ms=1.0, ratio=1.0, explain={"class": "t.e4.o4.i4.w16.s", "kernel": chosen}),
                Result(cell, "lean", "ok", ms=1 / 1.5, ratio=1.5), Result(cell, "tile", "ok", ms=1 / 2, ratio=2.0),
                Result(cell, "aten", "ok", ms=1.0, ratio=1.0)]
    results = rows((1024, 640), "lean") + rows((256, 256), "aten")
    h = tune_table.holdout(results, ("lean", "tile", "aten"))
    assert h.shapes == 2 and h.vs_aten == pytest.approx(1.5 ** 0.5) and h.vs_best == pytest.approx((1.5 / 2 * 1 / 2) ** 0.5)
    saved = [tune_table.SavedResult((r.cell.name, r.cell.shape, r.cell.dims, r.cell.dtype, ""), r.op, r.status, r.ratio,
                                    r.explain) for r in results]  # the same from a saved run's rows
    assert tune_table.holdout(saved, ("lean", "tile", "aten")).vs_aten == pytest.approx(1.5 ** 0.5)


def test_class_holdout_runs_a_class_left_out_of_the_table_by_its_family():
    kernels = ("tile", "gather", "aten")
    results = []
    for i in range(3):  # gather runs the broadcast classes at about twice ATen's speed, tile not at all
        results += tune_rows("t.k.f1.b", {"gather": 1.2 + i / 100, "aten": 0.6})
        results += tune_rows("t.k.f2.b", {"gather": 1.1 + i / 100, "aten": 0.7})
    for i in range(3):  # the unbroadcast class runs tile, and gather at 0.4 x ATen's copy
        results += tune_rows("t.k.f1", {"tile": 0.9 + i / 100, "gather": 0.2, "aten": 0.5})
    # t.k.f1.b runs the family t.k.b.* without it (t.k.f2.b's shapes): gather; t.k.f2.b the same
    # from t.k.f1.b's; t.k.f1, alone in the unbroadcast family, the broadcast family's ranking:
    # gather, at 0.4 x ATen's speed
    h = tune_table.class_holdout(results, kernels)
    assert (h.classes, h.shapes, h.slower_than_aten) == (3, 9, 3)
    expected = [*((1.2 + i / 100) / 0.6 for i in range(3)), *((1.1 + i / 100) / 0.7 for i in range(3)), *(0.4,) * 3]
    assert h.vs_aten == pytest.approx(math.prod(expected) ** (1 / 9))
    assert h.vs_best == pytest.approx((0.2 / 0.9 * 0.2 / 0.91 * 0.2 / 0.92) ** (1 / 9))
    assert "3 classes held out whole, their 9 shapes run by their family's pick" in h.text()


def write_tune_run(path, cells, kernels, dtype="float32", **meta):
    """A saved tune.json at `path`, of shapes with hand-set ratios: each cell is (case, shape,
    dims, {kernel: ratio}, the clone row's explain), clone timed at 1.0 first; `meta` overrides
    the run's defaults."""
    rows = [{"case": case, "shape": list(shape), "dims": list(dims), "dtype": dtype, "view": "", "kernel": k,
             "status": "ok", "ms": 1 / r, "ratio": r, "detail": "", "explain": explain if k == "clone" else None}
            for case, shape, dims, ratios, explain in cells for k, r in {"clone": 1.0, **ratios}.items()]
    meta = {"device_name": "GPU", "torch": "2.14", "date": "2026-01-01", "chooser": "cute_transpose",
            "kernels": list(kernels), "seed": 1, "shapes": len(cells), "grid_shapes": len(cells), "seconds": 1.0,
            "timing": "t", **meta}
    path.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    return path


def saved_tune_run(path, cells, left_out=()):
    """A saved tune.json at `path`: each (shape, dims) of `cells` timed for clone (1.0), "ours"
    (0.5) and "aten" (1.0) in class t.a, but the (shape, kernel) pairs of `left_out`."""
    timed = [("c", shape, dims, {k: r for k, r in (("ours", 0.5), ("aten", 1.0)) if (tuple(shape), k) not in left_out},
              {"class": "t.a", "kernel": "ours"}) for shape, dims in cells]
    return write_tune_run(path, timed, ["aten", "ours"], device_name="CPU", chooser="fake")


def test_tune_rerank_replays_small_work_by_this_builds_pick_over_every_runs_kernels(tmp_path, capsys):
    # a small transpose (the attention keys) saved when the chooser ran ATen's copy there, timed
    # with lean in a second run: re-classified, it runs lean (small_transpose), at 1.5 x ATen's copy
    from bench import tune
    keys = ("keys", [8, 12, 128, 64], [0, 1, 3, 2])
    explain = {"class": "t.old.s", "kernel": "aten"}
    paths = [write_tune_run(tmp_path / f"run{i}.json", [(*keys, ratios, explain)], ratios, dtype="bfloat16")
             for i, ratios in enumerate(({"aten": 0.5}, {"lean": 0.75, "aten": 0.5}))]
    capsys.readouterr()
    assert tune.main(["--rerank", *map(str, paths), "--reclassify", "--holdout", "--out", str(tmp_path / "t.inc")]) == 0
    assert "1 shapes held out: the pick reaches 1.000 of the best kernel and 1.500 x ATen's copy" in capsys.readouterr().out


def test_tune_replay_scores_the_sm90_tables_picks_on_each_runs_shared_shapes(tmp_path, capsys):
    # one shape measured on two GPUs (its case named differently) and one only the first measured:
    # each run is scored on its own timings of the kernel the sm_90 table picks, on the shared shape
    from bench import tune
    pick = json.loads(torch.ops.cute_transpose._explain(torch.empty(4096, 96), [1, 0], 90, ""))["kernel"]
    assert pick != "aten"  # a kernel of ours: scored against ATen's copy and a faster third kernel
    third = "box" if pick != "box" else "tile"

    def run(name, shapes):
        return write_tune_run(tmp_path / f"{name}.json",
                              [(f"{name} {i}", shape, [1, 0], {pick: mine, third: best, "aten": 0.5},
                                {"class": "t.x", "kernel": pick}) for i, (shape, mine, best) in enumerate(shapes)],
                              [pick, third, "aten"], device_name=f"GPU {name}")

    first = run("a", [([4096, 96], 0.8, 1.0), ([4096, 80], 0.1, 1.0)])
    second = run("b", [([4096, 96], 0.9, 0.6)])
    capsys.readouterr()
    assert tune.main(["--replay", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert "the sm_90 table's picks on 1 shapes that every run measured" in out
    assert "a.json (GPU a): the pick reaches 0.800 of the best kernel and 1.600 x ATen's copy" in out
    assert "b.json (GPU b): the pick reaches 1.000 of the best kernel and 1.800 x ATen's copy" in out


def test_tune_rerank_rebuilds_the_table_from_saved_measurements(tmp_path, capsys):
    from bench import tune
    import cute_transpose
    explain = {"class": "t.x", "kernel": "tile"}
    saved = write_tune_run(tmp_path / "tune.json", [("c", [4, 5], [1, 0], {"tile": 0.9, "aten": 0.5}, explain)],
                           ["tile", "aten"])
    assert tune.main(["--rerank", str(saved), "--out", str(tmp_path / "t.inc")]) == 0
    assert tune_table.parse_inc((tmp_path / "t.inc").read_text()) == [("t.x", "tile,aten"), ("t.x.*", "tile,aten")]
    assert "re-ranked from tune.json" in (tmp_path / "tune.md").read_text()
    # --reclassify: the class this build's chooser gives a 262144 x 5 float32 transpose, not
    # "t.x"; and the chooser does not offer the tile kernel there (its tiles would be almost
    # empty), so the saved tile result no longer counts and the box kernel ranks first
    write_tune_run(saved, [("c", [262144, 5], [1, 0], {"tile": 0.9, "aten": 0.5, "box": 0.8}, explain)],
                   ["tile", "box", "aten"])
    assert tune.main(["--rerank", str(saved), "--reclassify", "--out", str(tmp_path / "t.inc")]) == 0
    [(key, ranking), (fam, fam_ranking)] = tune_table.parse_inc((tmp_path / "t.inc").read_text())
    assert key == cute_transpose.explain(torch.empty(262144, 5), (1, 0))["cuda"]["class"] and ranking == "box,aten"
    assert (fam, fam_ranking) == (tune_table.family(key), "box,aten")
    # --holdout also replays the fixed rule (a GPU without a table) on the saved shape
    capsys.readouterr()
    assert tune.main(["--rerank", str(saved), "--reclassify", "--holdout", "--out", str(tmp_path / "t.inc")]) == 0
    rule = json.loads(torch.ops.cute_transpose._explain(torch.empty(262144, 5), [1, 0], 0, ""))
    out = capsys.readouterr().out
    if rule["kernel"] in ("box", "aten"):  # measured in the saved run
        ratio = {"box": 0.8, "aten": 0.5}[rule["kernel"]]
        assert (f"the fixed rule (a GPU without a table) on 1 shapes: the pick reaches {ratio / 0.8:.3f} of the "
                f"best kernel and {ratio / 0.5:.3f} x ATen's copy") in out
    else:
        assert "the fixed rule (a GPU without a table) on 0 shapes: no shape to score (1 shapes where" in out
    assert "0 classes held out whole, their 0 shapes run by their family's pick: no shape to score" in out
    write_tune_run(saved, [("c", [4, 5], [1, 0], {"tile": 0.9, "aten": 0.5}, explain)], ["tile", "aten"])
    # several runs rank over all their shapes: a second grid where aten wins outvotes the first
    other = write_tune_run(tmp_path / "tune-2.json", [("c", [6, 7], [1, 0], {"tile": 0.3, "aten": 0.8}, explain)],
                           ["tile", "aten"], seed=2)
    assert tune.main(["--rerank", str(saved), str(other), "--out", str(tmp_path / "t.inc")]) == 0
    assert tune_table.parse_inc((tmp_path / "t.inc").read_text()) == [("t.x", "aten,tile"), ("t.x.*", "aten,tile")]
    report = (tmp_path / "tune.md").read_text()
    assert "from tune.json, tune-2.json" in report and "2 of 2 grid shapes measured (seed 1, 2)" in report


def test_tune_times_again_only_results_far_below_their_class():
    from bench import tune
    results = []
    for inter, aten in ((1.2, 0.7), (1.1, 0.6), (1.15, 0.65), (0.05, 0.69), (1.0, 0.1)):
        results += tune_rows("t.k", {"interleave": inter, "aten": aten})
    results += tune_rows("t.two", {"interleave": 1.0, "aten": 0.5})  # two shapes: too few to judge
    results += tune_rows("t.two", {"interleave": 0.01, "aten": 0.4})
    found = tune.suspects(results, ("interleave", "aten"))
    from bench.summary import by_cell
    cells = list(by_cell(results))
    # standing (ratio / the shape's best): interleave 0.07 on shape 4, 1.0 on the others; aten
    # 0.1 on shape 5, 0.55-0.58 on the first three and 1.0 on shape 4 (median 0.57)
    assert found == {cells[3]: {"interleave"}, cells[4]: {"aten"}}


def test_tune_retime_keeps_the_faster_timing(tmp_path):
    from bench import tune
    rows = []
    for n, ours in ((20, 1.0), (24, 1.1), (28, 0.9), (32, 0.001)):
        for k, r in (("clone", 1.0), ("ours", ours), ("aten", 1.0)):
            rows.append({"case": "c", "shape": [n, 30], "dims": [1, 0], "dtype": "float32", "view": "",
                         "kernel": k, "status": "ok", "ms": 1 / r, "ratio": r, "detail": "",
                         "explain": {"class": "old", "kernel": "ours"} if k == "clone" else None})
    saved = tmp_path / "tune.json"
    meta = {"device_name": "CPU", "torch": "2.14", "date": "2026-01-01", "chooser": "fake", "seed": 1,
            "kernels": ["aten", "ours", "rows"], "shapes": 4, "grid_shapes": 4, "seconds": 1.0, "timing": "t"}
    saved.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved)]) == 0
    after = json.loads(saved.read_text())
    changed = [r for r in after["rows"] if r["detail"]]
    # only the 0.001 result stood far below its kernel's usual standing; timed again it is faster
    assert [(r["shape"], r["kernel"]) for r in changed] == [([32, 30], "ours")]
    assert changed[0]["ratio"] > 0.001 and changed[0]["detail"].endswith("first 0.001")
    assert after["meta"]["retimed"].startswith("1 results under 0.75 x their kernel's usual standing")
    assert after["meta"]["retimed"].endswith("1 faster the second time")
    # a table ranked again from the run says so in its report
    assert tune.main(["--rerank", str(saved), str(saved), "--out", str(tmp_path / "t.inc")]) == 0
    assert "Timed again: tune.json: 1 results under 0.75" in (tmp_path / "tune.md").read_text()


def test_tune_remeasure_replaces_a_changed_kernels_timings(tmp_path):
    from bench import tune
    rows = []
    for n, key in ((20, "t.a"), (24, "t.a"), (28, "t.b")):
        for k, r in (("clone", 1.0), ("ours", 0.5), ("aten", 1.0)):
            rows.append({"case": "c", "shape": [n, 30], "dims": [1, 0], "dtype": "float32", "view": "",
                         "kernel": k, "status": "ok", "ms": 1 / r, "ratio": r, "detail": "",
                         "explain": {"class": key, "kernel": "ours"} if k == "clone" else None})
    saved = tmp_path / "tune.json"
    meta = {"device_name": "CPU", "torch": "2.14", "date": "2026-01-01", "chooser": "fake", "seed": 1,
            "kernels": ["aten", "ours", "rows"], "shapes": 3, "grid_shapes": 3, "seconds": 1.0, "timing": "t",
            "retimed": "earlier note"}
    saved.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours", "--where", "e4/tile"]) == 0
    after = json.loads(saved.read_text())
    changed = [r for r in after["rows"] if r["detail"]]
    # the fake chooser puts every shape in class "e4/tile"; every "ours" result is timed again,
    # kept whether faster or not, with the old ratio in the detail
    assert sorted(r["shape"][0] for r in changed) == [20, 24, 28] and {r["kernel"] for r in changed} == {"ours"}
    assert all(r["detail"].endswith("0.500 before") and r["ms"] == pytest.approx(1 / r["ratio"]) for r in changed)  # clone: 1 ms
    assert after["meta"]["retimed"] == "earlier note; ours timed again after a change to it on its 3 shapes " \
                                       "of the classes matching `e4/tile`"
    # --config: only the shapes where the kernel's configuration matches (the fake's: "<rows> rows")
    saved.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours",
                      "--config", "^2[48] rows"]) == 0
    after = json.loads(saved.read_text())
    assert sorted(r["shape"][0] for r in after["rows"] if r["detail"]) == [24, 28]
    assert after["meta"]["retimed"].endswith("on its 2 shapes where its configuration matches `^2[48] rows`")
    saved.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours", "--where", "nothing"]) == 0
    assert not any(r["detail"] for r in json.loads(saved.read_text())["rows"])
    # --moved: only the shapes this build puts in another class than the saved one (20 stays)
    for r in rows:
        if r["shape"][0] == 20 and r["explain"]:
            r["explain"]["class"] = "e4/tile"
    saved.write_text(json.dumps({"meta": meta, "classes": [], "rows": rows}))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours", "--moved"]) == 0
    after = json.loads(saved.read_text())
    assert sorted(r["shape"][0] for r in after["rows"] if r["detail"]) == [24, 28]
    assert after["meta"]["retimed"].endswith("on its 2 shapes that this build puts in another class")


def test_tune_remeasure_adds_a_kernel_new_to_the_saved_run(tmp_path):
    from bench import tune
    saved = saved_tune_run(tmp_path / "tune.json", [((n, 2, 30), dims) for n, dims in (
        (20, (1, 0, 2)), (24, (1, 0, 2)), (28, (1, 0, 2)), (32, (2, 1, 0)))])
    # the fake chooser's "rows" was never timed in this run: it is timed on every shape it is
    # offered (all four), with "ours" timed again beside it and "aten" left alone; where it
    # refuses (the transpose of the last shape) it gets no row
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "rows", "--beside", "ours"]) == 0
    after = json.loads(saved.read_text())
    added = [r for r in after["rows"] if r["kernel"] == "rows"]
    assert sorted(r["shape"][0] for r in added) == [20, 24, 28]
    assert all(r["status"] == "ok" and r["ratio"] > 0 and r["ms"] == pytest.approx(1 / r["ratio"]) for r in added)
    assert all(r["detail"].startswith("timed after the run") for r in added)
    assert {r["kernel"] for r in after["rows"] if r["detail"]} == {"rows", "ours"}
    assert not any(r["detail"] for r in after["rows"] if r["kernel"] == "aten")
    assert after["meta"]["kernels"] == ["aten", "ours", "rows"]
    assert after["meta"]["retimed"] == "rows timed, new to this run, on its 3 shapes, beside ours timed again"
    assert len([r for r in after["rows"] if r["kernel"] == "ours" and r["detail"]]) == 4
    # a rerank ranks the added kernel with the others
    assert tune.main(["--rerank", str(saved), "--out", str(tmp_path / "t.inc")]) == 0
    assert "rows" in (tmp_path / "t.inc").read_text()


def test_tune_remeasure_also_times_a_kernel_on_shapes_it_never_ran(tmp_path):
    from bench import tune
    # "ours" timed on the first two shapes only (another class, say, when it ran)
    saved = saved_tune_run(tmp_path / "tune.json", [((n, 30), (1, 0)) for n in (20, 24, 28)],
                           left_out={((28, 30), "ours")})
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours"]) == 0
    after = json.loads(saved.read_text())
    ours = sorted((r["shape"][0], r["detail"].split(":")[0]) for r in after["rows"] if r["kernel"] == "ours")
    assert ours == [(20, "timed again after a change to the kernel"), (24, "timed again after a change to the kernel"),
                    (28, "timed after the run")]
    assert after["meta"]["retimed"] == "ours timed again after a change to it on its 3 shapes (1 of them new to it)"
    assert after["meta"]["kernels"] == ["aten", "ours"]


def test_tune_remeasure_of_listed_shapes_times_a_kernel_where_it_refused_before(tmp_path):
    from bench import tune
    saved = saved_tune_run(tmp_path / "tune.json", [((n, 30), (1, 0)) for n in (20, 24, 28)])
    run = json.loads(saved.read_text())
    for row in run["rows"]:  # "ours" refused the 24-row shape when the run was made
        if row["kernel"] == "ours" and row["shape"][0] == 24:
            row.update(status="n/a", ms=None, ratio=None, detail="cannot run")
    saved.write_text(json.dumps(run))
    listed = tmp_path / "cells.json"
    listed.write_text(json.dumps([{"case": "c", "shape": [n, 30], "dims": [1, 0], "dtype": "float32", "view": ""}
                                  for n in (24, 28)]))
    assert tune.main(["--dry-run", "--fake", "--retime", str(saved), "--remeasure", "ours", "--cells", str(listed)]) == 0
    after = json.loads(saved.read_text())
    ours = {r["shape"][0]: r for r in after["rows"] if r["kernel"] == "ours"}
    assert ours[20]["detail"] == "" and ours[20]["ratio"] == 0.5  # not listed: left alone
    assert ours[24]["status"] == "ok" and ours[24]["detail"].startswith("runs after a change to the kernel")
    assert ours[24]["ms"] == pytest.approx(1 / ours[24]["ratio"])  # clone: 1 ms
    assert ours[28]["detail"].startswith("timed again after a change to the kernel")
    assert after["meta"]["retimed"] == "ours timed again after a change to it on its 2 shapes (1 of them refused " \
                                       "before) listed in cells.json"


@pytest.mark.parametrize("view", [View(), View("offset", 2, 1), View("step", 0, 3), View("transposed", 3, 1),
                                  View("expand", 1), View("packed", 2, 3),
                                  View("strided", strides=(96, 0, 1, 3), offset=5)], ids=lambda v: v.kind)
def test_a_view_reads_back_from_its_text(view):
    assert View.parse(view.text()) == view
    assert View(**json.loads(json.dumps(dataclasses.asdict(view)))) == view  # and from a run's JSON


def test_rechoose_replays_the_chooser_on_a_saved_sweep():
    from bench import rechoose
    import cute_transpose
    view = {"kind": "expand", "dim": 0, "amount": 0}
    shape, dims = (4, 3, 224, 224), (0, 2, 3, 1)

    def row(op, ratio, kernel=None):
        return {"case": "c", "shape": list(shape), "dims": list(dims), "dtype": "uint8",
                "view": view, "op": op, "ratio": ratio,
                "explain": {"kernel": kernel} if kernel else None}
    saved = {"sweep": [row("eager", 0.9), row("permute", 0.5, "box")]}
    [r] = rechoose.rechoose(saved)
    x = torch.empty(1, 3, 224, 224, dtype=torch.uint8).expand(shape)
    assert r["now"] == cute_transpose.explain(x, dims)["cuda"]["kernel"]
    assert r["ran"] == "box" and rechoose.mark(r) == "+"  # 0.5 trails eager's 0.9
    assert harness.meta_input(shape, "uint8", View(**view)).stride() == x.stride()
    # a run's matrix table: the op is "transpose"
    matrix = {"results": [{**row("eager", 0.4), "case": "m"}, {**row("transpose", 0.45, "aten"), "case": "m"}]}
    [r] = rechoose.rechoose(matrix)
    assert r["case"] == "m" and r["ran"] == "aten" and r["now"] == cute_transpose.explain(x, dims)["cuda"]["kernel"]
    # with an autotuned column: the new pick's ratio estimated from the timings of the same run
    tuned = {**row("autotuned", 0.6), "explain": {"kernel": "gather", "reason": rechoose.TIMINGS +
                                                  "gather 10.0 us, box 12.0 us, aten 30.5 us"}}
    [r] = rechoose.rechoose({"sweep": [row("eager", 0.9), row("permute", 0.5, "box"), tuned]})
    assert r["timings"] == {"gather": 10.0, "box": 12.0, "aten": 30.5}
    assert rechoose.estimate({**r, "now": "gather"}) == pytest.approx(0.5 * 12.0 / 10.0)
    assert rechoose.estimate({**r, "now": "tile"}) is None  # not timed there


def test_rechoose_gaps_count_cells_where_a_timed_kernel_beat_the_pick(tmp_path, capsys):
    from bench import rechoose
    rows = [{"now": "aten", "timings": {"aten": 30.0, "gather": 10.0, "box": 12.0}, "clone_us": 25.0},
            {"now": "aten", "timings": {"aten": 10.0, "gather": 8.0}, "clone_us": 5.0},
            {"now": "aten", "timings": {"aten": 10.0, "gather": 9.6}, "clone_us": 5.0},  # within 5%
            {"now": "split", "timings": {"split": 10.0, "aten": 20.0}, "clone_us": 40.0},  # the pick is fastest
            {"now": "fill", "timings": {"aten": 10.0, "gather": 5.0}, "clone_us": 40.0},  # the pick not timed
            {"now": "tile", "timings": {}, "clone_us": 40.0}]
    found = rechoose.gaps(rows)
    assert set(found) == {("aten", "gather")}
    assert [c["gap"] for c in found[("aten", "gather")]] == [pytest.approx(3.0), pytest.approx(1.25)]
    # the command line, over two saved runs: the pick as this build makes it, the timings as saved
    cell = {"case": "c", "shape": [3001, 1000], "dims": [1, 0], "dtype": "float64", "view": {}}
    pick = rechoose.rechoose({"sweep": [{**cell, "op": "eager", "ratio": 0.4}, {**cell, "op": "permute", "ratio": 0.6,
                                                                                "explain": {"kernel": "realign"}}]},
                             gpu="")[0]["now"]
    runs = []
    for i, us in enumerate((20.0, 12.0)):
        tuned = {**cell, "op": "autotuned", "ratio": 0.7,
                 "explain": {"kernel": "x", "reason": rechoose.TIMINGS + f"{pick} {us} us, zzz 10.0 us"}}
        run = {"meta": {"device_name": "NVIDIA H100 80GB HBM3"},
               "sweep": [{**cell, "op": "clone", "ratio": 1.0, "ms": 0.03}, {**cell, "op": "eager", "ratio": 0.4},
                         {**cell, "op": "permute", "ratio": 0.6, "explain": {"kernel": pick}}, tuned]}
        runs.append(tmp_path / f"run{i}.json")
        runs[-1].write_text(json.dumps(run))
    assert rechoose.main(["--gaps", *map(str, runs)]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 cells have the autotuner's timings" in out and "on 2 of them" in out
    assert f"{pick:14s} -> zzz" in out and "2 cells (2 of 20 us of copy or more), 1.55 x (geomean), up to 2.00 x" in out


def test_rechoose_replays_the_rules_of_the_gpu_that_measured_the_run():
    from bench import rechoose
    # float64 (3001, 1000) transposed: realign on the H100's rules, tile on an H200's
    cell = {"case": "c", "shape": [3001, 1000], "dims": [1, 0], "dtype": "float64", "view": {}}
    sweep = [{**cell, "op": "eager", "ratio": 0.4}, {**cell, "op": "permute", "ratio": 0.66,
                                                    "explain": {"kernel": "realign"}}]
    [h100] = rechoose.rechoose({"meta": {"device_name": "NVIDIA H100 80GB HBM3"}, "sweep": sweep})
    [h200] = rechoose.rechoose({"meta": {"device_name": "NVIDIA H200"}, "sweep": sweep})
    [named] = rechoose.rechoose({"sweep": sweep}, gpu="NVIDIA H200")  # a run without meta, --gpu
    assert (h100["now"], h200["now"], named["now"]) == ("realign", "tile", "tile")


def test_rechoose_names_the_block_order_of_rows_and_gather():
    from bench import rechoose
    # the TTC suite's 64-byte runs whose next run lies 6.9 MB on: rows in the neighbours-together
    # order on both sm_90 GPUs; a run measured before that rule ran them in the plain order
    cell = {"case": "TTC", "shape": [15, 15, 32, 15, 32, 16], "dims": [4, 1, 0, 3, 2, 5], "dtype": "float32", "view": {}}
    together = {"kernel": "rows", "config": "16-byte vectors, blocks of 128 threads, neighbouring runs read together"}
    plain = {"kernel": "rows", "config": "16-byte vectors"}
    timings = rechoose.TIMINGS + "rows/together 126.8 us, rows 151.1 us, aten 219.6 us"

    def run(gpu, ran):
        tuned = {**cell, "op": "autotuned", "ratio": 0.85, "explain": {**together, "reason": timings}}
        sweep = [{**cell, "op": "eager", "ratio": 0.49}, {**cell, "op": "permute", "ratio": 0.85, "explain": ran}, tuned]
        [row] = rechoose.rechoose({"meta": {"device_name": gpu}, "sweep": sweep})
        return row
    h200, h100 = run("NVIDIA H200", together), run("NVIDIA H100 80GB HBM3", plain)
    assert (h200["ran"], h200["now"], h100["ran"], h100["now"]) == ("rows/together", "rows/together", "rows", "rows/together")
    assert h200["timings"] == {"rows/together": 126.8, "rows": 151.1, "aten": 219.6}
    assert rechoose.estimate(h100) == pytest.approx(0.85 * 151.1 / 126.8)
    assert rechoose.forced_name({"kernel": "gather", "config": "16-byte stores"}) == "gather"


def test_a_sweep_alone_writes_sweep_named_reports(tmp_path):
    from bench.report import Section, write_outputs
    meta = {"device_name": "Some GPU"}
    paths = write_outputs(tmp_path, meta, {"sweep": Section("sweep", [], [])}, [], "# sweep\n")
    assert {p.name for p in paths} == {"Some_GPU-sweep.json", "Some_GPU-sweep.md"}
    paths = write_outputs(tmp_path, meta, {"matrix": Section("matrix", [], []), "sweep": Section("sweep", [], [])},
                          [], "# all\n")
    assert {p.name for p in paths} == {"Some_GPU.json", "Some_GPU.md"}


def test_tile_shapes_small_grid_and_its_summary():
    # --small: 2^16-2^20 elements (a batch rounded down may leave fewer), whole 16-byte vectors
    grid = tile_shapes.grid(60, 8, small=True)
    for shape, dims, dtype in grid:
        E = torch.empty((), dtype=dtype).element_size()
        m, n = shape[1], shape[-1]
        assert math.prod(shape) < 2 ** 20 and (m * E) % 16 == 0 and (n * E) % 16 == 0, (shape, dtype)
    assert sum(math.prod(s) >= 2 ** 16 for s, _, _ in grid) >= 50
    # made-up ratios: Small tiles twice ATen's copy's speed on the largest shape, half elsewhere
    big = max(range(len(grid)), key=lambda i: math.prod(grid[i][0]))
    rows = [{"shape": s, "dims": d, "dtype": str(t), "picked": "square", "chosen": "small" if i == big else "aten",
             "ratios": {"square": 1.0, "small": 2.0 if i == big else 0.5, "lean": 1.5, "aten": 1.0}}
            for i, (s, d, t) in enumerate(grid)]
    text = tile_shapes.summary(rows, small=True)
    assert "| small    |" in text and "Against ATen's copy" in text and "| lean |" in text
    assert "| lean     |" not in text  # the tile shapes' shares of the best leave the other kernels out
    band_rows = [line for line in text.splitlines() if line.startswith(("| under 2^18", "| 2^18", "| 2^19"))]
    assert band_rows and all(line.split("|")[-2].strip().startswith("1.50 (0/") for line in band_rows)
    assert f"{2 ** (1 / len(grid)):.3f} x ATen's copy over {len(grid)} shapes, 0 more than 5% slower" in text
    assert f"on the 1 where it runs a kernel of ours 2.000 x (worst 2.00 x)" in text
    assert tile_shapes.chosen({"cuda": {"kernel": "tile", "config": "64x64 small tile, 64 threads"}}) == "small"
    assert tile_shapes.chosen({"kernel": "aten", "config": "torch's own strided copy"}) == "aten"


def test_interleave_small_grid_and_its_summary():
    grid = interleave_small.grid(1)
    assert grid == interleave_small.grid(1) and grid != interleave_small.grid(2)  # seeded
    vector = [interleave_small.vector_interleave(torch.empty(s, dtype=t), d) for s, d, t in grid]
    assert all(2 ** 10 <= math.prod(s) < 2 ** 20 for s, _, _ in grid)
    assert sum(vector) >= 0.6 * len(grid) and not all(vector)  # mostly interleave's vector mode, some others
    assert not interleave_small.vector_interleave(torch.empty(30001, 6, dtype=torch.bfloat16), (1, 0))  # off the grid
    assert interleave_small.vector_interleave(torch.empty(224, 224, 3, dtype=torch.uint8), (2, 0, 1))
    # made-up times: interleave picked on two uint8 shapes, one at half ATen's copy's speed
    rows = [{"shape": [224, 224, 3], "dims": [2, 0, 1], "dtype": "uint8", "chosen": "interleave",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 4.0, "aten": 6.0, "interleave": 4.0}},
            {"shape": [3, 224, 224], "dims": [1, 2, 0], "dtype": "uint8", "chosen": "interleave",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 12.0, "aten": 6.0, "interleave": 12.0}},
            {"shape": [224, 224, 3], "dims": [2, 0, 1], "dtype": "float32", "chosen": "aten",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 6.0, "aten": 6.0}}]
    text = interleave_small.summary(rows)
    assert text.startswith("3 shapes, 2 run interleave by the chooser.")
    assert "| uint8 | 2 | 0.866 | 1 | 0.500 | 0.866 |" in text and "| every | 2 | 0.866 | 1 | 0.500 | 0.866 |" in text  # (1.5 x 0.5) ** 0.5
    assert "float32" not in text


def test_lanes_small_grid_and_its_summary():
    grid = lanes_small.grid(1, tries=200)
    assert grid and grid == lanes_small.grid(1, tries=200) != lanes_small.grid(2, tries=200)  # seeded
    for shape, dims, dtype, view in grid:  # small work the chooser gives lanes, in its view
        assert 2 ** 8 <= math.prod(shape) < 2 ** 20 and lanes_small.chosen(shape, dims, dtype, view) == "lanes"
        x = lanes_small.input_of(shape, dtype, view, "cpu")
        assert x.shape == shape and (x.stride(0) == 0) == (view == "expand")
    assert {view for *_, view in grid} == set(lanes_small.VIEWS)
    # made-up times: lanes picked on two 2-D shapes, one at half ATen's copy's speed
    rows = [{"shape": [5, 9000], "dims": [1, 0], "dtype": "uint8", "view": "offset", "chosen": "lanes",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 4.0, "aten": 6.0, "gather": 8.0, "lanes": 4.0, "stage": 2.0}},
            {"shape": [9000, 5], "dims": [1, 0], "dtype": "uint8", "view": "step", "chosen": "lanes",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 12.0, "aten": 6.0}},
            {"shape": [9, 5, 47], "dims": [2, 0, 1], "dtype": "float32", "view": "contiguous", "chosen": "aten",
             "us": {"clone": 4.0, "eager": 6.0, "ours": 6.0, "aten": 6.0, "gather": 6.0}}]
    text = lanes_small.summary(rows)
    assert text.startswith("3 shapes, 2 run lanes by the chooser.")
    # (1.5 x 0.5) ** 0.5; gather, lanes and stage by name timed once, stage at twice lanes' speed
    assert "| 2-D | 2 | 0.866 | 1 | 0.500 | 0.866 | 2.000 | 2.000 | 1 of 1 |" in text
    assert "| 3-5 dims | 0 |" in text and "float32" not in text


def test_near_broadcast_grid_and_its_summary():
    import cute_transpose
    grid = near_broadcast.grid(4, tries=3000)
    assert grid and grid == near_broadcast.grid(4, tries=3000) != near_broadcast.grid(6, tries=3000)  # seeded
    assert [r["route"] for r in grid[:4]] == ["transpose", "copy"] * 2  # the routes alternate
    for r in grid:  # broadcast permutes of 1-4-byte elements the H100 runs in gather by the rule, not on the H200
        x = harness.meta_input(tuple(r["shape"]), r["dtype"], cases.View("expand", r["view"][1], 0))
        assert 2 ** 21 <= x.numel() <= 2 ** 26 and x.element_size() <= 4 and x.stride(r["view"][1]) == 0
        h100, h200 = (cute_transpose.explain(x, r["dims"], gpu=gpu)["cuda"] for gpu in (None, "NVIDIA H200"))
        assert h100["kernel"] == "gather" and near_broadcast.RULE in h100["reason"] and h200["kernel"] == "aten"
        assert r["route"] == "copy" or 2 <= r["reach"] < 1024
    far = near_broadcast.grid(6, far=True, tries=8000)
    assert far and not {tuple(r["shape"]) for r in far} & {tuple(r["shape"]) for r in near_broadcast.grid(6, tries=8000)}
    for r in far:  # --far: transposes the H100 leaves on ATen's copy, at reaches past the rule's bound
        info = cute_transpose.explain(harness.meta_input(tuple(r["shape"]), r["dtype"], cases.View("expand", r["view"][1], 0)),
                                      r["dims"])["cuda"]
        assert info["kernel"] == "aten" and info["route"] == "transpose" and 1024 <= r["reach"] < 4096
        assert info["dims"][info["n"]][0] * info["element_size"] >= 64
    # made-up times: one copy route at twice ATen's copy's speed, one transpose at half of it
    rows = [{"route": "copy", "reach": 1, "dtype": "float32",
             "us": {"clone": 4.0, "eager": 8.0, "ours": 4.0, "aten": 8.0, "gather": 4.0}},
            {"route": "transpose", "reach": 300, "dtype": "uint8",
             "us": {"clone": 4.0, "eager": 4.0, "ours": 8.0, "aten": 4.0, "gather": 8.0}}]
    text = near_broadcast.summary(rows)
    assert "| copy route | 1 | 2.000 | 0 | 2.000 | 2.000 | 0.500 | 1.000 |" in text
    assert "| reach 256-1023 | 1 | 0.500 | 1 | 0.500 | 0.500 | 1.000 | 0.500 |" in text
    assert "| every | 2 | 1.000 | 1 | 0.500 | 1.000 | 0.707 | 0.707 |" in text and "bfloat16" not in text


def test_the_layouts_grid_draws_copies_of_every_family_within_its_bounds():
    from bench import layout_grid
    from bench.cases import permuted_is_contiguous, strided_extent
    cells = layout_grid.layout_cells(6, seed=7)
    assert {c.group for c in cells} == set(layout_grid.FAMILIES)
    assert cells == layout_grid.layout_cells(6, seed=7) != layout_grid.layout_cells(6, seed=8)  # seeded
    for c in cells:
        assert layout_grid.MIN_ELEMENTS <= c.numel <= layout_grid.MAX_ELEMENTS, c
        assert sorted(c.dims) == list(range(len(c.shape))) and not permuted_is_contiguous(c), c
        if c.view.kind == "strided":  # a slice of a packed tensor: inside it, and not contiguous
            assert len(c.view.strides) == len(c.shape) and c.view.strides[-1] == 1
            assert strided_extent(c.shape, c.view.strides, c.view.offset) <= c.view.strides[0] * c.shape[0]


def test_the_dense_batch_grid_draws_batches_of_small_whole_matrices():
    from bench import dense_grid
    from bench.cases import ITEMSIZE
    cells = dense_grid.dense_batch_cells(40, seed=977)
    assert cells == dense_grid.dense_batch_cells(40, seed=977) != dense_grid.dense_batch_cells(40, seed=978)  # seeded
    assert {len(c.shape) for c in cells} == {3, 4} and {c.view.kind for c in cells} == {"contiguous", "offset"}
    for c in cells:
        rank = len(c.shape)
        assert c.dims == (*range(rank - 2), rank - 1, rank - 2), c  # the last two dims swap
        assert 2 <= c.shape[-1] <= 96 and 2 <= c.shape[-2] <= 96, c
        assert 2 << 20 <= c.nbytes <= 128 << 20, c
        matrix = c.shape[-1] * c.shape[-2] * ITEMSIZE[c.dtype]
        assert c.nbytes // matrix == math.prod(c.shape[:-2]), c
        if c.view.kind == "offset":  # one matrix in: the batch stays whole on both sides
            assert (c.view.dim, c.view.amount) == (0, 1), c


def test_tune_measures_the_dense_batch_grid_in_a_dry_run(tmp_path):
    from bench import tune
    out, report = tmp_path / "t.inc", tmp_path / "dense.md"
    assert tune.main(["--dry-run", "--fake", "--dense-batches", "3", "--out", str(out), "--report", str(report)]) == 0
    run = json.loads(gzip.decompress((tmp_path / "dense.json.gz").read_bytes()))
    assert run["meta"]["bands"] == ["dense batches"] and run["meta"]["seed"].endswith("(--dense-batches 3)")
    assert {r["case"] for r in run["rows"]} == {"dense batch"} and len({tuple(r["shape"]) for r in run["rows"]}) == 3


def test_tune_measures_the_layouts_grid_in_a_dry_run(tmp_path):
    from bench import tune
    out, report = tmp_path / "t.inc", tmp_path / "layouts.md"
    assert tune.main(["--dry-run", "--fake", "--layouts", "1", "--out", str(out), "--report", str(report)]) == 0
    run = json.loads(gzip.decompress((tmp_path / "layouts.json.gz").read_bytes()))
    assert run["meta"]["bands"] == ["layouts"] and run["meta"]["seed"].endswith("(--layouts 1)")
    from bench.layout_grid import FAMILIES
    assert {r["case"].rsplit(" ", 1)[0] for r in run["rows"]} == set(FAMILIES)
