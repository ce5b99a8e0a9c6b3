import math

import torch
import torch.nn.functional as F


def _mha(xq, xkv, wq, wk, wv, wo, heads, causal):
    n, tq, d = xq.shape
    tk = xkv.shape[1]

    def split(t, length):
        return t.reshape(n, length, heads, d // heads).permute(0, 2, 1, 3)

    q, k, v = split(xq @ wq, tq), split(xkv @ wk, tk), split(xkv @ wv, tk)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=1.0 / math.sqrt(d // heads))
    return o.permute(0, 2, 1, 3).reshape(n, tq, d) @ wo


def _post_ln(x, delta):
    z = x + delta
    return F.layer_norm(z, z.shape[-1:], eps=1e-5)


def _ffn(x, w1, w2):
    h = x @ w1
    return (0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h.pow(3))))) @ w2


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    t = torch.from_numpy
    x = F.embedding(t(src_ids).long(), t(src_emb)) + t(enc_pos_embed)
    for blk in t(enc_blocks):
        x = _post_ln(x, _mha(x, x, blk[0], blk[1], blk[2], blk[3], num_heads, False))
        x = _post_ln(x, _ffn(x, blk[4], blk[5]))
    y = F.embedding(t(tgt_ids).long(), t(tgt_emb)) + t(dec_pos_embed)
    for blk in t(dec_blocks)[:, :10]:
        y = _post_ln(y, _mha(y, y, blk[0], blk[1], blk[2], blk[3], num_heads, True))
        y = _post_ln(y, _mha(y, x, blk[4], blk[5], blk[6], blk[7], num_heads, False))
        y = _post_ln(y, _ffn(y, blk[8], blk[9]))
    return (y @ t(w_head)).flatten().tolist()
