"""Builds the sdist, then a wheel from it, and checks that nothing the build needs is missing.

    python3 scripts/check_sdist.py [--sdist-only] [--outdir DIR]

The sdist must hold every tracked file under csrc/ and python/ and the top-level build files
(the list comes from `git ls-files`, so new sources are covered without editing this script),
and no build products. The wheel is built from the unpacked sdist, not from this tree, so a
setup.py that reached outside the sdist fails here. Both builds use the installed torch, setuptools
and build (`--no-isolation`): CI has them already, and an isolated build would install torch again.
For a quick check set CUDA_HOME=/nonexistent: the CPU-only extension builds in a minute or two.
"""

import argparse
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEEDED = ["csrc", "python", "setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"]
NEVER = (".so", ".o", ".pyc", "/_build_info.py")  # build products of a local build


def run_build(outdir: Path, *what: str) -> None:
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check",
           "--outdir", str(outdir), *what]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout[-6000:], result.stderr[-6000:], sep="\n")
        sys.exit(f"check_sdist: `{' '.join(cmd[1:])}` failed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist-only", action="store_true", help="do not build the wheel")
    parser.add_argument("--outdir", type=Path, help="keep the sdist and wheel here")
    args = parser.parse_args()

    tracked = subprocess.run(["git", "ls-files", "--", *NEEDED], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    missing_here = [name for name in NEEDED if not any(f == name or f.startswith(name + "/") for f in tracked)]
    if missing_here:
        sys.exit(f"check_sdist: not tracked by git: {missing_here}")

    with tempfile.TemporaryDirectory() as tmp:
        outdir = args.outdir or Path(tmp)
        # Without --sdist, build makes the sdist and then the wheel from the unpacked sdist.
        run_build(outdir, *(["--sdist"] if args.sdist_only else []))
        sdist = max(outdir.glob("cute_transpose-*.tar.gz"), key=lambda p: p.stat().st_mtime)
        with tarfile.open(sdist) as tar:
            members = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        missing = sorted(set(tracked) - members)
        stray = sorted(m for m in members if m.endswith(NEVER) or "/__pycache__/" in m)
        print(f"check_sdist: {sdist.name}: {len(members)} entries; "
              f"{len(tracked)} tracked build inputs, {len(missing)} missing, {len(stray)} stray")
        for name in missing:
            print(f"  missing from the sdist: {name}")
        for name in stray:
            print(f"  build product in the sdist: {name}")
        if missing or stray:
            return 1

        if not args.sdist_only:
            wheel = max(outdir.glob("cute_transpose-*.whl"), key=lambda p: p.stat().st_mtime)
            with zipfile.ZipFile(wheel) as zf:
                names = zf.namelist()
            want = ["cute_transpose/__init__.py", "cute_transpose/py.typed", "cute_transpose/_build_info.py"]
            lacking = [w for w in want if w not in names]
            if not any(n.startswith("cute_transpose/_C") and n.endswith(".so") for n in names):
                lacking.append("cute_transpose/_C*.so")
            if not any(n.endswith("LICENSE") for n in names):
                lacking.append("LICENSE")
            print(f"check_sdist: {wheel.name} (built from the sdist): {len(names)} files"
                  + (f", lacking {lacking}" if lacking else ", complete"))
            if lacking:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
