# Extra LayerNorm on the block's output (the final norm of a Pre-LN stack belongs after the last block, not in it)
import jax
import jax.numpy as jnp
import flax.linen as nn


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h)
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        x = x + nn.Dense(x.shape[-1])(h)
        return nn.LayerNorm()(x)


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    return m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
