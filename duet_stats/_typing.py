"""Array aliases used across ``duet_stats``; public as ``duet_stats.FloatArray`` and so on (callers
outside ``duet_stats`` import them from the package, not from this private module)."""

from __future__ import annotations

from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
ArrayLike: TypeAlias = npt.ArrayLike
IntervalMethod: TypeAlias = Literal["percentile", "expanded", "bca", "basic", "studentized"]
