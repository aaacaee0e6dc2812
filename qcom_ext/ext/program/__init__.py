"""Programs: building through the compat header, the binary cache, sub-groups, bfloat16."""
