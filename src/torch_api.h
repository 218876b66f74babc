// The part of LibTorch lmx uses: tensors and their operators, autograd (custom functions, grad),
// modules (Linear, Embedding, ModuleList, functional), AdamW. Narrower than <torch/torch.h>,
// which adds the data loaders, the JIT, serialization and every other module: parsed once in the
// precompiled header (pch.h), and every translation unit instantiates what its headers declare,
// so a unit built on this compiles ~3 s faster than one on <torch/torch.h> (2-core VM; PCH build
// 28 s instead of 43 s). A source that needs LibTorch beyond a narrower header includes this.
#pragma once
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>
#include <torch/utils.h>
