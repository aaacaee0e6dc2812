"""The test doubles: every one goes through ``driver.substitute`` (qcom_ext/binding/lib.py).

One vocabulary, used by every module here and by the tests that import them:

* a **substitute** is a Python callable that ``driver.substitute(name=callable)`` turns
  into a cffi callback of the entry point's own type, standing in for that driver entry
  point while a ``with`` block runs; it sees exactly the arguments a driver would;
* a **fake driver** is a set of substitutes with the state they share, installed by a
  ``with`` block: :func:`driver.fake_driver` (a fake Adreno 740 answering the info
  queries), :class:`memory.FakeMemDriver` (what clCreateBuffer / clCreateImage receive),
  :class:`recording.FakeRecordingDriver` (cl_qcom_recordable_queues, replayed for real),
  :class:`external.FakeExternalDriver` (the Khronos external-memory imports: the
  properties lists, acquire/release, the fd ownership rule).
  A fake driver class has ``substitutes()`` (entry point name -> substitute), so that
  several can be installed in one block, and ``with FakeX() as fake:`` installs its own;
* :func:`claiming.claiming` makes a **real** device claim Adreno extensions: a substitute
  for its clGetDeviceInfo answers the claimed names and limits, every other query and
  entry point reaches the real driver (further substitutes may be passed);
* :class:`image_requirements.FakeRequirements` is a substitute for
  clGetImageRequirementsInfoEXT on a real device claiming cl_ext_image_requirements_info,
  and :class:`image_requirements.ContextLedger` records the contexts made and released
  around it;
* a :class:`ledger.Ledger` records the real objects that substitutes hand out and says
  whether each was released exactly once;
* a :class:`driver.FakeCLObject` is what a pyopencl wrapper returns for a fake handle
  (the ``fake_cl_objects`` fixture of tests/conftest.py installs it), since pyopencl
  must never see one.

One double is no substitute: :mod:`fakes.opencl_shim` compiles a real OpenCL library
(forwarding every entry point to pocl or Oclgrind) that looks like Qualcomm's driver or
Mesa rusticl, for the Snapdragon library layouts tests/test_opencl_shim.py simulates in
child processes.

Handles of a fake driver are small integers (:data:`driver.DEVICE`, :data:`driver.PLATFORM`,
:data:`memory.CTX`), never real ones. Byte helpers (``addr``, ``raw``, ``cstr``, ``u32``,
``u64``) live in :mod:`fakes.driver`.
"""
