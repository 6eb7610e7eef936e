#!/usr/bin/env python3
"""CPU test of harness/tools/pack_binaries.sh in a scratch git repository (no GPU, no build):

    python3 harness/tests/test_pack_binaries.py

Packed binaries unpack byte for byte over deleted ones, through harness/gpu_batch.sh's `unpack`
step too, also where the tree's .git is stale or absent (the files' contents are compared) and
where only docs changed; unpacking is refused, with nothing written, when a listed file changed or
is missing, or a compiled source the pack did not list is there; packing refuses a binary that
does not exist.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(cwd, *args, check=True):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=check)


class PackBinaries(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        d = self.dir
        os.makedirs(os.path.join(d, "harness", "tools"))
        for name in ("harness/tools/pack_binaries.sh", "harness/gpu_batch.sh"):
            shutil.copy2(os.path.join(ROOT, name), os.path.join(d, name))
        with open(os.path.join(d, "source.cpp"), "w") as f:
            f.write("int main() {}\n")
        with open(os.path.join(d, ".gitignore"), "w") as f:
            f.write("/build/\n/.khbin/\n/gpu-logs/\n")
        sh(d, "git", "init", "-q")
        sh(d, "git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
        sh(d, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
        self.binary = os.path.join(d, "build", "harness", "kbit-harness")
        os.makedirs(os.path.dirname(self.binary))
        self.content = os.urandom(100000)
        with open(self.binary, "wb") as f:
            f.write(self.content)
        os.chmod(self.binary, 0o755)
        self.pack = os.path.join(d, "harness", "tools", "pack_binaries.sh")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def unpack(self):
        return sh(self.dir, self.pack, "--unpack", check=False)

    def packed_without_binary(self):
        """Packs, then deletes the binary, as a machine that did not build it has none."""
        sh(self.dir, self.pack)
        os.remove(self.binary)

    def test_unpacks_what_was_packed(self):
        r = sh(self.dir, self.pack)
        self.assertIn("1 binaries", r.stdout)
        os.remove(self.binary)
        r = self.unpack()
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.binary, "rb") as f:
            self.assertEqual(f.read(), self.content)
        self.assertTrue(os.access(self.binary, os.X_OK))

    def test_the_batch_step_unpacks(self):
        self.packed_without_binary()
        logs = os.path.join(self.dir, "logs")
        r = subprocess.run(["bash", "harness/gpu_batch.sh", "unpack"], cwd=self.dir,
                           capture_output=True, text=True,
                           env=dict(os.environ, LOGS=logs, DEST=self.dir))
        self.assertIn("unpacked build/harness/kbit-harness", r.stdout)
        self.assertRegex(r.stdout, r"unpack +rc=0 ")
        with open(self.binary, "rb") as f:
            self.assertEqual(f.read(), self.content)

    def test_a_changed_tracked_file_is_refused(self):
        self.packed_without_binary()
        with open(os.path.join(self.dir, "source.cpp"), "a") as f:
            f.write("// changed\n")
        r = self.unpack()
        self.assertEqual(r.returncode, 3)
        self.assertIn("a listed file differs", r.stderr)
        self.assertFalse(os.path.exists(self.binary))

    def test_a_stale_or_absent_git_and_a_docs_change_unpack(self):
        self.packed_without_binary()
        os.makedirs(os.path.join(self.dir, "docs"))
        with open(os.path.join(self.dir, "docs", "notes.md"), "w") as f:
            f.write("changed after packing\n")
        shutil.rmtree(os.path.join(self.dir, ".git"))
        r = self.unpack()
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.binary, "rb") as f:
            self.assertEqual(f.read(), self.content)

    def test_a_missing_file_or_an_unlisted_source_is_refused(self):
        self.packed_without_binary()
        os.rename(os.path.join(self.dir, "source.cpp"), os.path.join(self.dir, "moved.cpp"))
        r = self.unpack()
        self.assertEqual(r.returncode, 3)
        self.assertIn("listed files missing: source.cpp", r.stderr)
        os.rename(os.path.join(self.dir, "moved.cpp"), os.path.join(self.dir, "source.cpp"))
        os.makedirs(os.path.join(self.dir, "variants"))
        with open(os.path.join(self.dir, "variants", "new_kernel.cu"), "w") as f:
            f.write("// a kernel added after packing\n")
        r = self.unpack()
        self.assertEqual(r.returncode, 3)
        self.assertIn("compiled sources the pack did not list: variants/new_kernel.cu", r.stderr)
        self.assertFalse(os.path.exists(self.binary))

    def test_a_missing_binary_is_not_packed(self):
        r = sh(self.dir, self.pack, "build/none", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("build/none is not an executable file", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, ".khbin", "manifest")))


if __name__ == "__main__":
    unittest.main()
