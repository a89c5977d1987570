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
