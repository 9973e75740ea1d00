"""normcore.import_model: an XLA HLO text model -> the plan; its layer runs on ref:."""

import pathlib
import subprocess

import numpy as np
import pytest

import normcore

pytestmark = pytest.mark.skipif(not normcore.has_import, reason="built without model import")

G, B, M, V = [1.5, -0.5, 2.0], [0.25, -1.0, 3.0], [1.0, -2.0, 0.5], [4.0, 0.25, 1.0]

HLO = """HloModule one_bn

ENTRY %main (x: f32[2,3,4,4]) -> f32[2,3,4,4] {
  %x = f32[2,3,4,4] parameter(0)
  %scale = f32[3] constant({1.5, -0.5, 2.0})
  %offset = f32[3] constant({0.25, -1.0, 3.0})
  %mean = f32[3] constant({1.0, -2.0, 0.5})
  %var = f32[3] constant({4.0, 0.25, 1.0})
  ROOT %bn = f32[2,3,4,4] batch-norm-inference(%x, %scale, %offset, %mean, %var), epsilon=0.001, feature_index=1
}
"""


def test_import_model_plan(cli, manifest, tmp_path):
    model = tmp_path / "m.hlo"
    model.write_text(HLO)
    plan = normcore.import_model(model, spec=manifest, out_dir=tmp_path / "plan")
    assert len(plan.layers) == 1
    layer = plan.layers[0]
    assert layer.channels == 3 and layer.channel_axis == 1 and layer.layout == "nchw"
    assert tuple(layer.shape) == (2, 3, 4, 4) and layer.job == (2, 3, 16)
    assert np.allclose(layer.bn.gamma, G) and np.allclose(layer.bn.var, V)
    # the same parameter image as `normcore import` wrote, and as folding the bn directly
    img = plan.params(0)
    on_disk = (tmp_path / "plan" / f"{layer.name}.params.bin").read_bytes()
    assert img.to_bytes() == on_disk
    direct = normcore.fold(gamma=G, beta=B, mean=M, var=V, eps=1e-3, spec=manifest)
    assert direct.params.to_bytes() == img.to_bytes()
    out = subprocess.run([str(cli), "run", "--device", "ref:" + manifest, "--plan",
                          str(tmp_path / "plan")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    with normcore.Accelerator.open("ref:" + manifest) as acc:
        x = np.random.default_rng(5).integers(-128, 128, size=layer.shape, dtype=np.int8)
        y = acc.run(acc.upload(img), x)
        ref = (x - np.reshape(M, (1, 3, 1, 1))) / np.sqrt(np.reshape(V, (1, 3, 1, 1)) + 1e-3)
        ref = np.clip(ref * np.reshape(G, (1, 3, 1, 1)) + np.reshape(B, (1, 3, 1, 1)), -128, 127)
        assert np.abs(y - ref).max() <= layer.worst_error + 1e-9


def test_import_errors(manifest, tmp_path):
    with pytest.raises(normcore.Error, match="nope.onnx"):
        normcore.import_model(tmp_path / "nope.onnx", spec=manifest)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule bad\nENTRY %main {\n  %x = f32[2] parameter(0)\n"
                   "  ROOT %y = f32[2] add(%x, %nope)\n}\n")
    with pytest.raises(normcore.Error, match="nope"):
        normcore.import_model(bad, spec=manifest)


FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "import" / "fixtures"


def _against_framework(plan, io, manifest, key):
    """Layer 0 of `plan` run on ref: vs the framework's own float output in `io` (LSB)."""
    layer = plan.layers[0]
    x = io[f"{key}/x"].astype(np.int8)
    assert tuple(layer.shape) == x.shape
    with normcore.Accelerator.open("ref:" + manifest) as acc:
        y = acc.run(acc.upload(plan.params(0)), x, channel_axis=layer.channel_axis)
    ref = np.clip(io[f"{key}/y"].astype(np.float64) / OUT_SCALE, -128, 127)
    err = np.abs(y.astype(np.float64) - ref).max()
    assert 0 < err <= layer.worst_error + 1e-3  # float32 framework rounding
    return layer


OUT_SCALE = 0.05


def test_import_model_mlir_tosa(manifest, tmp_path):
    """TOSA MLIR from torch-mlir (parameters embedded as dense_resource blobs), by extension and
    by content: the C++ MLIR front end through the binding."""
    src = FIXTURES / "tosa" / "standalone_bn.mlir"
    io = np.load(FIXTURES / "tosa" / "standalone_bn.io.npz")
    vars_ = np.load(FIXTURES / "tosa" / "standalone_bn.npz")
    q = dict(spec=manifest, in_quant=(float(io["bn/in_scale"]), 0), out_quant=(OUT_SCALE, 0))
    plan = normcore.import_model(src, **q)
    assert plan.format == "mlir" and len(plan.layers) == 1
    layer = _against_framework(plan, io, manifest, "bn")
    assert layer.channels == 5 and layer.channel_axis == 1 and layer.layout == "nchw"
    assert np.allclose(layer.bn.gamma, vars_["bn.weight"])
    assert np.allclose(layer.bn.var, vars_["bn.running_var"])
    assert abs(layer.bn.eps - 1e-3) < 1e-9
    renamed = tmp_path / "model.txt"  # not .mlir: detected by its text
    renamed.write_bytes(src.read_bytes())
    by_content = normcore.import_model(renamed, **q)
    assert by_content.format == "mlir"
    assert by_content.params(0).to_bytes() == plan.params(0).to_bytes()


def test_import_model_mlir_stablehlo_bundle(manifest):
    """StableHLO MLIR from Flax (variables are arguments): parameters from the .npz bundle."""
    d = FIXTURES / "stablehlo"
    io = np.load(d / "standalone_bn.io.npz")
    plan = normcore.import_model(d / "standalone_bn.mlir", spec=manifest,
                                 bundle=d / "standalone_bn.npz",
                                 in_quant=(float(io["BatchNorm_0/in_scale"]), 0),
                                 out_quant=(OUT_SCALE, 0))
    assert plan.format == "mlir" and len(plan.layers) == 1
    layer = _against_framework(plan, io, manifest, "BatchNorm_0")
    assert layer.channels == 5 and layer.layout == "nhwc"
    assert np.allclose(layer.bn.mean, np.load(d / "standalone_bn.npz")
                       ["batch_stats/BatchNorm_0/mean"])


def test_import_model_torch_export_and_relay(manifest):
    """torch.export .pt2 (weights from the archive) and Relay text (parameters from a safetensors
    bundle), picked by extension as `normcore import` picks them (import::load_model), each
    against torch's own float output of the same BN."""
    d = FIXTURES / "torch_export"
    io = np.load(d / "standalone_bn.io.npz")
    vars_ = np.load(d / "standalone_bn.npz")
    q = dict(spec=manifest, in_quant=(float(io["bn/in_scale"]), 0), out_quant=(OUT_SCALE, 0))
    pt2 = normcore.import_model(d / "standalone_bn.pt2", **q)
    assert pt2.format == "torch.export" and len(pt2.layers) == 1
    layer = _against_framework(pt2, io, manifest, "bn")
    assert layer.channels == 5 and layer.channel_axis == 1
    assert np.allclose(layer.bn.var, vars_["bn.running_var"])
    relay = normcore.import_model(FIXTURES / "relay" / "standalone_bn.relay",
                                  bundle=d / "standalone_bn.safetensors", **q)
    assert relay.format == "relay" and len(relay.layers) == 1
    _against_framework(relay, io, manifest, "bn")
    assert relay.params(0).to_bytes() == pt2.params(0).to_bytes()


def test_import_model_mlir_errors(manifest, tmp_path):
    typo = tmp_path / "typo.mlir"
    typo.write_text((FIXTURES / "stablehlo" / "standalone_bn.mlir").read_text()
                    .replace("stablehlo.rsqrt ", "stablehlo.rsqrtt "))
    with pytest.raises(normcore.Error, match=r"typo.mlir:\d+:\d+: unknown stablehlo op"):
        normcore.import_model(typo, spec=manifest)
    with pytest.raises(normcore.Error,
                       match="format: 'caffe' is not onnx, hlo, mlir, torch.export or relay"):
        normcore.import_model(typo, spec=manifest, format="caffe")


def _layers_against_framework(plan, io, manifest, keys):
    """Every layer of `plan` run on ref: vs the framework's float output (LSB); the errors."""
    assert len(plan.layers) == len(keys)
    errs = []
    with normcore.Accelerator.open("ref:" + manifest) as acc:
        for i, (layer, key) in enumerate(zip(plan.layers, keys)):
            x = io[f"{key}/x"].astype(np.int8)
            assert tuple(layer.shape) == x.shape
            y = acc.run(acc.upload(plan.params(i)), x, channel_axis=layer.channel_axis)
            f = io[f"{key}/y"].astype(np.float64)
            if layer.activation == "relu":
                f = np.maximum(f, 0)
            ref = np.clip(f / OUT_SCALE, -128, 127)
            err = np.abs(y.astype(np.float64) - ref).max()
            assert 0 < err <= layer.worst_error + 1e-3, (key, err, layer.worst_error)
            errs.append(err)
    return errs


# (file, bundle, format, the framework's BN keys in graph order, io.npz): every format the CLI
# reads, on the framework-made pre-activation (ResNet v2) and BN-after-concat fixtures.
EVERY_FORMAT = [
    ("onnx/preact_bn.noopt.onnx", None, "onnx", ["bn1", "bn2"], "onnx/preact_bn.io.npz"),
    ("onnx/concat_bn.onnx", None, "onnx", ["bn"], "onnx/concat_bn.io.npz"),
    ("stablehlo/preact_bn.hlo", "stablehlo/preact_bn.npz", "hlo", ["BatchNorm_0", "BatchNorm_1"],
     "stablehlo/preact_bn.io.npz"),
    ("stablehlo/preact_bn.mlir", "stablehlo/preact_bn.msgpack", "mlir",
     ["BatchNorm_0", "BatchNorm_1"], "stablehlo/preact_bn.io.npz"),
    ("tosa/preact_bn.mlir", None, "mlir", ["bn1", "bn2"], "tosa/preact_bn.io.npz"),
    ("torch_export/preact_bn.pt2", None, "torch.export", ["bn1", "bn2"],
     "torch_export/preact_bn.io.npz"),
    ("torch_export/preact_bn.aten.pt2", None, "torch.export", ["bn1", "bn2"],
     "torch_export/preact_bn.io.npz"),
    ("torch_export/preact_bn.pickled.pt2", "torch_export/preact_bn.safetensors", "torch.export",
     ["bn1", "bn2"], "torch_export/preact_bn.io.npz"),
    ("relay/preact_bn.simplified.relay", "torch_export/preact_bn.safetensors", "relay",
     ["bn1", "bn2"], "torch_export/preact_bn.io.npz"),
    ("relay/concat_bn.relay", "torch_export/concat_bn.safetensors", "relay", ["bn"],
     "torch_export/concat_bn.io.npz"),
    ("relay/nhwc_concat_bn.relay", "stablehlo/concat_bn.msgpack", "relay", ["BatchNorm_0"],
     "stablehlo/concat_bn.io.npz"),
]


@pytest.mark.parametrize("src,bundle,fmt,keys,io", EVERY_FORMAT,
                         ids=[e[0] for e in EVERY_FORMAT])
def test_import_model_every_format(manifest, src, bundle, fmt, keys, io):
    io = np.load(FIXTURES / io)
    kw = dict(spec=manifest, in_quant=(float(io[f"{keys[0]}/in_scale"]), 0),
              out_quant=(OUT_SCALE, 0))
    if bundle:
        kw["bundle"] = FIXTURES / bundle
    plan = normcore.import_model(FIXTURES / src, **kw)
    assert plan.format == fmt
    _layers_against_framework(plan, io, manifest, keys)
    nhwc = src.startswith(("stablehlo/", "relay/nhwc"))
    assert all(layer.layout == ("nhwc" if nhwc else "nchw") for layer in plan.layers)


def test_import_model_pickled_weights_need_a_bundle(manifest):
    """torch.export.save pickles tensor-subclass weights (use_pickle): not read, so the import
    names them until a bundle gives them (test_import_model_every_format fills them)."""
    with pytest.raises(normcore.Error, match=r"'bn1\.running_mean' \(pickled by torch"):
        normcore.import_model(FIXTURES / "torch_export" / "preact_bn.pickled.pt2", spec=manifest)
