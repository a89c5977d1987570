"""A small stand-in for pytorch/torchrec, built by the tests.

It has the shape the pipeline cares about (a package with tests/ that are not shipped, a
LICENSE, build files outside the package), a blob list computed with git itself, a registry
style wheel of it, and a project directory whose recsdk.toml pins it. Nothing needs GitHub.
"""

from __future__ import annotations

import subprocess
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

from recsdk_build.patching import FORMAT_PATCH

UPSTREAM_FILES = {
    "LICENSE": "BSD-3-Clause, synthetic test fixture\n",
    "setup.py": "raise SystemExit('upstream setup.py must not be used by recsdk-build')\n",
    "version.txt": "1.1.0\n",
    "torchrec/__init__.py": textwrap.dedent(
        """\
        try:
            from .version import __version__, github_version  # noqa: F401
        except ImportError:
            pass
        from torchrec.planner import compute_device_types  # noqa: F401
        """
    ),
    "torchrec/planner.py": textwrap.dedent(
        """\
        def compute_device_types():
            return ["cpu", "cuda", "mtia"]


        def hbm_gb(device):
            if device == "cuda":
                return 32
            return 0
        """
    ),
    "torchrec/sparse/__init__.py": "",
    "torchrec/sparse/jagged.py": "def lengths_to_offsets(lengths):\n    out = [0]\n"
    "    for n in lengths:\n        out.append(out[-1] + n)\n    return out\n",
    "torchrec/tests/__init__.py": "",
    "torchrec/tests/test_planner.py": "def test_nothing():\n    pass\n",
    "torchrec/notes/readme.txt": "not a package: no __init__.py\n",
}

NPU_PATCH_DIFF = {
    "torchrec/planner.py": (
        '    return ["cpu", "cuda", "mtia"]\n',
        '    return ["cpu", "cuda", "mtia", "npu"]\n',
    ),
}

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
    "GIT_AUTHOR_DATE": "@1738261401 +0000",
    "GIT_COMMITTER_DATE": "@1738261401 +0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    import os

    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, **(env or {})},
    ).stdout.strip()


@dataclass
class Upstream:
    repo: Path
    commit: str
    blobs: Path
    wheel: Path


def make_upstream(root: Path) -> Upstream:
    repo = root / "upstream"
    repo.mkdir(parents=True)
    for rel, text in UPSTREAM_FILES.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "init", "-q", "-b", "release/v1.1.0")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Update version")
    commit = git(repo, "rev-parse", "HEAD")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    lines = [
        f"# synthetic blobs at commit {commit}",
        "# format: <blob-sha1> <mode> <path>",
        f"# root tree id: {tree}",
    ]
    for line in git(repo, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        mode, _, sha = meta.split()
        lines.append(f"{sha} {mode} {path}")
    blobs = root / "torchrec.blobs"
    blobs.write_text("\n".join(lines) + "\n")
    wheel = make_registry_wheel(repo, root / "wheelhouse")
    return Upstream(repo, commit, blobs, wheel)


def make_registry_wheel(
    repo: Path, out_dir: Path, *, tamper: str | None = None, extra: dict[str, str] | None = None
) -> Path:
    """A wheel laid out like upstream's: package modules, generated version.py, LICENSE in
    .dist-info. ``tamper`` flips one byte of that file; ``extra`` adds files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / "torchrec-1.1.0-py3-none-any.whl"
    shipped = [
        "torchrec/__init__.py",
        "torchrec/planner.py",
        "torchrec/sparse/__init__.py",
        "torchrec/sparse/jagged.py",
    ]
    with zipfile.ZipFile(wheel, "w") as zf:
        for rel in shipped:
            data = (repo / rel).read_bytes()
            if rel == tamper:
                data = data[:5] + bytes([data[5] ^ 0x01]) + data[6:]
            zf.writestr(rel, data)
        zf.writestr("torchrec/version.py", "__version__ = '1.1.0'\n")
        zf.writestr("torchrec-1.1.0.dist-info/LICENSE", (repo / "LICENSE").read_bytes())
        zf.writestr(
            "torchrec-1.1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: torchrec\nVersion: 1.1.0\n",
        )
        zf.writestr(
            "torchrec-1.1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr("torchrec-1.1.0.dist-info/RECORD", "")
        for rel, text in (extra or {}).items():
            zf.writestr(rel, text)
    return wheel


def make_patch(upstream: Upstream, patch_dir: Path, *, broken: bool = False) -> Path:
    """One format-patch file changing planner.py (or a broken one whose context is wrong)."""
    work = patch_dir.parent / "patch-work"
    git(upstream.repo.parent, "clone", "-q", str(upstream.repo), str(work))
    path = work / "torchrec" / "planner.py"
    old, new = NPU_PATCH_DIFF["torchrec/planner.py"]
    path.write_text(path.read_text().replace(old, new))
    git(work, "commit", "-qam", "npu-planner: plan for npu devices")
    git(
        work,
        *FORMAT_PATCH,
        "-o",
        str(patch_dir),
        "HEAD~1",
    )
    [generated] = sorted(patch_dir.glob("0001-*.patch"))
    target = patch_dir / "0001-npu-planner.patch"
    generated.rename(target)
    if broken:
        target.write_text(
            target.read_text().replace(
                ' return ["cpu", "cuda", "mtia"]', ' return ["cpu", "cuda", "tpu"]'
            )
        )
    (patch_dir / "series").write_text("# test series\n0001-npu-planner.patch\n")
    return target


VERIFY_TEST = textwrap.dedent(
    """\
    import json, os
    from importlib.metadata import version


    def test_patched_and_versioned():
        import torchrec
        from torchrec.planner import compute_device_types

        pins = json.load(open(os.environ["RECSDK_PINS"]))
        assert "npu" in compute_device_types()
        assert version("torchrec") == pins["torchrec"]["wheel_version"]
        assert torchrec.__version__ == pins["torchrec"]["wheel_version"]


    def test_needs_a_device():
        import pytest

        pytest.skip("no npu device in the synthetic environment")
    """
)


def make_project(root: Path, upstream: Upstream, *, broken_patch: bool = False) -> Path:
    project = root / "project"
    patch_dir = project / "patches" / "torchrec-1.1.0"
    patch_dir.mkdir(parents=True)
    make_patch(upstream, patch_dir, broken=broken_patch)
    (project / "data").mkdir()
    (project / "data" / "torchrec.blobs").write_text(upstream.blobs.read_text())
    (project / "verify").mkdir()
    (project / "verify" / "test_synthetic.py").write_text(VERIFY_TEST)
    (project / "recsdk.toml").write_text(
        project_toml(
            upstream.repo.as_uri(),
            upstream.commit,
            fallback=f"torchrec @ {upstream.wheel.as_uri()}",
        )
    )
    return project


def project_toml(repository: str, commit: str, *, fallback: str) -> str:
    return textwrap.dedent(
        f"""\
        [torchrec]
        repository = "{repository}"
        branch = "release/v1.1.0"
        commit = "{commit}"
        commit_time = 1738261401
        version = "1.1.0"
        local_label = "npu"
        blobs = "data/torchrec.blobs"
        fallback_wheel = "{fallback}"
        wheel_generated = ["torchrec/version.py"]
        patches = "patches/torchrec-1.1.0"
        requires = ["tqdm"]
        requires_python = ">=3.9"

        [runtime]
        python = ">=3.10"
        torch = "2.6.0"
        torch_npu = "2.6.0"
        fbgemm_gpu_cpu = "1.1.0"
        torchmetrics = "1.0.3"
        extra = ["tqdm"]

        [pipeline]
        # A pure-Python stand-in: no C++ extensions, so no build environment or plugin.
        stages = ["fetch", "patch", "wheels", "verify"]

        [verify]
        suite = "verify"
        requirements = ["pytest"]
        install_runtime = false
        """
    )
