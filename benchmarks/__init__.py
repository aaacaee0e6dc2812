"""The benchmarking lab of the checkout, outside the wheel: the suites that time qcom_ext's
ops against the buffer copy, torch and OpenCV (``conv-suite``, ``accelerated-suite``,
``bicubic-suite``, ``matmul-suite``), issue 18's targets (:mod:`.goals`) and the kernel
profiles (``profile-suite``: PTX instruction mix, ptxas registers, CUDA occupancy).

Run from the top of a checkout, with qcom_ext importable::

    python -m benchmarks --list
    python -m benchmarks conv-suite --small --device pocl-3.1-cpu

It is ``qcom-ext bench``'s runner (:mod:`qcom_ext.tools.bench.run`) over the wheel's
on-device cases and this folder's ``cases_*.py``: the same options, JSON, ``--compare``,
``--summary`` and ``--update-doc``. qcom_ext never imports this package.
"""
