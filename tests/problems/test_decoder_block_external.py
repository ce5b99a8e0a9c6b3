"""External checks that pin down the `decoder-block` reference.

1. The classic NumPy walk-through (np.random.seed(0), draws in a fixed order, zero biases,
   unit gains, no memory mask) prints known output rows.
2. PyTorch's own nn.TransformerDecoderLayer (Post-LN, batch_first, dropout 0), loaded with the
   same weights, agrees with the reference on generated tests, biases/gains and padded
   memory masks included.
"""

import importlib.util
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "problems" / "decoder-block"
REF_PATH = ROOT / "reference_solutions" / "decoder-block.py"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load(REF_PATH, "decoder_block_reference")
gen = _load(PKG / "generator.py", "decoder_block_generator")
MANIFEST = tomllib.loads((PKG / "problem.toml").read_text())
ATOL = MANIFEST["tolerance"]["atol"]
RTOL = MANIFEST["tolerance"]["rtol"]


def _walkthrough_inputs():
    """Rebuild the walk-through's draws exactly, in the walk-through's order."""
    np.random.seed(0)
    B, T_src, T_tgt, d_model, H, d_ff = 1, 4, 3, 8, 2, 16
    x = np.random.randn(B, T_tgt, d_model) * 0.3
    memory = np.random.randn(B, T_src, d_model) * 0.3

    def init_W(inp, out):
        return np.random.randn(inp, out) * (1.0 / np.sqrt(inp))

    Wq1, Wk1, Wv1, Wo1 = (init_W(d_model, d_model), init_W(d_model, d_model),
                          init_W(d_model, d_model), init_W(d_model, d_model))
    Wq2, Wk2, Wv2, Wo2 = (init_W(d_model, d_model), init_W(d_model, d_model),
                          init_W(d_model, d_model), init_W(d_model, d_model))
    W1, W2 = init_W(d_model, d_ff), init_W(d_ff, d_model)

    zeros, ones = np.zeros(d_model), np.ones(d_model)
    params = {
        "sa_wq": Wq1, "sa_wk": Wk1, "sa_wv": Wv1, "sa_wo": Wo1,
        "ca_wq": Wq2, "ca_wk": Wk2, "ca_wv": Wv2, "ca_wo": Wo2,
        "ff_w1": W1, "ff_w2": W2,
        "sa_bq": zeros, "sa_bk": zeros, "sa_bv": zeros, "sa_bo": zeros,
        "ca_bq": zeros, "ca_bk": zeros, "ca_bv": zeros, "ca_bo": zeros,
        "ff_b1": np.zeros(d_ff), "ff_b2": zeros,
        "ln1_g": ones, "ln1_b": zeros, "ln2_g": ones, "ln2_b": zeros,
        "ln3_g": ones, "ln3_b": zeros,
    }
    return x, memory, params, H


WALKTHROUGH_OUT = np.array([
    [0.4296, -0.8520, 0.3414, 0.8396, 1.0145, -2.0569, 0.8376, -0.5536],
    [-1.8868, 0.3195, -0.1563, 1.5612, 0.8544, -0.5559, 0.5753, -0.7114],
    [1.3633, 0.0677, 0.4245, -0.9663, -2.0952, 0.4925, 0.6174, 0.0961],
])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_walkthrough_rows(dtype):
    x, memory, params, H = _walkthrough_inputs()
    params = {k: v.astype(dtype) for k, v in params.items()}
    out = ref.decoder_block_forward(x.astype(dtype), memory.astype(dtype), params, H, None)
    assert out.dtype == dtype
    out = np.asarray(out).reshape(1, 3, 8)
    # printed to 4 decimals: out[0][0] first, then the other two rows
    np.testing.assert_allclose(out[0][0], WALKTHROUGH_OUT[0], atol=5e-5 + 1e-6, rtol=0)
    np.testing.assert_allclose(out[0][1], WALKTHROUGH_OUT[1], atol=5e-5 + 1e-6, rtol=0)
    np.testing.assert_allclose(out[0][2], WALKTHROUGH_OUT[2], atol=5e-5 + 1e-6, rtol=0)


def test_sample_1_is_the_walkthrough():
    sample = next(t for t in MANIFEST["tests"] if t["name"] == "sample-1")
    args = gen.generate(sample["seed"], **sample["params"])
    x, memory, params, H = _walkthrough_inputs()
    np.testing.assert_array_equal(args["tgt"], x.astype(np.float32))
    np.testing.assert_array_equal(args["memory"], memory.astype(np.float32))
    assert args["num_heads"] == H and args["memory_mask"] is None
    assert set(args["params"]) == set(params)
    for k, v in params.items():
        np.testing.assert_array_equal(args["params"][k], v.astype(np.float32), err_msg=k)


def _torch_layer(params, num_heads):
    D = params["sa_wq"].shape[0]
    d_ff = params["ff_w1"].shape[1]
    layer = nn.TransformerDecoderLayer(d_model=D, nhead=num_heads, dim_feedforward=d_ff,
                                       dropout=0.0, batch_first=True, norm_first=False)
    layer.eval()

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a))

    with torch.no_grad():
        for attn, s in ((layer.self_attn, "sa"), (layer.multihead_attn, "ca")):
            attn.in_proj_weight.copy_(torch.cat(
                [t(params[s + "_wq"].T), t(params[s + "_wk"].T), t(params[s + "_wv"].T)]))
            attn.in_proj_bias.copy_(torch.cat(
                [t(params[s + "_bq"]), t(params[s + "_bk"]), t(params[s + "_bv"])]))
            attn.out_proj.weight.copy_(t(params[s + "_wo"].T))
            attn.out_proj.bias.copy_(t(params[s + "_bo"]))
        layer.linear1.weight.copy_(t(params["ff_w1"].T))
        layer.linear1.bias.copy_(t(params["ff_b1"]))
        layer.linear2.weight.copy_(t(params["ff_w2"].T))
        layer.linear2.bias.copy_(t(params["ff_b2"]))
        for i in (1, 2, 3):
            getattr(layer, f"norm{i}").weight.copy_(t(params[f"ln{i}_g"]))
            getattr(layer, f"norm{i}").bias.copy_(t(params[f"ln{i}_b"]))
    return layer


def _torch_forward(tgt, memory, params, num_heads, memory_mask):
    layer = _torch_layer(params, num_heads)
    T = tgt.shape[1]
    pad = None if memory_mask is None else ~torch.from_numpy(memory_mask)
    with torch.no_grad():
        out = layer(torch.from_numpy(tgt), torch.from_numpy(memory),
                    tgt_mask=nn.Transformer.generate_square_subsequent_mask(T),
                    memory_key_padding_mask=pad)
    return out.numpy().reshape(-1)


def test_torch_matches_walkthrough():
    x, memory, params, H = _walkthrough_inputs()
    params32 = {k: v.astype(np.float32) for k, v in params.items()}
    out = _torch_forward(x.astype(np.float32), memory.astype(np.float32), params32, H, None)
    np.testing.assert_allclose(out.reshape(3, 8), WALKTHROUGH_OUT, atol=5e-5 + 1e-6, rtol=0)


# Generated tests with random non-zero biases and non-unit gains, padded masks included.
TORCH_CASES = [
    dict(seed=101, B=2, T_tgt=5, T_src=7, D=16, H=4, d_ff=32, bias=0.3, ln=0.4, mask="pad"),
    dict(seed=102, B=3, T_tgt=4, T_src=6, D=16, H=2, d_ff=24, bias=0.3, ln=0.4, mask="random"),
    dict(seed=103, B=2, T_tgt=6, T_src=3, D=8, H=2, d_ff=16, bias=0.5, ln=0.5, mask="none"),
    dict(seed=104, B=1, T_tgt=1, T_src=5, D=12, H=3, d_ff=20, bias=0.3, ln=0.3, mask="pad"),
    dict(seed=105, B=4, T_tgt=7, T_src=5, D=24, H=6, d_ff=48, bias=0.2, ln=0.3, mask="pad",
         scale=5.0),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: f"seed{c['seed']}-{c['mask']}")
def test_reference_matches_torch_decoder_layer(case):
    case = dict(case)
    seed = case.pop("seed")
    args = gen.generate(seed, **case)
    if case["mask"] == "pad":
        assert not args["memory_mask"].all()  # some padding really is there
    if args["memory_mask"] is not None:
        assert args["memory_mask"].any(axis=1).all()
    assert any(np.any(args["params"][k] != 0) for k in ("sa_bq", "ca_bo", "ff_b1"))
    assert np.any(args["params"]["ln2_g"] != 1)

    want = ref.decoder_block_forward(**args)
    got = _torch_forward(args["tgt"], args["memory"], args["params"], args["num_heads"],
                         args["memory_mask"])
    assert want.dtype == np.float32 and want.shape == got.shape
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("name", [t["name"] for t in MANIFEST["tests"]])
def test_reference_matches_torch_on_package_tests(name):
    test = next(t for t in MANIFEST["tests"] if t["name"] == name)
    args = gen.generate(test["seed"], **test["params"])
    want = ref.decoder_block_forward(**args)
    got = _torch_forward(args["tgt"], args["memory"], args["params"], args["num_heads"],
                         args["memory_mask"])
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL)
