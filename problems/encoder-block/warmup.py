"""Judge-owned warm-up, run in each prepared sandbox before a job arrives.

For every distinct input shape of the tests it runs the layers a solution uses, on random
data, so their operations are compiled (or loaded from the judge's compilation cache) before
the clock starts. The submission shares the process, so this holds no reference, no test data
(`cases` carries only shapes and sizes) and is deliberately not a solution: the layers are
wired in a different order, without the block's residual structure.
"""

import numpy as np


def warmup(cases, preload):
    if "flax.linen" not in preload:
        return
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Exercise(nn.Module):
        heads: int
        d_ff: int

        @nn.compact
        def __call__(self, x):
            d = x.shape[-1]
            h = nn.Dense(d)(nn.relu(nn.Dense(self.d_ff)(nn.LayerNorm()(x))))
            h = nn.MultiHeadDotProductAttention(num_heads=self.heads)(nn.LayerNorm()(h))
            return h + x

    for i, case in enumerate(cases):
        x_np = np.random.default_rng(i).standard_normal(case["x"]["shape"]).astype(np.float32)
        module = Exercise(case["num_heads"], case["d_ff"])
        # Both ways inputs usually arrive: as the NumPy array itself, or through jnp.asarray.
        # The second way needs no operation of its own beyond the first shape's: once is
        # enough (each pass over a warmed shape costs a solution's full call time).
        for x in (x_np, jnp.asarray(x_np))[: 2 if i == 0 else 1]:
            # init runs the forward pass too: an apply adds no operation of its own.
            y, variables = module.init_with_output(jax.random.PRNGKey(i), x)
            _outputs(y)
        # One apply per shape all the same: it answers Flax's parameter shape checks of this
        # shape once, for the whole sandbox (the runner keeps the answers).
        module.apply(variables, x)


def _outputs(y):
    """The usual ways of flattening a result."""
    import jax.numpy as jnp

    for flat in (y.reshape(-1), y.ravel(), y.flatten(), jnp.reshape(y, (-1,)), jnp.ravel(y)):
        np.asarray(flat)
