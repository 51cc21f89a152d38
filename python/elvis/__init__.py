"""Run elvis network simulations from Python.

    >>> import elvis
    >>> report = elvis.run("examples/ndl/dumbbell.ndl", seed=3, until="10s")
    >>> report["packets"]["frames_sent"]
    >>> report["tcp_connections"]          # a DataFrame when pandas is installed

``run`` takes NDL text or the path of an NDL file and returns the run's
report (docs/report.md) as a ``Report``, a ``dict``. With pandas installed
the per-row tables (``tcp_connections``, ``tcp_shares``, ``queues``,
``applications``, ``metrics``) are ``pandas.DataFrame``s; ``frames=False``
keeps them lists of dicts. A scenario that does not parse or build raises
``NdlError``, a ``ValueError`` with ``file``, ``line``, ``col``,
``message`` and ``hint``; ``str(error)`` is the line ``elvis`` prints
(``file:line:col: error: … (hint: …)``).
"""

import json
import os
import warnings

from ._native import NdlError
from ._native import check_text as _check_text
from ._native import run_file as _run_file
from ._native import run_text as _run_text

from .scenario import Scenario

__all__ = ["run", "check", "NdlError", "Report", "TABLES", "Scenario"]

#: The report's lists that become DataFrames when pandas is installed.
TABLES = ("tcp_connections", "tcp_shares", "queues", "applications", "metrics")

for _i, _name in enumerate(("text", "file", "line", "col", "message", "hint")):
    setattr(NdlError, _name, property(lambda self, i=_i: self.args[i] if len(self.args) > i else None))
NdlError.__str__ = lambda self: str(self.args[0]) if self.args else ""


class Report(dict):
    """A run's report: the JSON report of ``elvis run --report`` as a dict.

    ``warnings`` lists the scenario's located warnings as
    ``(file, line, col, message)`` tuples (also issued with
    ``warnings.warn``).
    """

    def __init__(self, data, warned=()):
        super().__init__(data)
        self.warnings = [tuple(w) for w in warned]


def _is_text(ndl):
    return "[" in ndl or "\n" in ndl


def _until(until):
    if until is None or isinstance(until, str):
        return until
    if isinstance(until, bool) or not isinstance(until, (int, float)):
        raise TypeError("until is a duration: '10s', '250ms', or a number of seconds")
    if until < 0:
        raise ValueError("until must not be negative")
    return "%dns" % round(until * 1e9)


def _frames(report, frames):
    if frames is False:
        return report
    try:
        import pandas
    except ImportError:
        if frames:
            raise
        return report
    for key in TABLES:
        rows = report.get(key)
        if isinstance(rows, list):
            report[key] = pandas.json_normalize(rows) if rows else pandas.DataFrame()
    return report


def run(ndl, seed=None, until=None, frames=None):
    """Runs a scenario and returns its report.

    ``ndl``: NDL text (anything holding a ``[`` or a newline) or the path
    of an NDL file (a ``str`` or ``os.PathLike``). ``seed``: overrides the
    file's ``[Simulation seed=…]``. ``until``: stop at this virtual time,
    ``'10s'`` or a number of seconds (overrides the file's ``until``).
    ``frames``: ``None`` gives DataFrames when pandas is installed,
    ``True`` requires pandas, ``False`` keeps lists.

    Raises ``NdlError`` for a scenario that does not parse or build (with
    its place), ``ValueError`` for a bad ``until``.
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError("seed is a whole number from 0 to 2**64 - 1")
    until = _until(until)
    if isinstance(ndl, os.PathLike) or not _is_text(ndl):
        text, warned = _run_file(os.fspath(ndl), seed, until)
    else:
        text, warned = _run_text(ndl, "<string>", seed, until)
    for file, line, col, message in warned:
        warnings.warn("%s:%d:%d: %s" % (file, line, col, message), stacklevel=2)
    report = Report(json.loads(text), warned)
    return _frames(report, frames)


def check(ndl):
    """Parses NDL text or a file without running it; returns the warnings
    as ``(file, line, col, message)`` tuples. Raises ``NdlError``."""
    if isinstance(ndl, os.PathLike) or not _is_text(ndl):
        path = os.fspath(ndl)
        with open(path, encoding="utf-8") as f:
            return _check_text(f.read(), path)
    return _check_text(ndl, "<string>")
