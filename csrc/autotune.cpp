// The autotuning setting and the remembered picks (autotune.h), and the private ops that reach
// them from Python (cute_transpose.autotune, cute_transpose.autotune_cache).
#include "autotune.h"

#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

namespace cute_transpose {
namespace {

std::atomic<bool>& setting() {
  static std::atomic<bool> on{[] {
    char const* env = std::getenv("CUTE_TRANSPOSE_AUTOTUNE");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }()};
  return on;
}

struct Picks {
  std::mutex mutex;
  std::map<std::string, AutotunePick> by_key;
};
Picks& picks() {
  static Picks p;
  return p;
}

// The remembered picks as JSON: [{"key": ..., "kernel": ..., "timings": ...}, ...].
std::string cache_json() {
  auto& p = picks();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::ostringstream j;
  j << "[";
  bool first = true;
  for (auto const& [key, pick] : p.by_key) {
    j << (first ? "" : ", ") << "{\"key\": \"" << key << "\", \"kernel\": \"" << forced_name(pick.kernel, pick.together)
      << "\", \"timings\": \"" << pick.timings << "\"}";
    first = false;
  }
  j << "]";
  return j.str();
}

void clear_cache() {
  auto& p = picks();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.by_key.clear();
}

}  // namespace

bool autotune_enabled() { return setting().load(); }
bool set_autotune(bool on) { return setting().exchange(on); }

std::string forced_name(Kernel kernel, bool together) {
  return std::string(kernel_name(kernel)) + (together ? "/together" : "");
}

std::string autotune_key(Plan const& plan, int device_index) {
  std::ostringstream k;
  k << "cuda:" << device_index << " e" << plan.element_size << " m" << plan.m << " n" << plan.n << " align "
    << reinterpret_cast<std::uintptr_t>(plan.src) % 16 << "," << reinterpret_cast<std::uintptr_t>(plan.dst) % 16
    << " dims";
  for (int i = 0; i < plan.rank; ++i)
    k << " " << plan.dims[i].size << ":" << plan.dims[i].in << ":" << plan.dims[i].out;
  return k.str();
}

std::optional<Choice> remembered(Plan const& plan, Device const& device, int device_index, std::string* timings) {
  AutotunePick pick;
  {
    auto& p = picks();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.by_key.find(autotune_key(plan, device_index));
    if (it == p.by_key.end()) return std::nullopt;
    pick = it->second;
  }
  std::string why;
  auto c = force(plan, pick.kernel, device, &why);
  if (c) c->together = pick.together;
  if (c && timings) *timings = pick.timings;
  return c;
}

void remember(std::string const& key, AutotunePick const& pick) {
  auto& p = picks();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.by_key[key] = pick;
}

// Host-side state, no tensors in: one kernel for every dispatch key.
TORCH_LIBRARY_FRAGMENT(cute_transpose, m) {
  m.def("_set_autotune(bool on) -> bool", [](bool on) { return set_autotune(on); });
  m.def("_autotune_enabled() -> bool", [] { return autotune_enabled(); });
  m.def("_autotune_cache() -> str", &cache_json);
  m.def("_clear_autotune_cache() -> ()", &clear_cache);
}

}  // namespace cute_transpose
