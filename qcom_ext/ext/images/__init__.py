"""Images: formats (planar, compressed, other), extended image queries, samplers, YUV."""
