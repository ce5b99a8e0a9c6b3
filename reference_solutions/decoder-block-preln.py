"""Reference solution for `decoder-block-preln`: a Pre-LN Transformer decoder block in Flax."""

import flax.linen as nn
import jax
import jax.numpy as jnp


class DecoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        t_q, d_model = x_q.shape[-2], x_q.shape[-1]
        causal = jnp.tril(jnp.ones((t_q, t_q)))  # site: the self-attention
        # Sub-layer 1: causal self-attention (LayerNorm_0, MultiHeadDotProductAttention_0).
        # site: the self-attention
        h = nn.LayerNorm()(x_q)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(h, mask=causal)
        x_q = x_q + h
        # Sub-layer 2: cross-attention, no mask (LayerNorm_1 for the queries,
        # LayerNorm_2 for the keys/values, MultiHeadDotProductAttention_1).
        # site: the cross-attention
        q = nn.LayerNorm()(x_q)
        kv = nn.LayerNorm()(x_kv)
        h = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(q, kv)
        x_q = x_q + h
        # Sub-layer 3: position-wise FFN (LayerNorm_3, Dense_0, Dense_1).
        # site: the feed-forward sub-layer
        h = nn.LayerNorm()(x_q)
        h = nn.Dense(self.d_ff)(h)
        h = nn.relu(h)
        h = nn.Dense(d_model)(h)
        return x_q + h


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    x_q = jnp.asarray(x_q)
    x_kv = jnp.asarray(x_kv)
    block = DecoderBlock(num_heads=num_heads, d_ff=d_ff)
    variables = block.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return block.apply(variables, x_q, x_kv).reshape(-1)
