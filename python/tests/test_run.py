"""Accelerator.run / submit on ref: (and sim:/tlm: when built): against numpy float batch norm
(within the fold's exact error bound) and against the integer contract written in numpy."""

import numpy as np
import pytest

import normcore
from conftest import plugin_manifest, random_bn


def contract_half_even(x, img):
    """The contract in numpy (a test oracle): clamp(round_half_even((x*s[c] + b[c]) / 2^R))."""
    s = img.scale.reshape(1, -1, 1)
    b = img.bias.reshape(1, -1, 1)
    acc = x.astype(np.int64) * s + b
    r = img.shift
    q = acc >> r
    if r > 0:
        rem = acc - (q << r)
        half = np.int64(1) << (r - 1)
        q = q + ((rem > half) | ((rem == half) & (q % 2 == 1)))
    lo, hi = img.clamp
    return np.clip(q, lo, hi)


def float_bn(x, bn, lo, hi):
    """Batch norm in numpy float64, clamped to the output range: what the fold approximates."""
    sh = (1, -1) + (1,) * (x.ndim - 2)
    g, b, m, v = (np.asarray(bn[k]).reshape(sh) for k in ("gamma", "beta", "mean", "var"))
    return np.clip((x - m) / np.sqrt(v + bn["eps"]) * g + b, lo, hi)


@pytest.fixture(scope="module")
def acc(manifest):
    with normcore.Accelerator.open("ref:" + manifest) as a:
        yield a


def layer(acc, rng, c):
    bn = random_bn(rng, c)
    f = normcore.fold(bn, spec=acc)
    return bn, f, acc.upload(f)


def test_run_matches_numpy_float_bn(acc, rng):
    bn, f, p = layer(acc, rng, 16)
    x = rng.integers(-128, 128, size=(2, 16, 9, 11), dtype=np.int8)
    y = acc.run(p, x)
    assert y.dtype == np.int8 and y.shape == x.shape
    err = np.abs(y.astype(np.float64) - float_bn(x.astype(np.float64), bn, -128, 127))
    assert err.max() <= f.worst_error + 1e-9
    assert err.max() > 0  # it is a quantised result, not the float one
    want = contract_half_even(x.reshape(2, 16, -1), f.params).reshape(x.shape)
    assert np.array_equal(y, want)


def test_layouts_and_channel_axis(acc, rng):
    _, f, p = layer(acc, rng, 12)
    x = rng.integers(-128, 128, size=(3, 12, 4, 5), dtype=np.int8)
    y = acc.run(p, x)
    nhwc = acc.run(p, np.ascontiguousarray(x.transpose(0, 2, 3, 1)), layout="nhwc")
    assert np.array_equal(nhwc.transpose(0, 3, 1, 2), y)
    # any N-d shape: channel axis 2 of a 5-d array, a 1-d vector of channels, channels last
    x5 = rng.integers(-128, 128, size=(2, 3, 12, 2, 3), dtype=np.int8)
    y5 = acc.run(p, x5, channel_axis=2)
    assert np.array_equal(y5, acc.run(p, x5.reshape(6, 12, 6)).reshape(x5.shape))
    v = rng.integers(-128, 128, size=12, dtype=np.int8)
    assert np.array_equal(acc.run(p, v), acc.run(p, v.reshape(1, 12)).ravel())
    x3 = rng.integers(-128, 128, size=(7, 5, 12), dtype=np.int8)
    y3 = acc.run(p, x3, channel_axis=-1)
    assert np.array_equal(y3.transpose(2, 0, 1),
                          acc.run(p, np.ascontiguousarray(x3.transpose(2, 0, 1)),
                                  channel_axis=0))
    # a non-contiguous view is made contiguous (one copy), not refused
    assert np.array_equal(acc.run(p, x[:, :, ::2]), acc.run(p, x[:, :, ::2].copy()))


def test_float_in_and_out_with_quantisation(acc, rng):
    c = 8
    bn = random_bn(rng, c)
    bn.pop("quant")
    bn["input"] = {"scale": 0.05, "zero_point": 0}
    bn["output"] = {"scale": 0.1, "zero_point": -3}
    f = normcore.fold(bn, spec=acc)
    p = acc.upload(f)
    x = rng.normal(0, 2, size=(2, c, 30)).astype(np.float32)
    y = acc.run(p, x, in_quant=(0.05, 0), out_quant=(0.1, -3))
    assert y.dtype == np.float32
    xq = np.clip(np.round(x / 0.05), -128, 127) * 0.05  # the input as the device sees it
    ref = float_bn(xq.astype(np.float64), bn, 0.1 * (-128 + 3), 0.1 * (127 + 3))
    assert np.abs(y - ref).max() <= 0.1 * (f.worst_error + 1e-6) + 1e-5
    yi = acc.run(p, x, in_quant=(0.05, 0))
    assert yi.dtype == np.int8
    assert np.allclose(y, 0.1 * (yi.astype(np.float32) + 3))


def test_out_array_is_written_in_place(acc, rng):
    _, _, p = layer(acc, rng, 4)
    x = rng.integers(-128, 128, size=(1, 4, 100), dtype=np.int8)
    out = np.zeros((1, 4, 100), dtype=np.int16)
    y = acc.run(p, x, out=out)
    assert y is out and np.array_equal(out, acc.run(p, x).astype(np.int16))


def test_submit_returns_a_future(acc, rng):
    _, _, p = layer(acc, rng, 16)
    xs = [rng.integers(-128, 128, size=(1, 16, 64), dtype=np.int8) for _ in range(5)]
    futs = [acc.submit(p, x) for x in xs]
    assert all(f.wait(10.0) for f in futs)
    for f, x in zip(futs, xs):
        assert f.done() and f.state == "completed"
        assert np.array_equal(f.result(), acc.run(p, x))
        assert f.stats["elements"] == x.size


def test_zero_copy_buffers(acc, rng):
    _, _, p = layer(acc, rng, 16)
    x = rng.integers(-128, 128, size=(2, 16, 33), dtype=np.int8)
    bi, bo = acc.alloc(x.nbytes), acc.alloc(x.nbytes)
    assert len(bi) == x.nbytes and not memoryview(bi).readonly
    xin = np.frombuffer(bi, dtype=np.int8)
    xin[:] = x.ravel()  # written straight into the device buffer
    assert np.frombuffer(bi, dtype=np.int8).__array_interface__["data"][0] == \
        xin.__array_interface__["data"][0]
    assert acc.run_buffers(p, bi, bo, (2, 16, 33)) is bo
    assert np.array_equal(np.frombuffer(bo, dtype=np.int8).reshape(x.shape), acc.run(p, x))


def test_device_arrays_run_without_staging(acc, rng):
    _, _, p = layer(acc, rng, 16)
    x = rng.integers(-128, 128, size=(2, 16, 5, 7), dtype=np.int8)
    xe, ye = acc.empty(x.shape), acc.empty(x.shape, output=True)
    assert isinstance(xe, np.ndarray) and xe.dtype == np.int8 and xe.shape == x.shape
    xe[...] = x
    fut = acc.submit(p, xe, out=ye)
    assert fut.zero_copy and fut.result() is ye
    assert np.array_equal(ye, acc.run(p, x))
    assert not acc.submit(p, x).zero_copy  # a plain array is staged
    assert not acc.submit(p, xe[:1], out=ye[:1]).zero_copy  # a part of a buffer too
    xh, yh = acc.empty((2, 5, 7, 16)), acc.empty((2, 5, 7, 16), output=True)
    xh[...] = x.transpose(0, 2, 3, 1)
    f2 = acc.submit(p, xh, out=yh, layout="nhwc")
    assert f2.zero_copy and np.array_equal(f2.result().transpose(0, 3, 1, 2), ye)


def test_tiling_on_a_small_device(small_manifest, rng):
    with normcore.Accelerator.open("ref:" + small_manifest) as a:
        assert a.info["max_channels"] == 5
        bn, f, p = layer(a, rng, 5)
        x = rng.integers(-2000, 2000, size=(3, 5, 40), dtype=np.int16)
        y = a.run(p, x)
        assert y.dtype == np.uint8
        # device arrays of a job the device cannot take untiled fall back to the staged path
        xe, ye = a.empty(x.shape), a.empty(x.shape, output=True)
        xe[...] = x
        fut = a.submit(p, xe, out=ye)
        assert not fut.zero_copy and np.array_equal(fut.result(), y)
        assert np.array_equal(y, contract_half_even(x, f.params))
        assert a.submit(p, x).result().shape == x.shape


def test_int8_tiles_in_place_and_staged(cli, tmp_path, rng):
    """int8 host arrays on a device with INNER <= 15 and 4 channels: NHWC tiles are contiguous and
    run in place on the arrays; NCHW tiles (HW split at INNER) are not, so the run is staged.
    Both equal the contract, and equal a device that always stages (direct=0)."""
    from conftest import gen
    m = gen(cli, tmp_path / "rtl", "--name", "nc_i8_small", "--lanes", "2", "--max-channels", "4",
            "--inner-bits", "4")
    for layout in ("nchw", "nhwc"):
        outs = []
        for opt in ("", ",direct=0"):
            with normcore.Accelerator.open("ref:" + m + opt) as a:
                _, f, p = layer(a, np.random.default_rng(5), 7)
                x = np.random.default_rng(6).integers(-128, 128, size=(2, 7, 40), dtype=np.int8)
                xl = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 1))
                y = a.run(p, xl, layout=layout)
                outs.append(y if layout == "nchw" else y.transpose(0, 2, 1))
        assert np.array_equal(outs[0], outs[1])
        assert np.array_equal(outs[0], contract_half_even(x, f.params))


def test_errors(acc, manifest, rng):
    _, _, p = layer(acc, rng, 16)
    with pytest.raises(normcore.Error, match="channels|C ="):
        acc.run(p, np.zeros((1, 8, 4), dtype=np.int8))
    with pytest.raises(normcore.Error, match="dtype"):
        acc.run(p, np.zeros((1, 16, 4), dtype=np.int64))
    with pytest.raises(normcore.Error, match="channel_axis"):
        acc.run(p, np.zeros((1, 16, 4), dtype=np.int8), channel_axis=3)
    with pytest.raises(normcore.InputValueError, match="NaN"):
        acc.run(p, np.full((1, 16, 4), np.nan, dtype=np.float32), in_quant=0.1)
    with pytest.raises(normcore.DeviceError):
        normcore.Accelerator.open("ref:/nonexistent/manifest.json")
    # a failing device job: the exception carries the register file read after it
    with normcore.Accelerator.open("ref:" + manifest + ",fail_job=1") as bad:
        pb = bad.upload(normcore.fold(random_bn(rng, 16), spec=bad))
        fut = bad.submit(pb, np.zeros((1, 16, 8), dtype=np.int8))
        with pytest.raises(normcore.DeviceError) as ei:
            fut.result(10.0)
        regs = ei.value.registers
        assert "STATUS" in regs and "ERR_CODE" in regs and regs["ERR_CODE"] != 0
        assert fut.state == "failed"


@pytest.mark.parametrize("kind", ["sim", "tlm"])
def test_rtl_devices_match_ref(kind, rng):
    m = plugin_manifest(kind)
    with normcore.Accelerator.open(f"{kind}:{m}") as dev, \
            normcore.Accelerator.open(f"ref:{m}") as ref:
        bn = random_bn(rng, 10)
        img = normcore.fold(bn, spec=dev).params
        x = rng.integers(-128, 128, size=(2, 10, 37), dtype=np.int8)
        y = dev.run(dev.upload(img), x)
        assert np.array_equal(y, ref.run(ref.upload(img), x))
        xh = rng.integers(-128, 128, size=(1, 5, 3, 10), dtype=np.int8)
        assert np.array_equal(dev.run(dev.upload(img), xh, layout="nhwc"),
                              ref.run(ref.upload(img), xh, layout="nhwc"))
