"""``jax.debug.visualize_sharding``, ``visualize_array_sharding`` and
``inspect_array_sharding``: a sharding drawn as a grid of boxes, one per
distinct block of the array, each naming the devices that hold it.

The picture is a ``rich`` table (as JAX draws it): rows split the first
dimension, columns the second (a rank-1 array is one row); a box's width
and height are proportional to its block's share of the array, scaled to
``10 * scale`` lines of height and an aspect ratio that keeps the array's
proportions (a terminal cell is about 2.5 times as high as it is wide).
Without a color terminal (a pipe, a captured stdout) boxes are drawn with
lines; on one, each box gets a background color from the ``tab20b``
colormap when matplotlib is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer

Color = tuple[float, float, float] | str
ColorMap = Callable[[float], tuple[float, float, float, float]]

_HEIGHT_TO_WIDTH = 2.5  # a terminal cell's height over its width


def _as_slice(index: slice | int) -> slice:
    return slice(index, index + 1) if isinstance(index, int) else index


def _block_number(size: int, index: slice) -> int:
    """Which block along a dimension of ``size`` the slice is (0 for the whole)."""
    if index.start is None and index.stop is None:
        return 0
    length = index.stop - index.start
    return int(index.start // length)


def _extent(index: slice, size: int) -> int:
    return size if index.stop is None else index.stop - index.start


def _blocks(shape: Sequence[int], sharding: Any
            ) -> tuple[dict[tuple[int, int], set[int]], dict[tuple[int, int], float],
                       dict[tuple[int, int], float | None]]:
    """Per (row, column) block: the ids of the devices holding it, its width
    as a fraction of the array's, and its height (None for rank 1)."""
    devices: dict[tuple[int, int], set[int]] = {}
    widths: dict[tuple[int, int], float] = {}
    heights: dict[tuple[int, int], float | None] = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        slices = [_as_slice(i) for i in index]
        if len(shape) == 2:
            rows, cols = slices
            key = (_block_number(shape[0], rows), _block_number(shape[1], cols))
            heights[key] = _extent(rows, shape[0]) / shape[0]
            widths[key] = _extent(cols, shape[1]) / shape[1]
        else:
            (cols,) = slices
            key = (0, _block_number(shape[0], cols))
            heights[key] = None
            widths[key] = _extent(cols, shape[0]) / shape[0]
        devices.setdefault(key, set()).add(device.id)
    return devices, widths, heights


def _colors(color_map: ColorMap, count: int) -> Iterator[tuple[float, float, float, float]]:
    """``count`` colors spread over the map, visited with a step coprime to
    ``count`` so that neighbouring boxes get distant colors."""
    values = np.linspace(0, 1, count)
    step = count // 2 + (count % 2 == 0) + (count % 4 == 2)
    at = 0
    for _ in range(count):
        yield color_map(float(values[at]))
        at = (at + step) % count


def _hex(color: Color) -> str:
    if isinstance(color, str):
        return color
    r, g, b = (int(c * 255) for c in color)
    return f"#{r:02X}{g:02X}{b:02X}"


def _text_color(background: str) -> str:
    """Black on light backgrounds, white on dark ones (by luma)."""
    r, g, b = (int(background[i:i + 2], 16) for i in (1, 3, 5))
    return "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"


def _default_color_map() -> ColorMap | None:
    if importlib.util.find_spec("matplotlib") is None:
        return None
    # matplotlib is optional: imported only to color a picture.
    import matplotlib
    cmap: ColorMap = matplotlib.colormaps["tab20b"]
    return cmap


def visualize_sharding(shape: Sequence[int], sharding: Any, *, use_color: bool = True,
                       scale: float = 1., min_width: int = 9, max_width: int = 80,
                       color_map: ColorMap | None = None) -> None:
    """Print ``sharding`` of an array of ``shape`` (rank 1 or 2) as boxes."""
    if importlib.util.find_spec("rich") is None:
        raise ValueError("`visualize_sharding` requires `rich` to be installed.")
    # rich is an optional dependency (the `debug` extra): imported only to draw.
    import rich.align
    import rich.box  # optional: as above
    import rich.console  # optional: as above
    import rich.padding  # optional: as above
    import rich.style  # optional: as above
    import rich.table  # optional: as above

    if not 1 <= len(shape) <= 2:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    console = rich.console.Console(width=max_width)
    use_color = use_color and console.color_system is not None
    if use_color and color_map is None:
        color_map = _default_color_map()
        use_color = color_map is not None
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    platform = next(iter(sharding.device_set)).platform.upper()
    devices, widths, heights = _blocks(shape, sharding)
    num_rows = max(r for r, _ in devices) + 1
    num_cols = max(c for _, c in devices) + 1
    colors = _colors(color_map, num_rows * num_cols) if use_color and color_map else None
    table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0,
                             highlight=not use_color, pad_edge=False,
                             box=None if use_color else rich.box.SQUARE)
    for i in range(num_rows):
        cells = []
        for j in range(num_cols):
            label = f"{platform} " + ",".join(str(d) for d in sorted(devices[i, j]))
            width = min(max(int(widths[i, j] * base_width * _HEIGHT_TO_WIDTH), min_width),
                        max_width)
            fraction = heights[i, j]
            height = 1 if fraction is None else int(fraction * base_height)
            left, extra = divmod(width - len(label) - 2, 2)
            right = left + extra
            top, extra = divmod(height - 2, 2)
            bottom = top + extra
            background = text = None
            if colors is not None:
                background = _hex(next(colors)[:3])
                text = _text_color(background)
                top, right, bottom, left = top + 1, right + 1, bottom + 1, left + 1
            cells.append(rich.padding.Padding(
                rich.align.Align(label, "center", vertical="middle"),
                (max(top, 0), max(right, 0), max(bottom, 0), max(left, 0)),
                style=rich.style.Style(bgcolor=background, color=text)))
        table.add_row(*cells)
    console.print(table, end="\n\n")


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback`` with the sharding of each array in the pytree
    ``value``, as soon as it is known: now, for arrays. Inside ``jit`` JAX
    calls it when the compiler has chosen the shardings; spec has no
    compiler, so a traced value is refused."""
    for leaf in tree_util.tree_leaves(value):
        if isinstance(leaf, Tracer):
            raise NotImplementedError(
                "inspect_array_sharding of a traced value: JAX reports the sharding the "
                "compiler chooses, and spec does not compile; call it on an array outside "
                "jit (or read jax.typeof(x).sharding in explicit sharding mode)")
        if not isinstance(leaf, Array):
            raise TypeError(f"inspect_array_sharding expects arrays, got {type(leaf).__name__}")
        callback(leaf.sharding)


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Print the sharding of the array ``arr`` (``visualize_sharding``'s
    keyword arguments apply)."""
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))
