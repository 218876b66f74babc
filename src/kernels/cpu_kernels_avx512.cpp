// The fused kernels compiled for AVX-512 (CMakeLists.txt sets -mavx512f -mavx512vl -mavx512bw
// -mavx512dq -mavx2 -mfma on this file only): the attention kernels' register tiles hold
// 16-float vectors, every value summed in the AVX2 variant's order (the same bits);
// cpu_kernels_generic.cpp picks this variant when the CPU has those extensions. The
// compiler's own loop vectorization stays at 256 bits (-mprefer-vector-width=256): with 512 the
// llama shape's kernels (GQA, RoPE, head dim 16) were 0.83-0.94x the AVX2 ones, with 256
// 1.10x (scripts/dev/kernel_ab.sh --avx512, AMD Zen 5).
#define LMX_KERNEL_NS avx512
#include "kernels/attention_impl.h"
#include "kernels/ffn_impl.h"
#include "kernels/loss_impl.h"
#include "kernels/norm_impl.h"
