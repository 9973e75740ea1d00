"""normcore from Python: fold float batch norm into the contract's integers, run it on a device.

    import numpy as np, normcore
    acc = normcore.Accelerator.open("ref:build/devices/normcore/rtl/manifest.json")
    f = normcore.fold({"gamma": g, "beta": b, "mean": m, "var": v, "quant": "integer"}, spec=acc)
    p = acc.upload(f.params)
    y = acc.run(p, x)                       # x: int8 NCHW (any N-d: channel_axis=...)
    fut = acc.submit(p, x); y = fut.result()

Float devices (contract v2: fp16 / bf16 in, fp16 / bf16 / fp32 out) take float arrays: numpy
float16, ml_dtypes.bfloat16 when ml_dtypes can be imported (it is optional), or a uint16 array
of bfloat16 bit patterns with in_dtype="bfloat16" (out_dtype="bfloat16" for the output); float32
arrays are converted in the driver (one rounding to nearest even). fold() gives fp32 s, b and
the error in output ULPs; there is no quantisation.

Everything is computed by the C++ library (the golden model, the fold, the driver); this module
only maps numpy arrays onto it, without copying them.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _normcore as _c
from ._normcore import (
    ArithSpec,
    BnParams,
    Buffer,
    DeviceError,
    Error,
    FloatFoldResult,
    FoldResult,
    InputValueError,
    ParamImage,
    Params,
)

__all__ = [
    "Accelerator", "ArithSpec", "BnParams", "Buffer", "DeviceError", "Error", "FloatFoldResult",
    "FoldResult", "Future", "InputValueError", "ParamImage", "Params", "bfloat16", "fold",
    "import_model", "has_import",
]
__version__ = "0.1.0"
has_import: bool = bool(_c.has_import)

QuantLike = Union[None, float, Tuple[float, int], Mapping[str, Any]]
_UNSET = object()
_BF16: Any = _UNSET


def bfloat16() -> Optional[np.dtype]:
    """numpy's dtype of ml_dtypes.bfloat16 when ml_dtypes can be imported, else None (then a
    bfloat16 tensor is a uint16 array of bit patterns: in_dtype= / out_dtype="bfloat16")."""
    global _BF16
    if _BF16 is _UNSET:
        try:
            import ml_dtypes  # optional: no dependency of normcore
            _BF16 = np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            _BF16 = None
    return _BF16
SpecLike = Union[ArithSpec, "Accelerator", str, os.PathLike, Mapping[str, Any]]


def _quant(q: QuantLike, what: str) -> Optional[Tuple[float, int]]:
    """None, a scale, (scale, zero_point) or {"scale": s, "zero_point": z}."""
    if q is None:
        return None
    if isinstance(q, Mapping):
        return (float(q["scale"]), int(q.get("zero_point", 0)))
    if isinstance(q, (int, float)):
        return (float(q), 0)
    try:
        scale, zp = q
    except (TypeError, ValueError):
        raise Error(f"{what}: expected a scale, (scale, zero_point) or a dict, got {q!r}") from None
    return (float(scale), int(zp))


def _spec(spec: SpecLike) -> ArithSpec:
    if isinstance(spec, ArithSpec):
        return spec
    if isinstance(spec, Accelerator):
        return spec.spec
    if isinstance(spec, (str, os.PathLike)):
        return ArithSpec.from_config(os.fspath(spec))
    if isinstance(spec, Mapping):
        spec = dict(spec)
        if "shift_bits" in spec:  # b's width under its old name (CHANGELOG.md)
            if "offset_bits" in spec:
                raise Error("spec: 'shift_bits' is the deprecated name of 'offset_bits': give only "
                            "'offset_bits'")
            warnings.warn("spec: 'shift_bits' is deprecated, use 'offset_bits'", DeprecationWarning,
                          stacklevel=3)
            spec["offset_bits"] = spec.pop("shift_bits")
        return ArithSpec(**spec)
    raise Error(f"spec: expected an ArithSpec, an Accelerator, a manifest path or a dict, "
                f"got {type(spec).__name__}")


def _json_default(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"bn: a value of type {type(v).__name__} is not JSON")


def fold(bn: Union[None, BnParams, Mapping[str, Any], str, os.PathLike] = None, *,
         spec: SpecLike, gamma: Any = None, beta: Any = None, mean: Any = None, var: Any = None,
         eps: float = 1e-5, in_quant: QuantLike = None, out_quant: QuantLike = None,
         activation: Union[str, Tuple[float, float]] = "none",
         rounding: Optional[str] = None,
         shift: Optional[int] = None) -> Union[FoldResult, FloatFoldResult]:
    """Folds float batch norm into s[c], b[c], R for `spec`'s widths (C++ normcore::fold).

    `bn` is a bn.json-style dict (the same keys and checks as `normcore fold --params`), a
    bn.json path or a BnParams; or give the arrays (gamma/beta default to 1/0). Without
    in_quant/out_quant the input and output are plain integers (scale 1, zero point 0).
    `activation`: "none", "relu", "relu6" or (min, max) real bounds. Returns a FoldResult
    (.params is the ParamImage to upload, .report the exact error report).

    For a float spec (a float device, or ArithSpec(in_type="fp16", ...)) the fold is
    normcore::fold_float: fp32 s, b (R = 0), no quantisation (in_quant / out_quant / shift are
    errors; a bn dict may say "quant": "float"), and a FloatFoldResult whose worst_error is in
    ULPs of the output type (.unit; LSBs for an integer output) against the float64 batch norm
    over every finite input.
    """
    s = _spec(spec)
    if s.is_float and (in_quant is not None or out_quant is not None or shift is not None):
        what = "in_quant" if in_quant is not None else "out_quant" if out_quant is not None \
            else "shift"
        raise Error(f"fold: {what}: a float datapath ({s.in_type} -> {s.out_type}) takes no "
                    f"quantisation and no shift")
    if bn is None:
        if mean is None or var is None:
            raise Error("fold: give a bn dict / BnParams, or at least mean= and var=")
        mean_a = np.asarray(mean, dtype=np.float64).ravel()
        c = mean_a.size
        g = np.ones(c) if gamma is None else np.asarray(gamma, dtype=np.float64).ravel()
        b = np.zeros(c) if beta is None else np.asarray(beta, dtype=np.float64).ravel()
        act, lo, hi = (activation, 0.0, 0.0) if isinstance(activation, str) else (
            "clamp", float(activation[0]), float(activation[1]))
        bn = BnParams.from_arrays(g, b, mean_a, np.asarray(var, dtype=np.float64).ravel(), eps,
                                  _quant(in_quant, "in_quant"), _quant(out_quant, "out_quant"),
                                  act, lo, hi, rounding)
    elif isinstance(bn, Mapping):
        bn = BnParams.from_json(json.dumps(dict(bn), default=_json_default), "bn")
    elif isinstance(bn, (str, os.PathLike)):
        bn = BnParams.load(os.fspath(bn))
    elif not isinstance(bn, BnParams):
        raise Error(f"fold: bn must be a dict, a path or a BnParams, got {type(bn).__name__}")
    if s.is_float:
        return _c.fold_float(bn, s, rounding)
    return _c.fold(bn, s, rounding, shift)


def import_model(path: Union[str, os.PathLike], *, spec: SpecLike, format: str = "",
                 bundle: Union[None, str, os.PathLike] = None, in_quant: QuantLike = None,
                 out_quant: QuantLike = None, rounding: Optional[str] = None,
                 out_dir: Union[None, str, os.PathLike] = None) -> Any:
    """Finds and folds every batch norm of an ONNX, XLA HLO text or StableHLO / TOSA MLIR text
    model (format: "onnx", "hlo", "mlir"; default from the extension, then the content): the
    import plan.

    The same library calls as `normcore import`; `out_dir` also writes the plan directory that
    `normcore run --plan` runs. Plan.layers[i] has name, shape, layout, job (N, C, HW), bn,
    report, worst_error; Plan.params(i) is layer i's ParamImage.
    """
    if not has_import:
        raise Error("import_model: this normcore was built without model import")
    return _c.import_model(os.fspath(path), _spec(spec), format,
                           os.fspath(bundle) if bundle else "", _quant(in_quant, "in_quant"),
                           _quant(out_quant, "out_quant"), rounding,
                           os.fspath(out_dir) if out_dir else "")


class Future:
    """A submitted run (Accelerator.submit): wait(timeout) -> bool, result() -> the output."""

    def __init__(self, run: Any, output: Any = None) -> None:
        self._run = run
        self._output = output

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once finished (completed or failed); False if `timeout` seconds passed first."""
        return self._run.wait(timeout)

    def done(self) -> bool:
        return self._run.state in ("completed", "failed")

    def result(self, timeout: Optional[float] = None) -> Any:
        """The output (array or Buffer); raises DeviceError if the run failed, TimeoutError if
        `timeout` seconds pass first."""
        if timeout is not None and not self._run.wait(timeout):
            raise TimeoutError(f"the run did not finish within {timeout} s")
        self._run.get()
        return self._run.output if self._output is None else self._output

    @property
    def state(self) -> str:
        return self._run.state

    @property
    def zero_copy(self) -> bool:
        """True if the run used the device buffers themselves (no staging copies)."""
        return isinstance(self._run.output, Buffer)

    @property
    def stats(self) -> dict:
        return self._run.stats


_FLOAT_NAMES = {"float16": "fp16", "bfloat16": "bf16"}


def _side_dtype(info: Mapping[str, Any], side: str) -> Tuple[np.dtype, str]:
    """The numpy dtype of a device side's elements ("in" / "out") and the element-type name the
    driver needs with it: "bfloat16" for uint16 bit patterns (bf16 without ml_dtypes), else ""."""
    t = info[f"{side}_type"]
    if t == "fp16":
        return np.dtype(np.float16), ""
    if t == "fp32":
        return np.dtype(np.float32), ""
    if t == "bf16":
        bf = bfloat16()
        return (bf, "") if bf is not None else (np.dtype(np.uint16), "bfloat16")
    bits, signed = info[f"{side}_bits"], info[f"{side}_signed"]
    for width, s, u in ((8, np.int8, np.uint8), (16, np.int16, np.uint16)):
        if bits <= width:
            return np.dtype(s if signed else u), ""
    return np.dtype(np.int32), ""


def _dtype_arg(dtype: Any, what: str) -> Tuple[Optional[np.dtype], str]:
    """A dtype argument: a numpy dtype, or "float16" / "bfloat16" (bfloat16: ml_dtypes' when it
    can be imported, else uint16 holding bit patterns, with the name for the driver)."""
    if dtype is None:
        return None, ""
    if isinstance(dtype, str) and dtype == "bfloat16":
        bf = bfloat16()
        return (bf, "") if bf is not None else (np.dtype(np.uint16), "bfloat16")
    try:
        return np.dtype(dtype), ""
    except TypeError:
        raise Error(f"{what}: {dtype!r} is not a dtype") from None


def _element_as(a: np.ndarray, name: Optional[str], what: str) -> str:
    """The element-type name that reads the 2-byte array `a` as float16 / bfloat16 patterns."""
    if name is None:
        return ""
    if name not in _FLOAT_NAMES:
        raise Error(f"{what}: {name!r} is not 'float16' or 'bfloat16'")
    if a.dtype.itemsize != 2:
        raise Error(f"{what}={name!r}: needs an array of 2-byte elements, got {a.dtype}")
    return name


def _element_type(dtype: np.dtype, as_name: str) -> str:
    """The contract's element type of host elements: "fp16", "bf16", "fp32" or "int"."""
    if as_name:
        return _FLOAT_NAMES[as_name]
    if dtype == np.float16:
        return "fp16"
    if dtype == np.float32:
        return "fp32"
    if dtype.itemsize == 2 and dtype.name == "bfloat16":
        return "bf16"
    return "int"


def _device_buffer(a: np.ndarray) -> Optional[Buffer]:
    """The device Buffer a C-contiguous array covers exactly (an Accelerator.empty array)."""
    if not a.flags.c_contiguous:
        return None
    base: Any = a
    while isinstance(base, np.ndarray):
        base = base.base
    obj = base.obj if isinstance(base, memoryview) else None
    if not isinstance(obj, Buffer) or a.nbytes != len(obj):
        return None
    start = np.frombuffer(obj, dtype=np.uint8).__array_interface__["data"][0]
    return obj if a.__array_interface__["data"][0] == start else None


def _job(shape: Sequence[int], layout: Optional[str],
         channel_axis: Optional[int]) -> Tuple[int, int, int, str]:
    """(N, C, HW, layout) of an N-d array: N = product of the axes before the channel axis, HW
    of those after it; channels last (rank >= 3, or layout="nhwc") runs as NHWC."""
    nd = len(shape)
    if nd == 0:
        raise Error("input: a 0-d array has no channel axis")
    if layout is not None and layout.lower() not in ("nchw", "nhwc"):
        raise Error(f"layout: '{layout}' is not nchw or nhwc")
    if channel_axis is None:
        nhwc = layout is not None and layout.lower() == "nhwc"
        axis = nd - 1 if (nhwc or nd == 1) else 1
    else:
        if not -nd <= channel_axis < nd:
            raise Error(f"channel_axis: {channel_axis} is out of range for a {nd}-d array")
        axis = channel_axis % nd
    c = int(shape[axis])
    before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    if layout is None:
        layout = "nhwc" if axis == nd - 1 and nd >= 3 else "nchw"
    layout = layout.lower()
    if layout == "nhwc":
        if after != 1:
            raise Error(f"layout nhwc: the channel axis ({axis}) must be the last of {tuple(shape)}")
        n = int(shape[0]) if axis > 0 else 1
        return n, c, int(before // n), "nhwc"
    return int(before), c, int(after), "nchw"


class Accelerator:
    """The host driver of a normcore device: "ref:<manifest.json>" (the golden model in
    software), "sim:<manifest.json>[,...]" (the Verilated RTL), "tlm:<manifest.json>" (SystemC
    TLM-2.0), "uio:..." (a board). See `normcore run --help` for the device strings."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    @classmethod
    def open(cls, device: str, *, job_timeout: float = 30.0, use_irq: bool = True,
             max_tile_elements: Optional[int] = None) -> "Accelerator":
        return cls(_c.Accelerator.open(device, job_timeout, use_irq, max_tile_elements))

    def __enter__(self) -> "Accelerator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Finishes every queued run, then closes the device."""
        self._impl.close()

    @property
    def info(self) -> dict:
        return self._impl.info

    @property
    def spec(self) -> ArithSpec:
        return self._impl.spec

    def describe(self) -> str:
        return self._impl.describe()

    def stats(self) -> dict:
        return self._impl.stats()

    def read_register(self, name: str) -> int:
        return self._impl.read_register(name)

    def upload(self, params: Union[ParamImage, FoldResult, FloatFoldResult, str,
                                   os.PathLike]) -> Params:
        """Checks the image against the device and copies its table to it."""
        if isinstance(params, (FoldResult, FloatFoldResult)):
            params = params.params
        elif isinstance(params, (str, os.PathLike)):
            params = ParamImage.load(os.fspath(params))
        return self._impl.upload(params)

    def alloc(self, nbytes: int) -> Buffer:
        """A device buffer; np.frombuffer(buf, np.int8) (etc.) maps it without a copy."""
        return self._impl.alloc(nbytes)

    def empty(self, shape: Union[int, Sequence[int]], dtype: Any = None, *,
              output: bool = False) -> np.ndarray:
        """A numpy array living in a device buffer (the buffer protocol, no copy). run() and
        submit() with such arrays as input and `out` take the zero-copy path (no staging) when
        the dtype is the device's packing (in_bits / out_bits elements: int8 on an 8-bit
        device; float16 on an fp16 device, ml_dtypes.bfloat16 or uint16 patterns on a bf16 one,
        float32 for fp32) and the job fits the device; otherwise they stage as for any array.
        `dtype` defaults to the device's input type (output=True: its output type); "bfloat16"
        is ml_dtypes' type, or uint16 without ml_dtypes."""
        info = self._impl.info
        if dtype is None:
            dt = _side_dtype(info, "out" if output else "in")[0]
        else:
            dt = _dtype_arg(dtype, "dtype")[0]
        shape = (shape,) if isinstance(shape, int) else tuple(int(v) for v in shape)
        count = math.prod(shape)
        buf = self._impl.alloc(max(1, count * dt.itemsize))
        return np.frombuffer(buf, dtype=dt, count=count).reshape(shape)

    def _zero_copy(self, params: Params, x: np.ndarray, out: Optional[np.ndarray],
                   job: Tuple[int, int, int, str], quant: bool, in_as: str,
                   out_as: str) -> Optional[Future]:
        """The zero-copy run of arrays made by empty(), or None when it does not apply."""
        if out is None or quant:
            return None
        info = self._impl.info
        bx, by = _device_buffer(x), _device_buffer(out)
        if bx is None or by is None:
            return None
        for a, side, as_name in ((x, "in", in_as), (out, "out", out_as)):
            t = info[f"{side}_type"]
            if t != "int":
                if _element_type(a.dtype, as_name) != t:
                    return None
            elif as_name or a.dtype != _side_dtype(info, side)[0] or \
                    a.dtype.itemsize * 8 != info[f"{side}_bits"]:
                return None  # not the packed format
        n, c, hw, lay = job
        try:
            return Future(self._impl.submit_buffers(params, bx, by, n, c, hw, lay), out)
        except Error:
            return None  # a job the device cannot take untiled: the staged path tiles it

    def submit(self, params: Params, x: Any, *, layout: Optional[str] = None,
               channel_axis: Optional[int] = None, out: Optional[np.ndarray] = None,
               out_dtype: Any = None, in_quant: QuantLike = None,
               out_quant: QuantLike = None, in_dtype: Optional[str] = None) -> Future:
        """Queues a run of `x` (a numpy array of int8/uint8/int16/uint16/int32, or float32
        with in_quant) and returns a Future whose result() is the output array (a new one of
        x's shape, or `out`). The channel axis is 1 (NCHW) by default, the last one with
        layout="nhwc", or `channel_axis`. Neither array is copied: do not touch them until the
        run has finished. A float output needs out_quant (it is dequantised).

        Float devices: x is float16, ml_dtypes.bfloat16, float32 (rounded to the device's type
        in the driver, to nearest even) or, with in_dtype="bfloat16" ("float16"), a uint16
        array of those bit patterns. The output is the device's type by default (float16;
        ml_dtypes.bfloat16, or uint16 patterns without ml_dtypes; float32), or `out_dtype`
        (e.g. np.float32: converted exactly; "bfloat16": ml_dtypes' or uint16 patterns, also
        the way to mark a uint16 `out` as bfloat16 patterns). No quantisation."""
        x = np.ascontiguousarray(x)
        n, c, hw, lay = _job(x.shape, layout, channel_axis)
        quant = in_quant is not None or out_quant is not None
        in_as = _element_as(x, in_dtype, "in_dtype")
        if out is not None:  # out_dtype "float16" / "bfloat16" names out's 2-byte patterns
            named = out_dtype if isinstance(out_dtype, str) and out_dtype in _FLOAT_NAMES \
                else None
            want, out_as = None, _element_as(out, named, "out_dtype")
        else:
            want, out_as = _dtype_arg(out_dtype, "out_dtype")
        if out is not None and out.shape == x.shape:
            fut = self._zero_copy(params, x, out, (n, c, hw, lay), quant, in_as, out_as)
            if fut is not None:
                return fut
        if out is None:
            info = self._impl.info
            if want is not None:
                dt = want
            elif x.dtype == np.float32 and out_quant is not None:
                dt = np.dtype(np.float32)
            else:
                dt, out_as = _side_dtype(info, "out")
            out = np.empty(x.shape, dtype=dt)
        elif not isinstance(out, np.ndarray) or out.size != x.size:
            raise Error(f"out: expected an array of {x.size} elements")
        return Future(self._impl.submit_host(params, x, out, n, c, hw, lay,
                                             _quant(in_quant, "in_quant"),
                                             _quant(out_quant, "out_quant"), in_as, out_as))

    def run(self, params: Params, x: Any, **kwargs: Any) -> np.ndarray:
        """submit(params, x, **kwargs).result(): the output array."""
        return self.submit(params, x, **kwargs).result()

    def submit_buffers(self, params: Params, x: Buffer, y: Buffer, shape: Sequence[int],
                       layout: str = "nchw") -> Future:
        """A zero-copy run on device buffers (packed elements, in_bits each); shape (N, C, HW).
        result() returns `y`."""
        n, c, hw = (int(v) for v in shape)
        return Future(self._impl.submit_buffers(params, x, y, n, c, hw, layout))

    def run_buffers(self, params: Params, x: Buffer, y: Buffer, shape: Sequence[int],
                    layout: str = "nchw") -> Buffer:
        return self.submit_buffers(params, x, y, shape, layout).result()
