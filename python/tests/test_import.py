"""normcore.import_model: an XLA HLO text model -> the plan; its layer runs on ref:."""

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
