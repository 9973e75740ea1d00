"""Float devices (contract v2) from Python: fp16 / bf16 in, fp16 / bf16 / fp32 out on ref:.
Every run is compared bit for bit with the golden model (normcore._normcore.apply_float, the
C++ float contract) and with numpy float64 batch norm within the fold's reported ULP bound.
bfloat16 arrays are ml_dtypes.bfloat16 when it imports, uint16 bit patterns otherwise (both
paths are tested: the second by hiding ml_dtypes)."""

import numpy as np
import pytest

import normcore
from conftest import gen
from normcore import _normcore as _c


@pytest.fixture(scope="module")
def devices(cli, tmp_path_factory):
    """Float devices for ref: (manifests only: the float lanes' RTL is the float18 branch's)."""
    root = tmp_path_factory.mktemp("float")
    made = {}
    for x, y, flush in (("fp16", "fp16", False), ("bf16", "bf16", False),
                        ("fp16", "fp32", False), ("bf16", "fp16", True)):
        name = f"{x}_{y}{'_flush' if flush else ''}"
        made[name] = gen(cli, root / name, "--manifest-only", "--in-type", x, "--out-type", y,
                         *(["--flush-subnormals"] if flush else []))
    return made


def bn_dict(rng, c):
    return {"gamma": rng.uniform(0.5, 2.0, c) * rng.choice([-1, 1], c),
            "beta": rng.normal(0, 2, c), "mean": rng.normal(0, 2, c),
            "var": rng.uniform(0.5, 4.0, c), "eps": 1e-5, "quant": "float"}


def finite_patterns(t, limit):
    """Every finite fp16 / bf16 bit pattern whose value is at most `limit` in magnitude."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        v = decode(bits, t)
    return bits[np.isfinite(v) & (np.abs(v) <= limit)]


def decode(bits, t):
    """float64 values of patterns of type t."""
    bits = np.asarray(bits)
    if t == "fp16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if t == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def ulp(v, t):
    """ULP of the real value v in type t: 2^(max(floor(log2 |v|), emin) - mantissa bits)."""
    man, emin = {"fp16": (10, -14), "bf16": (7, -126), "fp32": (23, -126)}[t]
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.abs(v)))
    return np.exp2(np.maximum(np.where(np.isfinite(e), e, emin), emin) - man)


def golden(acc, img, xbits, c_axis_shape):
    """apply_float for every element of an NCHW tensor of patterns (N, C, HW)."""
    n, c, hw = c_axis_shape
    s = np.broadcast_to(img.scale.astype(np.uint32).reshape(1, c, 1), (n, c, hw)).ravel()
    b = np.broadcast_to(img.bias.astype(np.uint32).reshape(1, c, 1), (n, c, hw)).ravel()
    lo, hi = img.clamp
    return _c.apply_float(xbits.astype(np.int64).ravel(), s, b, acc.spec, lo, hi)


def float64_bn(x, bn, c_axis_shape):
    n, c, hw = c_axis_shape
    g, be, m, v = (np.asarray(bn[k], dtype=np.float64).reshape(1, c, 1)
                   for k in ("gamma", "beta", "mean", "var"))
    return ((x.reshape(n, c, hw) - m) / np.sqrt(v + bn["eps"]) * g + be).ravel()


def as_bits(y):
    return y.view(np.uint16) if y.dtype.itemsize == 2 else y.view(np.uint32)


def check_run(acc, bn, f, x_bits, y, in_t, out_t, shape):
    """y equals the golden model bit for bit, and is within the fold's ULP bound of float64 BN."""
    want = golden(acc, f.params, x_bits, shape)
    assert np.array_equal(as_bits(y).ravel().astype(np.int64), want)
    y64 = float64_bn(decode(x_bits, in_t).ravel(), bn, shape)
    err = np.abs(decode(as_bits(y).ravel(), out_t) - y64) / ulp(y64, out_t)
    assert err.max() <= f.worst_error + 1e-9
    return err.max()


def test_float_spec_and_fold(devices, rng):
    spec = normcore.ArithSpec(in_type="fp16", out_type="fp16")
    assert spec.is_float and spec.in_bits == 16 and spec.scale_bits == 32
    acc_spec = normcore.ArithSpec.from_config(devices["fp16_fp16"])
    assert (acc_spec.in_type, acc_spec.out_type) == ("fp16", "fp16")
    bn = bn_dict(rng, 4)
    f = normcore.fold(bn, spec=spec)
    assert isinstance(f, normcore.FloatFoldResult) and f.unit == "ULP" and f.exhaustive
    assert f.shift == 0 and f.params.shift == 0 and len(f.channel_errors) == 4
    assert "ULP vs float64 batch norm" in f.report
    assert 0 < f.worst_error < 4
    # s, b are the float64 fold rounded once to fp32
    a = np.asarray(bn["gamma"]) / np.sqrt(np.asarray(bn["var"]) + bn["eps"])
    assert np.array_equal(f.params.scale.astype(np.uint32),
                          np.asarray(a, dtype=np.float32).view(np.uint32))
    for kw in ({"in_quant": 0.5}, {"out_quant": (0.1, 3)}, {"shift": 2}):
        with pytest.raises(normcore.Error, match="takes no quantisation"):
            normcore.fold(bn, spec=spec, **kw)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_fp16_every_value_equals_the_golden_model(devices, rng, layout):
    with normcore.Accelerator.open("ref:" + devices["fp16_fp16"]) as acc:
        assert acc.info["in_type"] == "fp16" and acc.info["out_type"] == "fp16"
        bn = bn_dict(rng, 6)
        f = normcore.fold(bn, spec=acc)
        p = acc.upload(f)
        xb = finite_patterns("fp16", 2000.0)
        hw = xb.size
        x = np.broadcast_to(xb.view(np.float16), (2, 6, hw)).copy()  # (N, C, HW)
        if layout == "nhwc":
            xh = np.ascontiguousarray(x.transpose(0, 2, 1))
            y = acc.run(p, xh, layout="nhwc").transpose(0, 2, 1)
        else:
            y = acc.run(p, x)
        assert y.dtype == np.float16
        worst = check_run(acc, bn, f, x.view(np.uint16), np.ascontiguousarray(y), "fp16",
                          "fp16", (2, 6, hw))
        assert worst > 0.4  # fp16 rounding is visible: not a float64 result


def test_fp16_to_fp32_and_float32_inputs(devices, rng):
    with normcore.Accelerator.open("ref:" + devices["fp16_fp32"]) as acc:
        bn = bn_dict(rng, 3)
        f = normcore.fold(bn, spec=acc)
        p = acc.upload(f)
        x = rng.normal(0, 30, size=(4, 3, 50)).astype(np.float16)
        y = acc.run(p, x)
        assert y.dtype == np.float32
        check_run(acc, bn, f, x.view(np.uint16), y, "fp16", "fp32", (4, 3, 50))
        # float32 host input: one rounding to nearest even in the driver (double_to_float), as
        # numpy's astype(float16)
        x32 = rng.normal(0, 30, size=(4, 3, 50)).astype(np.float32)
        assert np.array_equal(_c.float_bits(x32.ravel(), "fp16").astype(np.uint16),
                              x32.astype(np.float16).view(np.uint16).ravel())
        assert np.array_equal(acc.run(p, x32), acc.run(p, x32.astype(np.float16)))


def test_bf16_with_ml_dtypes_and_as_uint16_patterns(devices, rng, monkeypatch):
    with normcore.Accelerator.open("ref:" + devices["bf16_bf16"]) as acc:
        bn = bn_dict(rng, 5)
        f = normcore.fold(bn, spec=acc)
        p = acc.upload(f)
        xb = finite_patterns("bf16", 1e30)
        xb = np.broadcast_to(xb, (1, 5, xb.size)).copy()
        # uint16 bit patterns, named by in_dtype / out_dtype (no ml_dtypes needed); unnamed,
        # they are integers, which a bf16 device refuses
        with pytest.raises(normcore.Error, match="input type uint16"):
            acc.run(p, xb, out_dtype=np.float32)
        with pytest.raises(normcore.Error, match="output type uint16"):
            acc.run(p, xb, in_dtype="bfloat16", out_dtype=np.uint16)
        y_pat = np.empty_like(xb)
        acc.run(p, xb, in_dtype="bfloat16", out=y_pat, out_dtype="bfloat16")
        check_run(acc, bn, f, xb, y_pat, "bf16", "bf16", (1, 5, xb.shape[2]))
        # float32 outputs of a bf16 device: exact
        y32 = acc.run(p, xb, in_dtype="bfloat16", out_dtype=np.float32)
        assert np.array_equal(y32.view(np.uint32) >> 16, y_pat.astype(np.uint32))
        # without ml_dtypes: the default output is uint16 patterns
        monkeypatch.setattr(normcore, "_BF16", None)
        assert normcore.bfloat16() is None
        y_def = acc.run(p, xb, in_dtype="bfloat16")
        assert y_def.dtype == np.uint16 and np.array_equal(y_def, y_pat)
        e = acc.empty(xb.shape)
        assert e.dtype == np.uint16
        monkeypatch.undo()
        ml = pytest.importorskip("ml_dtypes")
        assert normcore.bfloat16() == np.dtype(ml.bfloat16)
        xm = xb.view(ml.bfloat16)
        ym = acc.run(p, xm)
        assert ym.dtype == np.dtype(ml.bfloat16)
        assert np.array_equal(ym.view(np.uint16), y_pat)


def test_zero_copy_empty_arrays(devices, rng):
    with normcore.Accelerator.open("ref:" + devices["fp16_fp16"]) as acc:
        bn = bn_dict(rng, 8)
        p = acc.upload(normcore.fold(bn, spec=acc))
        x = rng.normal(0, 5, size=(2, 8, 1000)).astype(np.float16)
        xe, ye = acc.empty(x.shape), acc.empty(x.shape, output=True)
        assert xe.dtype == np.float16 and ye.dtype == np.float16
        xe[...] = x
        fut = acc.submit(p, xe, out=ye)
        assert fut.result() is ye and fut.zero_copy
        assert np.array_equal(ye.view(np.uint16), acc.run(p, x).view(np.uint16))
        # float32 into fp16 arrays of a device buffer: staged (converted), same result
        fut = acc.submit(p, x.astype(np.float32), out=ye)
        assert not fut.zero_copy and np.array_equal(fut.result(), acc.run(p, x))


def test_flush_device(devices, rng):
    with normcore.Accelerator.open("ref:" + devices["bf16_fp16_flush"]) as acc:
        assert acc.info["flush_subnormals"] and acc.spec.flush_subnormals
        bn = bn_dict(rng, 2)
        bn.update(gamma=[1e-3, -1e-3], beta=[0.0, 0.0], mean=[0.0, 0.0])  # subnormal results
        f = normcore.fold(bn, spec=acc)
        p = acc.upload(f)
        xb = finite_patterns("bf16", 100.0)
        xb = np.broadcast_to(xb, (1, 2, xb.size)).copy()
        y = acc.run(p, xb, in_dtype="bfloat16")
        assert y.dtype == np.float16
        assert np.array_equal(y.view(np.uint16).ravel().astype(np.int64),
                              golden(acc, f.params, xb, (1, 2, xb.shape[2])))
        mag = y.view(np.uint16) & 0x7FFF
        assert not np.any((mag > 0) & (mag < 0x400))  # no subnormal result: flushed
        assert np.any((mag == 0) & (xb.reshape(y.shape) & 0x7FFF != 0))  # some were
