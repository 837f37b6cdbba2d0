"""One atomic writer for the files other stages read (`omnidr._files.write_atomic`)."""

import errno
import os

import pytest

from omnidr._files import write_atomic


def test_it_makes_the_folder_and_writes_text_and_bytes(tmp_path):
    write_atomic(tmp_path / "a" / "b" / "eval.json", '{"é": 1}\n')
    assert (tmp_path / "a" / "b" / "eval.json").read_text("utf-8") == '{"é": 1}\n'
    write_atomic(tmp_path / "blob", b"\x00\x01")
    assert (tmp_path / "blob").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["blob", "eval.json"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "attempt.json"
    target.write_text("old", "utf-8")

    def full_disk(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, "new")
    assert target.read_text("utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["attempt.json"]
