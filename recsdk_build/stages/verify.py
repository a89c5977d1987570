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

from recsdk_build.config import Project
from recsdk_build.coverage import DATA_FILE as COVERAGE_DATA
from recsdk_build.downloads import download_wheel
from recsdk_build.errors import VerifyError
from recsdk_build.hashing import hash_tree, sha256_file, sha256_text
from recsdk_build.interpreters import Interpreter, wheel_misfits
from recsdk_build.lock import LOCK, make_lock, render
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir, write_text_atomic
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.outputs import PluginOutput, StageOutput, VerifyOutput, WheelsOutput
from recsdk_build.pipeline.stage import BuildPaths, Context, Outcome, Stage
from recsdk_build.proc import StageLog, run_pip
from recsdk_build.ui import UI
from recsdk_build.venvs import ensure_venv, install_report, restore_layer, venv_python


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
        # The suite reads the coverage data beside it (which operators must run on npu).
        coverage = ctx.project.verify.suite.parent / COVERAGE_DATA
        return {
            "wheels": {a.name: a.sha256 for a in self._wheels(ctx)},
            "requirements": self._requirements(ctx),
            "upstream": ctx.project.torchrec.fallback_wheel,
            "suite": hash_tree(ctx.project.verify.suite),
            "coverage": sha256_file(coverage) if coverage.is_file() else None,
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
        upstream = upstream_wheel(ctx.project, ctx.paths.downloads, log)
        staging = new_staging_dir(ctx.paths.root, "verify")
        summary, packages = run_suite(
            log,
            venv_python(venv),
            ctx.project,
            staging=staging,
            pins=ctx.project.pins_summary(),
            upstream=upstream,
            wheels=[str(ctx.paths.root / a.path) for a in wheels],
        )
        if summary.ok:
            # What passed, locked with hashes: dist ships it, install installs exactly it.
            roots = ctx.project.runtime.requirements() if ctx.project.verify.install_runtime else []
            with ctx.ui.status("locking the verified runtime (sha256 of what pip installed)"):
                locked = make_lock(
                    log,
                    venv_python(venv),
                    roots,
                    staging,
                    VerifyError,
                    cache=ctx.paths.verify / "lock-hashes.json",
                    report=install_report(venv),
                )
            (staging / LOCK).write_text(render(locked), encoding="utf-8")
        results = ctx.paths.verify / "results"
        replace_dir(staging, results)
        report(ctx.ui, summary)
        if not summary.ok:
            raise failure(summary, results, log)
        return Outcome(
            artifacts=[
                Artifact.of(ctx.paths.root, results / name, kind="report")
                for name in ("junit.xml", LOCK, "environment.txt")
            ],
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


def report(ui: UI, summary: TestSummary) -> None:
    ui.info(
        f"  verification: {summary.passed} passed, {summary.failed} failed, "
        f"{summary.errors} errors, {summary.not_run} not run"
    )
    for item in summary.skipped:
        ui.info(f"    [dim]not run[/dim] {item['test']}: {item['reason']}")


def upstream_wheel(project: Project, downloads: Path, log: StageLog) -> Path:
    """The unpatched registry wheel, for suite tests that compare against upstream."""
    downloads.mkdir(parents=True, exist_ok=True)
    spec = project.torchrec.fallback_wheel
    name = Requirement(spec).name
    found = sorted(downloads.glob(f"{name}-*.whl"))
    if found:
        return found[-1]
    return download_wheel(
        log, spec, downloads, error=VerifyError, why="the unpatched upstream, for comparisons"
    )


def run_suite(
    log: StageLog,
    python: str | Path,
    project: Project,
    *,
    staging: Path,
    pins: dict[str, Any],
    upstream: Path,
    wheels: list[str],
    pythonpath: str = "",
) -> tuple[TestSummary, list[str]]:
    """Run ``verify/`` with ``python``; junit.xml, summary.json and environment.txt go to
    ``staging``. Returns the summary and the environment's packages."""
    pins_file = staging / "pins.json"
    pins_file.write_text(json.dumps(pins, indent=2), encoding="utf-8")
    junit = staging / "junit.xml"
    suite = project.verify.suite
    env = {
        "RECSDK_PINS": str(pins_file),
        "RECSDK_UPSTREAM_WHEEL": str(upstream),
        "RECSDK_WHEELS": json.dumps(wheels),
        "PYTHONDONTWRITEBYTECODE": "1",
        # The suite must test the installed artifacts, never this checkout's sources: only
        # the suite's own tools, when they are kept outside the environment under test.
        "PYTHONPATH": pythonpath,
    }
    with log.ui.status("running the verification suite"):
        result = log.run(
            [
                python,
                "-m",
                "pytest",
                str(suite),
                "-p",
                "no:cacheprovider",
                "-rs",
                "-q",
                f"--junitxml={junit}",
                "-o",
                "junit_family=xunit2",
                f"--rootdir={suite}",
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
        log, python, "freeze", "--all", error=VerifyError, what="listing the environment"
    )
    packages = sorted(line for line in freeze.stdout.splitlines() if line.strip())
    write_text_atomic(
        staging / "summary.json", json.dumps(asdict(summary), indent=2, sort_keys=True) + "\n"
    )
    (staging / "environment.txt").write_text("\n".join(packages) + "\n", encoding="utf-8")
    return summary, packages


def failure(summary: TestSummary, results: Path, log: StageLog) -> VerifyError:
    listed = "\n".join(f"  {f['test']}: {f['message']}" for f in summary.failures[:10])
    why = listed or "  no test passed"
    return VerifyError(
        f"verification failed: {summary.passed} passed, {summary.failed} failed, "
        f"{summary.errors} errors\n{why}",
        hint=f"JUnit report: {results / 'junit.xml'}; log: {log.path}",
    )


def installed_results(paths: BuildPaths, python: Interpreter) -> Path:
    """Where the results of verifying an installed environment go: one directory per
    environment (two environments of one Python do not overwrite each other's)."""
    return paths.verify / f"installed-{python.tag}-{sha256_text(python.prefix)[:12]}"


def verify_installed(
    project: Project, paths: BuildPaths, ui: UI, python: Interpreter, record: dict[str, Any]
) -> TestSummary:
    """Run the suite in the environment `recsdk-build install` installed into, as it is.

    The suite's own tools (pytest, hypothesis) go into a directory of the build directory on
    PYTHONPATH, never into the environment under test."""
    manifest = record["manifest"]
    try:
        pins = dict(manifest["pins"])
        wheels = [
            str(w) for w in (*manifest["install"]["torchrec"], *manifest["install"]["wheels"])
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise VerifyError(
            f"the install record of {python.path} is malformed (no {exc})",
            hint="install the bundle again with `recsdk-build install`",
        ) from None
    where = installed_results(paths, python)
    log = StageLog(paths.logs / "verify-installed.log", ui)
    try:
        tools = where / "tools"
        wanted = {"requirements": list(project.verify.requirements), "python": python.sys_version}
        marker = tools / ".recsdk-tools.json"
        if not marker.is_file() or json.loads(marker.read_text(encoding="utf-8")) != wanted:
            staged = new_staging_dir(paths.root, "verify-tools")
            with ui.status("installing the suite's tools beside the environment"):
                run_pip(
                    log,
                    python.path,
                    "install",
                    "--target",
                    staged,
                    *project.verify.requirements,
                    error=VerifyError,
                    what="installing the suite's tools (outside the environment)",
                )
            (staged / marker.name).write_text(json.dumps(wanted), encoding="utf-8")
            replace_dir(staged, tools)
        upstream = upstream_wheel(project, paths.downloads, log)
        staging = new_staging_dir(paths.root, "verify-installed")
        summary, _ = run_suite(
            log,
            python.path,
            project,
            staging=staging,
            pins=pins,
            upstream=upstream,
            wheels=wheels,
            pythonpath=str(tools),
        )
        results = where / "results"
        replace_dir(staging, results)
        ui.info(f"  {record['bundle']} in the environment of {python.path}")
        report(ui, summary)
        if not summary.ok:
            raise failure(summary, results, log)
        return summary
    finally:
        log.close()
