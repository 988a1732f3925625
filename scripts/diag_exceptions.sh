#!/usr/bin/env bash
# Temporary diagnosis (GPU machine): does a TORCH_CHECK thrown from the extension crash?
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
echo "== toolchain"; which g++ c++ gcc; g++ --version | head -1; ls /usr/bin/g++* 2>/dev/null; ld --version | head -1
python3 -c "import torch; print('cxx11abi', torch._C._GLIBCXX_USE_CXX11_ABI)"
repro() { python3 -X faulthandler -c "
import torch, cute_transpose
try:
    torch.ops.cute_transpose.copy(torch.zeros(3))
except Exception as e: print('caught', type(e).__name__, str(e)[:80])
" 2>&1 | grep -E "caught|Segmentation|Error" | head -3; }
build() { rm -rf build python/cute_transpose/_C*.so; TORCH_CUDA_ARCH_LIST=9.0a MAX_JOBS=16 python3 setup.py build_ext --inplace > /tmp/b.log 2>&1 || tail -5 /tmp/b.log; }
echo "== default toolchain"; build; repro
echo "== TORCH_SHOW_CPP_STACKTRACES=0"; TORCH_SHOW_CPP_STACKTRACES=0 repro
for cxx in /usr/bin/g++ /usr/bin/g++-13 /usr/bin/g++-12 /usr/bin/g++-11; do
  [ -x $cxx ] || continue
  echo "== CXX=$cxx ($($cxx --version | head -1))"; CXX=$cxx CC=${cxx/g++/gcc} build; CXX=$cxx repro
  break
done
