"""The data of a matplotlib figure as the code-interpreter SDKs read it, a result's "chart" (Result.chart in both).

Loaded by the kernel's display formatter (ipython_startup.py) the first time a cell displays a Figure, so a kernel
that never draws never imports it. describe(figure) gives a dict of plain JSON values, or None for a figure with
nothing drawn in it:
- one Axes is one chart, its "type" from what is drawn in it: lines only is "line", point collections (scatter)
  "scatter", rectangles (bar, barh, hist) "bar", wedges "pie", boxes with their whiskers (boxplot with
  patch_artist=True) "box_and_whisker", anything else (images, circles, filled areas, a mix) "unknown", with a title
  and no elements;
- several Axes are a "superchart": the figure's suptitle and one chart an Axes as its elements.
Every chart has "type", "title" and "elements". Line and scatter charts add the axes' labels, units, ticks, tick
labels and scales, and one element a line or point set (label, points); bar, pie and box charts add what their
elements need (bar: label, group, value; pie: label, angle, radius; box: label, min, quartiles, median, max,
outliers). Bars and boxes laid out along the y axis (barh, boxplot(vert=False)) name their category axis x, as the
SDKs' E2B server does, so that x is always the axis of the categories.

A figure's points are capped at MAX_POINTS in all: past it a line or point set keeps its first points and the
chart carries "truncated": true (the PNG has everything).
"""
import math
import re
import sys

import numpy
from matplotlib import category, dates, ticker
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.patches import PathPatch, Rectangle, Wedge

MAX_POINTS = 100_000

# a label's unit: its last "(...)" or "[...]", as in "Time (s)" or "Speed [m/s]"
_UNIT = re.compile(r"[(\[]([^()\[\]]*)[)\]]\s*$")


def _num(v, digits=None):
    """A plain float for JSON; NaN and infinities (which JSON has not) become null. digits rounds to that many
    significant digits: what matplotlib derives (a quartile from a percentile) can carry float noise."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(f):
        return None
    return float(f"{f:.{digits}g}") if digits else f


def _round(v):
    return _num(v, 10)


def _degrees(v):
    # pie computes its fractions in float32: an angle is good to about 1e-5 of a degree, shown to 1e-4
    f = _num(v)
    return None if f is None else round(f, 4)


def _text(s):
    return s if s else None


def _unit(label):
    m = _UNIT.search(label) if label else None
    return m.group(1) if m else None


def _converter(axis):
    get = getattr(axis, "get_converter", None)  # matplotlib 3.10 made it a getter
    return get() if get else axis.converter


def _is_date(axis):
    conv = _converter(axis)
    return isinstance(conv, dates.DateConverter) or type(conv).__module__ == dates.__name__


def _categories(axis):
    """A categorical axis's names by their position (0, 1, ...), or None for another axis."""
    if not isinstance(_converter(axis), category.StrCategoryConverter):
        return None
    mapping = getattr(axis.get_units(), "_mapping", None) or {}
    return {int(pos): str(name) for name, pos in mapping.items()}


class _Axis:
    """How one axis's values read in a chart: dates as ISO 8601 strings, categories by name, numbers as numbers."""

    def __init__(self, axis):
        self.axis = axis
        # pandas plots a time series over period ordinals (its PeriodConverter), not matplotlib's day numbers
        self.period = getattr(axis, "freq", None) if type(_converter(axis)).__name__ == "PeriodConverter" else None
        self.dates = self.period is not None or _is_date(axis)
        self.names = None if self.dates else _categories(axis)
        self._ticks = None
        self.plain = not self.dates and self.names is None

    def scale(self):
        if self.dates:
            return "datetime"
        if self.names is not None:
            return "categorical"
        return self.axis.get_scale()

    def value(self, v):
        f = _num(v)
        if f is None or self.plain:
            return f
        if self.period is not None:
            return sys.modules["pandas"].Period(ordinal=round(f), freq=self.period).to_timestamp().isoformat()
        if self.dates:
            return dates.num2date(f).isoformat()
        return self.names.get(int(f), f) if f == round(f) else f

    def ticks(self):
        """The major ticks' positions and the labels matplotlib draws (or would draw) at them."""
        if self._ticks is None:
            locs = list(self.axis.get_majorticklocs())
            labels = [str(s) for s in self.axis.get_major_formatter().format_ticks(locs)] if locs else []
            self._ticks = [self.value(t) if self.dates else _num(t) for t in locs], labels
        return self._ticks

    def label_at(self, pos):
        """The name of what sits at pos on this axis (a bar's or a box's centre): its category, the label of the
        nearest tick where the ticks are placed by hand (set_xticks with labels, boxplot, pandas' bar
        plots: a group of bars sits around its tick), else the date or the number."""
        if self.names is not None and round(pos) in self.names:
            return self.names[round(pos)]
        if self.dates:
            return self.value(pos)
        if isinstance(self.axis.get_major_locator(), ticker.FixedLocator):
            locs, labels = self.ticks()
            near = [(abs(loc - pos), label) for loc, label in zip(locs, labels) if loc is not None]
            if near:
                return min(near)[1]
        return f"{pos:g}"


def _axes_fields(ax, category_on_y=False):
    """Title, the axes' labels and their units. category_on_y swaps x and y (bars and boxes along y)."""
    x, y = ax.get_xlabel(), ax.get_ylabel()
    if category_on_y:
        x, y = y, x
    return {"title": _title(ax), "x_label": _text(x), "y_label": _text(y), "x_unit": _unit(x), "y_unit": _unit(y)}


def _title(ax):
    for loc in ("center", "left", "right"):
        t = ax.get_title(loc)
        if t:
            return t
    return None


def _is_reference(line, ax):
    """A line drawn across the axes (axhline, axvline): part of the frame, not of the data."""
    return line.get_transform() != ax.transData


def _data_lines(ax):
    return [line for line in ax.lines if not _is_reference(line, ax)]


def _kind(ax):
    lines, patches, colls = _data_lines(ax), list(ax.patches), list(ax.collections)
    if ax.images or getattr(ax, "tables", None):
        return "unknown"
    if lines and not patches and not colls:
        return "line"
    if colls and not patches and not lines and all(isinstance(c, PathCollection) for c in colls):
        return "scatter"
    if patches and not colls:
        if lines and all(isinstance(p, PathPatch) for p in patches):
            return "box_and_whisker"
        if not lines and all(isinstance(p, Wedge) for p in patches):
            return "pie"
        if not lines and all(isinstance(p, Rectangle) for p in patches):
            return "bar"
    return "unknown"


def _series_label(label, hidden, name):
    """matplotlib names an unlabelled artist "_child3" or "_container1"; such a series reads "Line 3", "Group 1"."""
    if label.startswith(hidden) and label[len(hidden):].isdigit():
        return f"{name} {label[len(hidden):]}"
    return label


class _Budget:
    def __init__(self, n):
        self.left = n
        self.truncated = False

    def take(self, xy):
        if len(xy) > self.left:
            xy, self.truncated = xy[:self.left], True
        self.left -= len(xy)
        return xy


def _point_chart(ax, kind, budget):
    xs, ys = _Axis(ax.xaxis), _Axis(ax.yaxis)
    chart = {"type": kind, **_axes_fields(ax)}
    for name, a in (("x", xs), ("y", ys)):
        ticks, labels = a.ticks()
        chart[f"{name}_ticks"], chart[f"{name}_tick_labels"], chart[f"{name}_scale"] = ticks, labels, a.scale()
    if kind == "line":
        series = [(_series_label(line.get_label(), "_child", "Line"), line.get_xydata()) for line in _data_lines(ax)]
    else:
        series = [(c.get_label(), c.get_offsets()) for c in ax.collections]
    chart["elements"] = [{"label": label, "points": _points(budget.take(xy), xs, ys)} for label, xy in series]
    return chart


def _points(xy, xs, ys):
    xy = numpy.ma.filled(numpy.ma.asarray(xy, dtype=float), numpy.nan).reshape(-1, 2)
    if xs.plain and ys.plain and numpy.isfinite(xy).all():
        return xy.tolist()  # numbers only: at once, not a point at a time
    return [[xs.value(x), ys.value(y)] for x, y in xy]


def _bar_chart(ax):
    elements, along_y = [], False
    for container in ax.containers:
        if not isinstance(container, BarContainer):
            continue
        along_y = getattr(container, "orientation", None) == "horizontal"
        axis = _Axis(ax.yaxis if along_y else ax.xaxis)
        group = _series_label(container.get_label() or "", "_container", "Group")
        for rect in container.patches:
            if along_y:
                pos, value = rect.get_y() + rect.get_height() / 2, rect.get_width()
            else:
                pos, value = rect.get_x() + rect.get_width() / 2, rect.get_height()
            elements.append({"label": axis.label_at(pos), "group": group, "value": _num(value)})
    return {"type": "bar", **_axes_fields(ax, along_y), "elements": elements}


def _pie_chart(ax):
    elements = [{"label": w.get_label(), "angle": _degrees(abs(w.theta2 - w.theta1)), "radius": _num(w.r)}
                for w in ax.patches]
    return {"type": "pie", "title": _title(ax), "elements": elements}


def _segments(ax, along_y):
    """The data lines as (positions, values) pairs of lists: position along the category axis, value across it."""
    out = []
    for line in _data_lines(ax):
        xy = line.get_xydata()
        p, v = (xy[:, 1], xy[:, 0]) if along_y else (xy[:, 0], xy[:, 1])
        out.append(([float(a) for a in p], [float(a) for a in v]))
    return out


def _box(extent, segments):
    """One box's statistics from its rectangle (p0, p1 along the category axis; q1, q3 across) and the lines
    boxplot drew: the median spans the box at one value, the whiskers run from its edges along its centre, and the
    fliers are the points beyond the whiskers' ends."""
    p0, p1, q1, q3 = extent
    inside = [(p, v) for p, v in segments if p and min(p) >= p0 - 1e-9 and max(p) <= p1 + 1e-9]
    lo, hi, median, widest = q1, q3, None, 0.0
    for p, v in inside:
        if len(p) != 2:
            continue
        if v[0] == v[1] and q1 <= v[0] <= q3 and abs(p[1] - p[0]) > widest:
            widest, median = abs(p[1] - p[0]), v[0]
        elif p[0] == p[1] and v[0] != v[1]:
            if max(v) <= q1:
                lo = min(lo, min(v))
            elif min(v) >= q3:
                hi = max(hi, max(v))
    outliers = [_round(val) for p, v in inside for val in v if val < lo or val > hi]
    return {"min": _round(lo), "first_quartile": _round(q1), "median": _round(median), "third_quartile": _round(q3),
            "max": _round(hi), "outliers": outliers}


def _extent(patch, along_y):
    verts = patch.get_path().vertices
    if len(verts) == 0:
        return None
    xs, ys = verts[:, 0], verts[:, 1]
    if along_y:
        xs, ys = ys, xs
    return float(xs.min()), float(xs.max()), float(ys.min()), float(ys.max())


def _boxes_along_y(ax):
    """Whether the boxes stand along y (boxplot(vert=False)). A whisker runs along its box's centre line from one of
    its edges; every box has two, and only a median that happens to sit at the box's centre looks like one the other
    way round, so the side with more of them wins."""
    extents = [e for e in (_extent(p, False) for p in ax.patches) if e is not None]
    votes = 0
    for (x0, x1), (y0, y1) in (s for s in _segments(ax, False) if len(s[0]) == 2):
        for bx0, bx1, by0, by1 in extents:
            if x0 == x1 and math.isclose(x0, (bx0 + bx1) / 2) and {y0, y1} & {by0, by1}:
                votes -= 1
            elif y0 == y1 and math.isclose(y0, (by0 + by1) / 2) and {x0, x1} & {bx0, bx1}:
                votes += 1
    return votes > 0


def _box_chart(ax):
    along_y = _boxes_along_y(ax)
    segments = _segments(ax, along_y)
    extents = sorted(e for e in (_extent(p, along_y) for p in ax.patches) if e is not None)
    axis = _Axis(ax.yaxis if along_y else ax.xaxis)
    elements = [{"label": axis.label_at((e[0] + e[1]) / 2), **_box(e, segments)} for e in extents]
    return {"type": "box_and_whisker", **_axes_fields(ax, along_y), "elements": elements}


def _axes_chart(ax, budget):
    kind = _kind(ax)
    if kind in ("line", "scatter"):
        return _point_chart(ax, kind, budget)
    if kind == "bar":
        return _bar_chart(ax)
    if kind == "pie":
        return _pie_chart(ax)
    if kind == "box_and_whisker":
        return _box_chart(ax)
    return {"type": "unknown", "title": _title(ax), "elements": []}


def _suptitle(figure):
    get = getattr(figure, "get_suptitle", None)  # matplotlib 3.8 and later
    text = get() if get else (figure._suptitle.get_text() if getattr(figure, "_suptitle", None) else "")
    return _text(text)


def describe(figure):
    axes = figure.get_axes()
    if not any(ax.has_data() for ax in axes):
        return None
    budget = _Budget(MAX_POINTS)
    if len(axes) == 1:
        chart = _axes_chart(axes[0], budget)
    else:
        chart = {"type": "superchart", "title": _suptitle(figure),
                 "elements": [_axes_chart(ax, budget) for ax in axes]}
    if budget.truncated:
        chart["truncated"] = True
    return chart
