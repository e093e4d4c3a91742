"""The Python binding on the CPU path (the reference evaluator): numpy only,
torch where installed. Run by ctest (python-api) through run.sh."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import llmc
from llmc import _lib
from llmc._tensors import view

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "test", "models", "tiny_gpt_dynamo_loss_dyn.onnx")
B, T, V = 2, 16, 512

try:
    import torch
except ImportError:
    torch = None


def batch(seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, V, size=B * T + 1, dtype=np.int64)
    return tokens[:-1].reshape(B, T).copy(), tokens[1:].reshape(B, T).copy()


class FakeCudaArray:
    """A device array as CuPy or Numba present it (no memory behind it:
    the CPU step must refuse it before touching the pointer)."""

    def __init__(self, shape, typestr="<i8", strides=None, stream=1):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0xdead0000, False),
            "version": 3, "strides": strides, "stream": stream}


class StepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.step = llmc.compile(TINY, batch=B, seq=T, precision="fp32",
                                device="cpu")

    def fresh(self, **options):
        return llmc.compile(TINY, batch=B, seq=T, device="cpu", **options)

    def test_describes_the_step(self):
        s = self.step
        self.assertEqual([i.name for i in s.inputs], ["idx", "tgt"])
        self.assertEqual(s.inputs[0].dtype, "i64")
        self.assertEqual(s.inputs[0].shape, (B, T))
        self.assertEqual(s.parameters[0].name, "m.wte.weight")
        self.assertEqual(s.parameters[0].shape, (V, 64))
        self.assertEqual(s.report["device"], "cpu")
        self.assertEqual(s.report["vocab"], V)
        self.assertEqual(s.report["phases"], {})  # cuda only
        self.assertEqual(s.report["parameters"],
                         sum(int(np.prod(p.shape)) for p in s.parameters))
        self.assertRegex(llmc.version(), r"^\d+\.\d+\.\d+")
        self.assertIn("2 inputs", repr(s))

    def test_training_lowers_the_loss_and_is_deterministic(self):
        idx, tgt = batch(0)
        a, b = self.fresh(), self.fresh()
        first = a.evaluate(idx, tgt)
        self.assertAlmostEqual(first, np.log(V), delta=0.3)
        losses_a = [a(idx, tgt, lr=3e-3) for _ in range(5)]
        losses_b = [b(idx, tgt, lr=3e-3) for _ in range(5)]
        self.assertEqual(losses_a, losses_b)
        self.assertEqual(losses_a[0], first)
        self.assertLess(a.evaluate(idx, tgt), first - 0.5)
        self.assertEqual(a.steps_taken, 5)

    def test_queued_steps(self):
        idx, tgt = batch(8)
        a, b = self.fresh(), self.fresh()
        self.assertIsNone(a(idx, tgt, lr=1e-3, wait=False))
        self.assertIsNone(a(idx, tgt, lr=1e-3, wait=False))
        b(idx, tgt, lr=1e-3)
        self.assertEqual(a.last_loss, b(idx, tgt, lr=1e-3))
        self.assertEqual(a.steps_taken, 2)
        self.assertEqual(a.evaluate(idx, tgt), a.last_loss)

    def test_schedule_when_no_lr_is_given(self):
        idx, tgt = batch(1)
        a, b = self.fresh(lr=2e-3, warmup=2), self.fresh()
        self.assertEqual([a(idx, tgt) for _ in range(3)],
                         [b(idx, tgt, lr=lr) for lr in (1e-3, 2e-3, 2e-3)])

    def test_evaluate_changes_nothing(self):
        s = self.fresh()
        idx, tgt = batch(2)
        before = s.state_dict()
        self.assertEqual(s.evaluate(idx, tgt), s.evaluate(idx, tgt))
        after = s.state_dict()
        for name in before:
            np.testing.assert_array_equal(before[name], after[name])
        self.assertEqual(s.steps_taken, 0)

    def test_state_dict_round_trip(self):
        s = self.fresh()
        idx, tgt = batch(3)
        sd0 = s.state_dict()
        self.assertEqual(list(sd0), [p.name for p in s.parameters])
        self.assertTrue(all(v.dtype == np.float32 for v in sd0.values()))
        l0 = s.evaluate(idx, tgt)
        s(idx, tgt, lr=1e-2)
        self.assertNotEqual(s.evaluate(idx, tgt), l0)
        s.load_state_dict(sd0)
        self.assertEqual(s.evaluate(idx, tgt), l0)
        # Another step's weights, loaded, give that step's loss (the ONNX
        # file holds the initial weights, so train the other one away).
        other = self.fresh()
        other(*batch(9), lr=1e-2)
        self.assertNotEqual(other.evaluate(idx, tgt), l0)
        other.load_state_dict(s.state_dict())
        self.assertEqual(other.evaluate(idx, tgt), l0)

    def test_partial_and_wrong_state_dicts(self):
        s = self.fresh()
        zeros = {"m.lnf.bias": np.zeros(64, np.float32)}
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "parameter 'm.wte.weight' is missing"):
            s.load_state_dict(zeros)
        s.load_state_dict(zeros, strict=False)
        np.testing.assert_array_equal(s.state_dict()["m.lnf.bias"],
                                      np.zeros(64, np.float32))
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "the model has no parameter 'lnf.bias'"):
            s.load_state_dict({"lnf.bias": np.zeros(64, np.float32)},
                              strict=False)
        with self.assertRaisesRegex(
                llmc.InvalidArgument,
                r"parameter 'm.lnf.bias' is f32\[32\] but the model expects "
                r"f32\[64\]"):
            s.load_state_dict({"m.lnf.bias": np.zeros(32, np.float32)},
                              strict=False)
        with self.assertRaisesRegex(llmc.InvalidArgument, "dtype float64"):
            s.load_state_dict({"m.lnf.bias": np.zeros(64)}, strict=False)
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "'numpy' or 'torch'"):
            s.state_dict(tensors="jax")

    def test_wrong_inputs(self):
        s = self.step
        idx, tgt = batch(4)
        cases = [
            ((idx.astype(np.int32), tgt),
             r"input 'idx' \(#0\) is i32\[2, 16\] but the model expects "
             r"i64\[2, 16\]"),
            ((idx[:, :8], tgt),
             r"input 'idx' \(#0\) is i64\[2, 8\] but the model expects"),
            ((idx,), r"the step takes 2 inputs \(idx i64\[2, 16\], tgt "
                     r"i64\[2, 16\]\), got 1"),
            ((idx.astype(np.float64), tgt), "has dtype float64"),
            ((FakeCudaArray((B, T)), tgt),
             r"input 'idx' \(#0\) is in GPU memory, but this step runs on "
             r"the CPU"),
            ((idx, np.full((B, T), V, np.int64)),
             r"input 'tgt' \(#1\) holds 512 at element 0, but the model's "
             r"vocabulary has 512 entries"),
        ]
        for args, pattern in cases:
            with self.assertRaisesRegex(llmc.InvalidArgument, pattern):
                s(*args, lr=1e-3)
        with self.assertRaisesRegex(llmc.InvalidArgument, "lr is NaN"):
            s(idx, tgt, lr=float("nan"))
        self.assertEqual(s.steps_taken, 0)

    def test_non_contiguous_and_list_inputs(self):
        idx, tgt = batch(5)
        s = self.fresh()
        strided = np.asfortranarray(idx)
        self.assertFalse(strided.flags.c_contiguous)
        self.assertEqual(s.evaluate(strided, tgt.tolist()),
                         s.evaluate(idx, tgt))

    def test_cuda_array_interface_views(self):
        v = view(FakeCudaArray((B, T), stream=None), "x")
        self.assertEqual((v.device, v.dtype, v.shape, v.ptr, v.stream),
                         (_lib.LLMC_CUDA, _lib.LLMC_I64, (B, T), 0xdead0000,
                          _lib.LLMC_NO_STREAM))
        self.assertEqual(view(FakeCudaArray((B, T), stream=12345), "x").stream,
                         12345)
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    r"x is not C-contiguous \(strides"):
            view(FakeCudaArray((B, T), strides=(8, 16)), "x")
        self.assertEqual(view(FakeCudaArray((B, T), strides=(128, 8)),
                              "x").shape, (B, T))
        with self.assertRaisesRegex(llmc.InvalidArgument, "typestr '<f8'"):
            view(FakeCudaArray((B, T), typestr="<f8"), "x")

    def test_dlpack_producers(self):
        class OnlyDLPack:  # a producer that is not a numpy array
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        idx, tgt = batch(7)
        s = self.fresh()
        self.assertEqual(s.evaluate(OnlyDLPack(idx), OnlyDLPack(tgt)),
                         s.evaluate(idx, tgt))
        v = view(OnlyDLPack(np.zeros((3, 4), np.float16)), "x")
        self.assertEqual((v.device, v.dtype, v.shape, v.stream),
                         (_lib.LLMC_CPU, _lib.LLMC_F16, (3, 4),
                          _lib.LLMC_NO_STREAM))
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "DLPack dtype \\(code 2, 64 bits"):
            view(OnlyDLPack(np.zeros(3)), "x")
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "not C-contiguous \\(DLPack strides"):
            view(OnlyDLPack(np.zeros((4, 4), np.float32)[:, ::2]), "x")

    def test_closed_step(self):
        s = self.fresh()
        s.close()
        s.close()
        idx, tgt = batch(0)
        with self.assertRaisesRegex(llmc.ClosedStep, "the step is closed"):
            s(idx, tgt)
        with self.assertRaises(llmc.ClosedStep):
            s.state_dict()
        with self.fresh() as t:
            self.assertEqual(t.steps_taken, 0)
        with self.assertRaises(llmc.ClosedStep):
            t.steps_taken

    def test_json_graph(self):
        llmc_bin = os.path.join(os.path.dirname(llmc.step._lib.load()[1]),
                                "..", "bin", "llmc")
        graph = json.loads(subprocess.run(
            [llmc_bin, "recipe", "gpt2", "--size", "tiny"], check=True,
            capture_output=True, text=True).stdout)
        s = llmc.compile(graph, batch=B, seq=T)
        t = llmc.compile(json.dumps(graph), batch=B, seq=T)
        self.assertEqual(s.report["model"], "<json graph>")
        idx, tgt = batch(6)
        self.assertEqual(t.evaluate(idx, tgt), s.evaluate(idx, tgt))
        self.assertAlmostEqual(s(idx, tgt, lr=1e-3), np.log(V), delta=0.3)

    def test_compile_errors(self):
        with self.assertRaisesRegex(llmc.CompileError,
                                    "cannot read '/nonexistent.onnx'"):
            llmc.compile("/nonexistent.onnx")
        bad = {"format": "llmc-graph", "version": 1,
               "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
               "nodes": [{"op": "frobnicate", "inputs": ["x"],
                          "outputs": ["y"]}],
               "outputs": ["y"]}
        with self.assertRaisesRegex(llmc.CompileError, "frobnicate"):
            llmc.compile(bad)
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "unknown option 'betas'"):
            llmc.compile(TINY, batch=B, seq=T, betas=(0.9, 0.95))
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    "device must be 'cpu', 'cuda'"):
            llmc.compile(TINY, device="tpu")
        with self.assertRaisesRegex(llmc.CompileError,
                                    "precision 'fp4' is not one of"):
            llmc.compile(TINY, precision="fp4")

    def test_missing_library_is_a_clear_error(self):
        env = dict(os.environ, LLMC_LIBRARY="/nonexistent/libllmc.so")
        out = subprocess.run(
            [sys.executable, "-c", "import llmc; llmc.version()"], env=env,
            capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("libllmc.so not found; tried: /nonexistent/libllmc.so "
                      "(missing)", out.stderr)


@unittest.skipIf(torch is None, "torch is not installed (numpy-only run)")
class TorchTest(unittest.TestCase):
    def test_torch_tensors_and_state_dict(self):
        s = llmc.compile(TINY, batch=B, seq=T)
        idx, tgt = batch(0)
        ti, tt = torch.from_numpy(idx), torch.from_numpy(tgt)
        self.assertEqual(s.evaluate(ti, tt), s.evaluate(idx, tgt))
        sd = s.state_dict(tensors="torch")
        self.assertIsInstance(sd["m.wte.weight"], torch.Tensor)
        s(ti, tt, lr=1e-2)
        s.load_state_dict(sd)
        self.assertEqual(s.evaluate(ti, tt), s.evaluate(idx, tgt))
        with self.assertRaisesRegex(llmc.InvalidArgument, "not contiguous"):
            s(ti.t().contiguous().t(), tt)


if __name__ == "__main__":
    unittest.main()
