// Rotary position embedding (Su et al., RoFormer) with the context-extension scalings.
// Pair i of a D-wide vector rotates by angle p·ω_i, ω_i = θ^(−2i/D), i < D/2. Layouts:
//   half        pairs (i, i + D/2), as in the Llama / Hugging Face code (rotate_half)
//   interleaved pairs (2i, 2i + 1), as in the RoFormer paper
// Scalings (s = rope_factor):
//   linear  position interpolation (Chen et al. 2023): p -> p / s
//   ntk     NTK-aware base: θ -> θ · s^(D/(D−2))
//   yarn    Peng et al. 2023: ω_i blended per pair between ω_i and ω_i/s by a linear ramp
//           over the number of rotations r_i = L / (2π/ω_i) in the trained length L =
//           rope_original_len: r_i > beta_fast keeps ω_i, r_i < beta_slow takes ω_i/s; and the
//           attention temperature √(1/t) = 0.1·ln(s) + 1 multiplies cos and sin (so both q
//           and k), as Hugging Face's "mscale" does.
#pragma once
#include <utility>

#include "model/options.h"
#include "model/position/position.h"

namespace lmx {

class RoPEImpl : public Position, public Rotary {
 public:
  explicit RoPEImpl(const RopeOptions& o);
  const char* module_name() const override { return "rotary_emb"; }
  PositionEffect effect() const override { return PositionEffect::Rotates; }
  Rotary* rotary() override { return this; }
  torch::Tensor rotate(const torch::Tensor& x, int64_t start) override;

  // ω_i after scaling, (D/2) float64; the position divisor (linear: s, else 1); the yarn mscale.
  const torch::Tensor& inv_freq() const { return inv_freq_; }
  double position_scale() const { return position_scale_; }
  double mscale() const { return mscale_; }
  int64_t dim() const override { return dim_; }
  bool interleaved() const override { return interleaved_; }
  // The cached cos and sin tables for positions [0, length): (length, D/2) float32 on device
  // (yarn's mscale included), as rotate uses them; the fused attention kernel reads them. Safe
  // to call from several threads at once (the parts of a split training step).
  std::pair<torch::Tensor, torch::Tensor> tables(int64_t length, const torch::Device& device) override;

 private:
  // The caches, grown to cover [0, length) on device first (under a lock).
  std::pair<torch::Tensor, torch::Tensor> grow(int64_t length, const torch::Device& device);

  int64_t dim_;
  bool interleaved_;
  double position_scale_ = 1.0;
  double mscale_ = 1.0;
  int64_t min_len_;
  torch::Tensor inv_freq_;   // (D/2) float64
  torch::Tensor cos_, sin_;  // (L, D/2) float32 caches, grown on demand
};
TORCH_MODULE(RoPE);

// Yarn's ramp: the fraction (0..1) of each pair i < D/2 that is interpolated (1 = ω_i/s).
torch::Tensor yarn_interpolation_ramp(int64_t dim, double theta, int64_t original_len, double beta_fast,
                                      double beta_slow);

}  // namespace lmx
