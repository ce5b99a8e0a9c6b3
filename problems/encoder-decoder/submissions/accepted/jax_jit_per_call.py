# Accepted: the whole model under a new jax.jit on every call, its blocks unrolled by Python
# loops inside the trace: every test compiles all of it again (the compile budget is set
# from this one).
import jax
import jax.numpy as jnp


def _ln(x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def _gelu(t):
    return 0.5 * t * (1 + jnp.tanh(jnp.sqrt(2 / jnp.pi) * (t + 0.044715 * t ** 3)))


def _mha(xq, xkv, wq, wk, wv, wo, h, causal):
    n, tq, d = xq.shape
    tk = xkv.shape[1]
    dk = d // h
    q = (xq @ wq).reshape(n, tq, h, dk).transpose(0, 2, 1, 3)
    k = (xkv @ wk).reshape(n, tk, h, dk).transpose(0, 2, 1, 3)
    v = (xkv @ wv).reshape(n, tk, h, dk).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(dk)
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((tq, tk), dtype=bool)), s, -jnp.inf)
    a = jax.nn.softmax(s, axis=-1)
    return (a @ v).transpose(0, 2, 1, 3).reshape(n, tq, d) @ wo


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    def forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos, dec_pos, enc, dec, w_head):
        x = src_emb[src_ids] + enc_pos
        for e in range(enc.shape[0]):
            w = enc[e]
            x = _ln(x + _mha(x, x, w[0], w[1], w[2], w[3], num_heads, False))
            x = _ln(x + _gelu(x @ w[4]) @ w[5])
        y = tgt_emb[tgt_ids] + dec_pos
        for layer in range(dec.shape[0]):
            w = dec[layer]
            y = _ln(y + _mha(y, y, w[0], w[1], w[2], w[3], num_heads, True))
            y = _ln(y + _mha(y, x, w[4], w[5], w[6], w[7], num_heads, False))
            y = _ln(y + _gelu(y @ w[8]) @ w[9])
        return (y @ w_head).reshape(-1)

    return jax.jit(forward)(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                            enc_blocks, dec_blocks, w_head)
