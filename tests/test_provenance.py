"""The source digest names the harness code that ran, independent of git."""

from evals.harness.verdict.provenance import source_sha256


def test_source_digest_moves_with_any_source_file_and_ignores_bytecode(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "suite.json").write_text("{}")
    first = source_sha256(tmp_path / "pkg")
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert source_sha256(tmp_path / "pkg") == first
    (tmp_path / "pkg" / "suite.json").write_text("{ }")
    second = source_sha256(tmp_path / "pkg")
    assert second != first
    (tmp_path / "pkg" / "suite.json").rename(tmp_path / "pkg" / "other.json")
    assert source_sha256(tmp_path / "pkg") not in {first, second}  # names count too
