from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.synthetic import Upstream, make_project, make_upstream


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
