"""plugin: the torch-side packages for the resolved target.

sim: the simulated ``npu`` device (``npu_sim``) and the operator adapter ``fbgemm_npu_api``
running the ops stage's sim libraries, both ``+sim`` wheels, plus a build check of the adapter's
npu variant against torch_npu (recorded in the provenance, not an artifact). cann: the adapter's
npu variant with the ops stage's operator packages bundled. See recsdk_build/targets.
"""

from __future__ import annotations

from typing import Any

from recsdk_build.extbuild import package_digest
from recsdk_build.ops import catalogue, codegen
from recsdk_build.pipeline.manifest import StageRecord
from recsdk_build.pipeline.outputs import EnvOutput, OpsOutput, PluginOutput
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.targets import adapter, backend
from recsdk_build.targets import cann as cann_target
from recsdk_build.targets import sim as sim_target


class PluginStage(Stage):
    name = "plugin"
    summary = "torch device and adapter packages for the target"
    needs = (EnvOutput, OpsOutput)
    produces = PluginOutput
    # The adapter's glue and aclnn declarations come from the generator: a changed generator
    # rebuilds the adapter (what it generates from the catalogue is hashed too, see inputs()).
    helpers = (codegen, catalogue, adapter, sim_target, cann_target)

    def inputs(self, ctx: Context) -> dict[str, Any]:
        root = ctx.project.root
        return {
            "target": ctx.options.plugin.target.target.value,
            "env": ctx.output(EnvOutput).stamp,  # includes the interpreter (--python)
            "python": ctx.options.python.tag,
            "npu_sim": package_digest(root / adapter.NPU_SIM),
            "torch_plugin": package_digest(root / adapter.TORCH_PLUGIN),
            "torch_npu": ctx.project.runtime.torch_npu,  # the npu variant's build check
            "ops": {e.op: e.sha256 for e in ctx.output(OpsOutput).operators},
            "generated": adapter.generated_digest(adapter.operator_catalogue(ctx)),
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return bool(record.artifacts) and all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        return backend(ctx.options.plugin.target.target).build_plugin(ctx)
