// Every kernel variant this CPU runs (generic SSE2 always; AVX2+FMA and AVX-512 where the CPU
// has them) against the reference twins (kernels::reference, plain loops over doubles from the
// formulas): attention forward, backward and decode (head dims 8-64, GQA groups, RoPE in both
// layouts, a query offset, lengths that end inside a tile, sliding windows and soft-caps on the
// scores), the FFN activations plain and gated
// (with GELU's kept Φ), both norms with and without a residual, cross-entropy with ignored rows.
//
// Tolerance, stated before running: a float32 kernel sums n terms in its own order, so its
// error against the double result is about n·2⁻²⁴ of the terms' scale; with n <= 64 here that is
// ~4e-6. Each output must satisfy |got − ref| <= 2e-5·max(1, max|ref|) over its tensor
// (activations: 2e-6, elementwise with no sums, where the vector exp and erfc approximations
// hold ~1e-7 relative).
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/cpu_kernels.h"
#include "model/registry.h"

// Its own namespace: the unity build puts this file beside test_kernel_variants.cpp's helpers.
namespace lmx::kernels::reference_test {

namespace {

struct Variant {
  const char* name;
  ForwardFn forward;
  DecodeFn decode;
  BackwardFn backward;
  FfnKernels ffn;
  NormKernels norm;
  CrossEntropyFn cross_entropy;
};

#define LMX_VARIANT(ns)                                                                                  \
  Variant {                                                                                              \
#ns, ns::forward, ns::decode, ns::backward,                                                          \
        FfnKernels{ns::act_forward, ns::act_backward, ns::glu_forward, ns::glu_backward},                \
        NormKernels{ns::layernorm_forward, ns::rmsnorm_forward, ns::layernorm_backward, ns::rmsnorm_backward}, \
        ns::cross_entropy                                                                                \
  }

std::vector<Variant> variants_on_this_cpu() {
  std::vector<Variant> v{LMX_VARIANT(generic)};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) v.push_back(LMX_VARIANT(avx2));
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    v.push_back(LMX_VARIANT(avx512));
#endif
  return v;
}
const Variant kReference = LMX_VARIANT(reference);
#undef LMX_VARIANT

using lmx::test::normal_floats;

// max |got − ref| over max(1, max |ref|): the error on the tensor's scale.
double scaled_error(const std::vector<float>& got, const std::vector<float>& ref) {
  REQUIRE(got.size() == ref.size());
  double err = 0, scale = 1;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - ref[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  return std::isfinite(err) ? err / scale : INFINITY;
}

struct AttnCase {
  int64_t Tq, Tk, D, group;
  bool rope, interleaved;
  int64_t window = 0;  // sliding window (0: none)
  float softcap = 0;   // soft-cap on the scores (0: none)
  int64_t q_start() const { return Tk - Tq; }
};

struct AttnOut {
  std::vector<float> o, lse, dq, dk, dv;
};

// One KV head with its group's query heads, forward then (queries from position 0) backward.
AttnOut attention(const Variant& v, const AttnCase& c, AttnShape& s, std::vector<float>& cos, std::vector<float>& sin) {
  const int64_t D = c.D, G = c.group, h = D / 2;
  const auto q = normal_floats(G * c.Tq * D, 1), k = normal_floats(c.Tk * D, 2), val = normal_floats(c.Tk * D, 3);
  const auto dout = normal_floats(G * c.Tq * D, 4);
  cos.assign(c.Tk * h, 0.0f), sin.assign(c.Tk * h, 0.0f);
  for (int64_t t = 0; t < c.Tk; ++t)
    for (int64_t i = 0; i < h; ++i) {
      const double th = t * std::pow(10000.0, -2.0 * i / D);
      cos[t * h + i] = static_cast<float>(std::cos(th));
      sin[t * h + i] = static_cast<float>(std::sin(th));
    }
  s = AttnShape{};
  s.Tq = c.Tq, s.Tk = c.Tk, s.D = D, s.q_start = c.q_start(), s.group = G;
  s.scale = 1.0f / std::sqrt(static_cast<float>(D));
  if (c.rope) s.cos = cos.data(), s.sin = sin.data(), s.interleaved = c.interleaved;
  s.window = c.window, s.softcap = c.softcap;
  AttnOut out;
  out.o.assign(G * c.Tq * D, 0.0f);
  out.lse.assign(G * c.Tq, 0.0f);
  std::vector<float> scratch(std::max(forward_scratch(s), backward_scratch(s)) + kScratchAlign);
  ForwardArgs fa{};
  fa.q = q.data(), fa.k = k.data(), fa.v = val.data();
  fa.q_st = D, fa.q_sh = c.Tq * D, fa.k_st = D, fa.v_st = D;
  fa.o = out.o.data(), fa.o_st = D, fa.o_sh = c.Tq * D;
  fa.lse = out.lse.data();
  v.forward(fa, s, align_scratch(scratch.data()));
  if (c.q_start() != 0) return out;
  out.dq.assign(q.size(), 0.0f), out.dk.assign(k.size(), 0.0f), out.dv.assign(val.size(), 0.0f);
  BackwardArgs ba{};
  ba.q = q.data(), ba.k = k.data(), ba.v = val.data(), ba.o = out.o.data(), ba.dout = dout.data();
  ba.lse = out.lse.data();
  ba.q_st = D, ba.q_sh = c.Tq * D, ba.k_st = D, ba.v_st = D, ba.o_st = D, ba.o_sh = c.Tq * D;
  ba.dq = out.dq.data(), ba.dk = out.dk.data(), ba.dv = out.dv.data();
  ba.dq_st = D, ba.dq_sh = c.Tq * D, ba.dk_st = D, ba.dv_st = D;
  v.backward(ba, s, align_scratch(scratch.data()));
  return out;
}

std::vector<AttnCase> attention_cases() {
  std::vector<AttnCase> cases;
  for (int64_t D : {8, 16, 24, 32, 64})
    for (auto [Tq, Tk] : {std::pair<int64_t, int64_t>{1, 1}, {5, 5}, {13, 13}, {37, 37}, {3, 20}})
      for (int64_t G : {1, 3, 4})
        for (int rope : {0, 1, 2}) cases.push_back({Tq, Tk, D, G, rope > 0, rope == 2});
  // Sliding windows (1: each query sees itself only; 4 and 9: inside and past a 16-query block)
  // and soft-caps small enough to bend the scores (they are ~N(0, 1) here; 1.5 and 2.5 caps
  // move the largest by a third), alone and together.
  for (int64_t D : {8, 16, 32})
    for (auto [Tq, Tk] : {std::pair<int64_t, int64_t>{1, 1}, {13, 13}, {37, 37}, {3, 20}})
      for (int64_t G : {1, 3})
        for (auto [window, cap] : {std::pair<int64_t, float>{1, 0}, {4, 0}, {9, 0}, {0, 2.5f}, {9, 1.5f}})
          cases.push_back({Tq, Tk, D, G, /*rope=*/G == 3, false, window, cap});
  return cases;
}

}  // namespace

TEST_CASE("kernel reference: every variant's attention forward and backward within 2e-5 of the double loops",
          "[model][attention][fused][reference]") {
  for (const auto& v : variants_on_this_cpu())
    for (const auto& c : attention_cases()) {
      INFO(v.name << " Tq " << c.Tq << " Tk " << c.Tk << " D " << c.D << " group " << c.group << " rope " << c.rope
                  << " interleaved " << c.interleaved << " window " << c.window << " softcap " << c.softcap);
      AttnShape s, rs;
      std::vector<float> cos, sin, rcos, rsin;
      const auto got = attention(v, c, s, cos, sin);
      const auto ref = attention(kReference, c, rs, rcos, rsin);
      CHECK(scaled_error(got.o, ref.o) <= 2e-5);
      CHECK(scaled_error(got.lse, ref.lse) <= 2e-5);
      CHECK(scaled_error(got.dq, ref.dq) <= 2e-5);
      CHECK(scaled_error(got.dk, ref.dk) <= 2e-5);
      CHECK(scaled_error(got.dv, ref.dv) <= 2e-5);
    }
}

TEST_CASE("kernel reference: every variant's decode over transposed keys within 2e-5 of the double loops",
          "[model][attention][fused][reference]") {
  for (const auto& v : variants_on_this_cpu())
    for (int64_t D : {8, 16, 32, 64})
      for (int64_t Tk : {2, 9, 40})
        for (int64_t G : {1, 2, 5})
          for (auto [window, cap] : {std::pair<int64_t, float>{0, 0}, {5, 0}, {0, 2.0f}, {3, 1.5f}}) {
          INFO(v.name << " D " << D << " Tk " << Tk << " group " << G << " window " << window << " softcap " << cap);
          const int64_t ld = (Tk + 7) / 8 * 8 + 8;
          const auto q = normal_floats(G * D, 5), val = normal_floats(Tk * D, 6);
          auto kt = normal_floats(D * ld, 7);  // key j in column j; columns past Tk: any finite values
          AttnShape s;
          s.Tq = 1, s.Tk = Tk, s.D = D, s.q_start = Tk - 1, s.group = G;
          s.scale = 1.0f / std::sqrt(static_cast<float>(D));
          s.window = window, s.softcap = cap;
          auto run = [&](const Variant& var) {
            AttnOut out;
            out.o.assign(G * D, 0.0f), out.lse.assign(G, 0.0f);
            std::vector<float> scratch(decode_scratch(D, ld) + kScratchAlign);
            ForwardArgs fa{};
            fa.q = q.data(), fa.v = val.data(), fa.q_st = D, fa.q_sh = D, fa.v_st = D;
            fa.o = out.o.data(), fa.o_st = D, fa.o_sh = D, fa.lse = out.lse.data();
            var.decode(fa, kt.data(), ld, s, align_scratch(scratch.data()));
            return out;
          };
          const auto got = run(v), ref = run(kReference);
          CHECK(scaled_error(got.o, ref.o) <= 2e-5);
          CHECK(scaled_error(got.lse, ref.lse) <= 2e-5);
        }
}

TEST_CASE("kernel reference: every variant's FFN activations, plain and gated, within 2e-6 of the closed forms",
          "[model][ffn][fused][reference]") {
  std::vector<ActOp> ops;  // every FFN row's φ (β 1.7: swish's; the others ignore it)
  for (const auto& a : registry::activations()) ops.push_back({a.act.kind, 1.7f, a.act.custom});
  ops.push_back({ActKind::SoftCap, 2.5f, nullptr});  // the logits' soft-cap (c = 2.5 bends x ~ N(0, 9))
  const int64_t rows = 3, F = 37, n = rows * F;  // 37: a tail past every vector width
  const auto x = normal_floats(n, 8, 3.0f), gu = normal_floats(rows * 2 * F, 9, 3.0f), dy = normal_floats(n, 10);
  for (const auto& v : variants_on_this_cpu())
    for (const auto& op : ops) {
      INFO(v.name << " activation " << static_cast<int>(op.kind) << " (registry::activations() order)");
      struct Out {
        std::vector<float> y, keep, dx, out, gkeep, dgu;
      };
      auto run = [&](const Variant& var) {
        Out o{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
              std::vector<float>(n), std::vector<float>(n), std::vector<float>(rows * 2 * F)};
        var.ffn.act_forward(op, x.data(), n, o.y.data(), o.keep.data());
        var.ffn.act_backward(op, x.data(), o.keep.data(), dy.data(), n, o.dx.data());
        var.ffn.glu_forward(op, gu.data(), rows, F, o.out.data(), o.gkeep.data());
        var.ffn.glu_backward(op, gu.data(), o.gkeep.data(), dy.data(), rows, F, o.dgu.data());
        return o;
      };
      const auto got = run(v), ref = run(kReference);
      CHECK(scaled_error(got.y, ref.y) <= 2e-6);
      CHECK(scaled_error(got.dx, ref.dx) <= 2e-6);
      CHECK(scaled_error(got.out, ref.out) <= 2e-6);
      CHECK(scaled_error(got.dgu, ref.dgu) <= 2e-6);
      if (act_keeps(op.kind)) {
        CHECK(scaled_error(got.keep, ref.keep) <= 2e-6);
        CHECK(scaled_error(got.gkeep, ref.gkeep) <= 2e-6);
      }
    }
}

TEST_CASE("kernel reference: every variant's norms, with and without a residual, within 2e-5 of the double loops",
          "[model][norm][fused][reference]") {
  const int64_t rows = 5;
  for (const auto& v : variants_on_this_cpu())
    for (int64_t C : {8, 13, 64, 96})
      for (bool residual : {false, true})
        for (bool layer : {false, true}) {
          INFO(v.name << " C " << C << " residual " << residual << " layernorm " << layer);
          const auto x = normal_floats(rows * C, 11, 2.0f), a = normal_floats(rows * C, 12), w = normal_floats(C, 13), b = normal_floats(C, 14);
          const auto dy = normal_floats(rows * C, 15), dh = normal_floats(rows * C, 16), dw0 = normal_floats(C, 17), db0 = normal_floats(C, 18);
          struct Out {
            std::vector<float> h, y, mean, rstd, dx, dw, db;
          };
          auto run = [&](const Variant& var) {
            Out o{std::vector<float>(rows * C), std::vector<float>(rows * C), std::vector<float>(rows),
                  std::vector<float>(rows), std::vector<float>(rows * C), dw0, db0};
            NormArgs p{x.data(), residual ? a.data() : nullptr, w.data(), b.data(), o.h.data(), o.y.data(),
                       o.mean.data(), o.rstd.data(), C, 1e-5f};
            (layer ? var.norm.layernorm_forward : var.norm.rmsnorm_forward)(p, 0, rows);
            NormGradArgs g{residual ? o.h.data() : x.data(), w.data(), o.mean.data(), o.rstd.data(), dy.data(),
                           residual ? dh.data() : nullptr, o.dx.data(), o.dw.data(), o.db.data(), C};
            (layer ? var.norm.layernorm_backward : var.norm.rmsnorm_backward)(g, 0, rows);
            return o;
          };
          const auto got = run(v), ref = run(kReference);
          if (residual) CHECK(scaled_error(got.h, ref.h) <= 2e-5);
          CHECK(scaled_error(got.y, ref.y) <= 2e-5);
          CHECK(scaled_error(got.rstd, ref.rstd) <= 2e-5);
          if (layer) CHECK(scaled_error(got.mean, ref.mean) <= 2e-5);
          CHECK(scaled_error(got.dx, ref.dx) <= 2e-5);
          CHECK(scaled_error(got.dw, ref.dw) <= 2e-5);
          if (layer) CHECK(scaled_error(got.db, ref.db) <= 2e-5);
        }
}

TEST_CASE("kernel reference: every variant's cross-entropy, ignored rows included, within 2e-5 of the double loops",
          "[model][loss][fused][reference]") {
  const int64_t rows = 6, ignore = -100;
  for (const auto& v : variants_on_this_cpu())
    for (int64_t V : {7, 16, 100, 259}) {
      INFO(v.name << " V " << V);
      const auto logits = normal_floats(rows * V, 19, 4.0f);
      std::vector<int64_t> targets{0, V - 1, ignore, V / 2, 3 % V, ignore};
      auto run = [&](const Variant& var) {
        std::vector<float> losses(rows, -1.0f), d(rows * V, -1.0f), lse(rows, -1.0f);
        CrossEntropyArgs p{logits.data(), targets.data(), V, ignore, 1.0f / 4, losses.data(), d.data(), lse.data()};
        var.cross_entropy(p, 0, rows);
        losses.insert(losses.end(), d.begin(), d.end());
        return std::pair{losses, lse};  // lse: the z-loss's log-sum-exp, on its own scale
      };
      const auto got = run(v), ref = run(kReference);
      CHECK(scaled_error(got.first, ref.first) <= 2e-5);
      CHECK(scaled_error(got.second, ref.second) <= 2e-5);
    }
}

}  // namespace lmx::kernels::reference_test
