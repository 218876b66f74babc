// The fused kernels (attention, FFN activations, norms, cross-entropy) compiled for AVX2 + FMA (CMakeLists.txt sets -mavx2 -mfma on
// this file only); cpu_kernels_generic.cpp picks this variant when the CPU has both.
#define LMX_KERNEL_NS avx2
#include "kernels/attention_impl.h"
#include "kernels/ffn_impl.h"
#include "kernels/loss_impl.h"
#include "kernels/norm_impl.h"
