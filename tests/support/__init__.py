"""Code only the tests use (it is not shipped in the wheel): a CPU runner for catalog kernels,
a ctypes binding of the host JIT library, the host tools the tests need."""
