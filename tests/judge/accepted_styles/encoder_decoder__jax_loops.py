# Accepted: JAX without jit, Python loops over the blocks, heads through vmap.
import jax
import jax.numpy as jnp


def norm(z):
    z = z - z.mean(-1, keepdims=True)
    return z / jnp.sqrt((z * z).mean(-1, keepdims=True) + 1e-5)


def one_head(q, k, v, causal):
    s = q @ k.T / jnp.sqrt(q.shape[-1])
    if causal:
        s = jnp.where(jnp.arange(q.shape[0])[:, None] >= jnp.arange(k.shape[0]), s, -jnp.inf)
    return jax.nn.softmax(s) @ v


def attention(xq, xkv, w, heads, causal):
    split = lambda t: t.reshape(t.shape[0], heads, -1).transpose(1, 0, 2)  # noqa: E731
    def single(a, b):
        out = jax.vmap(one_head, in_axes=(0, 0, 0, None))(
            split(a @ w[0]), split(b @ w[1]), split(b @ w[2]), causal)
        return out.transpose(1, 0, 2).reshape(a.shape[0], -1) @ w[3]
    return jax.vmap(single)(xq, xkv)


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    gelu = lambda t: jax.nn.gelu(t, approximate=True)  # noqa: E731
    x = jnp.asarray(src_emb)[src_ids] + enc_pos_embed
    for w in enc_blocks:
        x = norm(x + attention(x, x, w, num_heads, False))
        x = norm(x + gelu(x @ w[4]) @ w[5])
    y = jnp.asarray(tgt_emb)[tgt_ids] + dec_pos_embed
    for w in dec_blocks:
        y = norm(y + attention(y, y, w, num_heads, True))
        y = norm(y + attention(y, x, w[4:8], num_heads, False))
        y = norm(y + gelu(y @ w[8]) @ w[9])
    return (y @ w_head).reshape(-1)
