# interleaved head split: head h takes features h, h+H, h+2H, ... instead of a contiguous block
import jax
import jax.numpy as jnp


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _gelu(t):
    return 0.5 * t * (1 + jnp.tanh(jnp.sqrt(2 / jnp.pi) * (t + 0.044715 * t**3)))


def _mha(xq, xkv, w, H, causal):
    N, Tq, d = xq.shape
    Tk = xkv.shape[1]
    q = (xq @ w[0]).reshape(N, Tq, d // H, H)
    k = (xkv @ w[1]).reshape(N, Tk, d // H, H)
    v = (xkv @ w[2]).reshape(N, Tk, d // H, H)
    s = jnp.einsum("nqch,nkch->nhqk", q, k) / jnp.sqrt(d // H)
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((Tq, Tk), bool)), s, -jnp.inf)
    o = jnp.einsum("nhqk,nkch->nqch", jax.nn.softmax(s, -1), v)
    return o.reshape(N, Tq, d) @ w[3]


@jax.jit
def _encode(x, enc, heads_marker):
    H = heads_marker.shape[0]

    def step(x, w):
        x = _ln(x + _mha(x, x, w, H, False))
        return _ln(x + _gelu(x @ w[4]) @ w[5]), None

    return jax.lax.scan(step, x, enc)[0]


@jax.jit
def _decode(y, x, dec, heads_marker):
    H = heads_marker.shape[0]

    def step(y, w):
        y = _ln(y + _mha(y, y, w[0:4], H, True))
        y = _ln(y + _mha(y, x, w[4:8], H, False))
        return _ln(y + _gelu(y @ w[8]) @ w[9]), None

    return jax.lax.scan(step, y, dec)[0]


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    marker = jnp.zeros((num_heads,))
    x = _encode(jnp.asarray(src_emb)[src_ids] + enc_pos_embed, enc_blocks, marker)
    y = _decode(jnp.asarray(tgt_emb)[tgt_ids] + dec_pos_embed, x, dec_blocks, marker)
    return y @ w_head
