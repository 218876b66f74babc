#include "kernels/fused_attention.h"

#include <torch/autograd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/precision.h"
#include "util/env.h"
#include "util/op_timer.h"

namespace lmx {

namespace {

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{[] {
    return env::text("LMX_FUSED_ATTENTION") != "0";
  }()};
  return flag;
}

// fn(b, g, h0, scratch) for every (sequence b, KV head g) with h0 = g's first query head, in
// parallel chunks that each own `scratch_n` floats of scratch, aligned to 64 bytes: the kernels'
// scratch rows are 16 floats (64 bytes) and the AVX-512 variant loads and stores them whole; at
// malloc's 16-byte alignment each such access split two cache lines (the llama-shaped backward
// ~12% slower in a harness that offsets the scratch).
template <class Fn>
void for_each_kv_head(int64_t B, int64_t Hk, int64_t group, int64_t scratch_n, const Fn& fn) {
  kernels::parallel_for(B * Hk, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> buffer(scratch_n + kernels::kScratchAlign);
    float* scratch = kernels::align_scratch(buffer.data());
    for (int64_t idx = begin; idx < end; ++idx) fn(idx / Hk, idx % Hk, (idx % Hk) * group, scratch);
  });
}

// Inference over a KV cache: q4 (B, Tq, H, D), k4 / v4 (B, Tk, Hk, D) strided views with a
// contiguous last dim; o4 like q4.
void run_forward(const torch::Tensor& q4, const torch::Tensor& k4, const torch::Tensor& v4, const torch::Tensor& o4,
                 kernels::AttnShape shape) {
  const int64_t B = q4.size(0), H = q4.size(2), Hk = k4.size(2);
  shape.group = H / Hk;
  const float *q = q4.data_ptr<float>(), *k = k4.data_ptr<float>(), *v = v4.data_ptr<float>();
  float* o = o4.data_ptr<float>();
  auto kernel = kernels::forward_kernel();
  const int64_t scratch_n = kernels::forward_scratch(shape);
  for_each_kv_head(B, Hk, shape.group, scratch_n, [&](int64_t b, int64_t g, int64_t h0, float* scratch) {
    kernels::ForwardArgs a{};
    a.q = q + b * q4.stride(0) + h0 * q4.stride(2);
    a.q_st = q4.stride(1);
    a.q_sh = q4.stride(2);
    a.k = k + b * k4.stride(0) + g * k4.stride(2);
    a.k_st = k4.stride(1);
    a.v = v + b * v4.stride(0) + g * v4.stride(2);
    a.v_st = v4.stride(1);
    a.o = o + b * o4.stride(0) + h0 * o4.stride(2);
    a.o_st = o4.stride(1);
    a.o_sh = o4.stride(2);
    kernel(a, shape, scratch);
  });
}

kernels::AttnShape make_shape(int64_t Tq, int64_t Tk, int64_t D, int64_t q_start, double scale,
                              const torch::Tensor& cos, const torch::Tensor& sin, bool interleaved, const AttnLimits& limits) {
  kernels::AttnShape s;
  s.Tq = Tq;
  s.Tk = Tk;
  s.D = D;
  s.q_start = q_start;
  s.scale = static_cast<float>(scale);
  s.window = limits.window;
  s.softcap = static_cast<float>(limits.softcap);
  if (cos.defined() && cos.numel() > 0) {
    s.cos = cos.data_ptr<float>();
    s.sin = sin.data_ptr<float>();
    s.interleaved = interleaved;
  }
  return s;
}

// The sequences of a (B, T, H + 2·Hk, D) qkv as rows of its (B·T) tokens: B of length T, or
// the given lengths laid end to end (padding-free batches). start[b] is sequence b's first row.
struct Segments {
  std::vector<int64_t> start, len;
  int64_t longest = 0;
};
Segments make_segments(int64_t B, int64_t T, const std::vector<int64_t>& lengths) {
  Segments s;
  if (lengths.empty()) {
    for (int64_t b = 0; b < B; ++b) s.start.push_back(b * T), s.len.push_back(T);
  } else {
    int64_t at = 0;
    for (int64_t n : lengths) s.start.push_back(at), s.len.push_back(n), at += n;
  }
  for (int64_t n : s.len) s.longest = std::max(s.longest, n);
  return s;
}

// Where sequence b's KV head g and its first query head h0 sit, in floats: q, k, v in the
// packed qkv (N rows of H + 2·Hk heads, `row` floats each), o in (N, H, D), lse in sequence b's
// block of H·len[b] at H·start[b] (head-major).
struct HeadOffsets {
  int64_t row, q, k, v, o, lse;
  HeadOffsets(const Segments& seg, int64_t b, int64_t g, int64_t h0, int64_t H, int64_t Hk, int64_t D)
      : row((H + 2 * Hk) * D),
        q(seg.start[b] * row + h0 * D),
        k(seg.start[b] * row + (H + g) * D),
        v(seg.start[b] * row + (H + Hk + g) * D),
        o(seg.start[b] * H * D + h0 * D),
        lse(H * seg.start[b] + h0 * seg.len[b]) {}
};

// The rows ForwardArgs and BackwardArgs share: q, k, v in qkv and o, at `at`.
template <class Args, class OutPtr>
void point_rows(Args& a, const HeadOffsets& at, const float* qkv, OutPtr o, int64_t H, int64_t D) {
  a.q = qkv + at.q;
  a.k = qkv + at.k;
  a.v = qkv + at.v;
  a.q_st = a.k_st = a.v_st = at.row;
  a.q_sh = D;
  a.o = o + at.o;
  a.o_st = H * D;
  a.o_sh = D;
}

// fn(at, shape, scratch) for every (sequence b, KV head g): `at` where its rows sit, shape that
// sequence's (Tq = Tk = its length, group = H / Hk), in parallel chunks that each own the
// scratch the longest sequence needs.
//
// Before a sequence's first KV head, its rows of qkv are prefetched as one contiguous block. A
// head's kernel reads its q, k and v rows at the stride of the packed projection's row (one or
// two 64-byte lines of every 8-12): short strided streams that the hardware prefetchers take up
// late. In the backward, qkv (saved by the forward) has left the cache by then, and the kernels
// ran 15-25% slower than on a second pass over the same rows; the contiguous prefetch recovers
// most of that (docs/PERFORMANCE.md). Prefetches change no arithmetic: the same bits.
template <class Fn>
void for_each_segment_head(const Segments& seg, int64_t H, int64_t Hk, kernels::AttnShape shape, bool backward,
                           const float* qkv, const Fn& fn) {
  shape.group = H / Hk;
  shape.Tq = shape.Tk = seg.longest;
  const int64_t scratch_n = backward ? kernels::backward_scratch(shape) : kernels::forward_scratch(shape);
  for_each_kv_head(static_cast<int64_t>(seg.len.size()), Hk, shape.group, scratch_n,
                   [&](int64_t b, int64_t g, int64_t h0, float* scratch) {
                     const HeadOffsets at(seg, b, g, h0, H, Hk, shape.D);
                     if (g == 0) kernels::prefetch_floats(qkv + at.q, seg.len[b] * at.row);  // at.q: the sequence's first row
                     kernels::AttnShape s = shape;
                     s.Tq = s.Tk = seg.len[b];
                     fn(at, s, scratch);
                   });
}

// Forward over the segments of qkv (N rows of H + 2·Hk heads): o (N, H, D); lse (H·N floats,
// sequence b's block of H·len[b] at H·start[b], head-major) or null.
void run_forward_segments(const torch::Tensor& qkv, int64_t H, int64_t Hk, const Segments& seg, const torch::Tensor& o,
                          float* lse, kernels::AttnShape shape) {
  const float* q = qkv.data_ptr<float>();
  float* op = o.data_ptr<float>();
  auto kernel = kernels::forward_kernel();
  for_each_segment_head(seg, H, Hk, shape, /*backward=*/false, q,
                        [&](const HeadOffsets& at, const kernels::AttnShape& s, float* scratch) {
                          kernels::ForwardArgs a{};
                          point_rows(a, at, q, op, H, s.D);
                          a.lse = lse ? lse + at.lse : nullptr;
                          kernel(a, s, scratch);
                        });
}

class FusedAttentionFn : public torch::autograd::Function<FusedAttentionFn> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in, int64_t H,
                               int64_t Hk, double scale, const torch::Tensor& cos_in, const torch::Tensor& sin_in,
                               bool interleaved, const std::vector<int64_t>& lengths, int64_t window, double softcap) {
    op_timer::Scope timed(op_timer::Kind::Attention);
    auto qkv = qkv_in.contiguous();
    auto cos = cos_in.contiguous(), sin = sin_in.contiguous();  // (T, D/2), or empty: no RoPE
    const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(3);
    const Segments seg = make_segments(B, T, lengths);
    auto o = torch::empty({B, T, H, D}, qkv.options());
    auto lse = torch::empty({B * T * H}, qkv.options());
    const AttnLimits limits{window, softcap};
    run_forward_segments(qkv, H, Hk, seg, o, lse.data_ptr<float>(),
                         make_shape(T, T, D, 0, scale, cos, sin, interleaved, limits));
    ctx->save_for_backward({qkv, o, lse, cos, sin});
    ctx->saved_data["window"] = window;
    ctx->saved_data["softcap"] = softcap;
    ctx->saved_data["H"] = H;
    ctx->saved_data["Hk"] = Hk;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["interleaved"] = interleaved;
    ctx->saved_data["lengths"] = lengths;
    return o;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    op_timer::Scope timed(op_timer::Kind::Attention);
    auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &o = saved[1], &lse = saved[2], &cos = saved[3], &sin = saved[4];
    const int64_t H = ctx->saved_data["H"].toInt(), Hk = ctx->saved_data["Hk"].toInt();
    const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(3);
    const Segments seg = make_segments(B, T, ctx->saved_data["lengths"].toIntVector());
    auto shape = make_shape(T, T, D, 0, ctx->saved_data["scale"].toDouble(), cos, sin,
                            ctx->saved_data["interleaved"].toBool(),
                            {ctx->saved_data["window"].toInt(), ctx->saved_data["softcap"].toDouble()});
    auto dout = grads[0].contiguous();
    auto dqkv = torch::empty_like(qkv);
    const float *q = qkv.data_ptr<float>(), *op = o.data_ptr<float>(), *dop = dout.data_ptr<float>(),
                *lp = lse.data_ptr<float>();
    float* dq = dqkv.data_ptr<float>();
    auto kernel = kernels::backward_kernel();
    for_each_segment_head(seg, H, Hk, shape, /*backward=*/true, q,
                          [&](const HeadOffsets& at, const kernels::AttnShape& s, float* scratch) {
                            kernels::BackwardArgs a{};
                            point_rows(a, at, q, op, H, D);
                            a.dout = dop + at.o;
                            a.lse = lp + at.lse;
                            a.dq = dq + at.q;
                            a.dk = dq + at.k;
                            a.dv = dq + at.v;
                            a.dq_st = a.dk_st = a.dv_st = at.row;
                            a.dq_sh = D;
                            kernel(a, s, scratch);
                          });
    return {dqkv,           torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool fused_kernels_take(const torch::Tensor& x) {
  return fused_attention_enabled() && x.device().is_cpu() && x.scalar_type() == torch::kFloat32;
}

bool fused_attention_supported(const torch::Tensor& x, int64_t head_dim) {
  return fused_kernels_take(x) && head_dim % 8 == 0 && head_dim <= 256;
}

void set_fused_attention(bool enabled) { enabled_flag().store(enabled); }
bool fused_attention_enabled() {
  // Under autocast (train.precision bf16) the projections return bfloat16: LibTorch's ops.
  return enabled_flag().load() && !autocast_active(c10::DeviceType::CPU);
}

torch::Tensor fused_causal_attention(const torch::Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, double scale,
                                     const torch::Tensor& cos, const torch::Tensor& sin, bool interleaved,
                                     const std::vector<int64_t>& lengths, const AttnLimits& limits) {
  const int64_t B = qkv.size(0), T = qkv.size(1);
  if (limits.window < 0 || limits.softcap < 0)
    throw std::logic_error("fused_causal_attention: a negative window or soft-cap");
  if (!lengths.empty()) {
    int64_t n = 0;
    for (int64_t len : lengths) {
      if (len <= 0) throw std::logic_error("fused_causal_attention: a sequence of length <= 0");
      n += len;
    }
    if (B != 1 || n != T) throw std::logic_error("fused_causal_attention: lengths must tile qkv (1, T, ...)");
  }
  const int64_t longest = lengths.empty() ? T : *std::max_element(lengths.begin(), lengths.end());
  torch::Tensor c = cos, s = sin;
  if (c.defined()) {
    if (c.size(0) < longest || s.size(0) < longest)
      throw std::logic_error(fmt::format("fused_causal_attention: RoPE tables of {} rows for a sequence of {} positions",
                                         std::min(c.size(0), s.size(0)), longest));
    c = c.slice(0, 0, longest).to(torch::kFloat32);
    s = s.slice(0, 0, longest).to(torch::kFloat32);
  }
  if (!torch::GradMode::is_enabled() || !qkv.requires_grad()) {
    auto x = qkv.contiguous();
    if (c.defined()) c = c.contiguous(), s = s.contiguous();
    const int64_t D = x.size(3);
    auto o = torch::empty({B, T, n_heads, D}, x.options());
    run_forward_segments(x, n_heads, n_kv_heads, make_segments(B, T, lengths), o, nullptr,
                         make_shape(T, T, D, 0, scale, c, s, interleaved, limits));
    return o;
  }
  if (!c.defined()) c = s = torch::empty({0}, qkv.options());  // autograd inputs must be defined
  return FusedAttentionFn::apply(qkv, n_heads, n_kv_heads, scale, c, s, interleaved, lengths, limits.window,
                                 limits.softcap);
}

torch::Tensor fused_attention_inference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                        double scale, int64_t q_start, const AttnLimits& limits) {
  auto q4 = q.stride(3) == 1 ? q.transpose(1, 2) : q.contiguous().transpose(1, 2);  // (B, Tq, H, D)
  auto k4 = k.stride(3) == 1 ? k.transpose(1, 2) : k.contiguous().transpose(1, 2);  // (B, Tk, Hk, D)
  auto v4 = v.stride(3) == 1 ? v.transpose(1, 2) : v.contiguous().transpose(1, 2);
  const int64_t B = q4.size(0), Tq = q4.size(1), H = q4.size(2), D = q4.size(3);
  auto o = torch::empty({B, Tq, H, D}, q.options());
  run_forward(q4, k4, v4, o, make_shape(Tq, k4.size(1), D, q_start, scale, {}, {}, false, limits));
  return o;
}

}  // namespace lmx
