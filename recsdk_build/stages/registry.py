"""The ordered stage list that `recsdk-build all` runs."""

from __future__ import annotations

from recsdk_build.config import Project
from recsdk_build.errors import UsageError
from recsdk_build.pipeline.stage import Stage
from recsdk_build.stagenames import STAGE_NAMES
from recsdk_build.stages.env import EnvStage
from recsdk_build.stages.fetch import FetchStage
from recsdk_build.stages.ops import OpsStage
from recsdk_build.stages.patch import PatchStage
from recsdk_build.stages.plugin import PluginStage
from recsdk_build.stages.verify import VerifyStage
from recsdk_build.stages.wheels import WheelsStage


def all_stages() -> list[Stage]:
    stages: list[Stage] = [
        FetchStage(),
        PatchStage(),
        OpsStage(),
        EnvStage(),
        PluginStage(),
        WheelsStage(),
        VerifyStage(),
    ]
    assert tuple(s.name for s in stages) == STAGE_NAMES, "stagenames.py is out of date"
    return stages


def stage_names() -> list[str]:
    return list(STAGE_NAMES)


def project_stages(project: Project) -> list[Stage]:
    """The stages `all` runs for ``project`` (its [pipeline] stages, else every stage)."""
    stages = all_stages()
    if project.stages is None:
        return stages
    return [s for s in stages if s.name in project.stages]


def resolve(names: list[str], *, option: str) -> set[str]:
    """Validate stage names given on the command line ("all" means every stage)."""
    valid = stage_names()
    chosen: set[str] = set()
    for name in names:
        if name == "all":
            chosen.update(valid)
        elif name in valid:
            chosen.add(name)
        else:
            raise UsageError(
                f"{option} {name}: no such stage; the stages are {', '.join(valid)} (or all)"
            )
    return chosen
