"""Generated mutants that no test can kill, by name (``tests.mutants.generate``), each with the
reason: they change no behaviour. They are left out of the score."""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {}
