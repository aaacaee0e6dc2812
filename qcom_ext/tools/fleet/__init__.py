"""Device reports for the fleet (issue 29): ``qcom-ext report`` writes one device's
report (:mod:`~qcom_ext.tools.fleet.report`: identity, environment, probe, checks with
stable ids, nothing private); the reports of many devices are read back and compared by
``qcom-ext compat`` (:mod:`~qcom_ext.tools.fleet.matrix`: a compatibility matrix,
contradictions and quirk proposals, docs/fleet.md). The shape of a report is
``qcom_ext/schemas/report-1.json``.
"""
