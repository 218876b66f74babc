#!/usr/bin/python3
"""Golden fixtures for tests/test_model_golden.cpp.

Builds small fixed-weight models in plain PyTorch, written from the papers' formulas and
the Hugging Face / reference code (independently of lmx's C++), and writes for each one
tests/fixtures/<name>.safetensors holding
  - the weights under lmx's (Hugging Face Llama-style) parameter names,
  - metadata lmx_config: the model config as YAML,
  - state.tokens (B, T) int64 and state.logits (B, T, V) float32: the expected output,
    computed in float64 from the float32 weights.
It also writes tests/fixtures/hf_llama/, a Hugging Face Llama folder (config.json with LlamaConfig
keys, model.safetensors with HF's names) and expected.safetensors beside it (state.tokens,
state.logits), the logits from a forward written after transformers' modeling_llama.py
(rotate_half RoPE with linear scaling, RMSNorm in float32 then cast back, softmax in float32,
repeat_kv), in float64 elsewhere; tests/test_hf_llama.cpp reads the folder with lmx.
And tests/fixtures/optim/muon.safetensors: Muon's update (muon.py, in float64) over three steps on a
wide and a tall matrix, for tests/test_optimizer.cpp.
Run with Debian's python3-torch (not needed at test time):
    /usr/bin/python3 scripts/dev/make_fixtures.py
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))

BASE = dict(vocab_size=16, d_model=16, n_layers=2, n_heads=4, n_kv_heads=0, head_dim=0, max_seq_len=64,
            ffn="relu", swish_beta=1.0, d_ff=24, norm="layernorm", norm_eps=1e-5, norm_placement="pre",
            attention="mha", mla_kv_rank=8, mla_q_rank=0, mla_rope_dim=0, position="sinusoidal",
            rope_theta=10000.0, rope_layout="half", rope_scaling="none", rope_factor=1.0, rope_original_len=0,
            yarn_beta_fast=32.0, yarn_beta_slow=1.0, t5_num_buckets=32, t5_max_distance=128, t5_shared=True, mla_latent_norm=True,
            bias=True, tie_embeddings=False, embed_scale="1")

FIXTURES = {
    # the lecture's textbook model, smaller: pre-norm LayerNorm, sinusoidal, ReLU, biases
    "textbook": dict(),
    # Llama recipe: RMSNorm, SwiGLU, RoPE (half-split), GQA, no biases
    "llama": dict(norm="rmsnorm", ffn="swiglu", position="rope", n_kv_heads=2, bias=False),
    # 2017 post-norm with ALiBi on 6 heads (not a power of two), explicit head_dim, exact GELU, tied head
    "post_alibi": dict(norm_placement="post", position="alibi", n_heads=6, head_dim=4, ffn="gelu",
                       tie_embeddings=True),
    # T5 relative bias (8 buckets, max distance 16), MQA, GEGLU, RMSNorm
    "t5_mqa": dict(position="t5_bias", t5_num_buckets=8, t5_max_distance=16, n_kv_heads=1, ffn="geglu",
                   norm="rmsnorm"),
    # RoPE interleaved (RoFormer pairs) with YaRN scaling, SiLU, no biases, tied head
    "rope_interleaved_yarn": dict(position="rope", rope_layout="interleaved", rope_scaling="yarn",
                                  rope_factor=4.0, rope_original_len=16, ffn="silu", bias=False,
                                  tie_embeddings=True),
    # MLA with a query latent and decoupled RoPE, ReGLU, biases (the C++ test also runs it absorbed)
    "mla": dict(attention="mla", position="rope", mla_kv_rank=8, mla_q_rank=6, mla_rope_dim=4, ffn="reglu",
                norm="rmsnorm"),
    # learned absolute positions, plain swish FFN with β = 0.5
    "learned_swish": dict(position="learned", ffn="swish", swish_beta=0.5),
    # T5 bias with one table per layer (t5_shared false), token embeddings scaled by √d_model
    "t5_per_layer_scaled": dict(position="t5_bias", t5_shared=False, t5_num_buckets=8, t5_max_distance=16,
                                embed_scale="sqrt_d"),
    # MLA without the latent norms (mla_latent_norm false), full-rank queries
    "mla_no_latent_norm": dict(attention="mla", position="rope", mla_kv_rank=8, mla_q_rank=0, mla_rope_dim=4,
                               mla_latent_norm=False, ffn="swiglu", norm="rmsnorm", bias=False),
    # squared ReLU (Primer) with the final logits soft-capped at 1.5 (Gemma 2's c·tanh(z/c)), RoPE, RMSNorm
    "relu2_softcap": dict(ffn="relu2", logit_softcap=1.5, position="rope", norm="rmsnorm", bias=False),
    # the Llama recipe with QK-norm (RMSNorm over each head's q and k before RoPE, as OLMo 2 / Qwen 3)
    "qk_norm_llama": dict(qk_norm=True, norm="rmsnorm", ffn="swiglu", position="rope", n_kv_heads=2, bias=False),
    # sandwich norm (Gemma 2: a norm on each sublayer's output too), LayerNorm, with QK-norm, learned positions
    "sandwich_layernorm": dict(norm_placement="sandwich", qk_norm=True, position="learned"),
    # mixture of experts (Mixtral's block): 4 SwiGLU experts of width 12, top 2, one shared expert, biases
    "moe": dict(ffn="moe", d_ff=12, moe_experts=4, moe_top_k=2, moe_shared_experts=1, moe_aux_loss=0.01),
    # sliding-window attention of 3 in layer 0, layer 1 global (window_global_every 2, Gemma 2's pattern), RoPE, GQA
    "sliding_window": dict(sliding_window=3, window_global_every=2, position="rope", norm="rmsnorm", ffn="swiglu",
                           n_kv_heads=2, bias=False),
    # attention scores soft-capped at 0.5 (Gemma 2's c·tanh(s/c) after the 1/√d scale, before the mask), RoPE
    "attn_softcap": dict(attn_softcap=0.5, position="rope", norm="rmsnorm", ffn="geglu", bias=False),
}

GATED = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}


# ---- the model, functionally, from a name -> tensor dict (float64) --------------------------------

def act(name, x, beta):
    if name == "relu":
        return F.relu(x)
    if name == "gelu":
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    if name == "gelu_tanh":
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "silu":
        return x * torch.sigmoid(x)
    if name == "swish":
        return x * torch.sigmoid(beta * x)
    if name == "relu2":
        return F.relu(x) ** 2
    raise ValueError(name)


def linear(P, prefix, x):
    y = x @ P[prefix + ".weight"].T
    return y + P[prefix + ".bias"] if prefix + ".bias" in P else y


def rms_norm(P, prefix, x, eps):
    """DeepSeek-V2's RMSNorm on an MLA latent."""
    return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps) * P[prefix + ".weight"]


def norm(c, P, prefix, x):
    w = P[prefix + ".weight"]
    if c["norm"] == "layernorm":
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + c["norm_eps"]) * w + P[prefix + ".bias"]
    return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + c["norm_eps"]) * w


def sinusoidal(T, C):
    pe = torch.zeros(T, C, dtype=torch.float64)
    for p in range(T):
        for i in range(0, C, 2):
            pe[p, i] = math.sin(p / 10000 ** (i / C))
            if i + 1 < C:
                pe[p, i + 1] = math.cos(p / 10000 ** (i / C))
    return pe


def rope_freqs(c, dim):
    """inv_freq (dim/2) and mscale, as Hugging Face's rope init functions."""
    base, s = c["rope_theta"], c["rope_factor"]
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    inv_freq = 1.0 / pos_freqs
    mscale = 1.0
    if c["rope_scaling"] == "yarn":
        L = c["rope_original_len"] or int(c["max_seq_len"] / s)

        def correction_dim(rot):
            return (dim * math.log(L / (rot * 2 * math.pi))) / (2 * math.log(base))

        low = max(math.floor(correction_dim(c["yarn_beta_fast"])), 0)
        high = min(math.ceil(correction_dim(c["yarn_beta_slow"])), dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
        extrapolation_factor = 1 - ramp
        inv_freq = (1.0 / (s * pos_freqs)) * (1 - extrapolation_factor) + inv_freq * extrapolation_factor
        mscale = 0.1 * math.log(s) + 1.0 if s > 1 else 1.0
    return inv_freq, mscale


def rope(c, x):
    """x (B, H, T, d): half layout as Llama's rotate_half, interleaved as Meta's complex form."""
    d, T = x.shape[-1], x.shape[-2]
    inv_freq, mscale = rope_freqs(c, d)
    angle = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, d/2)
    if c["rope_layout"] == "interleaved":
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
        z = z * torch.polar(torch.full_like(angle, mscale), angle)
        return torch.view_as_real(z).reshape(x.shape)
    emb = torch.cat([angle, angle], -1)
    cos, sin = emb.cos() * mscale, emb.sin() * mscale
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def alibi_slopes(n):
    """The ALiBi paper's reference get_slopes."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def t5_bucket(relative_position, num_buckets, max_distance):
    """Hugging Face T5Attention._relative_position_bucket with bidirectional=False."""
    relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return torch.where(is_small, relative_position, large)


def score_bias(c, P, prefix, H, T):
    if c["position"] == "alibi":
        slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64)
        # the paper's code: slope·j, equal to −slope·(i − j) up to a per-row constant
        return slopes[:, None, None] * torch.arange(T, dtype=torch.float64)[None, None, :]
    if c["position"] == "t5_bias":
        ctx = torch.arange(T)[:, None]
        mem = torch.arange(T)[None, :]
        buckets = t5_bucket(mem - ctx, c["t5_num_buckets"], c["t5_max_distance"])
        # T5 shares one table among the layers (held by layer 0); t5_shared false: one per layer
        table = "model.layers.0.self_attn" if c["t5_shared"] else prefix
        return P[table + ".relative_attention_bias.weight"][buckets].permute(2, 0, 1)
    return 0.0


def softmax_causal(scores, window=0):
    T = scores.shape[-1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    if window:  # Mistral's sliding window: query i sees keys i - window < j <= i
        mask = mask | torch.tril(torch.ones(T, T, dtype=torch.bool), -window)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), -1)


def layer_window(c, prefix):
    """The sliding window of the layer a prefix names (0: full attention); every k-th layer global."""
    w, k = c.get("sliding_window", 0), c.get("window_global_every", 0)
    i = int(prefix.split(".")[2])
    return 0 if not w or (k and i % k == k - 1) else w


def attention(c, P, prefix, x):
    B, T, _ = x.shape
    H = c["n_heads"]
    D = c["head_dim"] or c["d_model"] // H
    if c["attention"] == "mla":
        R, r = c["mla_rope_dim"], c["mla_kv_rank"]
        if c["mla_q_rank"]:
            q_latent = linear(P, prefix + ".q_a_proj", x)
            if c["mla_latent_norm"]:
                q_latent = rms_norm(P, prefix + ".q_a_layernorm", q_latent, c["norm_eps"])
            q = linear(P, prefix + ".q_b_proj", q_latent)
        else:
            q = linear(P, prefix + ".q_proj", x)
        q = q.view(B, T, H, D + R).transpose(1, 2)
        q_nope, q_pe = q[..., :D], q[..., D:]
        ckv = linear(P, prefix + ".kv_a_proj_with_mqa", x)
        latent, k_pe = ckv[..., :r], ckv[..., r:].view(B, T, 1, R).transpose(1, 2)
        if c["mla_latent_norm"]:
            latent = rms_norm(P, prefix + ".kv_a_layernorm", latent, c["norm_eps"])
        kv = linear(P, prefix + ".kv_b_proj", latent).view(B, T, H, 2 * D).transpose(1, 2)
        k_nope, v = kv[..., :D], kv[..., D:]
        query = torch.cat([q_nope, rope(c, q_pe)], -1)
        key = torch.cat([k_nope, rope(c, k_pe).expand(B, H, T, R)], -1)
        scores = query @ key.transpose(-2, -1) / math.sqrt(D + R) + score_bias(c, P, prefix, H, T)
    else:
        Hk = c["n_kv_heads"] or H
        q = linear(P, prefix + ".q_proj", x).view(B, T, H, D).transpose(1, 2)
        k = linear(P, prefix + ".k_proj", x).view(B, T, Hk, D).transpose(1, 2)
        if c.get("qk_norm", False):  # the model's norm over each head's D, before RoPE
            q, k = norm(c, P, prefix + ".q_norm", q), norm(c, P, prefix + ".k_norm", k)
        v = linear(P, prefix + ".v_proj", x).view(B, T, Hk, D).transpose(1, 2)
        if c["position"] == "rope":
            q, k = rope(c, q), rope(c, k)
        # Hugging Face repeat_kv: (B, Hk, T, D) -> (B, Hk·n_rep, T, D)
        k = k[:, :, None].expand(B, Hk, H // Hk, T, D).reshape(B, H, T, D)
        v = v[:, :, None].expand(B, Hk, H // Hk, T, D).reshape(B, H, T, D)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        cap = c.get("attn_softcap", 0.0)
        if cap > 0:  # Gemma 2: attn_weights = tanh(attn_weights / cap) * cap, before the mask
            scores = cap * torch.tanh(scores / cap)
        scores = scores + score_bias(c, P, prefix, H, T)
    y = softmax_causal(scores, layer_window(c, prefix)) @ v  # (B, H, T, D)
    return linear(P, prefix + ".o_proj", y.transpose(1, 2).reshape(B, T, H * D))


def swiglu(P, prefix, x):
    return linear(P, prefix + ".down_proj", act("silu", linear(P, prefix + ".gate_proj", x), 1.0) *
                  linear(P, prefix + ".up_proj", x))


def moe(c, P, prefix, x):
    """Hugging Face's MixtralSparseMoeBlock (softmax router, top-k renormalized), every expert run
    densely and masked, plus DeepSeekMoE's shared experts."""
    probs = torch.softmax(x @ P[prefix + ".router.weight"].T, -1)
    top, idx = probs.topk(c["moe_top_k"], -1)
    w = top / top.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    for e in range(c["moe_experts"]):
        out = out + (w * (idx == e)).sum(-1, keepdim=True) * swiglu(P, f"{prefix}.experts.{e}", x)
    for s in range(c["moe_shared_experts"]):
        out = out + swiglu(P, f"{prefix}.shared_experts.{s}", x)
    return out


def mlp(c, P, prefix, x):
    if c["ffn"] == "moe":
        return moe(c, P, prefix, x)
    if c["ffn"] in GATED:
        return linear(P, prefix + ".down_proj",
                      act(GATED[c["ffn"]], linear(P, prefix + ".gate_proj", x), 1.0) * linear(P, prefix + ".up_proj", x))
    return linear(P, prefix + ".down_proj", act(c["ffn"], linear(P, prefix + ".up_proj", x), c["swish_beta"]))


def forward(c, P, tokens):
    T = tokens.shape[1]
    x = P["model.embed_tokens.weight"][tokens]
    if c["embed_scale"] == "sqrt_d":
        x = x * math.sqrt(c["d_model"])
    if c["position"] == "sinusoidal":
        x = x + sinusoidal(T, c["d_model"])
    if c["position"] == "learned":
        x = x + P["model.embed_positions.weight"][:T]
    for i in range(c["n_layers"]):
        p = f"model.layers.{i}"
        if c["norm_placement"] == "pre":
            x = x + attention(c, P, p + ".self_attn", norm(c, P, p + ".input_layernorm", x))
            x = x + mlp(c, P, p + ".mlp", norm(c, P, p + ".post_attention_layernorm", x))
        elif c["norm_placement"] == "sandwich":
            x = x + norm(c, P, p + ".attn_output_layernorm",
                         attention(c, P, p + ".self_attn", norm(c, P, p + ".input_layernorm", x)))
            x = x + norm(c, P, p + ".mlp_output_layernorm",
                         mlp(c, P, p + ".mlp", norm(c, P, p + ".post_attention_layernorm", x)))
        else:
            x = norm(c, P, p + ".input_layernorm", x + attention(c, P, p + ".self_attn", x))
            x = norm(c, P, p + ".post_attention_layernorm", x + mlp(c, P, p + ".mlp", x))
    if c["norm_placement"] in ("pre", "sandwich"):
        x = norm(c, P, "model.norm", x)
    head = P["model.embed_tokens.weight"] if c["tie_embeddings"] else P["lm_head.weight"]
    logits = x @ head.T
    logits = logits + P["lm_head.bias"] if "lm_head.bias" in P else logits
    cap = c.get("logit_softcap", 0.0)
    return cap * torch.tanh(logits / cap) if cap > 0 else logits


# ---- the parameter shapes, under lmx's names ------------------------------------------------------

def shapes(c):
    V, C, H = c["vocab_size"], c["d_model"], c["n_heads"]
    D = c["head_dim"] or C // H
    Hk = c["n_kv_heads"] or H
    out = [("model.embed_tokens.weight", (V, C))]
    if c["position"] == "learned":
        out.append(("model.embed_positions.weight", (c["max_seq_len"], C)))

    def lin(name, i, o):
        out.append((name + ".weight", (o, i)))
        if c["bias"]:
            out.append((name + ".bias", (o,)))

    def nrm(name, width=C):
        out.append((name + ".weight", (width,)))
        if c["norm"] == "layernorm":
            out.append((name + ".bias", (width,)))

    for i in range(c["n_layers"]):
        a = f"model.layers.{i}.self_attn"
        if c["attention"] == "mla":
            R, r, rq = c["mla_rope_dim"], c["mla_kv_rank"], c["mla_q_rank"]
            if rq:
                lin(a + ".q_a_proj", C, rq)
                if c["mla_latent_norm"]:
                    out.append((a + ".q_a_layernorm.weight", (rq,)))
                lin(a + ".q_b_proj", rq, H * (D + R))
            else:
                lin(a + ".q_proj", C, H * (D + R))
            lin(a + ".kv_a_proj_with_mqa", C, r + R)
            if c["mla_latent_norm"]:
                out.append((a + ".kv_a_layernorm.weight", (r,)))
            lin(a + ".kv_b_proj", r, H * 2 * D)
        else:
            lin(a + ".q_proj", C, H * D)
            lin(a + ".k_proj", C, Hk * D)
            lin(a + ".v_proj", C, Hk * D)
        lin(a + ".o_proj", H * D, C)
        if c.get("qk_norm", False):
            nrm(a + ".q_norm", D)
            nrm(a + ".k_norm", D)
        if c["position"] == "t5_bias" and (i == 0 or not c["t5_shared"]):
            out.append((a + ".relative_attention_bias.weight", (c["t5_num_buckets"], H)))
        m = f"model.layers.{i}.mlp"
        F_ = c["d_ff"]
        if c["ffn"] == "moe":
            out.append((m + ".router.weight", (c["moe_experts"], C)))
            experts = [f"{m}.experts.{e}" for e in range(c["moe_experts"])]
            experts += [f"{m}.shared_experts.{s}" for s in range(c["moe_shared_experts"])]
            for e in experts:
                lin(e + ".gate_proj", C, F_)
                lin(e + ".up_proj", C, F_)
                lin(e + ".down_proj", F_, C)
        else:
            if c["ffn"] in GATED:
                lin(m + ".gate_proj", C, F_)
            lin(m + ".up_proj", C, F_)
            lin(m + ".down_proj", F_, C)
        nrm(f"model.layers.{i}.input_layernorm")
        nrm(f"model.layers.{i}.post_attention_layernorm")
        if c["norm_placement"] == "sandwich":
            nrm(f"model.layers.{i}.attn_output_layernorm")
            nrm(f"model.layers.{i}.mlp_output_layernorm")
    if c["norm_placement"] in ("pre", "sandwich"):
        nrm("model.norm")
    if not c["tie_embeddings"]:
        out.append(("lm_head.weight", (V, C)))
    if c["bias"]:
        out.append(("lm_head.bias", (V,)))
    return out


def random_weights(c, seed):
    g = torch.Generator().manual_seed(seed)
    P = {}
    for name, shape in shapes(c):
        if "layernorm" in name or name.startswith("model.norm") or ".q_norm." in name or ".k_norm." in name:
            # incl. the MLA latents' norms and QK-norm
            t = 1 + 0.2 * torch.randn(shape, generator=g) if name.endswith("weight") else 0.2 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.2 * torch.randn(shape, generator=g)
        else:
            t = 0.3 * torch.randn(shape, generator=g)
        P[name] = t.to(torch.float32)
    return P


# ---- safetensors, by hand -------------------------------------------------------------------------

def to_yaml(c):
    lines = ["model:"]
    for k, v in c.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"  {k}: {v}")
    return "\n".join(lines) + "\n"


def write_safetensors(path, tensors, metadata):
    codes = {torch.float32: ("F32", "<f"), torch.int64: ("I64", "<q")}
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors:
        dtype, fmt = codes[t.dtype]
        values = t.contiguous().view(-1).tolist()
        blob = struct.pack(f"<{len(values)}{fmt[1]}", *values)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---- a Hugging Face Llama folder, and LlamaForCausalLM's forward as modeling_llama.py writes it -----

HF_CONFIG = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=16, intermediate_size=24,
                 num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, hidden_act="silu",
                 rms_norm_eps=1e-6, rope_theta=500.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
                 vocab_size=16, max_position_embeddings=64, tie_word_embeddings=False, attention_bias=False,
                 mlp_bias=False)


def hf_rms_norm(weight, hidden_states, eps):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + eps)
    return weight * hidden_states.to(input_dtype)


def hf_rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_llama_forward(cfg, W, input_ids):
    B, T = input_ids.shape
    H, Hk = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg["hidden_size"] // H
    # LlamaLinearScalingRotaryEmbedding: inv_freq / factor, emb = cat(freqs, freqs)
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    inv_freq = inv_freq / cfg["rope_scaling"]["factor"]
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    h = W["model.embed_tokens.weight"][input_ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        residual = h
        x = hf_rms_norm(W[p + "input_layernorm.weight"], h, cfg["rms_norm_eps"])
        q = (x @ W[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        k = (x @ W[p + "self_attn.k_proj.weight"].T).view(B, T, Hk, hd).transpose(1, 2)
        v = (x @ W[p + "self_attn.v_proj.weight"].T).view(B, T, Hk, hd).transpose(1, 2)
        q = q * cos + hf_rotate_half(q) * sin
        k = k * cos + hf_rotate_half(k) * sin
        k = k[:, :, None].expand(B, Hk, H // Hk, T, hd).reshape(B, H, T, hd)  # repeat_kv
        v = v[:, :, None].expand(B, Hk, H // Hk, T, hd).reshape(B, H, T, hd)
        attn = q @ k.transpose(2, 3) / math.sqrt(hd) + mask
        attn = torch.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * hd)
        h = residual + out @ W[p + "self_attn.o_proj.weight"].T
        residual = h
        x = hf_rms_norm(W[p + "post_attention_layernorm.weight"], h, cfg["rms_norm_eps"])
        gate, up = x @ W[p + "mlp.gate_proj.weight"].T, x @ W[p + "mlp.up_proj.weight"].T
        h = residual + (F.silu(gate) * up) @ W[p + "mlp.down_proj.weight"].T
    h = hf_rms_norm(W["model.norm.weight"], h, cfg["rms_norm_eps"])
    return h @ W["lm_head.weight"].T


def hf_llama_fixture(tokens):
    c = HF_CONFIG
    lmx_like = dict(BASE, vocab_size=c["vocab_size"], d_model=c["hidden_size"], n_layers=c["num_hidden_layers"],
                    n_heads=c["num_attention_heads"], n_kv_heads=c["num_key_value_heads"],
                    d_ff=c["intermediate_size"], norm="rmsnorm", ffn="swiglu", position="rope", bias=False)
    W = random_weights(lmx_like, 2000)  # the same names and shapes as HF Llama's
    with torch.no_grad():
        logits = hf_llama_forward(c, {k: v.double() for k, v in W.items()}, tokens).float()
    out = os.path.join(OUT, "hf_llama")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out, "model.safetensors"), list(W.items()), {"format": "pt"})
    write_safetensors(os.path.join(out, "expected.safetensors"),
                      [("state.tokens", tokens), ("state.logits", logits)], {})
    print(f"{out}: {sum(v.numel() for v in W.values())} parameters, |logits| max {logits.abs().max():.3f}")


# ---- Muon (Jordan et al. 2024, github.com/KellerJordan/Muon muon.py), in float64 -------------------

def zeropower_via_newtonschulz5(G, steps):
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.clone()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


def muon_update(grad, momentum, beta, ns_steps):
    momentum.lerp_(grad, 1 - beta)
    update = grad.lerp_(momentum, beta)  # nesterov
    update = zeropower_via_newtonschulz5(update, steps=ns_steps)
    update *= max(1, grad.size(-2) / grad.size(-1)) ** 0.5
    return update


def muon_fixture():
    """tests/fixtures/optim/muon.safetensors: a wide and a tall matrix, three steps of gradients, the
    parameters after each step of muon.py's update (lr 0.02·[1, 0.5, 0.25], weight decay 0.1,
    β 0.95, 5 iterations), computed in float64 from the float32 inputs."""
    g = torch.Generator().manual_seed(7)
    lrs, wd, beta, ns = [0.02, 0.01, 0.005], 0.1, 0.95, 5
    tensors = []
    for name, shape in [("wide", (12, 20)), ("tall", (24, 8))]:
        w = torch.randn(shape, generator=g).float()
        tensors.append((f"{name}.param", w))
        p, buf = w.double(), torch.zeros(shape, dtype=torch.float64)
        for step, lr in enumerate(lrs):
            grad = torch.randn(shape, generator=g).float()
            tensors.append((f"{name}.grad{step}", grad))
            u = muon_update(grad.double(), buf, beta, ns)
            p = p * (1 - lr * wd) - lr * u
            tensors.append((f"{name}.after{step}", p.float()))
    meta = {"lr": ",".join(str(x) for x in lrs), "weight_decay": str(wd), "momentum": str(beta), "ns_steps": str(ns)}
    os.makedirs(os.path.join(OUT, "optim"), exist_ok=True)
    path = os.path.join(OUT, "optim", "muon.safetensors")
    write_safetensors(path, tensors, meta)
    print(f"{path}: {len(tensors)} tensors")


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, BASE["vocab_size"], (2, 10), generator=g)
    for seed, (name, overrides) in enumerate(FIXTURES.items()):
        c = dict(BASE, **overrides)
        P = random_weights(c, 1000 + seed)
        with torch.no_grad():
            logits = forward(c, {k: v.double() for k, v in P.items()}, tokens).float()
        tensors = list(P.items()) + [("state.tokens", tokens), ("state.logits", logits)]
        path = os.path.join(OUT, name + ".safetensors")
        write_safetensors(path, tensors, {"lmx_config": to_yaml(c)})
        print(f"{path}: {sum(v.numel() for v in P.values())} parameters, |logits| max {logits.abs().max():.3f}")
    hf_llama_fixture(tokens)
    muon_fixture()


if __name__ == "__main__":
    main()
