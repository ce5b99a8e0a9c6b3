# encoder-decoder in eager JAX (no jit): one head at a time, jax.nn.softmax and jax.nn.gelu
import jax
import jax.numpy as jnp


def norm(x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)


def attention(query_in, key_in, wq, wk, wv, wo, num_heads, causal):
    d_k = query_in.shape[-1] // num_heads
    q, k, v = jnp.dot(query_in, wq), jnp.dot(key_in, wk), jnp.dot(key_in, wv)
    heads = []
    for i in range(num_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        scores = jnp.matmul(q[..., cols], jnp.swapaxes(k[..., cols], -1, -2)) / jnp.sqrt(d_k)
        if causal:
            n = scores.shape[-1]
            scores = jnp.where(jnp.tril(jnp.ones((n, n), dtype=bool)), scores, -jnp.inf)
        heads.append(jnp.matmul(jax.nn.softmax(scores, axis=-1), v[..., cols]))
    return jnp.dot(jnp.concatenate(heads, axis=-1), wo)


def transformer_forward(src_ids, tgt_ids, src_emb, tgt_emb, enc_pos_embed, dec_pos_embed,
                        enc_blocks, dec_blocks, w_head, num_heads):
    x = jnp.take(jnp.asarray(src_emb), jnp.asarray(src_ids), axis=0) + enc_pos_embed
    for b in range(enc_blocks.shape[0]):
        w = jnp.asarray(enc_blocks[b])
        x = norm(x + attention(x, x, w[0], w[1], w[2], w[3], num_heads, False))
        x = norm(x + jnp.dot(jax.nn.gelu(jnp.dot(x, w[4]), approximate=True), w[5]))
    y = jnp.take(jnp.asarray(tgt_emb), jnp.asarray(tgt_ids), axis=0) + dec_pos_embed
    for b in range(dec_blocks.shape[0]):
        w = jnp.asarray(dec_blocks[b])
        y = norm(y + attention(y, y, w[0], w[1], w[2], w[3], num_heads, True))
        y = norm(y + attention(y, x, w[4], w[5], w[6], w[7], num_heads, False))
        y = norm(y + jnp.dot(jax.nn.gelu(jnp.dot(y, w[8]), approximate=True), w[9]))
    return jnp.dot(y, jnp.asarray(w_head)).reshape(-1)
