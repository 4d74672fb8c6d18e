"""Long work off the request thread: a :class:`Job` runs one function in a worker thread, reports
its stage for the page to poll, and can be cancelled.

The function receives an ``advance`` callback (the pipeline's and the planner's progress hook);
cancelling makes the next call raise :class:`CancelledError`, so a run stops at its next stage (a step,
the measurement, a node of the planner's lattice), never half-way through writing anything.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdckit.errors import SdcError, SdcWarning

__all__ = ["CancelledError", "Job", "unexpected_error"]


def unexpected_error(doing: str, err: BaseException) -> str:
    """An error that is no :class:`~sdckit.errors.SdcError` (a bug), in words: what failed, the
    first line of what went wrong (never the exception's name), and what to do."""
    first = (str(err).strip().splitlines() or [""])[0][:200]
    what = f" ({first})" if first else ""
    return (f"the workbench: {doing.lower()} did not finish{what}; this is a fault of sdckit, not of the data. "
            "The state before it is kept: undo or change a setting and try again, and report the steps that led here.")


class CancelledError(Exception):
    """The user cancelled the job (not an error of the input)."""


@dataclass
class Job:
    """One piece of long work in a worker thread."""

    label: str
    """What the job does, for the page (``Measuring``, ``Planning``, ``Writing the report``)."""
    work: Callable[[Callable[..., None]], Any]
    on_done: Callable[[Job], None] | None = None
    stage: str = "starting"
    ticks: int = 0
    result: Any = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    """The :class:`~sdckit.errors.SdcWarning` messages the work raised (the CLI's yellow lines), each once."""
    cancelled: bool = False
    superseded: bool = False
    """Cancelled because newer work replaced it (nothing to tell the user)."""
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Job:
        self._thread = threading.Thread(target=self._run, name=f"sdckit-app {self.label}", daemon=True)
        self._thread.start()
        return self

    def advance(self, *_: Any, description: str | None = None, **__: Any) -> None:
        """The progress hook: count a tick, name the stage, stop here when cancelled."""
        if self._cancel.is_set():
            raise CancelledError
        self.ticks += 1
        if description:
            self.stage = description

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def running(self) -> bool:
        return self.finished is None

    @property
    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SdcWarning)
                self.result = self.work(self.advance)
            for w in caught:
                if issubclass(w.category, SdcWarning) and str(w.message) not in self.warnings:
                    self.warnings.append(str(w.message))
        except CancelledError:
            self.cancelled = True
        except SdcError as err:  # the CLI's one line, shown in the page
            self.error = str(err)
        except Exception as err:  # a bug must not kill the session: shown in words, and the session goes on
            self.error = unexpected_error(self.label, err)
        finally:
            # running until its result is kept: a page that polls in between would otherwise see the job
            # ended, render a panel without its result, and stop polling (the plan never shown)
            try:
                if self.on_done is not None:
                    self.on_done(self)
            finally:
                self.finished = time.monotonic()
