"""Sharded EmbCache on 2 npu ranks (device caches in npu memory): a checkpoint saved in the
background while the ranks train on, and a resume with the caches' contents, gives the same
outputs, hits and swaps as the uninterrupted run (embcache_sharded_resume.py says what each
rank checks). The same checks run on CPU ranks in tests/embcache/test_sharded_resume.py."""

from __future__ import annotations

from pathlib import Path

import embcache_sharded_resume as resume
import npu_dist
import pytest


@pytest.mark.requires_npu
def test_background_save_and_cache_restore_on_npu(tmp_path: Path) -> None:
    npu_dist.spawn_ranks(resume.run_resume, 2, "npu", str(tmp_path), "npu")
