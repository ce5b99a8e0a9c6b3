# Residuals add the normalised state back: x_q = LN(x_q) + f(LN(x_q)) instead of x_q + f(LN(x_q))
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
        x_q = nn.LayerNorm()(x_q)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(x_q, mask=mask)
        x_q = nn.LayerNorm()(x_q)
        kv = nn.LayerNorm()(x_kv)
        x_q = x_q + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(x_q, kv)
        x_q = nn.LayerNorm()(x_q)
        h = nn.relu(nn.Dense(self.d_ff)(x_q))
        return x_q + nn.Dense(D)(h)


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    x_q, x_kv = jnp.asarray(x_q), jnp.asarray(x_kv)
    m = DecoderBlock(num_heads, d_ff)
    variables = m.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return m.apply(variables, x_q, x_kv).reshape(-1)
