# decoder slots 0-3 and 4-7 swapped: the self-attention uses the cross-attention's weights and vice versa
import numpy as np


def ln(x):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def gelu(t):
    return 0.5 * t * (1 + np.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mha(xq, xkv, wq, wk, wv, wo, H, causal):
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    dk = d // H
    q = (xq @ wq).reshape(N, Tq, H, dk).transpose(0, 2, 1, 3)
    k = (xkv @ wk).reshape(N, Tk, H, dk).transpose(0, 2, 1, 3)
    v = (xkv @ wv).reshape(N, Tk, H, dk).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    if causal:
        s = np.where(np.tril(np.ones((Tq, Tk), dtype=bool)), s, -np.inf)
    o = softmax(s) @ v
    return o.transpose(0, 2, 1, 3).reshape(N, Tq, d) @ wo


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    H = num_heads
    x = src_emb[src_ids] + enc_pos_embed
    for b in enc_blocks:
        x = ln(x + mha(x, x, b[0], b[1], b[2], b[3], H, False))
        x = ln(x + gelu(x @ b[4]) @ b[5])
    y = tgt_emb[tgt_ids] + dec_pos_embed
    for b in dec_blocks:
        y = ln(y + mha(y, y, b[4], b[5], b[6], b[7], H, True))
        y = ln(y + mha(y, x, b[0], b[1], b[2], b[3], H, False))
        y = ln(y + gelu(y @ b[8]) @ b[9])
    return (y @ w_head).reshape(-1)
