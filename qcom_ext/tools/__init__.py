"""Tools that run the library: the CLI, the tuner CLI, the pytest plugin, verify, selftest
and the benchmarks. Nothing below this layer imports it."""
