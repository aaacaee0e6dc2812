"""Benchmarks for qcom_ext: cases compared side by side, run with ``python -m benchmarks.run``.

Cases live in ``benchmarks/cases_*.py`` (each exposes ``CASES``, a list of
:class:`benchmarks._case.Case`); results are kept in ``docs/BENCHMARKS.md``.
"""
