# Pre-LN (x + sublayer(LN(x)), plus a final LN) instead of Post-LN (LN(x + sublayer(x)))
from functools import partial

import jax
import jax.numpy as jnp


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _mha(xq, xkv, w, H, causal):
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ w[0]).reshape(N, Tq, H, -1)
    k = (xkv @ w[1]).reshape(N, Tk, H, -1)
    v = (xkv @ w[2]).reshape(N, Tk, H, -1)
    s = jnp.einsum("nqhc,nkhc->nhqk", q, k) / jnp.sqrt(q.shape[-1])
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((Tq, Tk), bool)), s, -jnp.inf)
    o = jnp.einsum("nhqk,nkhc->nqhc", jax.nn.softmax(s, -1), v)
    return o.reshape(N, Tq, d) @ w[3]


@partial(jax.jit, static_argnums=9)
def _run(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos, dec_pos, enc, dec, w_head, H):
    def enc_step(x, w):
        h = _ln(x)
        x = x + _mha(h, h, w, H, False)
        return x + jax.nn.gelu(_ln(x) @ w[4], approximate=True) @ w[5], None

    x, _ = jax.lax.scan(enc_step, src_emb[src_ids] + enc_pos, enc)
    x = _ln(x)

    def dec_step(y, w):
        h = _ln(y)
        y = y + _mha(h, h, w[0:4], H, True)
        y = y + _mha(_ln(y), x, w[4:8], H, False)
        return y + jax.nn.gelu(_ln(y) @ w[8], approximate=True) @ w[9], None

    y, _ = jax.lax.scan(dec_step, tgt_emb[tgt_ids] + dec_pos, dec)
    return (_ln(y) @ w_head).ravel()


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    return _run(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                enc_blocks, dec_blocks, w_head, num_heads)
