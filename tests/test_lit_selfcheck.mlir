// RUN: echo hello | filecheck %s
// RUN: not false
// Self-check of the .mlir collector in tests/conftest.py: needs only bash and filecheck.

// CHECK: hello
