# Accepted: nested one-line calls made safe by explicit names (alias and Dense order both fixed).
import jax
import jax.numpy as jnp
import flax.linen as nn


class Block(nn.Module):
    heads: int
    hidden: int

    @nn.compact
    def __call__(self, x_q, x_kv):
        T, D = x_q.shape
        LN = lambda i: nn.LayerNorm(name=f"LayerNorm_{i}")
        MHA = lambda i: nn.MultiHeadAttention(num_heads=self.heads, name=f"MultiHeadDotProductAttention_{i}")
        x_q = x_q + MHA(0)(LN(0)(x_q), mask=jnp.tril(jnp.ones((T, T), dtype=bool)))
        x_q = x_q + MHA(1)(LN(1)(x_q), LN(2)(x_kv))
        x_q = x_q + nn.Dense(D, name="Dense_1")(nn.relu(nn.Dense(self.hidden, name="Dense_0")(LN(3)(x_q))))
        return x_q


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    block = Block(heads=num_heads, hidden=d_ff)
    q, kv = jnp.asarray(x_q), jnp.asarray(x_kv)
    out = block.apply(block.init(jax.random.PRNGKey(seed), q, kv), q, kv)
    return out.reshape(-1).tolist()
