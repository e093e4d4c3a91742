# -*- Python -*-
# lit configuration for llmc's IR regression tests.
import os

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "LLMC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
# Frontend tests are the model files themselves, with the RUN line inside.
config.suffixes = [".mlir", ".json", ".onnxtext", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llmc_obj_root, "test", "lit")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%models", os.path.join(config.llmc_src_root, "test", "models")))
# ONNX fixtures are checked in as text (Inputs/*.textproto) and encoded with
# protoc in the RUN line: `%onnx-encode < %S/Inputs/x.textproto > %t.onnx`.
config.substitutions.append(
    ("%onnx-encode",
     "%s --encode=onnx.ModelProto -I%s %s" % (
         config.protoc, os.path.dirname(config.onnx_proto),
         os.path.basename(config.onnx_proto))))
# Test data of ONNX's backend cases (input_0.pb) is a bare TensorProto.
config.substitutions.append(
    ("%onnx-tensor-encode",
     "%s --encode=onnx.TensorProto -I%s %s" % (
         config.protoc, os.path.dirname(config.onnx_proto),
         os.path.basename(config.onnx_proto))))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# `not` at the start of a RUN line is found through PATH (the default
# substitutions only rewrite `| not`).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# GPU tests carry `REQUIRES: cuda`; without a GPU lit reports them as
# UNSUPPORTED, and says why once here.
def _have_gpu():
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20)
        return out.returncode == 0 and b"GPU" in out.stdout
    except Exception:
        return False

if _have_gpu():
    config.available_features.add("cuda")
else:
    lit_config.note("no NVIDIA GPU found: tests that REQUIRE cuda are skipped")

tool_dirs = [config.llmc_tools_dir, config.llvm_tools_dir]
tools = ["llmc-opt", "llmc", "llmc-onnx-conformance", "not", "count", "split-file"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
