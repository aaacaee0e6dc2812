"""numpy references: the truths the device results are checked against."""
