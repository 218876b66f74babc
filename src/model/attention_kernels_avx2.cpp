// The fused attention kernels compiled for AVX2 + FMA (CMakeLists.txt sets -mavx2 -mfma on
// this file only); attention_kernels_generic.cpp picks this variant when the CPU has both.
#define LMX_KERNEL_NS avx2
#include "model/attention_kernels_impl.h"
#include "model/ffn_kernels_impl.h"
#include "model/loss_kernels_impl.h"
#include "model/norm_kernels_impl.h"
