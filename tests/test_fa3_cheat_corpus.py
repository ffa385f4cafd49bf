"""The fa3_hopper red-team corpus is what ``scripts/make_fa3_cheats.py`` writes: the plain
attention block all cheats share has one source."""

import subprocess
import sys

from tests.helpers import ROOT


def test_committed_corpus_matches_its_generator():
    proc = subprocess.run([sys.executable, "scripts/make_fa3_cheats.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_corpus_is_44_documented_cheats_and_one_honest_kernel():
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "make_fa3_cheats.py"))
    files = script["corpus"]()
    assert len(files) == 45 and "honest_split_kv.cu" in files
    assert all(text.startswith("// Cheat: ") for name, text in files.items()
               if name != "honest_split_kv.cu")
