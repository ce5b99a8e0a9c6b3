# cross-attention built with the target length for the keys: the reshape fails when T_src != T_tgt
import numpy as np


def _ln(z, g, b):
    mu = z.mean(-1, keepdims=True)
    return g * (z - mu) / np.sqrt(z.var(-1, keepdims=True) + 1e-5) + b


def _mha(xq, xkv, p, s, H, keep):
    B, T, D = xq.shape
    dk = D // H
    q = (xq @ p[s + "_wq"] + p[s + "_bq"]).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
    k = (xkv @ p[s + "_wk"] + p[s + "_bk"]).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
    v = (xkv @ p[s + "_wv"] + p[s + "_bv"]).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
    sc = np.where(keep, q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk), -np.inf)
    w = np.exp(sc - sc.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ p[s + "_wo"] + p[s + "_bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = params
    T = tgt.shape[1]
    causal = np.tril(np.ones((T, T), dtype=bool))
    keep = True if memory_mask is None else memory_mask[:, None, None, :]
    x = _ln(tgt + _mha(tgt, tgt, p, "sa", num_heads, causal), p["ln1_g"], p["ln1_b"])
    x = _ln(x + _mha(x, memory, p, "ca", num_heads, keep), p["ln2_g"], p["ln2_b"])
    f = np.maximum(x @ p["ff_w1"] + p["ff_b1"], 0) @ p["ff_w2"] + p["ff_b2"]
    return _ln(x + f, p["ln3_g"], p["ln3_b"]).reshape(-1)
