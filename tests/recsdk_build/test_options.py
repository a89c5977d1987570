"""Options are resolved once, into frozen per-stage objects, with one target decision."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from recsdk_build import options as options_mod
from recsdk_build.errors import ToolMissingError, UsageError
from recsdk_build.options import Target, compute_options, resolve_target


def test_auto_is_sim_without_a_toolkit_and_cann_with_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options_mod, "find_cann", lambda: None)
    choice = resolve_target("auto")
    assert choice.target is Target.SIM and "no CANN toolkit" in choice.why
    monkeypatch.setattr(options_mod, "find_cann", lambda: object())
    choice = resolve_target("auto")
    assert choice.target is Target.CANN and "CANN toolkit found" in choice.why
    assert resolve_target("sim").target is Target.SIM and resolve_target("sim").why == ""


def test_cann_without_a_toolkit_is_refused_unless_only_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(options_mod, "find_cann", lambda: None)
    with pytest.raises(ToolMissingError, match="--target cann needs the CANN toolkit"):
        resolve_target("cann")
    assert resolve_target("cann", require_toolkit=False).target is Target.CANN
    # A cann dry run of ops needs no toolkit; ops and plugin see the same decision.
    opts = compute_options(target="cann", dry_run=True)
    assert opts.ops.target.target is Target.CANN and opts.plugin.target is opts.ops.target


def test_bad_words_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown target 'gpu'"):
        compute_options(target="gpu")
    with pytest.raises(UsageError, match="--soc Ascend999: unknown SoC"):
        compute_options(soc="Ascend999")
    with pytest.raises(UsageError, match="--jobs 0"):
        compute_options(jobs=0)


def test_options_are_frozen_and_typed() -> None:
    opts = compute_options(
        source="x.whl",
        fallback=False,
        discard_local=True,
        fresh_env=True,
        target="sim",
        only=["jagged"],
        jobs=3,
    )
    assert (opts.fetch.source, opts.fetch.fallback, opts.fetch.discard_local) == (
        "x.whl",
        False,
        True,
    )
    assert opts.patch.discard_local and opts.env.fresh and opts.verify.fresh
    assert opts.ops.only == ("jagged",) and opts.ops.jobs == 3 and opts.ops.soc == "Ascend910B1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.ops.jobs = 1  # type: ignore[misc]
    assert not any(f.name == "extra" for f in dataclasses.fields(opts))


def test_stages_resolve_no_target_themselves() -> None:
    """Only options.resolve_target decides; stages read ctx.options."""
    stages = Path(__file__).resolve().parents[2] / "recsdk_build" / "stages"
    for source in stages.glob("*.py"):
        text = source.read_text(encoding="utf-8")
        assert "find_cann() is not None" not in text, source.name
        assert "resolve_target" not in text and "options.extra" not in text, source.name
