"""The distributed transpose on several GPUs, beside the all-to-all it is built on.

    python3 bench/distributed.py --out bench/results      # every GPU of the machine, NCCL
    python3 bench/distributed.py --cpu 2 --sizes 0.01     # a quick run on 2 CPU processes, gloo

A row-sharded (M, N) matrix of 1-16 GiB becomes its row-sharded transpose. Timed, each on the
same input in one run (median of --reps, each rank's time the slowest rank's):

- ``all_to_all``: a bare ``all_to_all_single`` of each rank's bytes: the floor, nothing transposed;
- ``ours``: ``cute_transpose.distributed.transpose`` as it runs by default (on GPUs of one host,
  the ``"symmetric"`` method: each rank's copy engine pulls the blocks the others transposed into
  their workspaces), and with each slice count of --chunks;
- ``method all_to_all``: the same with ``method="all_to_all"`` (default slicing, each slice count of
  --chunks, and "self sent": each rank's own block sent to itself through one
  ``all_to_all_single`` per slice instead of skipping the exchange);
- ``redistribute``: DTensor's own path, ``x.transpose(0, 1).redistribute(mesh, [Shard(0)])``,
  made contiguous.

Reported as each rank's bytes over the time (GB/s), and ``all_to_all``'s time over each's: the
share of the all-to-all's bandwidth reached. ``local`` times the local work alone (the
transpose into a send buffer and the interleave of the received blocks, with no exchange):
what the slicing must hide behind the exchange. Every result is checked bit-exactly against
DTensor's before it is timed. Writes <GPU>-distributed.{md,json,png} into --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

# Run as a script, this folder leads sys.path, and its profile.py would shadow the standard
# library's `profile`, which DTensor imports (through torch._dynamo): the package comes from the
# repository instead.
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO_ROOT / "bench"]
sys.path.insert(0, str(REPO_ROOT / "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

GiB = 1 << 30
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def matrix_shape(nbytes: int, itemsize: int) -> tuple[int, int]:
    """A matrix of nbytes: square when the element count is a power of 4, else twice as wide."""
    elements = nbytes // itemsize
    side = 1 << ((elements.bit_length() - 1) // 2)
    return side, elements // side


def timed(fn, reps: int, device: torch.device) -> float:
    """Median milliseconds of fn over reps, each started together on every rank; a rank's time is
    the slowest rank's."""
    times = []
    for _ in range(reps + 1):
        dist.barrier()
        if device.type == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            ms = start.elapsed_time(end)
        else:
            begin = time.perf_counter()
            fn()
            ms = (time.perf_counter() - begin) * 1e3
        t = torch.tensor([ms], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    return statistics.median(times[1:])  # the first is a warm-up


def rank_main(rank: int, world: int, args: argparse.Namespace, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if args.cpu:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    else:
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
        options = None
        if args.high_priority:  # NCCL's streams at high priority: its kernels get SMs before ours
            options = dist.ProcessGroupNCCL.Options(is_high_priority_stream=True)
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300),
                                device_id=device, pg_options=options)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard

    import cute_transpose as ct
    from cute_transpose import distributed

    mesh = init_device_mesh(device.type, (world,))
    rows = []
    for dtype_name in args.dtypes:
        dtype = DTYPES[dtype_name]
        for gib in args.sizes:
            shape = matrix_shape(int(gib * GiB), dtype.itemsize)
            torch.manual_seed(gib)
            local_shape = (shape[0] // world, shape[1])
            local = torch.randn(local_shape, device=device).to(dtype)
            x = DTensor.from_local(local, mesh, [Shard(0)], run_check=False)
            row = {"dtype": dtype_name, "GiB": gib, "shape": list(shape), "world": world}

            def redistribute():
                return x.transpose(0, 1).redistribute(mesh, [Shard(0)]).to_local().contiguous()

            # Correctness first: ours, by each method, against DTensor's own result, bit for bit.
            row["method"] = "symmetric" if distributed._use_symmetric(local, dist.group.WORLD, "auto", True) \
                else "all_to_all"
            want = redistribute()
            same = torch.ones(1, dtype=torch.int64, device=device)
            for method in ("auto", "all_to_all"):
                got = distributed.transpose(x, method=method).to_local()
                same &= int(torch.equal(got.view(torch.uint8), want.view(torch.uint8)))
                del got
            dist.all_reduce(same, op=dist.ReduceOp.MIN)
            row["exact"] = bool(same.item())
            del want

            send = local.view(-1)
            recv = torch.empty_like(send)
            row["all_to_all"] = timed(lambda: dist.all_to_all_single(recv, send), args.reps, device)
            # The local work alone, no exchange: the transpose into the send buffer, and the
            # interleave of as many received blocks (what overlapping must hide).
            n, m = shape[1] // world, shape[0] // world
            blocks = recv[:world * n * m].view(world, n, m)
            row["local"] = timed(lambda: (ct.transpose(local, 0, 1), ct.permute(blocks, [1, 0, 2])),
                                 args.reps, device)
            del recv, blocks
            row["ours"] = timed(lambda: distributed.transpose(x), args.reps, device)
            a2a = dict(method="all_to_all")
            row["ours_a2a"] = timed(lambda: distributed.transpose(x, **a2a), args.reps, device)
            row["default_chunks"] = distributed.default_chunks(shape[1] // world, local.numel() * local.element_size())
            for chunks in args.chunks:
                if (shape[1] // world) % chunks == 0:
                    row[f"ours_chunks{chunks}"] = timed(lambda: distributed.transpose(x, chunks=chunks, **a2a),
                                                        args.reps, device)
                    if row["method"] == "symmetric":
                        row[f"symmetric_chunks{chunks}"] = timed(
                            lambda: distributed.transpose(x, chunks=chunks, method="symmetric"), args.reps, device)
            row["symmetric_default_chunks"] = distributed.default_chunks(
                shape[1] // world, local.numel() * local.element_size(), symmetric=True)
            distributed.SKIP_SELF = False  # each rank's own block through the collective too
            row["ours_all_to_all_single"] = timed(lambda: distributed.transpose(x, **a2a), args.reps, device)
            distributed.SKIP_SELF = True
            row["redistribute"] = timed(redistribute, args.reps, device)
            row["local_bytes"] = local.numel() * local.element_size()
            rows.append(row)
            if rank == 0:
                print(summary_line(row), flush=True)
            del x, local, send
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if rank == 0:
        write(rows, args, torch.cuda.get_device_name() if device.type == "cuda" else "CPU")
    dist.destroy_process_group()


def summary_line(row: dict) -> str:
    t = row["all_to_all"]
    chunks = " ".join(f"c{k[11:]}={t / v:.2f}" for k, v in row.items() if k.startswith("ours_chunks"))
    chunks += "; symmetric " + " ".join(f"c{k[16:]}={t / v:.2f}" for k, v in row.items()
                                        if k.startswith("symmetric_chunks"))
    return (f"{row['dtype']:>8} {row['GiB']:>5} GiB {row['shape']}: all_to_all {t:.2f} ms; ours "
            f"({row['method']}) {row['ours']:.2f} ms = {t / row['ours']:.2f} of it; method all_to_all "
            f"{t / row['ours_a2a']:.2f} ({chunks}; self sent "
            f"{t / row['ours_all_to_all_single']:.2f}); local work alone {row['local']:.2f} ms; redistribute "
            f"{row['redistribute']:.2f} ms = {t / row['redistribute']:.2f}; exact={row['exact']}")


def write(rows: list[dict], args: argparse.Namespace, gpu: str) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{gpu.replace(' ', '_')}x{rows[0]['world']}-distributed"
    stem.with_suffix(".json").write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1))
    lines = [f"# Distributed transpose on {rows[0]['world']} x {gpu}", "",
             "Row-sharded (M, N) -> row-sharded (N, M). Time in ms (median), and the share of a bare "
             "all_to_all_single's bandwidth (its time over each one's). GB/s: each rank's bytes over "
             "the time.", "",
             "| dtype | GiB | shape | all_to_all ms | GB/s | ours: method | ms | share | "
             "method all_to_all: share | self sent: share | local work alone, ms | redistribute ms | "
             "share | exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r["all_to_all"]
        lines.append(f"| {r['dtype']} | {r['GiB']} | {r['shape'][0]} x {r['shape'][1]} | {t:.2f} | "
                     f"{r['local_bytes'] / t / 1e6:.0f} | {r['method']} | {r['ours']:.2f} | "
                     f"{t / r['ours']:.2f} | {t / r['ours_a2a']:.2f} | "
                     f"{t / r['ours_all_to_all_single']:.2f} | {r['local']:.2f} | "
                     f"{r['redistribute']:.2f} | {t / r['redistribute']:.2f} | {r['exact']} |")
    for method, key, default in (("all_to_all", "ours_chunks", "default_chunks"),
                                 ("symmetric", "symmetric_chunks", "symmetric_default_chunks")):
        if not any(f"{key}{c}" in r for r in rows for c in args.chunks):
            continue
        lines += ["", f"Slices of the {method} method (`chunks=`): share of the all_to_all's bandwidth "
                  "for each slice count, and the default count.", "",
                  "| dtype | GiB | default | " + " | ".join(f"{c}" for c in args.chunks) + " |",
                  "|---|---|---|" + "---|" * len(args.chunks)]
        for r in rows:
            cells = [f"{r['all_to_all'] / r[f'{key}{c}']:.2f}" if f"{key}{c}" in r else "-" for c in args.chunks]
            lines.append(f"| {r['dtype']} | {r['GiB']} | {r[default]} | " + " | ".join(cells) + " |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    chart(rows, stem.with_suffix(".png"))
    print("\n".join(lines))


def chart(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        sub = [r for r in rows if r["dtype"] == dtype]
        sizes = [r["GiB"] for r in sub]
        for key, style, name in (("ours", "-o", "ours"), ("ours_a2a", "-.^", "ours, method all_to_all"),
                                 ("redistribute", "--s", "DTensor redistribute")):
            ax.plot(sizes, [r["all_to_all"] / r[key] for r in sub], style, label=f"{name} ({dtype})")
    ax.axhline(0.85, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("matrix size (GiB)")
    ax.set_ylabel("share of all_to_all bandwidth")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("Distributed transpose, row-sharded in and out")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4, 8, 16], help="GiB per matrix")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--world", type=int, default=0, help="GPUs (default: all)")
    parser.add_argument("--cpu", type=int, default=0, metavar="P", help="run on P CPU processes over gloo")
    parser.add_argument("--high-priority", action="store_true",
                        help="create the NCCL process group with high-priority streams")
    args = parser.parse_args()
    world = args.cpu or args.world or torch.cuda.device_count()
    if world < 2:
        sys.exit("bench/distributed.py: needs at least 2 GPUs (or --cpu 2)")
    with socket.socket() as probe:  # a port no one is listening on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    torch.multiprocessing.spawn(rank_main, args=(world, args, port), nprocs=world)


if __name__ == "__main__":
    main()
