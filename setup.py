"""Build cute_transpose: a torch.library extension of CuTe transpose kernels.

The CUDA extension is built whenever a CUDA toolkit (CUDA_HOME) and a CUDA build of
torch are present -- whether a GPU is visible does not matter. Otherwise a CPU-only
extension is built and a warning says so.
"""

import glob
import importlib.util
import os
import warnings
from pathlib import Path

import setuptools
from setuptools import setup

# torch takes CUDA_HOME from `which nvcc` when it is unset; a wrapper script such as
# /usr/local/bin/nvcc then yields /usr/local, which has no CUDA headers or libraries.
# Prefer the conventional toolkit location in that case.
if not (os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")) and \
        Path("/usr/local/cuda/include/cuda_runtime.h").is_file():
    os.environ["CUDA_HOME"] = "/usr/local/cuda"

import torch  # noqa: E402
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension  # noqa: E402

ROOT = Path(__file__).resolve().parent
DEFAULT_ARCH_LIST = "8.0;9.0a"  # A100 and H100/H200 (9.0a: sm_90a cubin, TMA and friends)
VERSION = "0.1.0"
# The torch this build compiles against, without its local label (+cu130, +cpu): the wheel
# requires exactly this release, and the package checks it at import (_build_info.py).
TORCH_RELEASE = str(torch.__version__).split("+")[0]


def find_cute_headers() -> Path:
    """CuTe headers, in order: $CUTLASS_DIR, the submodule, the nvidia-cutlass wheel."""
    tried = []

    env = os.environ.get("CUTLASS_DIR")
    if env:
        for candidate in (Path(env) / "include", Path(env)):
            if (candidate / "cute" / "tensor.hpp").is_file():
                return candidate
        tried.append(f"CUTLASS_DIR={env} (no cute/tensor.hpp under it or its include/)")
    else:
        tried.append("CUTLASS_DIR (not set)")

    submodule = ROOT / "third_party" / "cutlass" / "include"
    if (submodule / "cute" / "tensor.hpp").is_file():
        return submodule
    tried.append(f"{submodule} (submodule not checked out: git submodule update --init)")

    # Locate the wheel's headers without importing it (importing pulls optional deps).
    spec = importlib.util.find_spec("cutlass_library")
    if spec is not None and spec.submodule_search_locations:
        wheel_include = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
        if (wheel_include / "cute" / "tensor.hpp").is_file():
            return wheel_include
        tried.append(f"{wheel_include} (nvidia-cutlass installed, but without headers)")
    else:
        tried.append("the nvidia-cutlass==4.2.0.0 wheel (not installed: "
                     "pip install --no-deps nvidia-cutlass==4.2.0.0)")

    raise RuntimeError("cute_transpose: CUTLASS/CuTe headers not found. Tried:\n  - "
                       + "\n  - ".join(tried))


def want_cuda() -> bool:
    """A CUDA toolkit (nvcc under CUDA_HOME) and a CUDA build of torch; a GPU is not needed."""
    return (CUDA_HOME is not None and (Path(CUDA_HOME) / "bin" / "nvcc").exists()
            and torch.version.cuda is not None)


def sources() -> tuple[list[str], list[str]]:
    """(always built, CUDA-only) sources, by rule rather than by name: csrc/cuda_*.cpp and
    csrc/cuda/*.cu need CUDA; every other csrc/*.cpp is built always. Paths are relative to
    this file, as setuptools wants them."""
    def found(pattern: str) -> list[str]:
        return sorted(glob.glob(pattern, root_dir=ROOT))

    cuda_cpp = found("csrc/cuda_*.cpp")
    always = [f for f in found("csrc/*.cpp") if f not in cuda_cpp]
    if not always:
        raise RuntimeError(f"cute_transpose: no C++ sources under {ROOT / 'csrc'} "
                           "(an incomplete source tree or sdist?)")
    return always, cuda_cpp + found("csrc/cuda/*.cu")


def make_extension():
    cpu_sources, cuda_only_sources = sources()
    cxx_flags = ["-O3"]
    if not want_cuda():
        warnings.warn("cute_transpose: no CUDA toolkit or CPU-only torch "
                      f"(CUDA_HOME={CUDA_HOME}, torch.version.cuda={torch.version.cuda}); "
                      "building the CPU-only extension: the CUDA kernels will not be available.")
        return CppExtension("cute_transpose._C", cpu_sources,
                            include_dirs=[str(ROOT / "csrc")],
                            extra_compile_args={"cxx": cxx_flags})

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", DEFAULT_ARCH_LIST)
    cute = find_cute_headers()
    print(f"cute_transpose: CuTe headers from {cute}; "
          f"TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']}")
    nvcc_flags = ["-O3", "--expt-relaxed-constexpr", "-lineinfo"]
    return CUDAExtension("cute_transpose._C", cpu_sources + cuda_only_sources,
                         include_dirs=[str(ROOT / "csrc"), str(cute)],
                         define_macros=[("CUTE_TRANSPOSE_WITH_CUDA", "1")],
                         extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags})


class BuildWithInfo(BuildExtension):
    """torch's BuildExtension, which also writes cute_transpose/_build_info.py beside the
    compiled extension: the torch it was built against, read at import before the extension
    is loaded (python/cute_transpose/__init__.py)."""

    def _info_paths(self) -> list[Path]:
        paths = [Path(self.build_lib) / "cute_transpose" / "_build_info.py"]
        if self.inplace:  # build_ext --inplace and editable installs: beside the in-tree .so
            paths.append(ROOT / "python" / "cute_transpose" / "_build_info.py")
        return paths

    def run(self):
        super().run()
        text = ("# Written by setup.py when the extension was built; not tracked by git.\n"
                f"TORCH_VERSION = {str(torch.__version__)!r}  # torch.__version__ at build time\n"
                f"TORCH_CUDA = {torch.version.cuda!r}\n"
                f"WITH_CUDA = {want_cuda()!r}\n")
        for path in self._info_paths():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def get_outputs(self):
        outputs = super().get_outputs()
        return outputs if self.inplace else outputs + [str(self._info_paths()[0])]


# PEP 639 license metadata where setuptools knows it (77+), the older License field elsewhere.
if int(setuptools.__version__.split(".")[0]) >= 77:
    license_metadata = {"license_expression": "BSD-3-Clause", "license_files": ["LICENSE"]}
else:
    license_metadata = {"license": "BSD-3-Clause"}

setup(
    name="cute_transpose",
    version=VERSION,
    description="CuTe matrix-transpose and permute kernels for PyTorch, as torch.library ops",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    url="https://github.com/OWNER/cute_transpose",  # placeholder until the project has a public home
    author="the cute_transpose authors",
    **license_metadata,
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Environment :: GPU :: NVIDIA CUDA",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: C++",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Typing :: Typed",
    ],
    package_dir={"": "python"},
    packages=["cute_transpose"],
    package_data={"cute_transpose": ["py.typed"]},
    ext_modules=[make_extension()],
    cmdclass={"build_ext": BuildWithInfo},
    # The extension only loads into the torch release it was compiled against, so that is the
    # one release the wheel accepts (as torchvision does); see TORCH_RELEASE above.
    install_requires=[f"torch=={TORCH_RELEASE}"],
    python_requires=">=3.10",
    zip_safe=False,
)
