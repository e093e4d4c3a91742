"""llmc.compile and llmc.Step: a compiled training step for your own loop."""
import collections
import ctypes
import json
import os
import sys

import numpy as np

from . import _lib
from . import errors as llmc_errors
from ._tensors import current_stream_query, view
from .errors import ClosedStep, CompileError, Error, InvalidArgument

_lib_handle = None


def library():
    """The loaded libllmc.so (ctypes.CDLL), loaded on first use."""
    global _lib_handle
    if _lib_handle is None:
        _lib_handle, _ = _lib.load()
    return _lib_handle


_ERRORS = {
    _lib.LLMC_ERROR_INVALID_ARGUMENT: InvalidArgument,
    _lib.LLMC_ERROR_BAD_HANDLE: ClosedStep,
    _lib.LLMC_ERROR_COMPILE: CompileError,
}


def _check(status):
    if status != _lib.LLMC_OK:
        message = library().llmc_last_error().decode("utf-8", "replace")
        raise _ERRORS.get(status, Error)(message, status)


TensorSpec = collections.namedtuple("TensorSpec", "name dtype shape")
_NUMPY_OF = {"f32": np.float32, "f16": np.float16, "i32": np.int32,
             "i64": np.int64, "u8": np.uint8}


def _specs(lib, handle, count_fn, info_fn):
    n = ctypes.c_size_t()
    _check(count_fn(handle, ctypes.byref(n)))
    specs = []
    shape = (ctypes.c_int64 * 16)()
    for i in range(n.value):
        name, dtype, rank = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int32()
        _check(info_fn(handle, i, ctypes.byref(name), ctypes.byref(dtype),
                       ctypes.byref(rank), shape, 16))
        specs.append(TensorSpec(name.value.decode(),
                                _lib.DTYPE_NAMES[dtype.value],
                                tuple(shape[d] for d in range(rank.value))))
    return specs


class Step:
    """A compiled training step (create it with llmc.compile).

    step(*inputs, lr=None) runs forward, backward and the optimizer update
    and returns the loss (a float); `inputs` are numpy arrays, torch tensors
    (CPU or CUDA) or CUDA arrays, in the order of step.inputs. Not
    thread-safe: one thread at a time per step.
    """

    def __init__(self, handle, device):
        lib = library()
        self._lib = lib
        self._handle = handle
        self.device = device
        # The GPU a CUDA input must be on (None: the step runs on the CPU,
        # where the library refuses device memory with its own message).
        self._cuda_index = (int(device.split(":", 1)[1]) if ":" in device
                            else 0) if device.startswith("cuda") else None
        self.inputs = _specs(lib, handle, lib.llmc_step_num_inputs,
                             lib.llmc_step_input_info)
        self.parameters = _specs(lib, handle, lib.llmc_step_num_parameters,
                                 lib.llmc_step_parameter_info)
        report = ctypes.c_char_p()
        _check(lib.llmc_step_report_json(handle, ctypes.byref(report)))
        self.report = json.loads(report.value.decode())
        # Reused by every call: filling these is cheaper than building them.
        n = len(self.inputs)
        self._tensors = (_lib.Tensor * max(n, 1))()
        self._shapes = [(ctypes.c_int64 * max(len(s.shape), 1))()
                        for s in self.inputs]
        for t, shape in zip(self._tensors, self._shapes):
            t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        self._loss = ctypes.c_double()
        self._loss_ref = ctypes.byref(self._loss)
        self._run = lib.llmc_step_run
        # Per input, what the last call passed when it was a torch CUDA
        # tensor: [type, dtype, shape, device index, pointer, stream]. A call
        # whose tensor matches type, dtype, shape and device (and is still
        # contiguous) only rereads its pointer and the current stream and
        # rewrites the fields that changed (_fill).
        self._fast = [None] * n
        self._raw_stream = None  # torch's current-stream query

    # -- lifetime --------------------------------------------------------
    def close(self):
        """Frees the step and its GPU memory; later calls raise ClosedStep."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _check(self._lib.llmc_step_destroy(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and sys is not None:
            try:
                self.close()
            except Exception:
                pass

    def _live(self):
        if self._handle is None:
            raise ClosedStep("the step is closed")
        return self._handle

    # -- steps -----------------------------------------------------------
    def _fill(self, inputs):
        if len(inputs) != len(self._fast):
            raise InvalidArgument(
                "the step takes %d inputs (%s), got %d" % (
                    len(self.inputs),
                    ", ".join("%s %s%s" % (s.name, s.dtype, list(s.shape))
                              for s in self.inputs), len(inputs)))
        keep = None
        fast = self._fast
        for i, x in enumerate(inputs):
            c = fast[i]
            if c is not None and type(x) is c[0] and x.dtype is c[1] and \
                    x.get_device() == c[3] and x.shape == c[2] and \
                    x.is_contiguous():
                ptr = x.data_ptr()
                if ptr != c[4]:
                    self._tensors[i].data = c[4] = ptr
                stream = self._raw_stream(c[3])
                if stream != c[5]:
                    self._tensors[i].stream = c[5] = stream
                continue
            if keep is None:
                keep = []
            keep.append(self._fill_one(i, x))
        return keep

    def _fill_one(self, i, x):
        """Input i through the general path (_tensors.view); returns what
        must stay alive during the call."""
        spec = self.inputs[i]
        self._fast[i] = None
        v = view(x, "input '%s' (#%d)" % (spec.name, i))
        if v.device_index is not None and self._cuda_index is not None \
                and v.device_index != self._cuda_index:
            raise llmc_errors.InvalidArgument(
                "input '%s' (#%d) is on cuda:%d, but the step runs on "
                "cuda:%d" % (spec.name, i, v.device_index, self._cuda_index))
        t = self._tensors[i]
        keep = [v.keep]
        if len(v.shape) == len(spec.shape):
            # The common case: the persistent shape array t points at.
            self._shapes[i][:] = v.shape
            t.shape = ctypes.cast(self._shapes[i],
                                  ctypes.POINTER(ctypes.c_int64))
        else:  # the library reports the mismatch; point at a fresh one
            shape = (ctypes.c_int64 * max(len(v.shape), 1))(*v.shape)
            keep.append(shape)
            t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.data, t.dtype, t.device = v.ptr, v.dtype, v.device
        t.rank, t.stream = len(v.shape), v.stream
        if v.device_index is not None:
            # A torch CUDA tensor (the only view with a device index): later
            # calls with one like it take the fast path.
            if self._raw_stream is None:
                self._raw_stream = current_stream_query()
            self._fast[i] = [type(x), x.dtype, x.shape, v.device_index,
                             v.ptr, v.stream]
        return keep

    def __call__(self, *inputs, lr=None, wait=True):
        """One training step; returns the loss. `lr` None: the schedule of
        the compile options (lr, warmup). wait=False returns None as soon as
        the step is queued (inputs already consumed); step.last_loss waits
        for it and reads the loss."""
        handle = self._handle
        if handle is None:
            raise ClosedStep("the step is closed")
        keep = self._fill(inputs)
        status = self._run(handle, self._tensors, len(inputs),
                           -1.0 if lr is None else float(lr),
                           self._loss_ref if wait else None)
        if status:
            _check(status)
        del keep
        return self._loss.value if wait else None

    run = __call__

    def evaluate(self, *inputs):
        """The loss at the current parameters; nothing is updated."""
        handle = self._live()
        keep = self._fill(inputs)
        _check(self._lib.llmc_step_evaluate(handle, self._tensors,
                                            len(inputs),
                                            ctypes.byref(self._loss)))
        del keep
        return self._loss.value

    @property
    def last_loss(self):
        """The loss of the last step or evaluate; waits for it."""
        _check(self._lib.llmc_step_last_loss(self._live(), self._loss_ref))
        return self._loss.value

    @property
    def steps_taken(self):
        n = ctypes.c_int64()
        _check(self._lib.llmc_step_steps_taken(self._live(), ctypes.byref(n)))
        return n.value

    @property
    def last_step_ms(self):
        """Milliseconds of the last step: the GPU time of its CUDA graph
        (cuda), or the evaluator's wall time (cpu)."""
        ms = ctypes.c_double()
        _check(self._lib.llmc_step_last_step_ms(self._live(),
                                                ctypes.byref(ms)))
        return ms.value

    # -- parameters ------------------------------------------------------
    def state_dict(self, tensors="numpy"):
        """The parameters by the model's names: float32 numpy arrays, or
        CPU torch tensors with tensors="torch"."""
        handle = self._live()
        out = collections.OrderedDict()
        for spec in self.parameters:
            a = np.empty(spec.shape, dtype=_NUMPY_OF[spec.dtype])
            _check(self._lib.llmc_step_get_parameter(
                handle, spec.name.encode(), a.ctypes.data, a.nbytes))
            out[spec.name] = a
        if tensors == "torch":
            import torch
            return collections.OrderedDict(
                (k, torch.from_numpy(v)) for k, v in out.items())
        if tensors != "numpy":
            raise InvalidArgument("tensors must be 'numpy' or 'torch', got %r"
                                  % (tensors,))
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Writes parameters by name (numpy arrays or torch tensors, CPU or
        CUDA, float32). strict: every parameter must be given. The optimizer
        state and step count are kept."""
        handle = self._live()
        items = list(state_dict.items())
        names = (ctypes.c_char_p * max(len(items), 1))()
        values = (_lib.Tensor * max(len(items), 1))()
        keep = []
        for i, (name, x) in enumerate(items):
            v = view(x, "parameter '%s'" % name)
            shape = (ctypes.c_int64 * max(len(v.shape), 1))(*v.shape)
            keep += [v.keep, shape]
            names[i] = name.encode()
            values[i].data, values[i].dtype = v.ptr, v.dtype
            values[i].device, values[i].rank = v.device, len(v.shape)
            values[i].shape = ctypes.cast(shape,
                                          ctypes.POINTER(ctypes.c_int64))
            values[i].stream = v.stream
        _check(self._lib.llmc_step_load_parameters(handle, names, values,
                                                   len(items), int(strict)))
        del keep

    def __repr__(self):
        return "<llmc.Step %s on %s, %d inputs, %d parameters>" % (
            self.report.get("model"), self.device, len(self.inputs),
            len(self.parameters))


def compile(model, batch=0, seq=0, precision="fp32", device="cpu", **options):
    """Compiles `model` into a training step.

    model: a path (.onnx, .json graph, .mlir, or a .llmc bundle for cuda),
    or a JSON graph as a dict or a string. device: "cpu" (the float64
    reference evaluator), "cuda" or "cuda:N". Other options (docs/jit-api.md):
    arch, cache_dir, padding, seed, dims, optimizer, beta1, beta2, eps, weight_decay,
    momentum, clip_norm, decay_min_rank, lr, warmup.
    """
    lib = library()
    device = str(device)
    opts = dict(options)
    opts.update(batch=int(batch), seq=int(seq), precision=precision)
    if device == "cpu":
        opts["device"] = "cpu"
    elif device == "cuda" or device.startswith("cuda:"):
        opts["device"] = "cuda"
        if ":" in device:
            opts["cuda_device"] = int(device.split(":", 1)[1])
    else:
        raise InvalidArgument("device must be 'cpu', 'cuda' or 'cuda:N', "
                              "got %r" % (device,))
    handle = ctypes.c_void_p()
    text = json.dumps(opts).encode()
    if isinstance(model, dict):
        _check(lib.llmc_compile_json_graph(json.dumps(model).encode(), text,
                                           ctypes.byref(handle)))
    elif isinstance(model, str) and model.lstrip().startswith("{"):
        _check(lib.llmc_compile_json_graph(model.encode(), text,
                                           ctypes.byref(handle)))
    else:
        _check(lib.llmc_compile(os.fsencode(model), text,
                                ctypes.byref(handle)))
    return Step(handle, device)
