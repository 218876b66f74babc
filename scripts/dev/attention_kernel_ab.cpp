// A/B of the fused attention kernels (src/kernels/*.h): the working tree's
// variant against a reference build of the same kernels (scripts/dev/kernel_ab.sh compiles it
// from a git commit into namespace lmx::kernels::ref). Per shape: forward + backward of one
// layer (every sequence and KV head, 1 thread), the two sides alternating, min / first
// quartile / median ms; and whether o, lse and dqkv are the same bits (a change that only
// moves data or reorders independent work must keep them).
//   attention_kernel_ab ITERS generic|avx2|avx512
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_kernels.h"

namespace lmx::kernels::ref {
void forward(const ForwardArgs&, const AttnShape&, float*);
void backward(const BackwardArgs&, const AttnShape&, float*);
}  // namespace lmx::kernels::ref

namespace {

using namespace lmx::kernels;

struct Shape {
  int64_t B, T, H, Hk, D;
  enum Rope { kNone, kHalf, kInterleaved } rope;  // RoPE pair layout, or none
};

struct Buffers {
  std::vector<float> qkv, o, lse, dout, dqkv, cos, sin, scratch;
  // The scratch aligned as src/kernels/fused_attention.cpp hands it to the kernels (at malloc's
  // 16 bytes the 16-float rows split cache lines, and the timings with them).
  float* scratch64() { return align_scratch(scratch.data()); }
};

// The fields ForwardArgs and BackwardArgs share, for sequence b and KV head g.
template <class Args>
Args head_args(const Shape& p, Buffers& m, int64_t b, int64_t g) {
  const int64_t group = p.H / p.Hk, h0 = g * group, row = (p.H + 2 * p.Hk) * p.D, orow = p.H * p.D;
  const int64_t base = b * p.T * row;
  Args a{};
  a.q = m.qkv.data() + base + h0 * p.D;
  a.k = m.qkv.data() + base + (p.H + g) * p.D;
  a.v = m.qkv.data() + base + (p.H + p.Hk + g) * p.D;
  a.q_st = a.k_st = a.v_st = row;
  a.q_sh = p.D;
  a.o = m.o.data() + b * p.T * orow + h0 * p.D;
  a.o_st = orow;
  a.o_sh = p.D;
  a.lse = m.lse.data() + (b * p.H + h0) * p.T;
  return a;
}

// One layer's forward and backward through fwd / bwd; returns milliseconds.
double run(ForwardFn fwd, BackwardFn bwd, const Shape& p, Buffers& m) {
  AttnShape s;
  s.Tq = s.Tk = p.T;
  s.D = p.D;
  s.group = p.H / p.Hk;
  s.scale = 1.0f / std::sqrt(static_cast<float>(p.D));
  if (p.rope != Shape::kNone) s.cos = m.cos.data(), s.sin = m.sin.data();
  s.interleaved = p.rope == Shape::kInterleaved;
  const int64_t row = (p.H + 2 * p.Hk) * p.D;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t g = 0; g < p.Hk; ++g) fwd(head_args<ForwardArgs>(p, m, b, g), s, m.scratch64());
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t g = 0; g < p.Hk; ++g) {
      auto a = head_args<BackwardArgs>(p, m, b, g);
      const int64_t shift = a.o - m.o.data(), base = b * p.T * row, h0 = g * s.group;
      a.dout = m.dout.data() + shift;
      a.dq = m.dqkv.data() + base + h0 * p.D;
      a.dk = m.dqkv.data() + base + (p.H + g) * p.D;
      a.dv = m.dqkv.data() + base + (p.H + p.Hk + g) * p.D;
      a.dq_st = a.dk_st = a.dv_st = row;
      a.dq_sh = p.D;
      bwd(a, s, m.scratch64());
    }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Buffers make(const Shape& p) {
  Buffers m;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  m.qkv.resize(p.B * p.T * (p.H + 2 * p.Hk) * p.D);
  m.o.resize(p.B * p.T * p.H * p.D);
  m.dout.resize(m.o.size());
  m.dqkv.resize(m.qkv.size());
  m.lse.resize(p.B * p.H * p.T);
  for (auto& x : m.qkv) x = nd(rng);
  for (auto& x : m.dout) x = nd(rng);
  const int64_t h = p.D / 2;
  m.cos.resize(p.T * h);
  m.sin.resize(p.T * h);
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t i = 0; i < h; ++i) {
      const double th = t * std::pow(10000.0, -2.0 * i / p.D);
      m.cos[t * h + i] = static_cast<float>(std::cos(th));
      m.sin[t * h + i] = static_cast<float>(std::sin(th));
    }
  AttnShape s;
  s.Tq = s.Tk = p.T;
  s.D = p.D;
  s.group = p.H / p.Hk;
  // Twice the working tree's need, so a reference that needed more still fits.
  m.scratch.resize(2 * std::max(forward_scratch(s), backward_scratch(s)) + 64 * p.D + kScratchAlign);
  return m;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::string isa = argc > 2 ? argv[2] : "avx2";
  const ForwardFn fwd = isa == "generic" ? &generic::forward : isa == "avx512" ? &avx512::forward : &avx2::forward;
  const BackwardFn bwd = isa == "generic" ? &generic::backward : isa == "avx512" ? &avx512::backward : &avx2::backward;
  // textbook and llama at lmx bench's B=32 T=64 (llama also with RoFormer's interleaved RoPE
  // pairs), and two wider heads.
  const std::vector<Shape> shapes = {{32, 64, 4, 4, 16, Shape::kNone},  {32, 64, 4, 2, 16, Shape::kHalf},
                                     {32, 64, 4, 2, 16, Shape::kInterleaved}, {8, 128, 4, 4, 32, Shape::kHalf},
                                     {8, 256, 8, 8, 64, Shape::kNone}};
  std::printf("kernels: %s; %d interleaved runs per side\n\n", isa.c_str(), iters);
  std::printf("| B | T | H | Hk | D | RoPE | ref min / q1 / median ms | new min / q1 / median ms | ref ÷ new (min) | same bits | max |diff| |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool all_same = true;
  for (const auto& p : shapes) {
    Buffers a = make(p), b = make(p);
    run(&lmx::kernels::ref::forward, &lmx::kernels::ref::backward, p, a);
    run(fwd, bwd, p, b);
    const bool same = a.o == b.o && a.lse == b.lse && a.dqkv == b.dqkv;
    double diff = 0;
    for (size_t i = 0; i < a.dqkv.size(); ++i) diff = std::max<double>(diff, std::fabs(a.dqkv[i] - b.dqkv[i]));
    for (size_t i = 0; i < a.o.size(); ++i) diff = std::max<double>(diff, std::fabs(a.o[i] - b.o[i]));
    all_same = all_same && same;
    std::vector<double> ta, tb;
    for (int it = 0; it < iters; ++it) {
      ta.push_back(run(&lmx::kernels::ref::forward, &lmx::kernels::ref::backward, p, a));
      tb.push_back(run(fwd, bwd, p, b));
    }
    std::printf("| %ld | %ld | %ld | %ld | %ld | %s | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.3f× | %s | %.2g |\n",
                static_cast<long>(p.B), static_cast<long>(p.T), static_cast<long>(p.H), static_cast<long>(p.Hk),
                static_cast<long>(p.D), p.rope == Shape::kNone ? "no" : p.rope == Shape::kHalf ? "half" : "interleaved", quantile(ta, 0), quantile(ta, 0.25), quantile(ta, 0.5),
                quantile(tb, 0), quantile(tb, 0.25), quantile(tb, 0.5), quantile(ta, 0) / quantile(tb, 0),
                same ? "yes" : "**no**", diff);
  }
  return all_same ? 0 : 3;
}
