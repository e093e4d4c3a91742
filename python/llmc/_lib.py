"""ctypes declarations of include/llmc/llmc.h, and finding libllmc.so.

The library is looked for, in order: $LLMC_LIBRARY (a path to the file),
next to this package (llmc/libllmc.so), and the build tree of a source
checkout (build/lib/libllmc.so above python/). Nothing is compiled on
install: this package is pure Python.
"""
import ctypes
import os

LLMC_OK = 0
LLMC_ERROR_INVALID_ARGUMENT = 1
LLMC_ERROR_BAD_HANDLE = 2
LLMC_ERROR_COMPILE = 3
LLMC_ERROR_RUNTIME = 4
LLMC_ERROR_INTERNAL = 5

LLMC_F32, LLMC_F16, LLMC_BF16, LLMC_I32, LLMC_I64, LLMC_U8 = range(6)
LLMC_CPU, LLMC_CUDA = 0, 1
LLMC_NO_STREAM = ctypes.c_size_t(-1).value  # UINTPTR_MAX

DTYPE_NAMES = {LLMC_F32: "f32", LLMC_F16: "f16", LLMC_BF16: "bf16",
               LLMC_I32: "i32", LLMC_I64: "i64", LLMC_U8: "u8"}

ABI_VERSION = 1


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int32),
                ("device", ctypes.c_int32),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("stream", ctypes.c_size_t)]


class LibraryNotFound(ImportError):
    pass


def _candidates():
    env = os.environ.get("LLMC_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "libllmc.so"),
            os.path.join(here, "..", "..", "build", "lib", "libllmc.so")]


def _declare(lib):
    step_p = ctypes.c_void_p
    status = ctypes.c_int
    c = ctypes
    sig = {
        "llmc_version": (c.c_char_p, []),
        "llmc_abi_version": (c.c_int, []),
        "llmc_last_error": (c.c_char_p, []),
        "llmc_compile": (status, [c.c_char_p, c.c_char_p, c.POINTER(step_p)]),
        "llmc_compile_json_graph": (status, [c.c_char_p, c.c_char_p,
                                             c.POINTER(step_p)]),
        "llmc_step_destroy": (status, [step_p]),
        "llmc_step_run": (status, [step_p, c.POINTER(Tensor), c.c_size_t,
                                   c.c_double, c.POINTER(c.c_double)]),
        "llmc_step_last_loss": (status, [step_p, c.POINTER(c.c_double)]),
        "llmc_step_evaluate": (status, [step_p, c.POINTER(Tensor), c.c_size_t,
                                        c.POINTER(c.c_double)]),
        "llmc_step_num_inputs": (status, [step_p, c.POINTER(c.c_size_t)]),
        "llmc_step_input_info": (status, [step_p, c.c_size_t,
                                          c.POINTER(c.c_char_p),
                                          c.POINTER(c.c_int32),
                                          c.POINTER(c.c_int32),
                                          c.POINTER(c.c_int64), c.c_int32]),
        "llmc_step_num_parameters": (status, [step_p, c.POINTER(c.c_size_t)]),
        "llmc_step_parameter_info": (status, [step_p, c.c_size_t,
                                              c.POINTER(c.c_char_p),
                                              c.POINTER(c.c_int32),
                                              c.POINTER(c.c_int32),
                                              c.POINTER(c.c_int64),
                                              c.c_int32]),
        "llmc_step_get_parameter": (status, [step_p, c.c_char_p, c.c_void_p,
                                             c.c_size_t]),
        "llmc_step_load_parameters": (status, [step_p,
                                               c.POINTER(c.c_char_p),
                                               c.POINTER(Tensor), c.c_size_t,
                                               c.c_int]),
        "llmc_step_steps_taken": (status, [step_p, c.POINTER(c.c_int64)]),
        "llmc_step_last_step_ms": (status, [step_p, c.POINTER(c.c_double)]),
        "llmc_step_report_json": (status, [step_p, c.POINTER(c.c_char_p)]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load():
    tried = []
    for path in _candidates():
        path = os.path.normpath(path)
        if not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        _declare(lib)
        if lib.llmc_abi_version() != ABI_VERSION:
            raise LibraryNotFound(
                "%s implements llmc ABI %d, this package speaks %d: use the "
                "package and library of one build"
                % (path, lib.llmc_abi_version(), ABI_VERSION))
        return lib, path
    raise LibraryNotFound(
        "libllmc.so not found; tried: " + "; ".join(tried) +
        ". Build it (ninja -C build libllmc) or set LLMC_LIBRARY to its path")
