"""Test inputs for `decoder-block` (Post-LN Transformer decoder layer).

Parameters (all optional except the sizes):
    B, T_tgt, T_src, D, H, d_ff   sizes (D % H == 0)
    scale   standard deviation of `tgt` and `memory`            (default 1.0)
    bias    standard deviation of the linear-layer biases        (default 0.0: all zero)
    ln      standard deviation of the LayerNorm gains around 1
            and of the LayerNorm biases                          (default 0.0: g = 1, b = 0)
    mask    "none"   -> memory_mask is None                      (default)
            "full"   -> an all-True (B, T_src) array
            "pad"    -> each row keeps a random-length prefix (at least one row padded)
            "random" -> random True/False, at least one True per row
    draw    "rng"         -> everything from np.random.default_rng(seed)   (default)
            "walkthrough" -> the classic NumPy walk-through construction:
                             np.random.seed(seed); tgt, memory = randn * scale;
                             then the weights in the order sa_wq sa_wk sa_wv sa_wo
                             ca_wq ca_wk ca_wv ca_wo ff_w1 ff_w2, each
                             randn(in, out) * (1 / sqrt(in)); biases 0, gains 1.

Every weight matrix is drawn as N(0, 1/in) with shape (in, out).
"""

import numpy as np

_W_KEYS = [
    ("sa_wq", "D", "D"), ("sa_wk", "D", "D"), ("sa_wv", "D", "D"), ("sa_wo", "D", "D"),
    ("ca_wq", "D", "D"), ("ca_wk", "D", "D"), ("ca_wv", "D", "D"), ("ca_wo", "D", "D"),
    ("ff_w1", "D", "F"), ("ff_w2", "F", "D"),
]
_B_KEYS = [
    ("sa_bq", "D"), ("sa_bk", "D"), ("sa_bv", "D"), ("sa_bo", "D"),
    ("ca_bq", "D"), ("ca_bk", "D"), ("ca_bv", "D"), ("ca_bo", "D"),
    ("ff_b1", "F"), ("ff_b2", "D"),
]
_LN_KEYS = ["ln1", "ln2", "ln3"]


def _memory_mask(rng, kind, B, T_src):
    if kind == "none":
        return None
    if kind == "full":
        return np.ones((B, T_src), dtype=bool)
    if kind == "pad":
        lengths = rng.integers(1, T_src + 1, size=B)
        if T_src > 1 and np.all(lengths == T_src):
            lengths[0] = int(rng.integers(1, T_src))
        return np.arange(T_src)[None, :] < lengths[:, None]
    if kind == "random":
        m = rng.random((B, T_src)) < 0.6
        for b in range(B):
            if not m[b].any():
                m[b, int(rng.integers(0, T_src))] = True
        return m
    raise ValueError(f"unknown mask kind {kind!r}")


def generate(seed, B, T_tgt, T_src, D, H, d_ff, scale=1.0, bias=0.0, ln=0.0,
             mask="none", draw="rng"):
    if D % H != 0:
        raise ValueError("D must be divisible by H")
    dims = {"D": D, "F": d_ff}
    params = {}

    if draw == "walkthrough":
        legacy = np.random.RandomState(seed)  # same stream as np.random.seed(seed)
        tgt = legacy.randn(B, T_tgt, D) * scale
        memory = legacy.randn(B, T_src, D) * scale
        for name, i, o in _W_KEYS:
            params[name] = legacy.randn(dims[i], dims[o]) * (1.0 / np.sqrt(dims[i]))
        for name, n in _B_KEYS:
            params[name] = np.zeros(dims[n])
        for name in _LN_KEYS:
            params[name + "_g"] = np.ones(D)
            params[name + "_b"] = np.zeros(D)
        memory_mask = None if mask == "none" else _memory_mask(
            np.random.default_rng(seed), mask, B, T_src)
    elif draw == "rng":
        rng = np.random.default_rng(seed)
        tgt = rng.standard_normal((B, T_tgt, D)) * scale
        memory = rng.standard_normal((B, T_src, D)) * scale
        for name, i, o in _W_KEYS:
            params[name] = rng.standard_normal((dims[i], dims[o])) / np.sqrt(dims[i])
        for name, n in _B_KEYS:
            params[name] = rng.standard_normal(dims[n]) * bias
        for name in _LN_KEYS:
            params[name + "_g"] = 1.0 + rng.standard_normal(D) * ln
            params[name + "_b"] = rng.standard_normal(D) * ln
        memory_mask = _memory_mask(rng, mask, B, T_src)
    else:
        raise ValueError(f"unknown draw {draw!r}")

    return {
        "tgt": np.ascontiguousarray(tgt, dtype=np.float32),
        "memory": np.ascontiguousarray(memory, dtype=np.float32),
        "params": {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()},
        "num_heads": int(H),
        "memory_mask": memory_mask,
    }


def output_shape(args):
    B, T_tgt, D = args["tgt"].shape
    return (B, T_tgt, D)
