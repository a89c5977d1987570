"""Sharded checkpoints in the background and with the device caches' contents, on CPU gloo
ranks (verify/lib/embcache_sharded_resume.py says what each rank checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torchrec")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify" / "lib"))
import embcache_sharded_resume as resume
import npu_dist


def test_background_save_and_cache_restore_resume_exactly(tmp_path: Path) -> None:
    npu_dist.spawn_ranks(resume.run_resume, 2, "cpu", str(tmp_path), "cpu")


def test_a_resharded_load_restores_each_ranks_own_cached_rows(tmp_path: Path) -> None:
    npu_dist.spawn_ranks(resume.run_resume, 2, "cpu", str(tmp_path), "cpu")
    npu_dist.spawn_ranks(resume.run_reshard_cache, 3, "cpu", str(tmp_path), "cpu")
