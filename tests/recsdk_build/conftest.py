from __future__ import annotations

from pathlib import Path

import pytest

from recsdk_build import bundle
from recsdk_build.config import Project
from recsdk_build.pipeline.manifest import Manifest


@pytest.fixture(autouse=True)
def _hand_written_records_are_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """fakebuild (and a few tests) write stage records by hand: a made-up fingerprint, no
    per-input digests, no outputs the stages' inputs could be computed from. dist's input
    check passes over exactly those records; every record the pipeline wrote has per-input
    digests and is checked as in use (test_dist_fingerprints)."""
    real = bundle._check_inputs

    def check(project: Project, root: Path, manifest: Manifest, names: list[str]) -> None:
        made = [n for n in names if n in manifest.stages and manifest.stages[n].inputs]
        real(project, root, manifest, made)

    monkeypatch.setattr(bundle, "_check_inputs", check)
