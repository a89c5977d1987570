from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from recsdk_build.blobs import BlobList, compare, git_blob_id
from recsdk_build.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("data", [b"", b"hello\n", bytes(range(256)) * 10])
def test_blob_id_equals_git_hash_object(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    expected = subprocess.run(
        ["git", "hash-object", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_blob_id(data) == expected


def test_the_pinned_list_loads() -> None:
    blobs = BlobList.load(REPO / "data" / "torchrec-2c5f6ee.blobs")
    assert blobs.tree == "7a480e320984aab46f85597a190c428239df162f"
    assert blobs.entries["LICENSE"][0] == "42d4de6be74435e454fd87936470c884a2f58a3d"
    assert len([p for p in blobs.entries if p.startswith("torchrec/")]) == 476


def test_compare_names_changed_and_foreign_files() -> None:
    pinned = BlobList(
        {"a.py": (git_blob_id(b"a"), "100644"), "b.py": (git_blob_id(b"b"), "100644")}, None
    )
    found = {"a.py": git_blob_id(b"a"), "b.py": git_blob_id(b"B"), "c.py": git_blob_id(b"c")}
    problems = {p.path: p.problem for p in compare(found, pinned)}
    assert set(problems) == {"b.py", "c.py"}
    assert "differs" in problems["b.py"]
    assert "not a file of the pinned commit" in problems["c.py"]


def test_a_malformed_list_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "x.blobs"
    path.write_text("# header\nnot-a-sha 100644 a.py\n")
    with pytest.raises(ConfigError, match=r"x\.blobs:2"):
        BlobList.load(path)
