// The AVX-512 variant of the fused kernels (cpu_kernels_avx512.cpp: 16-float register
// tiles) against the AVX2 one, bit for bit: both sum every value in the same order, so a run
// gives the same numbers whichever the CPU picks. Odd lengths, head dims 8-64, GQA, RoPE in
// both layouts, a query offset (decoding); the FFN activations (plain and gated), both norms
// with and without a residual, cross-entropy. The AVX-512 attention kernels pair 4-row tiles where they can (lengths 9, 13,
// 29, 37, 70 end between pairs; head dim 24 takes the unpaired path). Runs where the CPU has
// AVX-512 (F, VL, BW, DQ); elsewhere it says so and checks nothing.
#include "catch.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "helpers.h"
#include "kernels/cpu_kernels.h"
#include "model/registry.h"

using namespace lmx::kernels;

namespace {

bool cpu_runs_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

using lmx::test::normal_floats;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // memcmp: no null
}

struct Case {
  int64_t Tq, Tk, D, group, q_start;
  bool rope, interleaved;
  int64_t window = 0;
  float softcap = 0;
};

// One KV head's forward and backward through fwd / bwd: o, lse, dq, dk, dv.
struct Outputs {
  std::vector<float> o, lse, dq, dk, dv;
};
Outputs attention(ForwardFn fwd, BackwardFn bwd, const Case& c) {
  const int64_t D = c.D, G = c.group;
  const auto q = normal_floats(G * c.Tq * D, 1), k = normal_floats(c.Tk * D, 2), v = normal_floats(c.Tk * D, 3);
  const auto dout = normal_floats(G * c.Tq * D, 4);
  const int64_t positions = c.q_start + c.Tq, h = D / 2;
  std::vector<float> cos(positions * h), sin(positions * h);
  for (int64_t t = 0; t < positions; ++t)
    for (int64_t i = 0; i < h; ++i) {
      const double th = t * std::pow(10000.0, -2.0 * i / D);
      cos[t * h + i] = static_cast<float>(std::cos(th));
      sin[t * h + i] = static_cast<float>(std::sin(th));
    }
  AttnShape s;
  s.Tq = c.Tq, s.Tk = c.Tk, s.D = D, s.q_start = c.q_start, s.group = G;
  s.scale = 1.0f / std::sqrt(static_cast<float>(D));
  if (c.rope) s.cos = cos.data(), s.sin = sin.data(), s.interleaved = c.interleaved;
  s.window = c.window, s.softcap = c.softcap;
  Outputs out;
  out.o.assign(G * c.Tq * D, 0.0f);
  out.lse.assign(G * c.Tq, 0.0f);
  std::vector<float> scratch(std::max(forward_scratch(s), backward_scratch(s)));
  ForwardArgs fa{};
  fa.q = q.data(), fa.k = k.data(), fa.v = v.data();
  fa.q_st = D, fa.q_sh = c.Tq * D, fa.k_st = D, fa.v_st = D;  // head r's rows at r·Tq·D
  fa.o = out.o.data(), fa.o_st = D, fa.o_sh = c.Tq * D;
  fa.lse = out.lse.data();
  fwd(fa, s, scratch.data());
  if (c.q_start != 0) return out;  // the backward is for training (queries from position 0)
  out.dq.assign(q.size(), 0.0f);
  out.dk.assign(k.size(), 0.0f);
  out.dv.assign(v.size(), 0.0f);
  BackwardArgs ba{};
  ba.q = q.data(), ba.k = k.data(), ba.v = v.data(), ba.o = out.o.data(), ba.dout = dout.data();
  ba.lse = out.lse.data();
  ba.q_st = D, ba.q_sh = c.Tq * D, ba.k_st = D, ba.v_st = D, ba.o_st = D, ba.o_sh = c.Tq * D;
  ba.dq = out.dq.data(), ba.dk = out.dk.data(), ba.dv = out.dv.data();
  ba.dq_st = D, ba.dq_sh = c.Tq * D, ba.dk_st = D, ba.dv_st = D;
  bwd(ba, s, scratch.data());
  return out;
}

}  // namespace

TEST_CASE("kernel variants: AVX-512 attention kernels give the AVX2 kernels' bits", "[model][attention][fused][isa]") {
  if (!cpu_runs_avx512()) {
    WARN("this CPU has no AVX-512 (F, VL, BW, DQ): the AVX-512 variant is not run here");
    return;
  }
  const std::vector<Case> cases = {
      {64, 64, 16, 1, 0, false, false}, {64, 64, 16, 2, 0, true, false}, {37, 37, 16, 4, 0, true, true},
      {1, 1, 8, 1, 0, false, false},    {13, 13, 32, 2, 0, true, false}, {70, 70, 64, 1, 0, true, true},
      {5, 40, 16, 2, 35, true, false},  {1, 129, 32, 1, 128, false, false}, {29, 29, 24, 2, 0, true, false},
      {9, 9, 16, 1, 0, false, false},
      // sliding windows and soft-caps: the lanes kernels (head dim 16) and the row kernels
      {64, 64, 16, 2, 0, true, false, 8, 0},  {37, 37, 16, 1, 0, false, false, 0, 2.0f},
      {70, 70, 16, 4, 0, true, true, 20, 1.5f}, {29, 29, 32, 2, 0, true, false, 5, 0},
      {13, 13, 24, 1, 0, false, false, 0, 3.0f}, {5, 40, 16, 2, 35, true, false, 7, 2.0f},
  };
  for (const auto& c : cases) {
    INFO("Tq " << c.Tq << " Tk " << c.Tk << " D " << c.D << " group " << c.group << " q_start " << c.q_start
               << " rope " << c.rope << " interleaved " << c.interleaved << " window " << c.window << " softcap "
               << c.softcap);
    const Outputs a = attention(&avx2::forward, &avx2::backward, c);
    const Outputs b = attention(&avx512::forward, &avx512::backward, c);
    CHECK(same_bits(a.o, b.o));
    CHECK(same_bits(a.lse, b.lse));
    CHECK(same_bits(a.dq, b.dq));
    CHECK(same_bits(a.dk, b.dk));
    CHECK(same_bits(a.dv, b.dv));
    // The check is not vacuous: the outputs are not all zero.
    float largest = 0;
    for (float x : a.o) largest = std::max(largest, std::fabs(x));
    CHECK(largest > 0.1f);
  }
}

TEST_CASE("kernel variants: AVX-512 FFN activations, norms and cross-entropy give the AVX2 bits",
          "[model][fused][isa]") {
  if (!cpu_runs_avx512()) {
    WARN("this CPU has no AVX-512 (F, VL, BW, DQ): the AVX-512 variant is not run here");
    return;
  }
  auto acts = registry::activations();  // every FFN row's φ, and the logits' soft-cap (c = 2.5)
  acts.push_back({"softcap", ActOp{ActKind::SoftCap, 2.5f, nullptr}});
  for (const auto& [name, act] : acts) {
    const ActOp op{act.kind, act.kind == ActKind::SoftCap ? act.beta : 1.7f, act.custom};  // β: swish's
    for (const int64_t F : {8, 171, 256, 3}) {
      INFO("activation " << name << " F " << F);
      const int64_t rows = 9;
      const auto gu = normal_floats(rows * 2 * F, 5, 3.0f), dy = normal_floats(rows * F, 6);
      std::vector<float> o1(rows * F), o2(rows * F), d1(rows * 2 * F), d2(rows * 2 * F);
      std::vector<float> k1(rows * F), k2(rows * F);  // GELU's kept Φ
      avx2::glu_forward(op, gu.data(), rows, F, o1.data(), k1.data());  // gated
      avx512::glu_forward(op, gu.data(), rows, F, o2.data(), k2.data());
      avx2::glu_backward(op, gu.data(), k1.data(), dy.data(), rows, F, d1.data());
      avx512::glu_backward(op, gu.data(), k2.data(), dy.data(), rows, F, d2.data());
      CHECK(same_bits(o1, o2));
      CHECK(same_bits(k1, k2));
      CHECK(same_bits(d1, d2));
      const int64_t n = rows * F;  // plain, over the first n of gu
      avx2::act_forward(op, gu.data(), n, o1.data(), k1.data());
      avx512::act_forward(op, gu.data(), n, o2.data(), k2.data());
      avx2::act_backward(op, gu.data(), k1.data(), dy.data(), n, d1.data());
      avx512::act_backward(op, gu.data(), k2.data(), dy.data(), n, d2.data());
      CHECK(same_bits(o1, o2));
      CHECK(same_bits(k1, k2));
      CHECK(same_bits(d1, d2));
    }
  }
  for (const int64_t C : {64, 100, 7}) {
    for (const bool residual : {false, true}) {
      INFO("norms C " << C << " residual " << residual);
      const int64_t rows = 11;
      const auto x = normal_floats(rows * C, 7), a = normal_floats(rows * C, 8), w = normal_floats(C, 9), b = normal_floats(C, 10);
      const auto dy = normal_floats(rows * C, 11), dh = normal_floats(rows * C, 12);
      struct Run {
        std::vector<float> h, y, mean, rstd, dx, dw, db;
      };
      auto run = [&](NormFn fwd, NormGradFn bwd) {
        Run r{std::vector<float>(rows * C), std::vector<float>(rows * C), std::vector<float>(rows),
              std::vector<float>(rows), std::vector<float>(rows * C), std::vector<float>(C, 0.0f),
              std::vector<float>(C, 0.0f)};
        NormArgs f{x.data(), residual ? a.data() : nullptr, w.data(), b.data(), r.h.data(), r.y.data(),
                   r.mean.data(), r.rstd.data(), C, 1e-5f};
        fwd(f, 0, rows);
        NormGradArgs g{residual ? r.h.data() : x.data(), w.data(), r.mean.data(), r.rstd.data(), dy.data(),
                       residual ? dh.data() : nullptr, r.dx.data(), r.dw.data(), r.db.data(), C};
        bwd(g, 0, rows);
        return r;
      };
      for (const bool layer : {true, false}) {
        const Run p = layer ? run(&avx2::layernorm_forward, &avx2::layernorm_backward)
                            : run(&avx2::rmsnorm_forward, &avx2::rmsnorm_backward);
        const Run q = layer ? run(&avx512::layernorm_forward, &avx512::layernorm_backward)
                            : run(&avx512::rmsnorm_forward, &avx512::rmsnorm_backward);
        CHECK(same_bits(p.y, q.y));
        CHECK(same_bits(p.rstd, q.rstd));
        CHECK(same_bits(p.dx, q.dx));
        CHECK(same_bits(p.dw, q.dw));
        if (layer) CHECK(same_bits(p.db, q.db));
        if (residual) CHECK(same_bits(p.h, q.h));
      }
    }
  }
  for (const int64_t V : {96, 29, 320}) {
    INFO("cross-entropy V " << V);
    const int64_t rows = 10;
    const auto logits = normal_floats(rows * V, 13, 2.0f);
    std::vector<int64_t> targets(rows);
    for (int64_t r = 0; r < rows; ++r) targets[r] = r == 3 ? -100 : (r * 7) % V;
    std::vector<float> l1(rows), l2(rows), g1(rows * V), g2(rows * V);
    avx2::cross_entropy({logits.data(), targets.data(), V, -100, 0.1f, l1.data(), g1.data()}, 0, rows);
    avx512::cross_entropy({logits.data(), targets.data(), V, -100, 0.1f, l2.data(), g2.data()}, 0, rows);
    CHECK(same_bits(l1, l2));
    CHECK(same_bits(g1, g2));
  }
}

TEST_CASE("LMX_KERNEL_ISA: caps the kernels' instruction set, another value is an input error", "[model][fused][isa]") {
  const std::string widest = kernel_isa_capped(nullptr);
  CHECK((widest == "avx512" || widest == "avx2+fma" || widest == "sse2"));
  CHECK(kernel_isa_capped("") == widest);
  CHECK(kernel_isa_capped("avx512") == widest);
  CHECK(std::string(kernel_isa_capped("avx2")) == (widest == "sse2" ? "sse2" : "avx2+fma"));
  CHECK(std::string(kernel_isa_capped("sse2")) == "sse2");
  CHECK_THROWS_WITH(kernel_isa_capped("avx1024"),
                    Catch::Contains("LMX_KERNEL_ISA=avx1024") && Catch::Contains("expected avx512, avx2 or sse2"));
  if (cpu_runs_avx512()) CHECK(widest == "avx512");
}

// One query row (decoding) runs the group's heads as the rows of one tile (attention_impl.h's
// decode_rows); each head's output and log-sum-exp must be the bits of the general path, which
// computes the same row as the last of two queries (q_start one earlier, not the lanes kernels).
// The decode entry (keys kept transposed by the caller, infer/decoder.cpp) must give the same
// bits again; without RoPE, so that its Kt is the keys as given (with RoPE the caller rotates).
TEST_CASE("attention kernels: one query row, the group's heads as tile rows, gives the general path's bits",
          "[model][attention][fused][isa]") {
  struct Variant {
    const char* name;
    ForwardFn fwd;
    DecodeFn dec;
    bool runs;
  };
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  const bool avx2 = false;
#endif
  const std::vector<Variant> variants = {
      {"generic", &generic::forward, &generic::decode, true},
      {"avx2", &avx2::forward, &avx2::decode, avx2},
      {"avx512", &avx512::forward, &avx512::decode, cpu_runs_avx512()}};
  int compared = 0;
  for (const auto& var : variants) {
    if (!var.runs) continue;
    for (const int64_t D : {8, 16, 24, 64})
      for (const int64_t G : {1, 2, 3, 4, 6, 8})
        for (const int64_t Tk : {3, 9, 40, 129})  // q_start >= 1 for two queries: the row path, not the lanes
          for (const bool rope : {false, true}) {
            INFO(var.name << " D " << D << " group " << G << " Tk " << Tk << " rope " << rope);
            const auto q = normal_floats(G * 2 * D, 21), k = normal_floats(Tk * D, 22), v = normal_floats(Tk * D, 23);
            const int64_t h = D / 2;
            std::vector<float> cos(Tk * h), sin(Tk * h);
            for (int64_t t = 0; t < Tk; ++t)
              for (int64_t i = 0; i < h; ++i) {
                const double th = t * std::pow(10000.0, -2.0 * i / D);
                cos[t * h + i] = static_cast<float>(std::cos(th));
                sin[t * h + i] = static_cast<float>(std::sin(th));
              }
            // Tq queries per head, head r's rows at r·2·D; the decoded row is each head's row 1.
            auto run = [&](int64_t Tq, std::vector<float>& o, std::vector<float>& lse) {
              AttnShape s;
              s.Tq = Tq, s.Tk = Tk, s.D = D, s.q_start = Tk - Tq, s.group = G;
              s.scale = 1.0f / std::sqrt(static_cast<float>(D));
              if (rope) s.cos = cos.data(), s.sin = sin.data();
              std::vector<float> scratch(forward_scratch(s) + kScratchAlign);
              ForwardArgs a{};
              a.q = q.data() + (2 - Tq) * D, a.k = k.data(), a.v = v.data();
              a.q_st = D, a.q_sh = 2 * D, a.k_st = D, a.v_st = D;
              o.assign(G * 2 * D, 0.0f), lse.assign(G * Tq, 0.0f);
              a.o = o.data() + (2 - Tq) * D, a.o_st = D, a.o_sh = 2 * D;
              a.lse = lse.data();
              var.fwd(a, s, align_scratch(scratch.data()));
            };
            std::vector<float> o1, l1, o2, l2, o3, l3;
            run(1, o1, l1);
            run(2, o2, l2);
            if (!rope) {  // the decode entry over the keys transposed into a wider cache (ld 8 more)
              AttnShape s;
              s.Tq = 1, s.Tk = Tk, s.D = D, s.q_start = Tk - 1, s.group = G;
              s.scale = 1.0f / std::sqrt(static_cast<float>(D));
              const int64_t ld = (Tk + 7) / 8 * 8 + 8;
              std::vector<float> Kt(D * ld, 0.0f), scratch(decode_scratch(D, ld) + kScratchAlign);
              for (int64_t j = 0; j < Tk; ++j)
                for (int64_t d = 0; d < D; ++d) Kt[d * ld + j] = k[j * D + d];
              ForwardArgs a{};
              a.q = q.data() + D, a.v = v.data(), a.q_sh = 2 * D, a.q_st = D, a.v_st = D;
              o3.assign(G * 2 * D, 0.0f), l3.assign(G, 0.0f);
              a.o = o3.data() + D, a.o_st = D, a.o_sh = 2 * D, a.lse = l3.data();
              var.dec(a, Kt.data(), ld, s, align_scratch(scratch.data()));
              CHECK(same_bits(o3, o1));
              CHECK(same_bits(l3, l1));
            }
            for (int64_t r = 0; r < G; ++r) {
              INFO("head " << r);
              CHECK(std::memcmp(o1.data() + (2 * r + 1) * D, o2.data() + (2 * r + 1) * D, D * sizeof(float)) == 0);
              CHECK(std::memcmp(&l1[r], &l2[2 * r + 1], sizeof(float)) == 0);
            }
            float largest = 0;
            for (float x : o1) largest = std::max(largest, std::fabs(x));
            CHECK(largest > 0.05f);
            ++compared;
          }
  }
  CHECK(compared >= 4 * 6 * 4 * 2);  // the generic variant, at least
}
