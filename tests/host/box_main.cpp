// Runs the Box kernel's launcher (csrc/cuda/box.cu and box_e<E>.cu, copied beside a rewritten
// box_transpose.cuh by tests/box_host.py) on the host, for one plan:
//   box_main PLAN INPUT OUTPUT MAX_BLOCKS
// PLAN: the BoxPlan's fields as whitespace-separated integers (box_host.py, plan_text), then the
// input's byte offset from its storage and the output's bytes. INPUT: the input's storage.
// OUTPUT: the output between two guard bands of kGuard bytes, which start as 0xA5.
#include <climits>
#include <fstream>
#include <iterator>

#include "launch.h"

#include "box.cu"
#include "box_e1.cu"
#include "box_e16.cu"
#include "box_e2.cu"
#include "box_e4.cu"
#include "box_e8.cu"

namespace {

constexpr int kGuard = 256;

// `bytes` bytes at an address that is a multiple of 256, as CUDA allocations are, with `before`
// bytes before it.
unsigned char* aligned_in(std::vector<unsigned char>& buffer, size_t before, size_t bytes) {
  buffer.assign(before + bytes + 512, 0xA5);
  auto const start = reinterpret_cast<uintptr_t>(buffer.data()) + before;
  return buffer.data() + before + (256 - start % 256) % 256;
}

}  // namespace

int main(int argc, char** argv) {
  using cute_transpose::BoxPlan;
  if (argc != 5) host::fail("usage: box_main PLAN INPUT OUTPUT MAX_BLOCKS");
  std::ifstream text(argv[1]);
  BoxPlan b;
  int64_t input_offset = 0, output_bytes = 0;
  text >> b.element_size >> b.rank >> b.vin >> b.vout >> b.volume >> b.smem_elems >> b.outer_rank >> b.boxes;
  for (int64_t* field : {b.size, b.tile, b.in, b.out, b.smem})
    for (int k = 0; k < b.rank; ++k) text >> field[k];
  for (int* order : {b.in_order, b.out_order})
    for (int k = 0; k < b.rank; ++k) text >> order[k];
  for (int64_t* field : {b.outer_size, b.outer_in, b.outer_out})
    for (int k = 0; k < b.outer_rank; ++k) text >> field[k];
  for (int k = 0; k < b.outer_rank; ++k) text >> b.chunk_of[k];
  text >> input_offset >> output_bytes;
  if (!text) host::fail("a malformed plan");
  host::max_blocks = std::atoi(argv[4]);

  std::ifstream input_file(argv[2], std::ios::binary);
  std::vector<char> const storage{std::istreambuf_iterator<char>(input_file), std::istreambuf_iterator<char>()};
  std::vector<unsigned char> input_buffer, output_buffer;
  unsigned char* const input = aligned_in(input_buffer, 0, storage.size());
  std::memcpy(input, storage.data(), storage.size());
  unsigned char* const output = aligned_in(output_buffer, kGuard, size_t(output_bytes) + kGuard);
  host::input_begin = reinterpret_cast<uintptr_t>(input);
  host::input_end = host::input_begin + storage.size();
  host::output_begin = reinterpret_cast<uintptr_t>(output);
  host::output_end = host::output_begin + uintptr_t(output_bytes);
  b.src = input + input_offset;
  b.dst = output;

  if (cute_transpose::launch_box(b, nullptr) != cudaSuccess) host::fail("the launcher refused the plan");
  std::ofstream(argv[3], std::ios::binary).write(reinterpret_cast<char const*>(output - kGuard), output_bytes + 2 * kGuard);
  return 0;
}
