"""Benchmarks for qcom_ext: cases compared side by side, run with ``qcom-ext bench`` (or
``python -m qcom_ext.tools.bench.run``).

Cases live in ``qcom_ext/tools/bench/cases_*.py`` (each exposes ``CASES``, a list of
:class:`qcom_ext.tools.bench._case.Case`, and may expose ``SUITES``, a list of
:class:`qcom_ext.tools.bench._case.Suite`); results are kept in ``docs/BENCHMARKS.md``,
written there by ``--update-doc``.
"""
