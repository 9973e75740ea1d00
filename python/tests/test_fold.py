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


def test_offset_bits_and_the_deprecated_shift_bits(manifest):
    # b's width is offset_bits ("shift" is R only); shift_bits still works, with a warning.
    s = normcore.ArithSpec(offset_bits=24)
    assert s.offset_bits == 24 and "offset_bits=24" in repr(s)
    with pytest.warns(DeprecationWarning, match="offset_bits"):
        assert s.shift_bits == 24
    spec = {"in_bits": 8, "scale_bits": 16, "shift_bits": 24, "out_bits": 8}
    with pytest.warns(DeprecationWarning, match="use 'offset_bits'"):
        f = normcore.fold(mean=[0.0], var=[1.0], spec=spec)
    assert f.params.spec.offset_bits == 24
    with pytest.raises(normcore.Error, match="give only 'offset_bits'"):
        normcore.fold(mean=[0.0], var=[1.0], spec={"shift_bits": 24, "offset_bits": 24})
    assert normcore.ArithSpec.from_config(manifest).offset_bits == 32
