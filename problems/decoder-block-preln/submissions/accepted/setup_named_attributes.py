# Accepted: setup() with attribute names equal to the auto-names; mask built with NumPy.
import numpy as np
import jax
import flax.linen as nn


class Decoder(nn.Module):
    d_model: int
    num_heads: int
    d_ff: int

    def setup(self):
        self.LayerNorm_0 = nn.LayerNorm()
        self.LayerNorm_1 = nn.LayerNorm()
        self.LayerNorm_2 = nn.LayerNorm()
        self.LayerNorm_3 = nn.LayerNorm()
        self.MultiHeadDotProductAttention_0 = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)
        self.MultiHeadDotProductAttention_1 = nn.MultiHeadDotProductAttention(num_heads=self.num_heads)
        self.Dense_0 = nn.Dense(self.d_ff)
        self.Dense_1 = nn.Dense(self.d_model)

    def __call__(self, x_q, x_kv):
        t = x_q.shape[0]
        mask = np.arange(t)[:, None] >= np.arange(t)[None, :]  # query i sees keys j <= i
        x_q = x_q + self.MultiHeadDotProductAttention_0(self.LayerNorm_0(x_q), mask=mask)
        x_q = x_q + self.MultiHeadDotProductAttention_1(
            inputs_q=self.LayerNorm_1(x_q), inputs_kv=self.LayerNorm_2(x_kv)
        )
        x_q = x_q + self.Dense_1(nn.relu(self.Dense_0(self.LayerNorm_3(x_q))))
        return x_q


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    dec = Decoder(d_model=x_q.shape[1], num_heads=num_heads, d_ff=d_ff)
    variables = dec.init(jax.random.PRNGKey(seed), x_q, x_kv)
    return np.asarray(dec.apply(variables, x_q, x_kv)).reshape(-1)
