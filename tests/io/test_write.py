"""Output paths are checked before any work and a failed write is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdckit._io import check_output_path, writing
from sdckit.errors import OutputError


def test_a_good_path_comes_back(tmp_path: Path) -> None:
    assert check_output_path(tmp_path / "out.csv") == tmp_path / "out.csv"


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"the folder '.*/nope' does not exist\. Create it first"):
        check_output_path(tmp_path / "nope" / "out.csv")


def test_folder_in_place_of_the_file(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a folder; give a file name"):
        check_output_path(tmp_path)


def test_file_in_place_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output_path(tmp_path / "f" / "out.csv")


def test_never_over_the_input(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    with pytest.raises(OutputError, match="is the input file; writing there would overwrite the data"):
        check_output_path(tmp_path / "." / "data.csv", inputs=[data])


def test_writing_turns_oserror_into_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"cannot write .*: No such file or directory"), writing(tmp_path / "x" / "y"):
        (tmp_path / "x" / "y").write_text("data")
    assert issubclass(OutputError, OSError)
