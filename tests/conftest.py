from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.synthetic import Upstream, make_project, make_upstream


def _one_thread_per_rank() -> None:
    """Ranks spawned by a test share this host's cores: each gets one intra-op thread, as
    torchrun sets for several processes per node (OMP_NUM_THREADS=1, inherited at spawn);
    two ranks of torch's default one thread per core would oversubscribe the cores. This
    process keeps every core for the single-process tests. A value the caller set is left
    alone."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch
    except ImportError:  # nothing to spawn ranks with
        return
    torch.set_num_threads(os.cpu_count() or 1)


def pytest_configure(config: pytest.Config) -> None:
    _one_thread_per_rank()


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return make_upstream(tmp_path)


@pytest.fixture
def project(tmp_path: Path, upstream: Upstream) -> Path:
    return make_project(tmp_path, upstream)


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def invoke(cli: CliRunner, project: Path, *args: str) -> tuple[int, str]:
    from recsdk_build.cli import app

    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    result = cli.invoke(app, ["--project", str(project), *args], env={**os.environ, **env})
    return result.exit_code, result.output
