import flax.linen as nn
import jax
import jax.numpy as jnp


def decoder_block_forward(seed, x_q, x_kv, num_heads, d_ff):
    """Pre-LN Transformer decoder block.

    seed: int, the key for module.init is jax.random.PRNGKey(seed)
    x_q: (T_q, D) float32 array, the decoder-side sequence
    x_kv: (T_kv, D) float32 array, the encoder-side sequence (keys and values of cross-attention)
    num_heads: int, D % num_heads == 0
    d_ff: int, hidden width of the feed-forward layer
    returns: the (T_q, D) output, flattened to (T_q*D,)
    """
    # TODO: define an nn.Module with @nn.compact, init it on (x_q, x_kv), apply it.
    raise NotImplementedError("decoder_block_forward: define the module, init and apply it")
