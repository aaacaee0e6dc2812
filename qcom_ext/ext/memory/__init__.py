"""Memory objects: external host pointers, on-chip global memory, buffers from images."""
