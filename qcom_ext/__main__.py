from qcom_ext.tools.cli import main

raise SystemExit(main())
