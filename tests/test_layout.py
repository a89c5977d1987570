"""The tests mirror what they test: a newcomer finds an operator's tests from its directory name."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_operator_directory_has_its_test_file() -> None:
    ops = sorted(p.name for p in (REPO / "kernels" / "ops").iterdir() if (p / "op.toml").is_file())
    assert ops, "no operators found"
    missing = [op for op in ops if not (REPO / "tests" / "kernels" / f"test_op_{op}.py").is_file()]
    assert missing == []
    extra = sorted(
        p.stem.removeprefix("test_op_")
        for p in (REPO / "tests" / "kernels").glob("test_op_*.py")
        if p.stem.removeprefix("test_op_") not in ops
    )
    assert extra == [], "test_op_<name>.py must name an operator directory"


def test_tool_tests_live_under_tests_recsdk_build() -> None:
    top = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))
    # Only product-level tests stay at the top: the CI entry, formatting, this layout test and the
    # real build.
    assert top == ["test_ci_entry.py", "test_format.py", "test_layout.py", "test_real.py"]
    assert (REPO / "tests" / "recsdk_build" / "test_pipeline.py").is_file()


def test_target_decisions_live_behind_the_target_type() -> None:
    # Everything that differs between cann and sim is asked of options.Target (or lives in a
    # target backend under targets/): a module comparing the target's string would drift from
    # the others when a target is added or renamed.
    import re

    literal = re.compile(r"""(['"])(sim|cann)\1""")
    allowed = {"options.py", "targets"}
    found = []
    for path in sorted((REPO / "recsdk_build").rglob("*.py")):
        rel = path.relative_to(REPO / "recsdk_build")
        if rel.parts[0] in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # A path component (kernels / "sim") names a directory, not a target.
            if literal.search(line) and not re.search(r"""/ (['"])sim\1|/(['"])?sim/""", line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []


def test_verify_keeps_tests_in_area_folders_and_helpers_apart() -> None:
    verify = REPO / "verify"
    areas = {"ops", "tbe", "dmp", "hybrid", "embcache", "gr", "runtime"}
    top = sorted(p.name for p in verify.glob("*.py"))
    assert top == ["conftest.py"], "verify/ keeps only conftest.py at the top"
    folders = {p.name for p in verify.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert folders - {"__pycache__"} == areas | {"lib"}
    assert not list((verify / "lib").glob("test_*.py")), "verify/lib holds helpers, not tests"
    # An area may hold a conftest.py: pytest's own place for the fixtures its tests share.
    for area in areas:
        stray = [
            p.name
            for p in (verify / area).glob("*.py")
            if not p.name.startswith("test_") and p.name != "conftest.py"
        ]
        assert stray == [], f"verify/{area}: {stray} are not tests; helpers go to verify/lib"
