"""The workloads section (bench/workloads.py): capturing the layout copies of a model's forward
pass, turning each into a cell laid out exactly as the model had it, and the per-pass report.
CPU only, with small pure-torch models (timm, torchvision and transformers are optional)."""

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import cases, harness, ops, workloads, workloads_report  # noqa: E402
from bench.cases import View  # noqa: E402
from bench.report import Section, load_run, payload, render_markdown  # noqa: E402

CPU = torch.device("cpu")


def views():
    """Strided views models copy, each with how it is made from a fresh tensor."""
    qkv = torch.randn(2, 5, 3, 4, 8)                   # (B, S, 3, H, D), packed
    return {
        "heads merged": torch.randn(2, 4, 5, 8).transpose(1, 2),
        "keys transposed": torch.randn(2, 4, 5, 8).transpose(-2, -1),
        "v of a packed qkv": qkv[:, :, 2].transpose(1, 2),
        "window partition": torch.randn(2, 4, 3, 4, 3, 6).permute(0, 1, 3, 2, 4, 5),
        "key heads repeated": torch.randn(2, 2, 1, 5, 8).expand(2, 2, 3, 5, 8),
        "narrowed then transposed": torch.randn(6, 9)[1:, 2:].t(),
        "size-1 dims": torch.randn(3, 1, 4).permute(2, 1, 0),
    }


@pytest.mark.parametrize("name", list(views()))
def test_a_copy_becomes_a_cell_laid_out_exactly_as_the_model_had_it(name):
    y = views()[name]
    cell = workloads.as_cell(workloads.layout_of(y), name, "m")
    x = harness.make_input(cell, CPU)
    again = x.permute(cell.dims)

    def strides(t):  # a dim of size 1 may have any stride: it moves no element
        return [st for size, st in zip(t.shape, t.stride()) if size > 1]
    assert (again.shape, strides(again), again.storage_offset(), again.dtype) == (
        y.shape, strides(y), y.storage_offset(), y.dtype)
    assert cell.dtype == "float32" and not cases.permuted_is_contiguous(cell)
    assert strides(x) == sorted(strides(x), reverse=True)  # x: the copied view, dims ordered by stride
    assert torch.equal(torch.ops.cute_transpose.permute(x, list(cell.dims)), again.contiguous())
    assert View.parse(cell.view.text()) == cell.view


def test_the_capture_counts_layout_copies_and_nothing_else():
    class Model(torch.nn.Module):
        def forward(self, x):                                     # x: (B, S, H, D)
            heads = x.permute(0, 2, 1, 3).contiguous()            # a layout copy
            merged = heads.transpose(1, 2).reshape(2, 5, -1)      # a reshape that cannot view: one
            again = x.transpose(1, 2).contiguous()                # the same layout as `heads`: two
            kept = x.transpose(1, 2).clone()                      # keeps the strides: not a layout copy
            half = x.contiguous().to(torch.float64)               # contiguous, then a dtype change: not
            out = torch.empty(2, 4, 5, 3)
            out.copy_(x[..., :3].transpose(1, 2))                 # copy_ into a contiguous tensor
            return heads, merged, again, kept, half, out

    x = torch.randn(2, 5, 4, 4)
    copies = workloads.capture(Model(), (x,), {})
    heads = workloads.layout_of(x.permute(0, 2, 1, 3))
    assert copies[heads] == 2
    assert copies[workloads.layout_of(x.permute(0, 2, 1, 3).contiguous().transpose(1, 2))] == 1
    assert copies[workloads.layout_of(x[..., :3].transpose(1, 2))] == 1
    assert sum(copies.values()) == 4


def toy_workloads():
    class Attention(torch.nn.Module):
        def forward(self, x):                                     # (B, S, 3 * H * D)
            q, k, v = x.view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
            out = (q @ k.transpose(-2, -1)).softmax(-1) @ v       # (B, H, S, D)
            return out.transpose(1, 2).reshape(2, 16, 32)

    def broken(device, dtype):
        raise ImportError("No module named 'not_installed'")
    return (workloads.Workload("toy attention", "torch", "float32", "2 x 16 tokens",
                               lambda device, dtype: Attention(),
                               lambda device, dtype: ((torch.randn(2, 16, 96, device=device, dtype=dtype),), {})),
            workloads.Workload("absent", "not_installed", "float32", "", broken, workloads.images(1)))


def test_captured_workloads_are_timed_and_summed_per_forward_pass(tmp_path):
    found = workloads.capture_workloads(CPU, workloads=toy_workloads(), log=lambda text: None)
    assert list(found.workloads) == ["torch toy attention"] and "absent" in next(iter(found.skipped))
    assert found.workloads["torch toy attention"]["copies"] == sum(found.calls.values()) >= 1
    specs = [s for s in ops.workload_ops() if not s.gpu_only]
    assert [s.name for s in specs] == ["clone", "eager", "permute"]
    s = Section("workloads", found.cells, specs, "timed on the CPU",
                notes={"calls": found.calls, "workloads": found.workloads, "skipped_models": found.skipped})
    s.results = harness.run_cells(s.cells, specs, lambda fn: 0.5, CPU, harness.Progress(len(s.cells)))
    assert s.results and all(r.status == "ok" for r in s.results)
    [t] = workloads_report.pass_times(s.results, found.calls)
    assert t.copies == sum(found.calls.values()) and t.distinct == len(found.cells)
    assert t.us["eager"] == pytest.approx(t.copies * 500.0) and t.us["autotuned"] is None
    meta = {"device_name": "CPU", "date": "", "torch": "", "cuda": "", "triton": "", "cute_transpose": "",
            "duration_s": 0.0, "tiny_calls": 0, "dry_run": True, "timing": {"workloads": s.timing}}
    markdown = render_markdown(meta, {"workloads": s}, [])
    assert "## Workloads" in markdown and "torch toy attention" in markdown and "not_installed" in markdown
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(payload(meta, {"workloads": s}, []), default=str))
    meta2, sections, _ = load_run(saved, lambda key, dry: ops.workload_ops())
    assert render_markdown(meta2, sections, []) == markdown


def test_a_workloads_run_alone_writes_workloads_named_reports(tmp_path):
    from bench.report import write_outputs
    paths = write_outputs(tmp_path, {"device_name": "Some GPU"}, {"workloads": Section("workloads", [], [])},
                          [], "# workloads\n")
    assert {p.name for p in paths} == {"Some_GPU-workloads.json", "Some_GPU-workloads.md"}


def test_the_cpu_demo_says_why_it_runs_no_models():
    from bench import bench
    args = bench.parse_args(["--dry-run", "--workloads-only"])
    s = bench.workloads_section(args, CPU)
    assert s.skipped and not s.cells
    assert bench.wanted_sections(bench.parse_args(["--no-workloads", "--no-sweep"])) == ["matrix", "permute"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--workloads-only", "--no-workloads"])
