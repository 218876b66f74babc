// lmx's kernels on several threads (kernels/parallel.h): the chunks cover the range once, on
// more than one thread, and every fused op gives the same bits at 1, 2 and 3 threads (its items
// are independent; only the GEMMs' sums may differ between thread counts, so none is here).
#include <catch2/catch.hpp>
#include "torch_api.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "helpers.h"
#include "kernels/fused_attention.h"
#include "kernels/parallel.h"
#include "kernels/torch_runtime.h"
#include "model/ffn.h"
#include "model/loss.h"
#include "model/norm.h"
#include "model/registry.h"
#include "step_check.h"
#include "train/optimizer.h"
#include "util/runtime.h"

using namespace lmx;
using lmx::test::ThreadsScope;

namespace {


// f() -> tensors, at each thread count; every result bit for bit equal to the 1-thread one.
template <class F>
void same_bits_at_any_threads(const F& f) {
  std::vector<torch::Tensor> one;
  {
    ThreadsScope t(1);
    one = f();
  }
  for (int n : {2, 3}) {
    ThreadsScope t(n);
    auto many = f();
    REQUIRE(many.size() == one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      INFO(n << " threads, output " << i << " max diff " << (many[i] - one[i]).abs().max().item().toFloat());
      CHECK(torch::equal(many[i], one[i]));
    }
  }
}

torch::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
  auto g = torch::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randn(shape, g, torch::TensorOptions().dtype(torch::kFloat32));
}

}  // namespace

TEST_CASE("parallel_for: disjoint chunks cover the range, aligned, on several threads", "[kernels][parallel]") {
  for (int threads : {1, 2, 3}) {
    ThreadsScope t(threads);
    for (int64_t n : {0, 1, 15, 16, 17, 1000, 4099}) {
      for (int64_t align : {1, 16}) {
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        std::set<std::thread::id> ids;
        std::vector<int> seen(n, 0);
        kernels::parallel_for(n, 8, [&](int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lock(m);
          chunks.emplace_back(b, e);
          ids.insert(std::this_thread::get_id());
          for (int64_t i = b; i < e; ++i) ++seen[i];
        }, align);
        INFO(threads << " threads, n " << n << ", align " << align);
        CHECK(std::count(seen.begin(), seen.end(), 1) == n);
        CHECK(chunks.size() <= static_cast<size_t>(threads));
        for (auto [b, e] : chunks)
          if (e != n) CHECK((e - b) % align == 0);
        if (n >= 1000) CHECK(ids.size() == static_cast<size_t>(threads));  // grain 8: room for all
      }
    }
  }
  {
    ThreadsScope t(2);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    kernels::parallel_for(100, 100, [&](int64_t b, int64_t e) { chunks.emplace_back(b, e); });
    CHECK(chunks == std::vector<std::pair<int64_t, int64_t>>{{0, 100}});  // n <= grain: one serial call
  }
}

TEST_CASE("fused ops give the same bits at 1, 2 and 3 threads", "[kernels][parallel][fused]") {
  FusedKernelsScope fused(true);
  SECTION("attention, forward and backward (GQA, RoPE; B sequences and padding-free rows)") {
    // (RoPE tables for 80 positions: a padding-free sequence below is 70 long.)
    const int64_t B = 5, T = 40, H = 4, Hk = 2, D = 16;
    auto qkv0 = randn({B, T, H + 2 * Hk, D}, 1), dout = randn({B, T, H, D}, 2);
    auto angles = torch::arange(2 * T).to(torch::kFloat32).unsqueeze(1) * torch::rand({D / 2}) * 0.1;
    auto cos = angles.cos(), sin = angles.sin();
    for (bool packed : {false, true}) {
      INFO("packed " << packed);
      same_bits_at_any_threads([&] {
        auto qkv = (packed ? qkv0.reshape({1, B * T, H + 2 * Hk, D}) : qkv0).clone().requires_grad_();
        std::vector<int64_t> lengths;
        if (packed) lengths = {30, 70, 1, 49, 50};  // B·T = 200 rows end to end
        auto o = fused_causal_attention(qkv, H, Hk, 0.25, cos, sin, false, lengths);
        o.backward(packed ? dout.reshape({1, B * T, H, D}) : dout);
        return std::vector<torch::Tensor>{o.detach(), qkv.grad()};
      });
    }
  }
  SECTION("norms with their residual add") {
    auto x0 = randn({3000, 48}, 3), a0 = randn({3000, 48}, 4), dy = randn({3000, 48}, 5);
    for (bool layer : {false, true}) {
      same_bits_at_any_threads([&] {
        std::shared_ptr<Norm> norm;
        if (layer)
          norm = LayerNorm(48, 1e-5).ptr();
        else
          norm = RMSNorm(48, 1e-5).ptr();
        auto x = x0.clone().requires_grad_(), a = a0.clone().requires_grad_();
        auto [h, y] = norm->add_forward(x, a);
        (y * dy).sum().backward();
        std::vector<torch::Tensor> out{h.detach(), y.detach(), x.grad(), a.grad()};
        for (auto& p : norm->parameters()) out.push_back(p.grad().clone());
        return out;
      });
    }
  }
  SECTION("FFN activations, plain and gated (element counts that are not multiples of 16)") {
    for (const auto& row : registry::activations()) {  // every FFN row's φ
      kernels::ActOp act = row.act;
      act.beta = 1.5f;
      auto x0 = randn({1021, 37}, 6), dy = randn({1021, 37}, 7);
      auto gu0 = randn({1021, 74}, 8);
      same_bits_at_any_threads([&] {
        auto x = x0.clone().requires_grad_(), gu = gu0.clone().requires_grad_();
        auto y = fused_activate(act, x * 1.0);  // a temporary: ReLU runs in place on it
        auto o = fused_gated_activate(act, gu);
        ((y + o) * dy).sum().backward();
        return std::vector<torch::Tensor>{y.detach(), o.detach(), x.grad(), gu.grad()};
      });
    }
  }
  SECTION("cross-entropy, with ignored rows") {
    auto logits0 = randn({2000, 91}, 9);
    auto targets = torch::randint(0, 91, {2000}, torch::kInt64);
    targets.index_put_({torch::arange(0, 2000, 7)}, -100);
    same_bits_at_any_threads([&] {
      auto logits = logits0.clone().requires_grad_();
      auto loss = lm_cross_entropy(logits, targets, -100, false);
      loss.backward();
      return std::vector<torch::Tensor>{loss.detach(), logits.grad()};
    });
  }
  SECTION("AdamW over parameters of several sizes (one range of floats across them)") {
    same_bits_at_any_threads([&] {
      std::vector<torch::Tensor> params{randn({40000}, 10), randn({17}, 11), randn({97, 53}, 12)};
      for (auto& p : params) p.requires_grad_();
      FusedAdamW opt(params, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
      for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = randn(params[i].sizes().vec(), 20 + step * 3 + i);
        opt.step();
      }
      std::vector<torch::Tensor> out;
      for (auto& p : params) out.push_back(p.detach().clone());
      return out;
    });
  }
}
