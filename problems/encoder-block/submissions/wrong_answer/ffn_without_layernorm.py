# No LayerNorm before the feed-forward sub-layer: the FFN reads the raw residual stream
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
        h = nn.Dense(self.d_ff)(x)
        h = nn.relu(h)
        return x + nn.Dense(x.shape[-1])(h)


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    return m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
