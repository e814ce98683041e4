"""Atomic writes (pairmeasures._atomic): a reader never sees part of a file or folder, a failed write leaves the old
one and no temporary, and a folder is replaced only when it is an earlier output of the same command."""

from __future__ import annotations

import json
import os
import stat

import pytest

from pairmeasures._atomic import (
    MARKER,
    Earlier,
    FolderOutput,
    check_replaceable,
    output_folder,
    write_atomically,
)


def test_a_file_is_replaced_whole_and_readable(tmp_path):
    path = tmp_path / "table.csv"
    write_atomically(path, "old\n")
    write_atomically(path, b"new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


KIND = FolderOutput("train-x", "model", "pairmeasures-train-x", Earlier("training.json", json_format="x1"))


def test_a_folder_is_written_with_the_umask_and_swapped_by_renames(tmp_path):
    out = tmp_path / "model"
    previous = os.umask(0o077)
    try:
        with output_folder(out, KIND, force=False) as claim:
            assert (tmp_path / ".model.lock").is_file()
            with claim.written() as partial:
                (partial / "weights").write_text("first")
                assert not out.exists()
        write_atomically(tmp_path / "table.csv", "a\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o700 and stat.S_IMODE((out / MARKER).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "table.csv").stat().st_mode) == 0o600
    record = json.loads((out / MARKER).read_text())
    assert record["written_by"] == "train-x" and record["format"] == "pairmeasures-train-x" and len(record["id"]) == 32
    with pytest.raises(ValueError, match="exists: pass --force to replace it"):
        check_replaceable(out, KIND, force=False)
    with output_folder(out, KIND, force=True) as claim:
        with pytest.raises(RuntimeError, match="interrupted"):
            with claim.written() as partial:
                (partial / "weights").write_text("second")
                raise RuntimeError("interrupted")
    assert (out / "weights").read_text() == "first"  # the old folder stays, the partial one is gone
    with output_folder(out, KIND, force=True) as claim:
        with claim.written() as partial:
            (partial / "other").write_text("third")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "other"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "table.csv"]


def test_earlier_outputs_without_a_marker_are_recognised_by_their_record_only(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "training.json").write_text('{"format": "other"}')
    for force in (False, True):  # a folder of the user's: --force would not help
        with pytest.raises(ValueError, match=r"not a model written by train-x: choose another --out; --force replaces "
                                             rf"only a folder train-x wrote \(it holds {MARKER}\)"):
            check_replaceable(out, KIND, force=force)
    (out / "training.json").write_text('{"format": "x1"}')
    with output_folder(out, KIND, force=True) as claim:
        with claim.written() as partial:
            (partial / "training.json").write_text('{"format": "x1"}')
    assert (out / MARKER).is_file()


def test_one_policy_for_a_single_output_file(tmp_path):
    from pairmeasures._atomic import check_file_replaceable

    table = tmp_path / "t.tsv"
    assert check_file_replaceable(table, force=False, suffixes=(".tsv", ".csv")) == table
    with pytest.raises(ValueError, match=r"--out '.*t\.txt': name a \.tsv or \.csv file \(the extension picks"):
        check_file_replaceable(tmp_path / "t.txt", force=False, suffixes=(".tsv", ".csv"))
    (tmp_path / "shift.png").mkdir()
    with pytest.raises(ValueError, match=r"^--plot '.*shift\.png' is a folder; name a \.png file$"):
        check_file_replaceable(tmp_path / "shift.png", force=True, option="--plot", suffixes=(".png",))
    with pytest.raises(ValueError, match=r"its folder does not exist \(create '.*missing' first\)"):
        check_file_replaceable(tmp_path / "missing" / "t.tsv", force=False)
    table.write_text("mine")
    with pytest.raises(ValueError, match=r"^.*t\.tsv exists; pass --force to replace it$"):
        check_file_replaceable(table, force=False, option=None)
    check_file_replaceable(table, force=True)
    with pytest.raises(ValueError, match=r"exists and is not an earlier study file \(no \"format\": \"s1\"\); --force "
                                         "replaces only those"):
        check_file_replaceable(table, force=True, what="study file", json_format="s1")
    table.write_text('{"format": "s1"}')
    check_file_replaceable(table, force=True, what="study file", json_format="s1")
    assert table.read_text() == '{"format": "s1"}'
