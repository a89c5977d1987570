"""env: the pinned build environment that C++ torch extensions are compiled in.

Extensions (the simulated device, the operator adapter, the embedding cache) must be built
against exactly the pinned torch, whose C++ ABI they inherit; the tool's own Python does not
have torch. The environment is created once per set of pins and reused.
"""

from __future__ import annotations

from typing import Any

from recsdk_build.errors import BuildError
from recsdk_build.pipeline.manifest import StageRecord
from recsdk_build.pipeline.outputs import EnvOutput, parse_recorded
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.venvs import ensure_venv, layer_stamp, venv_python

# ninja lets torch's extension builder compile an extension's sources in parallel (MAX_JOBS,
# default: every core), which halves the plugin and wheels stages on a 2-core host.
BUILD_TOOLS = ["setuptools>=68", "wheel", "build>=1.2", "ninja"]


def requirements(ctx: Context) -> list[str]:
    return [*ctx.project.runtime.requirements(), *BUILD_TOOLS]


class EnvStage(Stage):
    name = "env"
    summary = "pinned build environment for C++ torch extensions"
    produces = EnvOutput

    def inputs(self, ctx: Context) -> dict[str, Any]:
        # sys.version of the chosen interpreter: its extension wheels are built for it.
        return {"requirements": requirements(ctx), "python": ctx.options.python.sys_version}

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        python = venv_python(ctx.paths.build_env)
        recorded = parse_recorded(EnvOutput, record.outputs)
        return (
            python.exists()
            and recorded is not None
            and recorded.stamp == layer_stamp(requirements(ctx), ctx.options.python)
        )

    def run(self, ctx: Context) -> Outcome:
        venv = ctx.paths.build_env
        reqs = requirements(ctx)
        python = ctx.options.python
        reused = ensure_venv(
            venv,
            reqs,
            python=python,
            log=ctx.require_log(),
            ui=ctx.ui,
            error=BuildError,
            fresh=ctx.options.env.fresh,
            purpose="the build environment",
            # Builds import torch from here and may cache its bytecode; the verify environment
            # runs with PYTHONDONTWRITEBYTECODE, so it keeps pip's compiled modules.
            byte_compile=False,
        )
        return Outcome(
            provenance={
                "environment": str(venv),
                "requirements": reqs,
                "reused": reused,
                "interpreter": python.to_json(),
            },
            outputs=EnvOutput(
                python=str(venv_python(venv)),
                stamp=layer_stamp(reqs, python),
                interpreter=python.to_json(),
            ),
            note=("reused" if reused else "created") + f" for Python {python.short}",
        )
