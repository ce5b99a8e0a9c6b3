# Missing residual around the feed-forward sub-layer: x_q = FFN(LN(x_q)) instead of x_q + FFN(LN(x_q))
import jax
import jax.numpy as jnp
import flax.linen as nn


class DecoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        T_q, D = x_q.shape
        mask = jnp.tril(jnp.ones((T_q, T_q)))
        h = nn.LayerNorm()(x_q)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h, mask=mask)
        x_q = x_q + h
        q = nn.LayerNorm()(x_q)
        kv = nn.LayerNorm()(x_kv)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(q, kv)
        x_q = x_q + h
        h = nn.LayerNorm()(x_q)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        h = nn.Dense(D)(h)
        x_q = h
        return x_q


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    x_q, x_kv = jnp.asarray(x_q), jnp.asarray(x_kv)
    m = DecoderBlock(num_heads, d_ff)
    variables = m.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return m.apply(variables, x_q, x_kv).reshape(-1)
