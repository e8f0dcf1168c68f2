"""Progress on stderr for long work: a bar on a terminal, one line per step in CI logs."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from duet_bench.untrusted import for_terminal


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}h{m:02d}m" if hours else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """Counts steps (runs) of a long job and shows how far it is and how long is left."""

    WIDTH = 24

    def __init__(
        self, total: int, *, label: str = "", stream: TextIO | None = None, enabled: bool = True
    ) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        #: The share of the current step done, between steps (a terminal only).
        self.partial = 0.0
        #: What the last step said (redrawn with the partial progress).
        self.message = ""

    def _columns(self) -> int:
        return shutil.get_terminal_size(fallback=(100, 24)).columns

    def _draw(self, message: str) -> None:
        done = self.done + self.partial
        elapsed = time.monotonic() - self.started
        fraction = min(done / self.total, 1.0)
        if self.done >= self.total:
            eta = f"done in {_clock(elapsed)}"
        elif done > 0:
            eta = f"{_clock(elapsed / done * (self.total - done))} left"
        else:
            eta = "starting"
        filled = int(self.WIDTH * fraction)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        line = f"{self.label} [{bar}] {self.done}/{self.total} {eta} {message}".rstrip()
        width = max(self._columns() - 1, 20)
        self.stream.write("\r" + line[:width].ljust(width))

    def advance(self, fraction: float) -> None:
        """The current step is ``fraction`` done: redraw the bar (a terminal only; a CI log
        keeps one line per step)."""
        if not self.enabled or not self.tty:
            return
        self.partial = min(max(fraction, 0.0), 1.0)
        self._draw(self.message)
        self.stream.flush()

    def step(self, message: str = "", *, details: Sequence[str] = ()) -> None:
        """One step done; ``details`` are lines printed under it that the bar must not
        overwrite (a failed run's stderr)."""
        self.done += 1
        self.partial = 0.0
        self.message = message
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done)
        fraction = self.done / self.total
        counts = f"{self.done}/{self.total}"
        eta = f"{_clock(left)} left" if self.done < self.total else f"done in {_clock(elapsed)}"
        if self.tty:
            self._draw(message)
            if details or self.done >= self.total:
                self.stream.write("\n")
        else:
            self.stream.write(
                f"{self.label} {counts} ({fraction:.0%}, {eta}) {message}".rstrip() + "\n"
            )
        for text in details:  # a failed side's stderr: from the measured code
            self.stream.write(for_terminal(text.rstrip()) + "\n")
        self.stream.flush()

    def note(self, message: str) -> None:
        """A message that must not be overwritten by the bar."""
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + " " * max(self._columns() - 1, 20) + "\r")
        say(message, self.stream)


def say(message: str, stream: TextIO | None = None) -> None:
    """``message`` on a line of its own on ``stream`` (stderr), as :meth:`Progress.note` says
    it: before a bar is drawn, or where there is none."""
    stream = stream if stream is not None else sys.stderr
    stream.write(for_terminal(message.rstrip()) + "\n")
    stream.flush()
