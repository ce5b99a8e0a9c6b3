"""Test-input generator for `encoder-block`.

Parameters (from problem.toml):
    T, D      sequence length and model width (D % H == 0)
    H         number of attention heads
    d_ff      hidden width of the feed-forward layer
    scale     multiplier applied to the standard-normal input (default 1.0)
    init_seed seed handed to the submission for the parameter draw (default: the test seed)
"""

import numpy as np


def generate(seed: int, **params) -> dict[str, object]:
    T = int(params["T"])
    D = int(params["D"])
    H = int(params["H"])
    d_ff = int(params["d_ff"])
    scale = float(params.get("scale", 1.0))
    init_seed = int(params.get("init_seed", seed))
    if T < 1 or D < 1 or H < 1 or d_ff < 1:
        raise ValueError("T, D, H and d_ff must be positive")
    if D % H != 0:
        raise ValueError(f"D={D} is not divisible by H={H}")

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, D)).astype(np.float32) * np.float32(scale)
    return {
        "seed": init_seed,
        "x": np.ascontiguousarray(x, dtype=np.float32),
        "num_heads": H,
        "d_ff": d_ff,
    }


def output_shape(args: dict[str, object]) -> tuple[int, ...]:
    T, D = args["x"].shape
    return (int(T), int(D))
