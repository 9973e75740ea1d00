"""normcore.fold from arrays, from a bn dict and from bn.json: the same image as `normcore fold`."""

import json
import subprocess

import numpy as np
import pytest

import normcore
from conftest import random_bn


def test_fold_dict_arrays_and_cli_agree(cli, manifest, rng, tmp_path):
    bn = random_bn(rng, 24)
    f_dict = normcore.fold(bn, spec=manifest)
    f_arr = normcore.fold(gamma=bn["gamma"], beta=bn["beta"], mean=bn["mean"], var=bn["var"],
                          spec=normcore.ArithSpec.from_config(manifest))
    assert f_dict.params.to_bytes() == f_arr.params.to_bytes()
    path = tmp_path / "bn.json"
    path.write_text(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v)
                                for k, v in bn.items()}))
    subprocess.run([str(cli), "fold", "--params", str(path), "--config", manifest, "-o",
                    str(tmp_path / "p.bin")], check=True, stdout=subprocess.DEVNULL)
    assert (tmp_path / "p.bin").read_bytes() == f_dict.params.to_bytes()
    assert normcore.fold(str(path), spec=manifest).params.to_bytes() == f_dict.params.to_bytes()
    img = normcore.ParamImage.load(str(tmp_path / "p.bin"))
    assert img.channels == 24 and img.shift == f_dict.shift
    assert np.array_equal(img.scale, f_dict.params.scale)
    assert "worst-case error" in f_dict.report


def test_fold_options(manifest, rng):
    bn = random_bn(rng, 8)
    f = normcore.fold(bn, spec=manifest, rounding="floor", shift=6)
    assert f.shift == 6 and f.params.rounding == "floor"
    q = normcore.fold(mean=bn["mean"], var=bn["var"], in_quant=(0.05, 0), out_quant=(0.1, -3),
                      activation="relu", spec=manifest)
    assert q.params.clamp[0] >= -3


def test_fold_errors_name_the_field(manifest):
    with pytest.raises(normcore.Error, match="var"):
        normcore.fold(mean=[0.0, 1.0], var=[1.0, -2.0], eps=0.0, spec=manifest)
    with pytest.raises(normcore.Error, match="gamm"):
        normcore.fold({"gamm": [1.0], "mean": [0.0], "var": [1.0]}, spec=manifest)
    with pytest.raises(normcore.Error, match="in_bits|xw|in-bits"):
        normcore.ArithSpec(in_bits=1)
    with pytest.raises(normcore.Error, match="spec"):
        normcore.fold(mean=[0.0], var=[1.0], spec=42)
