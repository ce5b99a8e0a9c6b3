"""Test-input generator for `decoder-block-preln`.

Parameters (from problem.toml):
    T_q, T_kv  decoder (query) length and encoder (key/value) length
    D          model width (D % H == 0)
    H          number of attention heads
    d_ff       hidden width of the feed-forward layer
    scale      multiplier applied to the standard-normal x_q (default 1.0)
    kv_scale   multiplier applied to the standard-normal x_kv (default: scale)
    init_seed  seed handed to the submission for the parameter draw (default: the test seed)
"""

import numpy as np


def generate(seed: int, **params) -> dict[str, object]:
    T_q = int(params["T_q"])
    T_kv = int(params["T_kv"])
    D = int(params["D"])
    H = int(params["H"])
    d_ff = int(params["d_ff"])
    scale = float(params.get("scale", 1.0))
    kv_scale = float(params.get("kv_scale", scale))
    init_seed = int(params.get("init_seed", seed))
    if T_q < 1 or T_kv < 1 or D < 1 or H < 1 or d_ff < 1:
        raise ValueError("T_q, T_kv, D, H and d_ff must be positive")
    if D % H != 0:
        raise ValueError(f"D={D} is not divisible by H={H}")

    rng = np.random.default_rng(seed)
    x_q = rng.standard_normal((T_q, D)).astype(np.float32) * np.float32(scale)
    x_kv = rng.standard_normal((T_kv, D)).astype(np.float32) * np.float32(kv_scale)
    return {
        "seed": init_seed,
        "x_q": np.ascontiguousarray(x_q, dtype=np.float32),
        "x_kv": np.ascontiguousarray(x_kv, dtype=np.float32),
        "num_heads": H,
        "d_ff": d_ff,
    }


def output_shape(args: dict[str, object]) -> tuple[int, ...]:
    T_q, D = args["x_q"].shape
    return (int(T_q), int(D))
