"""Step._fill's fast path for torch CUDA tensors, without torch or a GPU: a
stand-in `torch` module whose tensors claim to be on cuda:0. The fast path
(a call whose tensors match the last call's type, dtype, shape and device)
must leave the llmc_tensor array exactly as the general path would, and
fall back to it on any difference. Run by ctest (python-api)."""
import os
import sys
import types
import unittest

import numpy as np

import llmc
from llmc import _lib

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "test", "models", "tiny_gpt_dynamo_loss_dyn.onnx")
B, T = 2, 16


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


INT64, INT32 = FakeDtype("int64"), FakeDtype("int32")


class FakeTensor:
    """What Step._fill and _tensors._torch_view read of a torch tensor."""
    is_cuda = True

    def __init__(self, ptr, shape=(B, T), dtype=INT64, device=0,
                 contiguous=True):
        self.ptr, self.shape, self.dtype = ptr, tuple(shape), dtype
        self.dev, self.contiguous = device, contiguous
        self.device = types.SimpleNamespace(type="cuda", index=device)

    def is_contiguous(self):
        return self.contiguous

    def get_device(self):
        return self.dev

    def data_ptr(self):
        return self.ptr


class TorchFastPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.step = llmc.compile(TINY, batch=B, seq=T, device="cpu")

    def setUp(self):
        self.saved = sys.modules.get("torch")
        self.stream = 7
        fake = types.ModuleType("torch")
        fake.Tensor = FakeTensor
        fake._C = types.SimpleNamespace(
            _cuda_getCurrentRawStream=lambda index: self.stream)
        sys.modules["torch"] = fake
        s = self.step
        s._fast, s._raw_stream = [None] * len(s._fast), None
        self.general = 0
        general = s._fill_one

        def counting(i, x):
            self.general += 1
            return general(i, x)
        s._fill_one = counting

    def tearDown(self):
        del self.step._fill_one
        if self.saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = self.saved

    def fields(self, i):
        t = self.step._tensors[i]
        return (t.data, t.dtype, t.device, t.rank,
                tuple(t.shape[d] for d in range(t.rank)), t.stream)

    def test_a_repeated_call_takes_the_fast_path(self):
        s = self.step
        s._fill((FakeTensor(0x1000), FakeTensor(0x2000)))
        self.assertEqual(self.general, 2)
        want = (0x1000, _lib.LLMC_I64, _lib.LLMC_CUDA, 2, (B, T), 7)
        self.assertEqual(self.fields(0), want)
        # Same tensors: nothing through the general path.
        s._fill((FakeTensor(0x1000), FakeTensor(0x2000)))
        self.assertEqual(self.general, 2)
        self.assertEqual(self.fields(0), want)
        # New pointers and a new current stream are picked up.
        self.stream = 9
        s._fill((FakeTensor(0x3000), FakeTensor(0x4000)))
        self.assertEqual(self.general, 2)
        self.assertEqual(self.fields(0),
                         (0x3000, _lib.LLMC_I64, _lib.LLMC_CUDA, 2, (B, T), 9))
        self.assertEqual(self.fields(1)[0], 0x4000)

    def test_any_difference_takes_the_general_path(self):
        s = self.step
        s._fill((FakeTensor(0x1000), FakeTensor(0x2000)))
        s._fill((FakeTensor(0x1000, dtype=INT32), FakeTensor(0x2000)))
        self.assertEqual(self.general, 3)
        self.assertEqual(self.fields(0)[1], _lib.LLMC_I32)
        s._fill((FakeTensor(0x1000, shape=(B, 8)), FakeTensor(0x2000)))
        self.assertEqual(self.general, 4)
        self.assertEqual(self.fields(0)[4], (B, 8))
        with self.assertRaisesRegex(llmc.InvalidArgument, "not contiguous"):
            s._fill((FakeTensor(0x1000, shape=(B, 8), contiguous=False),
                     FakeTensor(0x2000)))
        idx = np.zeros((B, T), np.int64)
        s._fill((idx, FakeTensor(0x2000)))
        self.assertEqual(self.fields(0)[2], _lib.LLMC_CPU)
        self.assertEqual(self.fields(0)[5], _lib.LLMC_NO_STREAM)
        before = self.general
        s._fill((FakeTensor(0x1000), FakeTensor(0x2000)))
        self.assertEqual(self.general, before + 1, "after a numpy input, "
                         "the first torch tensor again takes the general "
                         "path")
        self.assertEqual(self.fields(0),
                         (0x1000, _lib.LLMC_I64, _lib.LLMC_CUDA, 2, (B, T), 7))

    def test_a_rank_mismatch_leaves_no_stale_shape(self):
        s = self.step
        s._fill((FakeTensor(0x1000, shape=(B, T, 1)), FakeTensor(0x2000)))
        self.assertEqual(self.fields(0)[3:5], (3, (B, T, 1)))
        s._fill((FakeTensor(0x1000), FakeTensor(0x2000)))
        self.assertEqual(self.fields(0)[3:5], (2, (B, T)))

    def test_the_library_sees_the_fast_paths_fields(self):
        s = self.step
        for _ in range(2):  # general path, then fast path
            with self.assertRaisesRegex(
                    llmc.InvalidArgument,
                    r"input 'idx' \(#0\) is in GPU memory, but this step "
                    r"runs on the CPU"):
                s(FakeTensor(0x1000), FakeTensor(0x2000), lr=1e-3)
        self.assertEqual(self.general, 2)
        with self.assertRaisesRegex(llmc.InvalidArgument,
                                    r"input 'idx' \(#0\) is i64\[2, 8\]"):
            s(FakeTensor(0x1000, shape=(B, 8)), FakeTensor(0x2000))
        self.assertEqual(s.steps_taken, 0)


if __name__ == "__main__":
    unittest.main()
