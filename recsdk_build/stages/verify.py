"""verify: install the artifacts into a fresh virtual environment and run ``verify/``.

The environment lives under the build directory, separate from the tool's own Python. Its
pinned runtime layer (torch, fbgemm-gpu-cpu, …) is kept between runs while the pins are
unchanged, because installing it is the slowest step (about 3 GB); our wheels are reinstalled
every time, and ``--fresh-env`` rebuilds it from nothing. Results are JUnit XML plus a summary
in the manifest; a test that needs a device the host lacks is reported as not run, with the
reason, never as passed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from recsdk_build.downloads import download_wheel
from recsdk_build.errors import VerifyError
from recsdk_build.hashing import hash_tree
from recsdk_build.interpreters import wheel_misfits
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir, write_text_atomic
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.outputs import PluginOutput, StageOutput, VerifyOutput, WheelsOutput
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.proc import run_pip
from recsdk_build.venvs import ensure_venv, restore_layer, venv_python


@dataclass
class TestSummary:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    not_run: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.errors == 0 and self.passed > 0


def parse_junit(path: Path) -> TestSummary:
    summary = TestSummary()
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            summary.failed += 1
            summary.failures.append({"test": name, "message": _first(failure)})
        elif error is not None:
            summary.errors += 1
            summary.failures.append({"test": name, "message": _first(error)})
        elif skipped is not None:
            summary.not_run += 1
            reason = (skipped.get("message") or skipped.text or "").strip()
            summary.skipped.append({"test": name, "reason": reason})
        else:
            summary.passed += 1
    return summary


def _first(node: ET.Element) -> str:
    text = (node.get("message") or node.text or "").strip()
    return text.splitlines()[0] if text else ""


class VerifyStage(Stage):
    name = "verify"
    summary = "install into a fresh environment and run the verification suite"
    produces = VerifyOutput

    def _requirements(self, ctx: Context) -> list[str]:
        runtime = ctx.project.runtime.requirements() if ctx.project.verify.install_runtime else []
        return [*runtime, *ctx.project.verify.requirements]

    def requires(self, ctx: Context) -> tuple[type[StageOutput], ...]:
        # The wheels of the packaging stages this project runs.
        active = ctx.project.stages
        return tuple(k for k in (PluginOutput, WheelsOutput) if active is None or k.stage in active)

    def _wheels(self, ctx: Context) -> list[Artifact]:
        return [a for k in self.requires(ctx) for a in ctx.artifacts_of(k) if a.kind == "wheel"]

    def inputs(self, ctx: Context) -> dict[str, Any]:
        return {
            "wheels": {a.name: a.sha256 for a in self._wheels(ctx)},
            "requirements": self._requirements(ctx),
            "upstream": ctx.project.torchrec.fallback_wheel,
            "suite": hash_tree(ctx.project.verify.suite),
            "python": ctx.options.python.sys_version,
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        results = ctx.paths.verify / "results"
        return (
            venv_python(ctx.paths.verify / "venv").exists()
            and all(a.intact(ctx.paths.root) for a in record.artifacts)
            and (results / "summary.json").is_file()
        )

    def run(self, ctx: Context) -> Outcome:
        venv = ctx.paths.verify / "venv"
        requirements = self._requirements(ctx)
        log = ctx.require_log()
        python = ctx.options.python
        wheels = self._wheels(ctx)
        misfits = wheel_misfits([a.name for a in wheels], python)
        if misfits:
            raise VerifyError(
                f"--python {python.short}: the built wheels {', '.join(misfits)} are not for "
                f"{python.describe()} ({python.tag}, {python.machine})",
                hint=f"rebuild for it: `recsdk-build all --python {python.short}`",
            )
        reused = ensure_venv(
            venv,
            requirements,
            python=python,
            log=log,
            ui=ctx.ui,
            error=VerifyError,
            fresh=ctx.options.verify.fresh,
            purpose="the verify environment",
        )
        if reused:
            # A reused environment must hold exactly what a fresh one would.
            restore_layer(venv, log, VerifyError)
        with ctx.ui.status(f"installing {len(wheels)} built wheel(s) into the environment"):
            run_pip(
                log,
                venv_python(venv),
                "install",
                "--no-deps",
                "--force-reinstall",
                *[ctx.paths.root / a.path for a in wheels],
                error=VerifyError,
                what="installing the built wheels",
            )
        upstream = self._upstream_wheel(ctx)
        staging = new_staging_dir(ctx.paths.root, "verify")
        pins_file = staging / "pins.json"
        pins_file.write_text(json.dumps(ctx.project.pins_summary(), indent=2), encoding="utf-8")
        junit = staging / "junit.xml"
        env = {
            "RECSDK_PINS": str(pins_file),
            "RECSDK_UPSTREAM_WHEEL": str(upstream),
            "RECSDK_WHEELS": json.dumps([str(ctx.paths.root / a.path) for a in wheels]),
            "PYTHONDONTWRITEBYTECODE": "1",
            # The suite must test the installed artifacts, never this checkout's sources.
            "PYTHONPATH": "",
        }
        with ctx.ui.status("running the verification suite"):
            result = log.run(
                [
                    venv_python(venv),
                    "-m",
                    "pytest",
                    str(ctx.project.verify.suite),
                    "-p",
                    "no:cacheprovider",
                    "-rs",
                    "-q",
                    f"--junitxml={junit}",
                    "-o",
                    "junit_family=xunit2",
                    f"--rootdir={ctx.project.verify.suite}",
                ],
                cwd=staging,
                env=env,
                check=False,
                what="the verification suite",
            )
        if not junit.is_file():
            raise VerifyError(
                f"the verification suite did not run (pytest exit {result.returncode})",
                hint=f"see {log.path}",
            )
        summary = parse_junit(junit)
        freeze = run_pip(
            log,
            venv_python(venv),
            "freeze",
            "--all",
            error=VerifyError,
            what="listing the environment",
        )
        packages = sorted(line for line in freeze.stdout.splitlines() if line.strip())
        write_text_atomic(
            staging / "summary.json", json.dumps(asdict(summary), indent=2, sort_keys=True) + "\n"
        )
        (staging / "environment.txt").write_text("\n".join(packages) + "\n", encoding="utf-8")
        results = ctx.paths.verify / "results"
        replace_dir(staging, results)
        self._report(ctx, summary)
        if not summary.ok:
            listed = "\n".join(f"  {f['test']}: {f['message']}" for f in summary.failures[:10])
            why = listed or "  no test passed"
            raise VerifyError(
                f"verification failed: {summary.passed} passed, {summary.failed} failed, "
                f"{summary.errors} errors\n{why}",
                hint=f"JUnit report: {results / 'junit.xml'}; log: {log.path}",
            )
        return Outcome(
            artifacts=[Artifact.of(ctx.paths.root, results / "junit.xml", kind="report")],
            provenance={
                "environment": str(venv),
                "environment_reused": reused,
                "requirements": requirements,
                "installed": packages,
                "upstream_wheel": upstream.name,
            },
            outputs=VerifyOutput(summary=asdict(summary)),
            note=f"{summary.passed} passed, {summary.not_run} not run",
        )

    def _upstream_wheel(self, ctx: Context) -> Path:
        """The unpatched registry wheel, for suite tests that compare against upstream."""
        dest = ctx.paths.downloads
        dest.mkdir(parents=True, exist_ok=True)
        spec = ctx.project.torchrec.fallback_wheel
        name = Requirement(spec).name
        found = sorted(dest.glob(f"{name}-*.whl"))
        if found:
            return found[-1]
        return download_wheel(
            ctx.require_log(),
            spec,
            dest,
            error=VerifyError,
            why="the unpatched upstream, for comparisons",
        )

    def _report(self, ctx: Context, summary: TestSummary) -> None:
        ctx.ui.info(
            f"  verification: {summary.passed} passed, {summary.failed} failed, "
            f"{summary.errors} errors, {summary.not_run} not run"
        )
        for item in summary.skipped:
            ctx.ui.info(f"    [dim]not run[/dim] {item['test']}: {item['reason']}")
