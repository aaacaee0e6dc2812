"""The on-device benchmarks of qcom_ext: cases compared side by side, run with
``qcom-ext bench`` (or ``python -m qcom_ext.tools.bench.run``).

Cases live in ``qcom_ext/tools/bench/cases_*.py`` (each exposes ``CASES``, a list of
:class:`qcom_ext.tools.bench._case.Case`, and may expose ``SUITES``, a list of
:class:`qcom_ext.tools.bench._case.Suite`); results are kept in ``docs/BENCHMARKS.md``,
written there by ``--update-doc``. The wheel's one suite, ``ops-suite``
(:mod:`.cases_ops`), puts qcom_ext.ops against the device's buffer copy; ``--summary``
makes one table of what ran. The suites that compare qcom_ext with torch and OpenCV
and the NVIDIA kernel profiles are not shipped: they are the checkout's ``benchmarks/``
(``python -m benchmarks``), run by this package's runner.
"""
