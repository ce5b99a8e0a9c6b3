"""Reference solution for `encoder-block`: a Pre-LN Transformer encoder block in Flax."""

import flax.linen as nn
import jax
import jax.numpy as jnp


class EncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        d_model = x.shape[-1]
        # Sub-layer 1: self-attention (LayerNorm_0, MultiHeadDotProductAttention_0).
        # site: the self-attention
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h)
        x = x + h
        # Sub-layer 2: position-wise FFN (LayerNorm_1, Dense_0, Dense_1).
        # site: the feed-forward sub-layer
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        h = nn.Dense(d_model)(h)
        return x + h


def encoder_block_forward(seed, x, num_heads, d_ff):
    x = jnp.asarray(x)
    block = EncoderBlock(num_heads=num_heads, d_ff=d_ff)
    variables = block.init(jax.random.PRNGKey(seed), x)
    return block.apply(variables, x).reshape(-1)
