from functools import partial

import jax
import jax.numpy as jnp


def _ln(x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(jnp.mean((x - mu) ** 2, -1, keepdims=True) + 1e-5)


def _mha(xq, xkv, w, H, causal):
    wq, wk, wv, wo = w
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ wq).reshape(N, Tq, H, d // H)
    k = (xkv @ wk).reshape(N, Tk, H, d // H)
    v = (xkv @ wv).reshape(N, Tk, H, d // H)
    s = jnp.einsum("nqhc,nkhc->nhqk", q, k) / jnp.sqrt(d // H).astype(xq.dtype)
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((Tq, Tk), dtype=bool)), s, -jnp.inf)
    a = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("nhqk,nkhc->nqhc", a, v).reshape(N, Tq, d) @ wo


def _ffn(x, w1, w2):
    return jax.nn.gelu(x @ w1, approximate=True) @ w2


@partial(jax.jit, static_argnames="H")
def _forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos, dec_pos, enc, dec, w_head, H):
    # lax.scan traces one block and loops over the stacked weights, so compile time does
    # not grow with the number of blocks
    def enc_step(x, w):
        x = _ln(x + _mha(x, x, w[:4], H, False))
        return _ln(x + _ffn(x, w[4], w[5])), None

    x, _ = jax.lax.scan(enc_step, src_emb[src_ids] + enc_pos, enc)

    def dec_step(y, w):
        y = _ln(y + _mha(y, y, w[0:4], H, True))
        y = _ln(y + _mha(y, x, w[4:8], H, False))
        return _ln(y + _ffn(y, w[8], w[9])), None

    y, _ = jax.lax.scan(dec_step, tgt_emb[tgt_ids] + dec_pos, dec[:, :10])
    return (y @ w_head).reshape(-1)


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    return _forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                    enc_blocks, dec_blocks, w_head, H=int(num_heads))
