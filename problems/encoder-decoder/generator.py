"""Test inputs for `encoder-decoder` (full Post-LN encoder-decoder forward pass).

Parameters:
    N, T_src, T_tgt, d, H, V_src, V_tgt, E, L   sizes (d % H == 0, E >= 1, L >= 1)
    scale       standard deviation of the token and position embeddings   (default 1.0)
    mlp_scale   multiplier on the standard deviation of every w_mlp1      (default 1.0)
                (larger values push the GELU pre-activations out to |t| ~ 2-4)
    head_scale  multiplier on the standard deviation of w_head            (default 1.0)
    garbage     standard deviation of the unused decoder slots 10 and 11  (default 0.0: zeros)

Every weight matrix (attention, FFN, head) is drawn as N(0, 1/d) times its multiplier.
"""

import numpy as np


def generate(seed, N, T_src, T_tgt, d, H, V_src, V_tgt, E, L, scale=1.0, mlp_scale=1.0,
             head_scale=1.0, garbage=0.0):
    if d % H != 0:
        raise ValueError("d must be divisible by H")
    if E < 1 or L < 1:
        raise ValueError("E and L must be at least 1")
    rng = np.random.default_rng(seed)
    w_std = 1.0 / np.sqrt(d)

    src_emb = rng.standard_normal((V_src, d)) * scale
    tgt_emb = rng.standard_normal((V_tgt, d)) * scale
    enc_pos_embed = rng.standard_normal((T_src, d)) * scale
    dec_pos_embed = rng.standard_normal((T_tgt, d)) * scale

    enc_blocks = rng.standard_normal((E, 6, d, d)) * w_std
    enc_blocks[:, 4] *= mlp_scale
    dec_blocks = rng.standard_normal((L, 12, d, d)) * w_std
    dec_blocks[:, 8] *= mlp_scale
    dec_blocks[:, 10:12] = rng.standard_normal((L, 2, d, d)) * garbage

    w_head = rng.standard_normal((d, V_tgt)) * w_std * head_scale
    src_ids = rng.integers(0, V_src, size=(N, T_src))
    tgt_ids = rng.integers(0, V_tgt, size=(N, T_tgt))

    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    return {
        "src_ids": src_ids.astype(np.int32),
        "tgt_ids": tgt_ids.astype(np.int32),
        "src_emb": f32(src_emb),
        "tgt_emb": f32(tgt_emb),
        "enc_pos_embed": f32(enc_pos_embed),
        "dec_pos_embed": f32(dec_pos_embed),
        "enc_blocks": f32(enc_blocks),
        "dec_blocks": f32(dec_blocks),
        "w_head": f32(w_head),
        "num_heads": int(H),
    }


def output_shape(args):
    N, T_tgt = args["tgt_ids"].shape
    return (N, T_tgt, args["w_head"].shape[1])
