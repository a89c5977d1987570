"""Background checkpoints (save_checkpoint_in_background): the call returns once the tables'
contents are copied, training goes on while a thread writes, and what loads is the state at the
call, not what training did after it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import torch
import torchrec_embcache as ec
from embcache_ref import random_ids
from test_checkpoint import assert_same, make_model, snapshot, train


class HeldWrite:
    """Wraps a table's snapshot so that its file write waits until released."""

    def __init__(self, table: ec.EmbeddingTable) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self._snapshot = table.snapshot
        self.fail = False

    def __call__(self, incremental: bool = False) -> object:
        snap = self._snapshot(incremental)
        outer = self

        class Held:
            def write(self, path: str) -> int:
                outer.started.set()
                assert outer.release.wait(30), "the test never released the write"
                if outer.fail:
                    raise OSError(28, "No space left on device")
                return snap.write(path)

        return Held()


def test_training_goes_on_while_the_files_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = random_ids(90, seed=1)
    model = make_model()
    train(model, pool, steps=10, seed=2)
    at_save = snapshot(model)
    held = HeldWrite(model.table)
    monkeypatch.setattr(model.table, "snapshot", held)

    future = ec.save_checkpoint_in_background(model, tmp_path, cache=True)
    assert held.started.wait(30) and not future.done()  # the write is under way ...
    train(model, pool, steps=4, seed=3)  # ... and training is not blocked by it
    with pytest.raises(ec.CheckpointError, match="still being written"):
        ec.save_checkpoint(model, tmp_path)
    held.release.set()
    manifest = future.result(timeout=60)
    assert manifest["generation"] == 1

    restored = make_model()
    ec.load_checkpoint(restored, tmp_path, cache=True)
    assert_same(at_save, snapshot(restored))  # the state at the call, not after it


def test_background_incremental_chain_loads_the_latest_state(tmp_path: Path) -> None:
    pool = random_ids(200, seed=4)
    model = make_model(cache_slots=None, admission=None)
    train(model, pool, steps=6, seed=5)
    ec.save_checkpoint_in_background(model, tmp_path).result(timeout=60)
    train(model, pool[:30], steps=3, seed=6)
    at_save = snapshot(model)
    future = ec.save_checkpoint_in_background(model, tmp_path, incremental=True)
    train(model, pool, steps=2, seed=7)  # after the copy: not in this checkpoint
    files = future.result(timeout=60)["tables"]["table"]["files"]
    assert [f["kind"] for f in files] == ["full", "incremental"]
    restored = make_model(cache_slots=None, admission=None)
    ec.load_checkpoint(restored, tmp_path)
    assert_same(at_save, snapshot(restored))
    # Changes after the copy belong to the next incremental checkpoint.
    ec.save_checkpoint(model, tmp_path, incremental=True)
    ec.load_checkpoint(restored, tmp_path)
    assert_same(snapshot(model), snapshot(restored))


def test_a_failed_background_write_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = random_ids(60, seed=8)
    model = make_model()
    train(model, pool, steps=5, seed=9)
    ec.save_checkpoint(model, tmp_path)
    at_first = snapshot(model)
    files_before = sorted(os.listdir(tmp_path))
    train(model, pool, steps=3, seed=10)
    held = HeldWrite(model.table)
    held.fail = True
    held.release.set()
    monkeypatch.setattr(model.table, "snapshot", held)
    future = ec.save_checkpoint_in_background(model, tmp_path, incremental=True)
    with pytest.raises(OSError, match="No space left"):
        future.result(timeout=60)
    assert sorted(os.listdir(tmp_path)) == files_before
    restored = make_model()
    ec.load_checkpoint(restored, tmp_path)
    assert_same(at_first, snapshot(restored))
    # The table took the failed snapshot as its base: an incremental save onto the older
    # checkpoint would lose rows, so it is refused; a full one works.
    monkeypatch.undo()
    with pytest.raises(ec.CheckpointError, match="save a full checkpoint"):
        ec.save_checkpoint(model, tmp_path, incremental=True)
    ec.save_checkpoint(model, tmp_path)
    ec.load_checkpoint(restored, tmp_path)
    assert_same(snapshot(model), snapshot(restored))
    assert torch.equal(restored.table.export()["ids"], model.table.export()["ids"])
