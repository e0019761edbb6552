"""The folders miniagent keeps things in: created ``0700``, and a cache or state folder owned by
another user is refused (``miniagent._folders``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from miniagent._folders import ForeignFolderError, own_folder, private_folder
from miniagent.providers.local import DEFAULT_MODEL_FILE, cache_dir, default_model_path
from miniagent.providers.local.native import _default_lock_path
from tests.helpers import usual_umask

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to another user needs root")


def test_every_folder_created_is_private_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir(mode=0o755)
    with usual_umask():
        private_folder(tmp_path / "kept" / "a" / "b")
    assert (tmp_path / "kept").stat().st_mode & 0o777 == 0o755
    for made in (tmp_path / "kept" / "a", tmp_path / "kept" / "a" / "b"):
        assert made.stat().st_mode & 0o777 == 0o700, made


def test_a_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        private_folder(tmp_path / "file" / "sub")
    with pytest.raises(NotADirectoryError):
        own_folder(tmp_path / "file", create=False)


@needs_root
def test_a_folder_of_another_user_is_refused_and_a_missing_one_is_not_made(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(ForeignFolderError, match=r"owned by another user \(uid 65534\)") as raised:
        own_folder(theirs)
    assert raised.value.filename == str(theirs) and isinstance(raised.value, PermissionError)
    assert own_folder(tmp_path / "missing", create=False) == tmp_path / "missing"
    assert not (tmp_path / "missing").exists()


@needs_root
def test_a_cache_folder_of_another_user_is_refused_before_anything_in_it_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model (or prompt cache) found in another user's folder could be theirs."""
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    monkeypatch.setenv("MINIAGENT_CACHE_DIR", str(cache))
    (cache / "models" / DEFAULT_MODEL_FILE).write_bytes(b"GGUF planted")
    assert default_model_path(download=False) == cache / "models" / DEFAULT_MODEL_FILE  # ours: used
    os.chown(cache, NOBODY, NOBODY)
    with pytest.raises(ForeignFolderError):
        cache_dir()
    with pytest.raises(ForeignFolderError):
        default_model_path(download=False)
    assert _default_lock_path() is None  # no lock file is made there: runs go on unlocked
    os.chown(cache, 0, 0)
    os.chown(cache / "models", NOBODY, NOBODY)
    with pytest.raises(ForeignFolderError):
        default_model_path(download=False)
