"""Running real stages on the synthetic project without the CLI."""

from __future__ import annotations

from pathlib import Path

from recsdk_build.config import load_project
from recsdk_build.options import compute_options
from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.pipeline.runner import StageReport, run_stages
from recsdk_build.pipeline.stage import BuildPaths, Context
from recsdk_build.stages.registry import all_stages
from recsdk_build.ui import UI


def context(project: Path, build: Path, **options: object) -> Context:
    return Context(
        load_project(project),
        BuildPaths(build),
        Manifest.load(build),
        UI(),
        compute_options(**options),
    )  # type: ignore[arg-type]


def run(
    project: Path, build: Path, *names: str, force: tuple[str, ...] = (), **options: object
) -> list[StageReport]:
    stages = [s for s in all_stages() if s.name in names]
    return run_stages(context(project, build, **options), stages, set(force))
