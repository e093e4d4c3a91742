"""Numpy arrays, torch tensors and CUDA array objects as llmc_tensor views.

What the C ABI needs of a tensor: a pointer, a dtype, a shape, whether the
memory is on the GPU, and for GPU memory the stream it was written on. A
torch CUDA tensor is passed by pointer with the caller's current stream
(torch.cuda.current_stream), so llmc's copy runs after whatever the caller
queued on it, and the caller's later writes run after llmc's copy; an object
with __cuda_array_interface__ (version 3) brings its own "stream" field; a
DLPack producer (__dlpack__) is asked to order its work before the legacy
default stream, which llmc's copy then waits for. No GPU memory is copied
or synchronized here.
"""
import ctypes
import sys

import numpy as np

from . import _lib
from .errors import InvalidArgument

_NUMPY = {
    np.dtype(np.float32): _lib.LLMC_F32,
    np.dtype(np.float16): _lib.LLMC_F16,
    np.dtype(np.int32): _lib.LLMC_I32,
    np.dtype(np.int64): _lib.LLMC_I64,
    np.dtype(np.uint8): _lib.LLMC_U8,
}
_TYPESTR = {"<f4": _lib.LLMC_F32, "<f2": _lib.LLMC_F16, "<i4": _lib.LLMC_I32,
            "<i8": _lib.LLMC_I64, "|u1": _lib.LLMC_U8}
_TORCH_NAMES = {"torch.float32": _lib.LLMC_F32, "torch.float16": _lib.LLMC_F16,
                "torch.bfloat16": _lib.LLMC_BF16, "torch.int32": _lib.LLMC_I32,
                "torch.int64": _lib.LLMC_I64, "torch.uint8": _lib.LLMC_U8}
SUPPORTED = "float32, float16, bfloat16 (torch), int32, int64, uint8"


class View:
    """One tensor, ready for an llmc_tensor; `keep` holds its memory alive."""
    __slots__ = ("dtype", "shape", "device", "device_index", "ptr", "stream",
                 "keep")

    def __init__(self, dtype, shape, device, ptr, stream, keep,
                 device_index=None):
        self.dtype, self.shape, self.device = dtype, tuple(shape), device
        self.ptr, self.stream, self.keep = ptr, stream, keep
        self.device_index = device_index


def current_stream_query():
    """A function of a device index that returns torch's current stream on
    it, as a CUstream value."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # what Triton uses: no Stream object per call
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


def _current_stream(index):
    return current_stream_query()(index)


_torch_dtypes = {}  # torch.dtype -> llmc dtype, filled on first use


def _torch_view(x, what):
    dtype = _torch_dtypes.get(x.dtype)
    if dtype is None:
        dtype = _TORCH_NAMES.get(str(x.dtype))
        if dtype is not None:
            _torch_dtypes[x.dtype] = dtype
    if dtype is None:
        raise InvalidArgument("%s has dtype %s, which llmc does not take "
                              "(it takes %s)" % (what, x.dtype, SUPPORTED))
    if not x.is_contiguous():
        raise InvalidArgument("%s is not contiguous: pass x.contiguous()"
                              % what)
    if x.is_cuda:
        stream = _current_stream(x.device.index)
        return View(dtype, x.shape, _lib.LLMC_CUDA, x.data_ptr(), stream, x,
                    x.device.index)
    if x.device.type != "cpu":
        raise InvalidArgument("%s is on device %s; llmc takes CPU or CUDA "
                              "tensors" % (what, x.device))
    return View(dtype, x.shape, _lib.LLMC_CPU, x.data_ptr(),
                _lib.LLMC_NO_STREAM, x)


def _cuda_array_view(x, cai, what):
    dtype = _TYPESTR.get(cai["typestr"])
    if dtype is None:
        raise InvalidArgument("%s has typestr %r, which llmc does not take "
                              "(it takes %s)" % (what, cai["typestr"],
                                                 SUPPORTED))
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is not None:
        size = np.dtype(cai["typestr"]).itemsize
        want, acc = [], size
        for d in reversed(shape):
            want.append(acc)
            acc *= d
        if tuple(reversed(want)) != tuple(strides):
            raise InvalidArgument("%s is not C-contiguous (strides %s)"
                                  % (what, tuple(strides)))
    stream = cai.get("stream")
    return View(dtype, shape, _lib.LLMC_CUDA, cai["data"][0],
                _lib.LLMC_NO_STREAM if stream is None else int(stream), x)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


# dlpack.h: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3; (type code, bits) -> dtype.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3
_DL_TYPES = {(0, 32): _lib.LLMC_I32, (0, 64): _lib.LLMC_I64,
             (1, 8): _lib.LLMC_U8, (2, 16): _lib.LLMC_F16,
             (2, 32): _lib.LLMC_F32, (4, 16): _lib.LLMC_BF16}
_LEGACY_STREAM = 1


def _dlpack_view(x, what):
    device_type, _ = x.__dlpack_device__()
    if device_type == _DL_CUDA:
        capsule = x.__dlpack__(stream=_LEGACY_STREAM)
    elif device_type in (_DL_CPU, _DL_CUDA_HOST):
        capsule = x.__dlpack__()
    else:
        raise InvalidArgument("%s is on DLPack device type %d; llmc takes "
                              "CPU or CUDA memory" % (what, device_type))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                  ctypes.c_char_p]
    # DLManagedTensor starts with its DLTensor. The capsule stays unconsumed
    # (its name is not changed), so its destructor frees the tensor once
    # `keep` lets go of it after the call.
    t = _DLTensor.from_address(get(capsule, b"dltensor"))
    dtype = _DL_TYPES.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise InvalidArgument("%s has DLPack dtype (code %d, %d bits, %d "
                              "lanes), which llmc does not take (it takes %s)"
                              % (what, t.dtype.code, t.dtype.bits,
                                 t.dtype.lanes, SUPPORTED))
    shape = tuple(t.shape[d] for d in range(t.ndim))
    if t.strides:
        want, acc = [], 1
        for d in reversed(shape):
            want.append(acc)
            acc *= d
        got = tuple(t.strides[d] for d in range(t.ndim))
        if any(n > 1 and g != w for n, g, w in
               zip(shape, got, reversed(want))):
            raise InvalidArgument("%s is not C-contiguous (DLPack strides "
                                  "%s)" % (what, got))
    ptr = (t.data or 0) + t.byte_offset
    if device_type == _DL_CUDA:
        return View(dtype, shape, _lib.LLMC_CUDA, ptr, _LEGACY_STREAM,
                    (x, capsule))
    return View(dtype, shape, _lib.LLMC_CPU, ptr, _lib.LLMC_NO_STREAM,
                (x, capsule))


def view(x, what):
    """The View of `x`: a torch tensor, a CUDA array (with
    __cuda_array_interface__), a numpy array, a DLPack producer, or
    anything numpy.asarray takes."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_view(x, what)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _cuda_array_view(x, cai, what)
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__") and \
            hasattr(x, "__dlpack_device__"):
        return _dlpack_view(x, what)
    a = np.asarray(x)
    dtype = _NUMPY.get(a.dtype)
    if dtype is None:
        raise InvalidArgument("%s has dtype %s, which llmc does not take (it "
                              "takes %s)" % (what, a.dtype, SUPPORTED))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    # __array_interface__ rather than a.ctypes: several microseconds less.
    return View(dtype, a.shape, _lib.LLMC_CPU,
                a.__array_interface__["data"][0], _lib.LLMC_NO_STREAM, a)
