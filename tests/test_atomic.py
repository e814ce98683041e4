"""Atomic writes (pairmeasures._atomic): a reader never sees part of a file or folder, and a failed write
leaves the old one and no temporary."""

from __future__ import annotations

import stat

import pytest

from pairmeasures._atomic import folder_written_atomically, write_atomically


def test_a_file_is_replaced_whole_and_readable(tmp_path):
    path = tmp_path / "table.csv"
    write_atomically(path, "old\n")
    write_atomically(path, b"new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_a_folder_replaces_the_old_one_only_when_its_block_succeeds(tmp_path):
    out = tmp_path / "models" / "model"
    with folder_written_atomically(out) as partial:
        (partial / "weights").write_text("first")
        assert not out.exists()  # nothing at the destination until the block ends
    assert (out / "weights").read_text() == "first" and stat.S_IMODE(out.stat().st_mode) == 0o755
    with pytest.raises(RuntimeError, match="interrupted"):
        with folder_written_atomically(out) as partial:
            (partial / "weights").write_text("second")
            raise RuntimeError("interrupted")
    assert (out / "weights").read_text() == "first"  # the old folder stays, the partial one is gone
    with folder_written_atomically(out) as partial:
        (partial / "other").write_text("third")
    assert sorted(p.name for p in out.iterdir()) == ["other"]
    assert [p.name for p in out.parent.iterdir()] == ["model"]


def test_only_an_earlier_output_is_replaced_and_only_with_force(tmp_path):
    from pairmeasures._atomic import check_replaceable

    out = tmp_path / "model"
    check_replaceable(out, force=False, marker="training.json", written_by="train-x")  # nothing there yet
    out.mkdir()
    for force in (False, True):  # a folder of the user's: --force would not help, so it is not suggested
        with pytest.raises(ValueError, match=r"not a model written by train-x \(no training.json\): choose another"):
            check_replaceable(out, force=force, marker="training.json", written_by="train-x")
    (out / "training.json").write_text("{}")
    with pytest.raises(ValueError, match="exists: pass --force to replace it"):
        check_replaceable(out, force=False, marker="training.json", written_by="train-x")
    check_replaceable(out, force=True, marker="training.json", written_by="train-x")


def test_a_folder_of_a_json_format_is_replaced_only_when_its_marker_has_that_format(tmp_path):
    from pairmeasures._atomic import check_replaceable

    out = tmp_path / "fitset"
    out.mkdir()
    (out / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match=r"not a fit set written by gen \(no manifest.json of format f1\): choose "
                                         r"another --out; --force replaces only an earlier gen fit set"):
        check_replaceable(out, force=True, marker="manifest.json", written_by="gen", what="fit set", json_format="f1")
    (out / "manifest.json").write_text('{"format": "f1"}')
    check_replaceable(out, force=True, marker="manifest.json", written_by="gen", what="fit set", json_format="f1")


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
