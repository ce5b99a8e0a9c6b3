"""Reference for `encoder-decoder`: a full Post-LN encoder-decoder Transformer forward pass
in NumPy (no biases, parameter-free LayerNorm, tanh GELU, d_ff = d).

Computes in the dtype of the float inputs (float32 in, float32 out; float64 in, float64 out).
"""

import numpy as np

LN_EPS = 1e-5


def _layer_norm(z):  # site: every sub-layer
    mu = z.mean(axis=-1, keepdims=True)
    var = ((z - mu) ** 2).mean(axis=-1, keepdims=True)  # biased variance
    return (z - mu) / np.sqrt(var + z.dtype.type(LN_EPS))


def _gelu_tanh(t):  # site: every feed-forward sub-layer
    dt = t.dtype.type
    c = dt(np.sqrt(2.0 / np.pi))
    return dt(0.5) * t * (dt(1.0) + np.tanh(c * (t + dt(0.044715) * t**3)))


def _softmax(s):  # site: every attention
    s = s - s.max(axis=-1, keepdims=True)  # rows are never fully masked
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def _split_heads(t, num_heads):  # site: every attention
    n, length, d = t.shape
    return t.reshape(n, length, num_heads, d // num_heads).transpose(0, 2, 1, 3)


def _mha(q_in, kv_in, w_q, w_k, w_v, w_o, num_heads, causal=False):  # site: every attention
    dt = q_in.dtype
    q = _split_heads(q_in @ w_q, num_heads)
    k = _split_heads(kv_in @ w_k, num_heads)
    v = _split_heads(kv_in @ w_v, num_heads)
    d_k = q.shape[-1]
    scores = (q @ k.transpose(0, 1, 3, 2)) / dt.type(np.sqrt(d_k))
    if causal:  # site: the decoder self-attention
        tq, tk = scores.shape[-2:]
        allowed = np.tril(np.ones((tq, tk), dtype=bool))
        scores = np.where(allowed, scores, dt.type(-np.inf))
    ctx = _softmax(scores) @ v
    n, _, tq, _ = ctx.shape
    return ctx.transpose(0, 2, 1, 3).reshape(n, tq, -1) @ w_o


def _ffn(x, w1, w2):  # site: every feed-forward sub-layer
    return _gelu_tanh(x @ w1) @ w2


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    src_emb = np.asarray(src_emb)
    dt = src_emb.dtype
    tgt_emb = np.asarray(tgt_emb, dtype=dt)
    enc_pos_embed = np.asarray(enc_pos_embed, dtype=dt)
    dec_pos_embed = np.asarray(dec_pos_embed, dtype=dt)
    enc_blocks = np.asarray(enc_blocks, dtype=dt)
    dec_blocks = np.asarray(dec_blocks, dtype=dt)
    w_head = np.asarray(w_head, dtype=dt)
    src_ids = np.asarray(src_ids)
    tgt_ids = np.asarray(tgt_ids)

    # encoder: bidirectional self-attention, then FFN; Post-LN after each residual add
    # site: the encoder input
    x = src_emb[src_ids] + enc_pos_embed
    for blk in enc_blocks:
        # site: the encoder self-attention
        x = _layer_norm(x + _mha(x, x, blk[0], blk[1], blk[2], blk[3], num_heads))
        # site: the encoder feed-forward sub-layer
        x = _layer_norm(x + _ffn(x, blk[4], blk[5]))

    # decoder: causal self-attention, cross-attention to the encoder output, FFN.
    # Slots 10 and 11 of each decoder block are padding and are never read.
    # site: the decoder input
    y = tgt_emb[tgt_ids] + dec_pos_embed
    for blk in dec_blocks:
        # site: the decoder self-attention
        y = _layer_norm(y + _mha(y, y, blk[0], blk[1], blk[2], blk[3], num_heads, causal=True))
        # site: the cross-attention
        y = _layer_norm(y + _mha(y, x, blk[4], blk[5], blk[6], blk[7], num_heads))
        # site: the decoder feed-forward sub-layer
        y = _layer_norm(y + _ffn(y, blk[8], blk[9]))

    # site: the output head
    logits = y @ w_head
    return logits.reshape(-1)
