# Feed-forward sub-layer without its output projection: (T, D) + (T, d_ff) cannot broadcast
import jax
import jax.numpy as jnp
import flax.linen as nn


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h)
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.relu(nn.Dense(self.d_ff)(h))
        return x + h


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    return m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
