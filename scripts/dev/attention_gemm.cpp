// oneDNN's sgemm on attention's shapes at d 256, 8 heads of 32, T 256 (the d 256 target of issue
// 62, item 2), B 32: S = Q·Kᵀ (256×256×32) and O = P·V (256×32×256) per (sequence, head), as
// whole rows and as causal 64-query blocks (each block against the keys at or before it, the
// FLOPs of the causal pairs counted as useful). What attention as blocked sgemm calls could
// reach against the fused kernels' ~76 GFLOP/s there (docs/PERFORMANCE.md, "Against the targets
// of issue 62"). Measured on the project's Zen 5 VM (oneDNN 2.6.3, 1 thread, two runs): whole
// rows 178 / 208 GFLOP/s (QKᵀ / PV), causal blocks 127-128 / 153-155 GFLOP/s of useful pairs,
// ~7.7 ms for one layer's forward products (1.08 GFLOP).
//   g++ -O2 -std=c++17 scripts/dev/attention_gemm.cpp -o /tmp/attention_gemm -ldnnl
//   OMP_NUM_THREADS=1 /tmp/attention_gemm
#include <dnnl.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
int main() {
  const int T = 256, D = 32, heads = 32 * 8;
  std::vector<float> q(T * D, 0.5f), k(T * D, 0.25f), s(T * T), v(T * D, 0.1f), o(T * D);
  auto time = [&](auto f) { double best = 1e9; for (int r = 0; r < 5; ++r) { auto t0 = std::chrono::steady_clock::now(); for (int h = 0; h < heads; ++h) f(); best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); } return best; };
  // full rows
  double t1 = time([&] { dnnl_sgemm('N', 'T', T, T, D, 1.0f, q.data(), D, k.data(), D, 0.0f, s.data(), T); });
  double t2 = time([&] { dnnl_sgemm('N', 'N', T, D, T, 1.0f, s.data(), T, v.data(), D, 0.0f, o.data(), D); });
  double f1 = 2.0 * T * T * D * heads, f2 = f1;
  printf("full QK^T: %.2f ms %.1f GFLOP/s; PV: %.2f ms %.1f GFLOP/s\n", t1 * 1e3, f1 / t1 / 1e9, t2 * 1e3, f2 / t2 / 1e9);
  // causal blocks of 64 queries: block i against keys [0, 64(i+1))
  const int Bq = 64;
  double t3 = time([&] { for (int i = 0; i < T / Bq; ++i) { int nk = Bq * (i + 1); dnnl_sgemm('N', 'T', Bq, nk, D, 1.0f, q.data() + i * Bq * D, D, k.data(), D, 0.0f, s.data() + i * Bq * T, T); } });
  double t4 = time([&] { for (int i = 0; i < T / Bq; ++i) { int nk = Bq * (i + 1); dnnl_sgemm('N', 'N', Bq, D, nk, 1.0f, s.data() + i * Bq * T, T, v.data(), D, 0.0f, o.data() + i * Bq * D, D); } });
  double useful = 2.0 * D * (T * (T + 1) / 2) * heads;
  printf("causal 64-blocks QK^T: %.2f ms (%.1f GFLOP/s of useful pairs); PV: %.2f ms (%.1f)\n", t3 * 1e3, useful / t3 / 1e9, t4 * 1e3, useful / t4 / 1e9);
  printf("forward attention FLOPs (useful, all heads, one layer): %.3f GFLOP\n", 2 * useful / 1e9);
}
