"""Judge-owned warm-up, run in each prepared sandbox before a job arrives.

For every distinct input shape of the tests it runs the layers a solution uses (masked and
cross attention, LayerNorm, Dense), on random data, so their operations are compiled (or loaded
from the judge's compilation cache) before the clock starts. The submission shares the process,
so this holds no reference, no test data (`cases` carries only shapes and sizes) and is
deliberately not a solution: the sub-layers run in another order, without residuals.
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
        def __call__(self, q, kv, mask=None):
            d, t = q.shape[-1], q.shape[0]
            if mask is None:
                mask = jnp.tril(jnp.ones((t, t)))
            elif isinstance(mask, str):  # built inside the module, the other usual way
                mask = nn.make_causal_mask(jnp.ones(t))
            h = nn.Dense(d)(nn.relu(nn.Dense(self.d_ff)(nn.LayerNorm()(q))))
            h = nn.MultiHeadDotProductAttention(num_heads=self.heads)(
                nn.LayerNorm()(h), nn.LayerNorm()(kv))
            h = nn.MultiHeadDotProductAttention(num_heads=self.heads)(
                nn.LayerNorm()(h), mask=mask)
            return h + q

    for i, case in enumerate(cases):
        rng = np.random.default_rng(i)
        q_np = rng.standard_normal(case["x_q"]["shape"]).astype(np.float32)
        kv_np = rng.standard_normal(case["x_kv"]["shape"]).astype(np.float32)
        t = q_np.shape[0]
        module = Exercise(case["num_heads"], case["d_ff"])
        # Both ways inputs usually arrive: as the NumPy arrays, or through jnp.asarray.
        # The second way needs no operation of its own beyond the first shape's: once is
        # enough (each pass over a warmed shape costs a solution's full call time).
        ways = ((q_np, kv_np), (jnp.asarray(q_np), jnp.asarray(kv_np)))
        for q, kv in ways[: 2 if i == 0 else 1]:
            # init runs the forward pass too: a separate apply would add no operation.
            y, variables = module.init_with_output(jax.random.PRNGKey(i), q, kv)
            _outputs(y)
        # The usual ways of writing the causal mask: float or bool tril, Flax's helper,
        # a NumPy comparison.
        for mask in (jnp.tril(jnp.ones((t, t), dtype=bool)), "make_causal_mask",
                     np.arange(t)[:, None] >= np.arange(t)[None, :]):
            _outputs(module.apply(variables, q, kv, mask))


def _outputs(y):
    """The usual ways of flattening a result."""
    import jax.numpy as jnp

    for flat in (y.reshape(-1), y.ravel(), y.flatten(), jnp.reshape(y, (-1,)), jnp.ravel(y)):
        np.asarray(flat)
