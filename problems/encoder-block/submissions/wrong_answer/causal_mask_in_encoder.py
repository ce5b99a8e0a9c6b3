# Causal mask in the encoder: self-attention must be bidirectional (no mask)
import jax
import jax.numpy as jnp
import flax.linen as nn


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        T = x.shape[0]
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(
            h, mask=jnp.tril(jnp.ones((T, T)))
        )
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        h = nn.Dense(x.shape[-1])(h)
        return x + h


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    return m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
