"""Fleet reports (issue 29): one device's selftest as a report, and ``qcom-ext compat``,
which merges many into a compatibility matrix (docs/fleet.md)."""
