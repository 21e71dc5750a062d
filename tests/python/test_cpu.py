"""The `tilec` Python package on a machine without a GPU: loading, specialisation, compiling
for every target, the launch validation and its messages, the command line. Run by
scripts/test.sh after `maturin build` (`python3 -m unittest discover -s tests/python`), from
the repository root; needs no PyTorch (the tensors are __cuda_array_interface__ stand-ins,
whose addresses are never read)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

# The package compiles through the cache of $TILEC_CACHE_DIR: a folder of this run's own.
os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-python-tests-"))

import tilec  # noqa: E402  (after the environment it reads)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOFTMAX = os.path.join(ROOT, "kernels", "softmax.tile")


class FakeTensor:
    """A device array as __cuda_array_interface__ describes one (version 3), each at its own
    256-byte aligned address, 1 GiB apart (the validator refuses overlapping outputs)."""

    next_address = 1 << 40

    def __init__(self, shape, typestr="<f2", strides=None):
        FakeTensor.next_address += 1 << 30
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (FakeTensor.next_address, False), "strides": strides, "version": 3}


class Specialisation(unittest.TestCase):
    def test_compiles_for_every_target_with_the_constants_given(self):
        for arch in ("sm_90a", "sm_103a", "sm_121a"):
            c = tilec.compile(SOFTMAX, arch, T="bf16", BLOCK_N=2048)
            self.assertIn(f".target {arch}", c.ptx)
            self.assertEqual(c.signature["target"], arch)
            self.assertEqual(c.signature["constants"]["T"], "bf16")
            self.assertEqual(c.signature["constants"]["BLOCK_N"], "2048")
            self.assertEqual([p["dtype"] for p in c.signature["params"]], ["bf16", "bf16"])

    def test_the_metadata_is_the_command_lines(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "k.ptx")
            subprocess.run([sys.executable, "-m", "tilec", "compile", SOFTMAX, "--arch", "sm_90a", "-o", out],
                           check=True, capture_output=True, env=dict(os.environ, TILEC_CACHE_DIR=d))
            with open(os.path.join(d, "k.json")) as f:
                cli = json.load(f)
        py = tilec.compile(SOFTMAX, "sm_90a").metadata
        self.assertEqual(cli["signature"], py["signature"])

    def test_a_torch_like_dtype_constant_and_a_string_source(self):
        class FakeDtype:
            def __str__(self):
                return "torch.float32"
        with open(SOFTMAX) as f:
            k = tilec.kernel(f.read(), from_string=True, T=FakeDtype())
        self.assertEqual(k.constants, {"T": "f32"})
        self.assertIn("softmax", k.compile("sm_121a").ptx)

    def test_fast_math_changes_the_code(self):
        plain = tilec.compile(SOFTMAX, "sm_90a", T="f32").ptx
        fast = tilec.compile(SOFTMAX, "sm_90a", T="f32", fast_math=True).ptx
        self.assertNotEqual(plain, fast)


class Errors(unittest.TestCase):
    def test_an_unknown_constant_is_a_compile_error_with_its_span(self):
        with self.assertRaises(tilec.CompileError) as e:
            tilec.compile(SOFTMAX, "sm_90a", NOT_A_CONSTANT=3)
        self.assertIn("NOT_A_CONSTANT", str(e.exception))

    def test_a_missing_file_is_an_error_naming_it(self):
        with self.assertRaises(tilec.TilecError) as e:
            tilec.kernel("kernels/no_such.tile")
        self.assertIn("kernels/no_such.tile", str(e.exception))

    def test_a_source_error_is_rendered_with_code_and_line(self):
        with self.assertRaises(tilec.CompileError) as e:
            tilec.kernel("kernel k(x: tensor<f32, 2>) { let y = exp(z); }", from_string=True).compile("sm_90a")
        self.assertRegex(str(e.exception), r"error\[E\d{4}\]")
        self.assertIn("`z`", str(e.exception))

    def test_an_unknown_arch_lists_the_targets(self):
        with self.assertRaises(tilec.CompileError) as e:
            tilec.compile(SOFTMAX, "sm_80")
        self.assertIn("sm_121a", str(e.exception))

    def test_every_error_is_a_tilec_error(self):
        for cls in (tilec.CompileError, tilec.LaunchError, tilec.DeviceError):
            self.assertTrue(issubclass(cls, tilec.TilecError))


class Validation(unittest.TestCase):
    """The runtime's own validation, without a GPU: the messages are the Rust API's."""

    def setUp(self):
        self.k = tilec.kernel(SOFTMAX, "softmax", T="f16")

    def test_a_good_launch_has_the_signatures_grid(self):
        self.assertEqual(self.k.check(FakeTensor((37, 1000)), FakeTensor((37, 1000))), (37, 1, 1))

    def test_a_wrong_dtype_names_the_argument(self):
        with self.assertRaises(tilec.LaunchError) as e:
            self.k.check(FakeTensor((4, 1000)), FakeTensor((4, 1000), typestr="<f4"))
        self.assertRegex(str(e.exception), r"argument 1 \(`y`\).*f32.*f16|argument 1 \(`y`\).*f16.*f32")

    def test_a_wrong_shape_names_the_extent(self):
        with self.assertRaises(tilec.LaunchError) as e:
            self.k.check(FakeTensor((4, 1000)), FakeTensor((4, 999)))
        self.assertIn("`y`", str(e.exception))
        self.assertIn("N", str(e.exception))

    def test_a_requirement_is_quoted(self):
        with self.assertRaises(tilec.LaunchError) as e:
            self.k.check(FakeTensor((4, 2000)), FakeTensor((4, 2000)))
        self.assertIn("N <= BLOCK_N", str(e.exception))

    def test_an_output_overlapping_an_input_is_refused(self):
        x = FakeTensor((4, 1000))
        with self.assertRaises(tilec.LaunchError) as e:
            self.k.check(x, x)
        self.assertIn("overlaps argument 0 (`x`)", str(e.exception))

    def test_the_argument_count(self):
        with self.assertRaises(tilec.LaunchError) as e:
            self.k.check(FakeTensor((4, 1000)))
        self.assertIn("takes 2 arguments, 1 given", str(e.exception))

    def test_strides_in_bytes_and_an_unaligned_view(self):
        # Every other column: byte strides (4000, 4) on f16, served by the scalar variant.
        self.k.check(FakeTensor((4, 500), strides=(4000, 4)), FakeTensor((4, 500)))

    def test_a_scalar_out_of_range_and_a_non_tensor(self):
        rms = tilec.kernel(os.path.join(ROOT, "kernels", "rmsnorm.tile"), "rmsnorm", T="f16")
        self.assertEqual(rms.check(FakeTensor((8, 4096)), FakeTensor((4096,)), FakeTensor((8, 4096)), 1e-6),
                         (8, 1, 1))
        with self.assertRaises(tilec.LaunchError) as e:
            rms.check(FakeTensor((8, 4096)), FakeTensor((4096,)), FakeTensor((8, 4096)), "eps")
        self.assertIn("argument 3", str(e.exception))
        with self.assertRaises(tilec.LaunchError) as e:
            rms.check(FakeTensor((8, 4096)), FakeTensor((4096,)), FakeTensor((8, 4096), typestr="<c8"), 1e-6)
        self.assertIn("argument 2", str(e.exception))

    def test_no_gpu_is_a_device_error_not_a_crash(self):
        if os.path.exists("/dev/nvidia0"):
            self.skipTest("this machine has a GPU")
        with self.assertRaises(tilec.DeviceError) as e:
            self.k(FakeTensor((4, 1000)), FakeTensor((4, 1000)))
        self.assertIn("driver", str(e.exception))


class Docs(unittest.TestCase):
    def test_the_python_blocks_of_the_guide_compile_and_use_the_packages_names(self):
        # Run on the H100 by tests/gpu/test_torch.py; here: they parse, and every `tilec.NAME`
        # they use exists.
        import re
        with open(os.path.join(ROOT, "docs", "python.md")) as f:
            blocks = [b.split("```")[0] for b in f.read().split("```python\n")[1:]]
        self.assertGreaterEqual(len(blocks), 3)
        for i, code in enumerate(blocks):
            compile(code, f"docs/python.md block {i + 1}", "exec")
            for name in re.findall(r"tilec\.(\w+)", code):
                self.assertTrue(hasattr(tilec, name), f"block {i + 1} uses tilec.{name}")


class CommandLine(unittest.TestCase):
    def test_the_package_carries_the_command_line(self):
        r = subprocess.run([sys.executable, "-m", "tilec", "explain", "E0010"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("E0010", r.stdout)
        r = subprocess.run([sys.executable, "-m", "tilec", "compile", "no_such.tile"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        r = subprocess.run([sys.executable, "-m", "tilec", "--version"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn(tilec.__version__, r.stdout)

    def test_the_cache_folder_is_the_command_lines(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-c", "import tilec; print(tilec.cache_dir())"], capture_output=True,
                               text=True, env=dict(os.environ, TILEC_CACHE_DIR=d))
            self.assertEqual(r.stdout.strip(), d)


if __name__ == "__main__":
    unittest.main()
