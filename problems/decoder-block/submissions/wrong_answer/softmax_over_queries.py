# softmax over the query axis instead of the key axis
import numpy as np


def layer_norm(z, g, b):
    mu = z.mean(-1, keepdims=True)
    var = z.var(-1, keepdims=True)
    return g * (z - mu) / np.sqrt(var + 1e-5) + b


def attention(xq, xkv, p, pre, H, keep):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    dk = D // H
    q = (xq @ p[pre + "wq"] + p[pre + "bq"]).reshape(B, Tq, H, dk).transpose(0, 2, 1, 3)
    k = (xkv @ p[pre + "wk"] + p[pre + "bk"]).reshape(B, Tk, H, dk).transpose(0, 2, 1, 3)
    v = (xkv @ p[pre + "wv"] + p[pre + "bv"]).reshape(B, Tk, H, dk).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    s = np.where(keep, s, -np.inf)
    e = np.exp(s - s.max(-2, keepdims=True))
    w = e / e.sum(-2, keepdims=True)
    ctx = (w @ v).transpose(0, 2, 1, 3).reshape(B, Tq, D)
    return ctx @ p[pre + "wo"] + p[pre + "bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = params
    keep = True if memory_mask is None else memory_mask[:, None, None, :]
    T = tgt.shape[1]
    causal = np.tril(np.ones((T, T), dtype=bool))
    x = layer_norm(tgt + attention(tgt, tgt, p, "sa_", num_heads, causal), p["ln1_g"], p["ln1_b"])
    x = layer_norm(x + attention(x, memory, p, "ca_", num_heads, keep), p["ln2_g"], p["ln2_b"])
    f = np.maximum(x @ p["ff_w1"] + p["ff_b1"], 0) @ p["ff_w2"] + p["ff_b2"]
    return layer_norm(x + f, p["ln3_g"], p["ln3_b"]).reshape(-1)
