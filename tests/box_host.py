"""The Box kernel's own source (csrc/cuda/box_transpose.cuh, box.cu, box_e<E>.cu) compiled for
the host with a C++ compiler and run on the CPU (tests/host/: a block's 256 threads as OS
threads, __syncthreads as a barrier, shared memory as an array), on the plan the chooser makes.

Between box_model.py, which replays a plan's addressing as written apart from the kernel, and
the GPU tests, which need a GPU, this runs the kernel's code itself where CI runs: its indexing,
fast and slow paths, vector widths and launcher, with every global access checked for bounds and
alignment and shared memory for overflow. It cannot see what only a GPU shows (memory ordering
between threads beyond the barriers, the compiler's device code), so the GPU tests stay.

The source is copied unchanged but for a few lines (REWRITES): the launch, the shared-memory
declaration, and the global accesses and shared-memory words, which go through checks. Each rewrite must match as often as written, so a change to those lines fails
here loudly rather than running something else."""

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import torch
from torch.utils.cpp_extension import CUDA_HOME

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOST = ROOT / "tests" / "host"
GUARD = 256  # box_main.cpp's kGuard

# Per source file: (pattern, replacement, times it must match). The launcher's other files are
# copied unchanged.
REWRITES = {
    "box_transpose.cuh": [
        (r"box_transpose<T, decltype\(vi\)::value, decltype\(vo\)::value><<<grid, kBoxThreads, smem, stream>>>\(params\);",
         "host::launch(box_transpose<T, decltype(vi)::value, decltype(vo)::value>, grid.x, kBoxThreads, smem, params);", 1),
        (r"extern __shared__ __align__\(16\) unsigned char smem_bytes\[\];",
         "auto* smem_bytes = reinterpret_cast<unsigned char*>(host::shared.data());", 1),
        (r"\*reinterpret_cast<VecIn const\*>\(([^;]*)\);", r"checked_load<VecIn>(\1);", 2),
        (r"\*reinterpret_cast<VecOut\*>\((dst \+ [^)]*)\) = ([^;]*);", r"checked_store<VecOut>(\1, \2);", 2),
        (r"(uint32_t\* s = reinterpret_cast<uint32_t\*>\(smem \+ at\);)", r"\1 check_shared_word(s);", 1),
    ],
}
COPIED = ["box.cu"] + [f"box_e{e}.cu" for e in (1, 2, 4, 8, 16)]


def cutlass_include():
    """CUTLASS's headers where setup.py looks for them: $CUTLASS_DIR, the submodule, the wheel."""
    places = []
    if os.environ.get("CUTLASS_DIR"):
        places += [pathlib.Path(os.environ["CUTLASS_DIR"]) / "include", pathlib.Path(os.environ["CUTLASS_DIR"])]
    places.append(ROOT / "third_party" / "cutlass" / "include")
    spec = importlib.util.find_spec("cutlass_library")
    if spec is not None and spec.submodule_search_locations:
        places.append(pathlib.Path(list(spec.submodule_search_locations)[0]) / "source" / "include")
    return next((p for p in places if (p / "cutlass" / "fast_math.h").is_file()), None)


def cuda_include():
    """The CUDA toolkit's headers (types only: the runner makes no CUDA call), where setup.py
    finds the toolkit: $CUDA_HOME, $CUDA_PATH, torch's guess, /usr/local/cuda."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), CUDA_HOME, "/usr/local/cuda"]
    places = [pathlib.Path(home) / "include" for home in homes if home]
    return next((p for p in places if (p / "cuda_runtime_api.h").is_file()), None)


def build(directory):
    """Compiles the host runner into `directory`: its path, or a string saying why it cannot."""
    compiler = shutil.which(os.environ.get("CXX", "c++"))
    cuda = cuda_include()
    cutlass = cutlass_include()
    if compiler is None:
        return "no C++ compiler"
    if cuda is None:
        return "no CUDA headers (cuda_runtime_api.h)"
    if cutlass is None:
        return "no CUTLASS headers"
    directory = pathlib.Path(directory)
    for name, rewrites in REWRITES.items():
        source = (ROOT / "csrc" / "cuda" / name).read_text()
        for pattern, replacement, times in rewrites:
            found = len(re.findall(pattern, source))
            assert found == times, f"{name}: {pattern!r} matched {found} times, not {times}"
            source = re.sub(pattern, replacement, source)
        (directory / name).write_text(source)
    for name in COPIED:
        shutil.copy(ROOT / "csrc" / "cuda" / name, directory / name)
    binary = directory / "box_main"
    includes = [directory, HOST, ROOT / "csrc", cutlass, cuda] + ([cuda / "cccl"] if (cuda / "cccl").is_dir() else [])
    command = [compiler, "-std=c++17", "-O1", "-pthread", *(f"-I{p}" for p in includes),
               str(HOST / "box_main.cpp"), "-o", str(binary)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr[-3000:]}"
    return binary


def plan_text(plan, element_size, input_offset, output_bytes):
    """The plan's fields in box_main.cpp's order."""
    fields = [element_size, len(plan["size"]), plan["vin"], plan["vout"], plan["volume"], plan["smem_elems"],
              len(plan["outer_size"]), plan["boxes"]]
    for key in ("size", "tile", "in", "out", "smem", "in_order", "out_order", "outer_size", "outer_in", "outer_out", "chunk_of"):
        fields += plan[key]
    return " ".join(map(str, fields + [input_offset, output_bytes]))


def run(binary, directory, x, cuda_plan, max_blocks):
    """The output the kernel writes for x under cuda_plan (explain's "cuda" part), as bytes,
    with its guard bands: (output, guards). Fails with the runner's message where it aborts."""
    directory = pathlib.Path(directory)
    output_bytes = x.numel() * x.element_size()
    (directory / "plan.txt").write_text(plan_text(cuda_plan["box"], cuda_plan["element_size"],
                                                  x.storage_offset() * x.element_size(), output_bytes))
    storage = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage())
    storage.numpy().tofile(directory / "input.bin")
    done = subprocess.run([str(binary), str(directory / "plan.txt"), str(directory / "input.bin"),
                           str(directory / "output.bin"), str(max_blocks)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the kernel on the host: {done.stderr.strip() or done.returncode}"
    written = np.fromfile(directory / "output.bin", dtype=np.uint8)
    guards = np.concatenate([written[:GUARD], written[GUARD + output_bytes:]])
    return torch.from_numpy(written[GUARD:GUARD + output_bytes].copy()), torch.from_numpy(guards)
