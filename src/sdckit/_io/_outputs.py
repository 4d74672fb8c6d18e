"""Nothing a user owns is destroyed: outputs checked before any work, written atomically.

Every command and the pipeline go through the two functions here:

* :func:`check_outputs` resolves every output path (symlinks and ``..`` included) before any work
  and refuses, with one :class:`~sdckit.errors.OutputError`, an output that is one of the inputs
  (the data, the pipeline file, any file read), two outputs at the same place, a folder in the
  way, a name too long for the file system, or a folder that cannot be written (checked by
  creating and removing a probe file, so a read-only mount and a missing permission both show).
* :func:`staged_outputs` hands out temporary files in the outputs' own folders and renames them
  into place (``os.replace``, atomic on one file system) only when the whole block succeeded;
  on any error, and after a ``SIGKILL`` (the rename never happens), the outputs are untouched.
  :func:`atomic_output` is the one-file form.

The temporary files are hidden (``.sdckit-*.part`` plus the output's ending, so that a writer
that chooses its format by the name still does).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sdckit.errors import OutputError

__all__ = ["Staging", "atomic_output", "check_outputs", "report_files", "set_aside", "staged_outputs"]

PathLike = str | os.PathLike[str]


def _resolved(path: Path) -> Path:
    """The absolute path with every symlink followed (also of a path that does not exist yet)."""
    try:
        return path.expanduser().resolve(strict=False)
    except (OSError, RuntimeError):  # a symlink loop: compare the absolute path
        return Path(os.path.abspath(path))


def _same_file(a: Path, b: Path) -> bool:
    if _resolved(a) == _resolved(b):
        return True
    try:
        return _exists(a) and _exists(b) and os.path.samefile(a, b)  # hard links too
    except OSError:
        return False


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, a loop
        return False


def _existing_folder(path: Path) -> Path:
    folder = path.parent
    while not _exists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


def _name_too_long(out: Path) -> OutputError | None:
    folder = _existing_folder(out)
    limit = _name_max(folder)
    for part in out.parts:
        size = len(os.fsencode(part))
        if size > limit:
            return OutputError(
                f"cannot write {_short(out)!r}: the name {_short(Path(part))!r} has {size} bytes, more than the {limit} "
                "this file system allows. Choose a shorter name."
            )
    return None


def _short(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 80 else text[:38] + "..." + text[-38:]


def _check_writable(out: Path, *, make_folders: bool) -> None:
    shown = str(out)
    if (too_long := _name_too_long(out)) is not None:
        raise too_long
    if out.is_dir():
        raise OutputError(f"{shown!r} is a folder; give a file name, e.g. {str(out / 'out.csv')!r}.")
    parent = out.parent
    if not parent.exists() and not make_folders:
        raise OutputError(f"cannot write {shown!r}: the folder {str(parent)!r} does not exist. Create it first.")
    folder = _existing_folder(out) if make_folders else parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {shown!r}: {str(folder)!r} is a file, not a folder.")
    if out.exists() and not os.access(out, os.W_OK):
        raise OutputError(f"cannot write {shown!r}: the file is read-only. Choose another name, or make it writable.")
    try:  # the one reliable test (read-only mounts, ACLs, root): create a file there and remove it
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".sdckit-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        reason = (err.strerror or type(err).__name__).lower()
        raise OutputError(
            f"cannot write {shown!r}: the folder {str(folder)!r} is not writable ({reason}). Choose another folder."
        ) from None


def check_outputs(
    outputs: Iterable[PathLike | None],
    inputs: Iterable[PathLike | None] = (),
    *,
    make_folders: bool = False,
) -> list[Path]:
    """Check every output path before any work; return them as paths (``None`` entries skipped).

    Raises :class:`~sdckit.errors.OutputError` (one line: the path, why, what to do) when an output
    resolves to one of ``inputs`` (after following symlinks; hard links too), when two outputs are
    the same file, when a folder stands at an output path, when a name is longer than the file
    system allows, or when the folder cannot be written. With ``make_folders`` a missing folder is
    fine if its nearest existing ancestor is writable (the writer creates it); else it is refused.
    ``inputs`` may hold non-path entries (frames): they are skipped.
    """
    outs = [Path(o) for o in outputs if o is not None]
    ins = [Path(i) for i in inputs if isinstance(i, (str, os.PathLike))]
    seen: dict[Path, Path] = {}
    for out in outs:
        for source in ins:
            if _same_file(out, source):
                what = "the input file" if str(out) == str(source) else f"the input file {str(source)!r}"
                raise OutputError(
                    f"{str(out)!r} is {what}; writing there would overwrite the data. Choose another output name."
                )
        key = _resolved(out)
        if key in seen:
            raise OutputError(
                f"{str(out)!r} is given for two outputs (also as {str(seen[key])!r}); give each output its own name."
            )
        seen[key] = out
        _check_writable(out, make_folders=make_folders)
    return outs


def _temporary_suffix(path: Path) -> str:
    ending = "".join(path.suffixes[-2:])
    return ".part" + (ending if len(ending) <= 24 else path.suffix[:24])


def _file_mode(final: Path) -> int:
    """The mode the final file gets: that of the file it replaces, else the usual 0o666 less the umask."""
    if final.exists():
        return final.stat().st_mode & 0o7777
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class Staging:
    """Temporary files for a set of outputs; :meth:`commit` renames them all into place."""

    def __init__(self) -> None:
        self._temps: dict[Path, Path] = {}

    def path(self, final: PathLike) -> Path:
        """A new empty temporary file beside ``final`` (same ending) to write instead of it."""
        final = Path(final)
        if final in self._temps:
            return self._temps[final]
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=final.parent, prefix=".sdckit-", suffix=_temporary_suffix(final))
            os.close(fd)
        except OSError as err:
            raise OutputError(f"cannot write {str(final)!r}: {err.strerror or err}. Choose another folder.") from None
        self._temps[final] = Path(name)
        return Path(name)

    @property
    def finals(self) -> list[Path]:
        """The outputs staged so far."""
        return list(self._temps)

    def commit(self) -> None:
        """Rename every temporary file into place."""
        for final, temp in list(self._temps.items()):
            try:
                os.chmod(temp, _file_mode(final))
                os.replace(temp, final)
            except OSError as err:
                self.discard()
                raise OutputError(f"cannot write {str(final)!r}: {err.strerror or err}.") from None
            del self._temps[final]

    def discard(self) -> None:
        """Remove the temporary files (the outputs are left as they were)."""
        for temp in self._temps.values():
            with contextlib.suppress(OSError):
                temp.unlink()
        self._temps.clear()


@contextmanager
def staged_outputs() -> Iterator[Staging]:
    """Write outputs as temporary files and rename them into place only if the block succeeds.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with staged_outputs() as stage:
    ...     _ = stage.path(folder / "a.txt").write_text("all or nothing")
    >>> (folder / "a.txt").read_text()
    'all or nothing'
    """
    stage = Staging()
    try:
        yield stage
    except BaseException:
        stage.discard()
        raise
    stage.commit()


def report_files(path: PathLike) -> tuple[Path, Path]:
    """The two files a report at ``path`` is written as: the page and its JSON sidecar beside it.

    >>> report_files("out/report.html")
    (PosixPath('out/report.html'), PosixPath('out/report.json'))
    """
    out = Path(path)
    return out, out.with_suffix(".json")


@contextmanager
def atomic_output(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path to write instead of ``path``; it replaces ``path`` when the block succeeds.

    An ``OSError`` in the block (disk full, permission) becomes :class:`~sdckit.errors.OutputError`.
    """
    with staged_outputs() as stage:
        try:
            yield stage.path(path)
        except OutputError:
            raise
        except OSError as err:
            reason = err.strerror or str(err) or type(err).__name__
            raise OutputError(f"cannot write {str(path)!r}: {reason}.") from None


def set_aside(path: PathLike) -> Path | None:
    """Rename an earlier run's file at ``path`` out of the way (``name.stale``, ``name.stale-2``, ...).

    For a refused run: a data file of an earlier run left at the output path would stand beside the
    new report as if it were this release. Returns the new name, or None when there was no file.
    """
    p = Path(path)
    if not p.is_file():
        return None
    target = p.with_name(p.name + ".stale")
    n = 2
    while target.exists():
        target = p.with_name(f"{p.name}.stale-{n}")
        n += 1
    try:
        os.replace(p, target)
    except OSError as err:
        raise OutputError(
            f"the release was refused, and the earlier file {str(p)!r} (not this release) could not be moved "
            f"aside: {err.strerror or err}. Remove it by hand."
        ) from None
    return target
