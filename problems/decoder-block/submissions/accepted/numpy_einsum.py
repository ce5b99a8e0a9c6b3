import numpy as np


def _norm(z, gain, shift, eps=1e-5):
    centered = z - z.mean(-1, keepdims=True)
    scale = 1.0 / np.sqrt(np.mean(centered * centered, -1, keepdims=True) + eps)
    return centered * scale * gain + shift


def _mha(xq, xkv, P, tag, H, keep):
    B, Tq, D = xq.shape
    Tk = xkv.shape[1]
    dk = D // H
    q = (np.einsum("btd,de->bte", xq, P[tag + "_wq"]) + P[tag + "_bq"]).reshape(B, Tq, H, dk)
    k = (np.einsum("btd,de->bte", xkv, P[tag + "_wk"]) + P[tag + "_bk"]).reshape(B, Tk, H, dk)
    v = (np.einsum("btd,de->bte", xkv, P[tag + "_wv"]) + P[tag + "_bv"]).reshape(B, Tk, H, dk)
    s = np.einsum("bqhe,bkhe->bhqk", q / np.sqrt(dk), k)
    s = np.where(keep, s, -1e30)
    s = np.exp(s - s.max(axis=3, keepdims=True))
    a = s / s.sum(axis=3, keepdims=True)
    ctx = np.einsum("bhqk,bkhe->bqhe", a, v).reshape(B, Tq, D)
    return ctx @ P[tag + "_wo"] + P[tag + "_bo"]


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    B, T, D = tgt.shape
    S = memory.shape[1]
    causal = (np.arange(T)[:, None] >= np.arange(T)[None, :])[None, None]
    if memory_mask is None:
        src_keep = np.ones((B, 1, 1, S), dtype=bool)
    else:
        src_keep = np.asarray(memory_mask, dtype=bool)[:, None, None, :]

    h = _norm(tgt + _mha(tgt, tgt, params, "sa", num_heads, causal),
              params["ln1_g"], params["ln1_b"])
    h = _norm(h + _mha(h, memory, params, "ca", num_heads, src_keep),
              params["ln2_g"], params["ln2_b"])
    inner = np.clip(h @ params["ff_w1"] + params["ff_b1"], 0, None)
    h = _norm(h + inner @ params["ff_w2"] + params["ff_b2"], params["ln3_g"], params["ln3_b"])
    return h.ravel()
