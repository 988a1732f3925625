// Autotuning's timing (autotune.h): every candidate that can run the plan (rows and gather in
// both block orders where they have two), timed on the current stream with CUDA events, the L2
// cache flushed before each launch (as the benchmark's do_bench does, so that a shape that fits
// in L2 is not timed from a warm cache; the GPU writes the 2 x L2 bytes of the flush while the
// host launches the candidate).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "autotune.h"

namespace cute_transpose {
namespace {

// Each candidate is launched once untimed (a kernel's first launch also loads its code), then
// timed in rounds, in turn, keeping each one's median launch (the statistic the benchmark
// reports). After the first round the candidates slower than kDropSlowerThan times the fastest
// are dropped (the padded seed kernel on a mostly empty tile can take 30 times as long); the
// rounds continue until the fastest has run for about kTimedMs, from kMinRounds to kMaxRounds:
// a few-microsecond kernel's launches scatter by several percent. Another kernel replaces the
// tuning table's pick only where it is faster by more than kKeepTablePick.
constexpr float kDropSlowerThan = 3.0f;
constexpr int kMinRounds = 5, kMaxRounds = 25;
constexpr float kTimedMs = 2.0f;
constexpr float kKeepTablePick = 0.02f;

// Twice the L2 cache, zeroed before each timed launch, allocated once per device.
at::Tensor& flush_buffer(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, at::Tensor> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = buffers.find(device);
  if (it == buffers.end()) {
    int l2 = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    auto const options = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device);
    it = buffers.emplace(device, at::empty({2 * std::max<int64_t>(l2, 1 << 20)}, options)).first;
  }
  return it->second;
}

// A pair of timing events on `stream`.
struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  Timer() {
    C10_CUDA_CHECK(cudaEventCreate(&start));
    C10_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Timer(Timer const&) = delete;
  Timer& operator=(Timer const&) = delete;
  // Milliseconds that `launch` took on `stream`.
  template <class Launch>
  float time(cudaStream_t stream, Launch&& launch) {
    C10_CUDA_CHECK(cudaEventRecord(start, stream));
    launch();
    C10_CUDA_CHECK(cudaEventRecord(stop, stream));
    C10_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }
};

struct Candidate {
  Choice choice;
  std::vector<float> launches;  // ms
  float ms = 0;                 // the median launch
};

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string timings_text(std::vector<Candidate> const& timed) {
  std::string text;
  for (auto const& c : timed) {
    char us[32];
    std::snprintf(us, sizeof us, " %.1f us", 1000.0f * c.ms);
    text += (text.empty() ? "" : ", ") + forced_name(c.choice.kernel, c.choice.together) + us;
  }
  return text;
}

}  // namespace

Choice autotune(Plan const& plan, Device const& device, std::function<void(Choice const&)> const& run) {
  int index = 0;
  C10_CUDA_CHECK(cudaGetDevice(&index));
  if (auto c = remembered(plan, device, index)) return *c;
  cudaStream_t const stream = c10::cuda::getCurrentCUDAStream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return choose(plan, device);

  std::vector<Candidate> timed;
  std::string why;
  for (auto const& name : candidate_names()) {
    auto c = force(plan, *kernel_from_name(name), device, &why);
    if (!c) continue;
    timed.push_back({*c, {}});
    if (has_together_order(*c)) {  // rows and gather in both block orders, the plain one first
      c->together = true;
      timed.push_back({std::move(*c), {}});
    }
  }
  // Each candidate's first launch, untimed. One whose launch fails (a grid or resource over this
  // GPU's limits that its launcher reports) is dropped and named in the timings, so that
  // autotuning fails only where every candidate does, as the table's pick alone would.
  std::string failed;
  timed.erase(std::remove_if(timed.begin(), timed.end(),
                             [&](Candidate const& c) {
                               try {
                                 run(c.choice);
                                 return false;
                               } catch (c10::Error const&) {
                                 (void)cudaGetLastError();  // a failed launch's error is not sticky
                                 failed += (failed.empty() ? "" : ", ") + forced_name(c.choice.kernel, c.choice.together);
                                 return true;
                               }
                             }),
              timed.end());
  if (timed.empty()) return choose(plan, device);
  Timer timer;
  at::Tensor& flush = flush_buffer(index);
  int rounds = kMinRounds;
  for (int round = 0; round < rounds; ++round) {
    for (auto& c : timed) {
      flush.zero_();
      c.launches.push_back(timer.time(stream, [&] { run(c.choice); }));
    }
    if (round > 0) continue;
    float const fastest =
        std::min_element(timed.begin(), timed.end(), [](auto& a, auto& b) { return a.launches[0] < b.launches[0]; })
            ->launches[0];
    timed.erase(std::remove_if(timed.begin(), timed.end(),
                               [&](auto& c) { return c.launches[0] > kDropSlowerThan * fastest; }),
                timed.end());
    rounds = std::clamp(int(kTimedMs / std::max(fastest, 1e-3f)), kMinRounds, kMaxRounds);
  }
  for (auto& c : timed) c.ms = median(c.launches);
  std::stable_sort(timed.begin(), timed.end(), [](auto& a, auto& b) { return a.ms < b.ms; });
  Choice const table = choose(plan, device);
  auto const listed = std::find_if(timed.begin(), timed.end(), [&](auto& c) {
    return c.choice.kernel == table.kernel && c.choice.together == table.together;
  });
  Candidate const& pick =
      listed != timed.end() && timed.front().ms > (1 - kKeepTablePick) * listed->ms ? *listed : timed.front();
  std::string const text = timings_text(timed) + (failed.empty() ? "" : "; failed to launch: " + failed);
  remember(autotune_key(plan, index), {pick.choice.kernel, pick.choice.together, text});
  return pick.choice;
}

}  // namespace cute_transpose
