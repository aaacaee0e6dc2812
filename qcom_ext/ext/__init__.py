"""The host API, one subpackage or module per extension family: context and hints,
recording, memory objects, images, accelerated image ops, programs."""
