"""normcore against torch, from a committed fixture (scripts/fixtures/torch_bn.py made it with
torch; these tests need only numpy): the Python run of the folded layer on ref: is within the
fold's reported bound of torch's float batch norm, and within that bound plus half an output
LSB of torch's quantized::batch_norm2d (which rounds the same float value once)."""

import json
import pathlib

import numpy as np
import pytest

import normcore

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "torch_bn"
# torch computed y_float in float32: its own rounding, in output LSBs, is below this.
TORCH_F32 = 1e-3


@pytest.fixture(scope="module")
def fixture():
    bn = json.loads((FIX / "bn.json").read_text())
    return bn, np.load(FIX / "x_q.npy"), np.load(FIX / "y_float.npy"), np.load(FIX / "y_qtorch.npy")


@pytest.fixture(scope="module")
def result(manifest, fixture):
    bn, xq, _, _ = fixture
    with normcore.Accelerator.open("ref:" + manifest) as acc:
        f = normcore.fold(bn, spec=acc)
        return f, acc.run(acc.upload(f), xq)


def ideal_lsb(bn, y_float):
    """torch's float output in output LSBs, clamped to int8 (what the fold approximates)."""
    o = bn["output"]
    return np.clip(y_float.astype(np.float64) / o["scale"] + o["zero_point"], -128, 127)


def test_fixture_is_what_the_script_writes(fixture):
    bn, xq, yf, yt = fixture
    meta = json.loads((FIX / "meta.json").read_text())
    assert meta["torch"].startswith("1.13")
    assert xq.dtype == np.int8 and xq.shape == (2, 8, 5, 7)
    assert yf.dtype == np.float32 and yt.dtype == np.int8 and yf.shape == yt.shape == xq.shape
    assert len(bn["gamma"]) == 8 and min(bn["gamma"]) < 0  # a negative scale is in it


def test_run_within_the_fold_bound_of_torch_float_bn(fixture, result):
    bn, _, yf, _ = fixture
    f, y = result
    assert y.dtype == np.int8 and y.shape == yf.shape
    err = np.abs(y.astype(np.float64) - ideal_lsb(bn, yf))
    assert err.max() <= f.worst_error + TORCH_F32, (err.max(), f.worst_error)
    assert f.worst_error < 1.0  # a useful bound, not a vacuous one


def test_run_close_to_torch_quantized_batch_norm(fixture, result):
    _, _, _, yt = fixture
    f, y = result
    diff = np.abs(y.astype(np.int64) - yt.astype(np.int64))
    assert diff.max() <= np.floor(f.worst_error + 0.5 + TORCH_F32)
    # Both round the same real value: they agree on nearly every element.
    assert np.mean(diff == 0) >= 0.9, np.mean(diff == 0)
