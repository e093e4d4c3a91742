"""llmc: compile a transformer's training step once, call it from your loop.

    import llmc
    step = llmc.compile("model.onnx", batch=16, seq=1024, precision="bf16",
                        device="cuda")
    for idx, tgt in batches:
        loss = step(idx, tgt, lr=3e-4)   # forward, backward, AdamW

Pure Python over libllmc.so (include/llmc/llmc.h) with ctypes; see
docs/jit-api.md.
"""
from .errors import ClosedStep, CompileError, Error, InvalidArgument
from .step import Step, TensorSpec, compile, library

__all__ = ["compile", "Step", "TensorSpec", "Error", "InvalidArgument",
           "CompileError", "ClosedStep", "version"]


def version():
    """The version of the loaded libllmc.so."""
    return library().llmc_version().decode()
