# Dense(D) constructed before Dense(d_ff): nn.Dense(D)(relu(nn.Dense(d_ff)(h))) names them in the wrong order
import jax
import jax.numpy as jnp
import flax.linen as nn


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(nn.LayerNorm()(x))
        x = x + nn.Dense(x.shape[-1])(nn.relu(nn.Dense(self.d_ff)(nn.LayerNorm()(x))))
        return x


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    m = EncoderBlock(num_heads, d_ff)
    return m.apply(m.init(jax.random.PRNGKey(seed), x), x).reshape(-1)
