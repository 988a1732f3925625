// The CUDA vocabulary of the Box kernel, for running its own source on the host
// (tests/box_host.py): a block's threads are OS threads, __syncthreads is a barrier over them,
// shared memory is one array, and blocks run one after another. Stands in for
// csrc/cuda/launch.h; tiling.cuh and vector_tile.cuh here stand in for the kernel's others.
//
// Checks the GPU would fault on, or that a run on the GPU could miss, abort with a message: a
// global load or store outside its tensor or not aligned to its width, a shared-memory word not
// aligned to 4 bytes, shared memory written beyond the size the launch asked for.
#pragma once

#include <cuda_runtime_api.h>  // cudaError_t, cudaStream_t, dim3: types only, no CUDA calls

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "work.h"

#define __global__
#define __launch_bounds__(...)
#define __shared__
#define __align__(x)
#define cudaGetLastError() cudaSuccess

namespace host {

struct Index {
  unsigned x = 0, y = 0, z = 0;
};

[[noreturn]] inline void fail(char const* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

// The input's storage, the output, shared memory: where the checks look.
inline uintptr_t input_begin = 0, input_end = 0, output_begin = 0, output_end = 0;
inline std::vector<uint32_t> shared(1 << 16);
inline int max_blocks = 0;  // blocks a launch runs at most (0: as many as it asks for)

// __syncthreads: every thread of the block waits until all have arrived.
class Barrier {
 public:
  explicit Barrier(unsigned threads) : threads_(threads) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    unsigned const generation = generation_;
    if (++arrived_ == threads_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
    } else {
      all_arrived_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  unsigned const threads_;
  unsigned arrived_ = 0, generation_ = 0;
};

inline thread_local Barrier* block_barrier = nullptr;

inline void check(uintptr_t at, size_t bytes, uintptr_t begin, uintptr_t end, char const* outside, char const* misaligned) {
  if (at < begin || at + bytes > end) fail(outside);
  if (at % bytes) fail(misaligned);
}

// Runs kernel(params) on `blocks` blocks of `threads` threads, one block after another (at most
// max_blocks: the Box kernels walk their boxes with a grid stride, so fewer blocks take more
// boxes each), shared memory poisoned before each block and checked beyond `smem` bytes after it.
template <class Kernel, class Params>
void launch(Kernel kernel, unsigned blocks, unsigned threads, int64_t smem, Params const& params);

}  // namespace host

inline thread_local host::Index threadIdx, blockIdx;
inline host::Index gridDim, blockDim;

inline void __syncthreads() { host::block_barrier->arrive_and_wait(); }

template <class T>
T __ldg(T const* at) {
  host::check(reinterpret_cast<uintptr_t>(at), sizeof(T), host::input_begin, host::input_end,
              "a load outside the input", "a load not aligned to its width");
  return *at;
}

// The rewritten kernel source's global accesses and shared-memory words (tests/box_host.py).
template <class V, class P>
V checked_load(P const* at) {
  host::check(reinterpret_cast<uintptr_t>(at), sizeof(V), host::input_begin, host::input_end,
              "a vector load outside the input", "a vector load not aligned to its width");
  V v;
  std::memcpy(&v, at, sizeof(V));
  return v;
}

template <class V, class P>
void checked_store(P* at, V const& v) {
  host::check(reinterpret_cast<uintptr_t>(at), sizeof(V), host::output_begin, host::output_end,
              "a vector store outside the output", "a vector store not aligned to its width");
  std::memcpy(at, &v, sizeof(V));
}

inline void check_shared_word(void const* at) {
  if (reinterpret_cast<uintptr_t>(at) % 4) host::fail("a shared-memory word not aligned to 4 bytes");
}

inline int sm_count() { return 132; }

template <class Kernel, class Params>
void host::launch(Kernel kernel, unsigned blocks, unsigned threads, int64_t smem, Params const& params) {
  if (smem > 48 * 1024) fail("more than 48 KiB of shared memory without opting in");
  if (max_blocks > 0) blocks = std::min(blocks, unsigned(max_blocks));
  gridDim.x = blocks;
  blockDim.x = threads;
  for (unsigned b = 0; b < blocks; ++b) {
    uint32_t const poison = 0x9E3779B9u * (b + 1);
    for (size_t i = 0; i < shared.size(); ++i) shared[i] = poison ^ uint32_t(i);
    Barrier barrier(threads);
    std::vector<std::thread> team;
    for (unsigned t = 0; t < threads; ++t)
      team.emplace_back([&, b, t] {
        blockIdx.x = b;
        threadIdx.x = t;
        block_barrier = &barrier;
        kernel(params);
      });
    for (auto& thread : team) thread.join();
    for (size_t i = size_t(smem + 3) / 4; i < shared.size(); ++i)
      if (shared[i] != (poison ^ uint32_t(i))) fail("shared memory written beyond the launch's size");
  }
}
