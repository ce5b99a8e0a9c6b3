"""Reference for `decoder-block`: one Post-LN Transformer decoder layer in NumPy.

Computes in the dtype of the inputs (float32 in, float32 out; float64 in, float64 out).
"""

import numpy as np

LN_EPS = 1e-5


def _layer_norm(z, g, b):  # site: every sub-layer
    mu = z.mean(axis=-1, keepdims=True)
    var = ((z - mu) ** 2).mean(axis=-1, keepdims=True)  # biased variance
    return g * ((z - mu) / np.sqrt(var + z.dtype.type(LN_EPS))) + b


def _softmax(s):  # site: every attention
    s = s - s.max(axis=-1, keepdims=True)  # rows are never fully masked, so max is finite
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def _split_heads(t, num_heads):  # site: every attention
    n, length, d = t.shape
    return t.reshape(n, length, num_heads, d // num_heads).transpose(0, 2, 1, 3)


def _attention(q_in, kv_in, p, prefix, num_heads, allowed):  # site: every attention
    """allowed: bool array broadcastable to (B, H, Tq, Tk), True = may attend."""
    dt = q_in.dtype
    q = _split_heads(q_in @ p[prefix + "wq"] + p[prefix + "bq"], num_heads)
    k = _split_heads(kv_in @ p[prefix + "wk"] + p[prefix + "bk"], num_heads)
    v = _split_heads(kv_in @ p[prefix + "wv"] + p[prefix + "bv"], num_heads)
    d_k = q.shape[-1]
    scores = (q @ k.transpose(0, 1, 3, 2)) / dt.type(np.sqrt(d_k))
    if allowed is not None:
        scores = np.where(allowed, scores, dt.type(-np.inf))
    ctx = _softmax(scores) @ v  # (B, H, Tq, d_k)
    n, _, tq, _ = ctx.shape
    ctx = ctx.transpose(0, 2, 1, 3).reshape(n, tq, -1)
    return ctx @ p[prefix + "wo"] + p[prefix + "bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    tgt = np.asarray(tgt)
    dt = tgt.dtype
    memory = np.asarray(memory, dtype=dt)
    p = {k: np.asarray(v, dtype=dt) for k, v in params.items()}
    t_tgt = tgt.shape[1]

    # site: the self-attention
    causal = np.tril(np.ones((t_tgt, t_tgt), dtype=bool))[None, None]
    sa = _attention(tgt, tgt, p, "sa_", num_heads, causal)
    x1 = _layer_norm(tgt + sa, p["ln1_g"], p["ln1_b"])

    # site: the cross-attention
    pad = None
    if memory_mask is not None:
        pad = np.asarray(memory_mask, dtype=bool)[:, None, None, :]
    ca = _attention(x1, memory, p, "ca_", num_heads, pad)
    x2 = _layer_norm(x1 + ca, p["ln2_g"], p["ln2_b"])

    # site: the feed-forward sub-layer
    hidden = np.maximum(x2 @ p["ff_w1"] + p["ff_b1"], dt.type(0))
    ff = hidden @ p["ff_w2"] + p["ff_b2"]
    out = _layer_norm(x2 + ff, p["ln3_g"], p["ln3_b"])
    return out.reshape(-1)
