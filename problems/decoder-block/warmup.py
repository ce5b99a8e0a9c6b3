"""Judge-owned warm-up, run in each prepared sandbox before a job arrives.

For PyTorch solutions it runs, on random data of every distinct input shape of the tests, the
operations a solution typically uses (projections, head splits, softmax, attention, LayerNorm),
so the kernels are initialised before the clock starts. For JAX solutions it compiles, at the
same shapes, the jax.numpy operations an eager (un-jitted) solution is likely to call: eager JAX
compiles every operation on first use, several seconds for a whole block. A solution under
`jax.jit` compiles its own code anyway (reported apart). It holds no reference and no test data
(`cases` carries only shapes and sizes) and computes nothing that solves the problem.
"""

import numpy as np


def warmup(cases, preload):
    if "jax.numpy" in preload:  # JAX without jax.jit: every operation compiles on first use
        _jax_eager(cases)
    if "torch" not in preload:
        return
    import torch
    import torch.nn.functional as F

    for i, case in enumerate(cases):
        rng = np.random.default_rng(i)
        b, t, d = case["tgt"]["shape"]
        s = case["memory"]["shape"][1]
        heads = case["num_heads"]
        tgt = torch.from_numpy(rng.standard_normal((b, t, d)).astype(np.float32))
        mem = torch.from_numpy(rng.standard_normal((b, s, d)).astype(np.float32))
        w = torch.from_numpy(rng.standard_normal((d, d)).astype(np.float32))
        q = (tgt @ w).view(b, t, heads, d // heads).transpose(1, 2)
        k = (mem @ w).view(b, s, heads, d // heads).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-2, -1) / (d // heads) ** 0.5, dim=-1)
        out = (p @ k).transpose(1, 2).reshape(b, t, d)
        F.layer_norm(F.relu(out), (d,)).reshape(-1).numpy()
        F.scaled_dot_product_attention(q, k, k).numpy()


def _jax_eager(cases):
    """Eager jax.numpy at every distinct test shape, so that a solution written without
    `jax.jit` finds the operations it is likely to use compiled: projections with their
    biases, heads split and merged in the usual layouts, scores by matmul or einsum, causal
    and padding masks, softmax by hand or by `jax.nn`, LayerNorm, ReLU. Building blocks on
    random data, never a whole solution."""
    import jax
    import jax.numpy as jnp

    seen = set()
    for i, case in enumerate(cases):
        b, t, d = case["tgt"]["shape"]
        s = case["memory"]["shape"][1]
        h = case["num_heads"]
        f = case["params"]["ff_w1"]["shape"][1]
        if (b, t, s, d, h, f) in seen:
            continue
        seen.add((b, t, s, d, h, f))
        rng = np.random.default_rng(i)

        def rand(*shape, rng=rng):
            return jnp.asarray(rng.standard_normal(shape).astype(np.float32))

        for n, din, dout in ((t, d, d), (s, d, d), (t, d, f), (t, f, d)):
            x, w, bias = rand(b, n, din), rand(din, dout), rand(dout)
            y = x @ w + bias
            jnp.dot(x, w) + bias
            jnp.einsum("btd,de->bte", x, w) + bias
            jnp.maximum(y, 0), jax.nn.relu(y)
        # Solutions build a padding mask even when there is none (all True): one path.
        _attention(jnp, jax, rand, b, t, t, d, h, causal=jnp.tril(jnp.ones((t, t), bool)))
        _attention(jnp, jax, rand, b, t, s, d, h, pad=jnp.asarray(rng.random((b, s)) < 0.5))
        for n in {t, s}:
            _layer_norm(jnp, jax, rand(b, n, d), rand(d), rand(d))
        rand(b, t, d).ravel()


def _attention(jnp, jax, rand, b, tq, tk, d, h, causal=None, pad=None):
    """`causal`: a (tq, tk) mask; `pad`: a (b, tk) mask of the keys to attend."""
    dk = d // h
    q3, k3 = rand(b, tq, d), rand(b, tk, d)
    # All heads at once: (b, h, t, dk) by reshape and transpose, or einsum on (b, t, h, dk).
    q4, k4 = q3.reshape(b, tq, h, dk), k3.reshape(b, tk, h, dk)
    q, k = q4.transpose(0, 2, 1, 3), k4.transpose(0, 2, 1, 3)
    q4.swapaxes(1, 2), k4.swapaxes(1, 2), k3.reshape(b, tk, h, dk).transpose(0, 2, 3, 1)
    scores = [q @ k.swapaxes(-1, -2), q @ k.transpose(0, 1, 3, 2),
              jnp.einsum("bhqd,bhkd->bhqk", q, k), jnp.einsum("bqhd,bkhd->bhqk", q4, k4)]
    mask = causal if pad is None else pad[:, None, None, :]
    o = _weigh(jnp, jax, scores[0], dk, mask, k)
    jnp.einsum("bhqk,bkhd->bqhd", _weigh(jnp, jax, scores[3], dk, mask, None), k4).reshape(
        b, tq, d)
    o.transpose(0, 2, 1, 3).reshape(b, tq, d), o.swapaxes(1, 2).reshape(b, tq, d)
    # One head at a time: (b, t, dk) column slices, the heads concatenated back.
    qh, kh = q3[..., :dk], k3[..., :dk]
    q3[:, :, dk:], q4[:, :, 0], q[:, 0]
    scores = [qh @ kh.swapaxes(-1, -2), qh @ kh.transpose(0, 2, 1),
              jnp.einsum("bqd,bkd->bqk", qh, kh)]
    mask = causal if pad is None else pad[:, None, :]
    o = _weigh(jnp, jax, scores[0], dk, mask, kh)
    jnp.concatenate([o] * h, axis=-1), jnp.hstack([o[0]] * h)


def _weigh(jnp, jax, scores, dk, mask, v):
    """Scale, mask, softmax (by hand and by jax.nn), then the values' weighted sum."""
    sc = scores / np.sqrt(dk)
    scores * (1.0 / np.sqrt(dk)), scores / jnp.sqrt(dk), scores / dk ** 0.5
    if mask is not None:
        for fill in (-1e9, jnp.finfo(jnp.float32).min):
            jnp.where(mask, sc, fill)
        sc = jnp.where(mask, sc, -jnp.inf)
        sc + jnp.where(mask, 0.0, -1e9), sc + (1.0 - mask) * -1e9, ~mask
    e = jnp.exp(sc - sc.max(-1, keepdims=True))
    jnp.exp(sc - jnp.max(sc, axis=-1, keepdims=True))
    probs = e / e.sum(-1, keepdims=True)
    e / jnp.sum(e, axis=-1, keepdims=True), jax.nn.softmax(sc, axis=-1)
    if v is None:
        return probs
    jnp.matmul(probs, v)
    return probs @ v


def _layer_norm(jnp, jax, z, g, beta):
    mu = z.mean(-1, keepdims=True)
    jnp.mean(z, axis=-1, keepdims=True)
    zc = z - mu
    for var in ((zc * zc).mean(-1, keepdims=True), jnp.var(z, axis=-1, keepdims=True),
                (zc ** 2).mean(-1, keepdims=True)):
        y = zc / jnp.sqrt(var + 1e-5)
        zc * jax.lax.rsqrt(var + 1e-5)
        g * y + beta
