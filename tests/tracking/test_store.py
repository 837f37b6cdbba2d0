"""A run root's MLflow store begins as a copy of an empty store kept in the cache (a store MLflow makes runs every
schema migration, for each run root); the copy works like one MLflow made, keeps the Default experiment's
artifacts in its run root, never replaces a store that exists, and without a usable cache MLflow makes the store."""

import sqlite3
from pathlib import Path

from mlflow import MlflowClient

from omnidr.tracking import Tracker, default_tracking_uri


def _default_location(root: Path) -> str:
    with sqlite3.connect(root / "mlflow.db") as con:
        [(location,)] = con.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchall()
    return location


def _system_runs(root: Path) -> list[str]:
    client = MlflowClient(tracking_uri=default_tracking_uri(root))
    [exp] = [e for e in client.search_experiments() if e.name == "omnidr/x"]
    return [r.info.run_name for r in client.search_runs([exp.experiment_id])]


def test_new_stores_are_copies_of_the_cached_empty_store_and_hold_their_own_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        Tracker(default_tracking_uri(root), "omnidr/x", root / "mlartifacts").system_run(f"system-{name}", {"p": 1})
    assert len(list((tmp_path / "cache" / "omnidr" / "mlflow").glob("empty-*.db"))) == 1
    for name in ("a", "b"):
        # MLflow's own store would keep the Default experiment's artifacts under the working folder (tmp_path/mlruns)
        assert _default_location(tmp_path / name) == (tmp_path / name / "mlartifacts" / "0").as_posix()
        assert _system_runs(tmp_path / name) == [f"system-{name}"]
    assert not (tmp_path / "mlruns").exists()


def test_an_existing_store_is_left_alone(tmp_path, monkeypatch):
    from omnidr.tracking._mlflow import seed_store

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "root"
    root.mkdir()
    Tracker(default_tracking_uri(root), "omnidr/x", root / "mlartifacts").system_run("kept", {})
    seed_store(default_tracking_uri(root), root / "elsewhere")
    assert _system_runs(root) == ["kept"]
    assert _default_location(root) == (root / "mlartifacts" / "0").as_posix()


def test_without_a_usable_cache_mlflow_makes_the_store(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    Tracker(default_tracking_uri(root), "omnidr/x", root / "mlartifacts").system_run("made", {})
    assert _system_runs(root) == ["made"]
    assert _default_location(root) == (tmp_path / "mlruns" / "0").as_posix()  # MLflow's own creation
