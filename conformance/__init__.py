"""Conformance harness: run the same small JAX programs on several implementations and compare.

The reference implementation (real JAX, on CPU) supplies the expected result of every case; every
other implementation must reproduce it: same tree structure, dtypes, weak types, values (bit-exact
unless a case allows a ULP tolerance), printed strings, and exception classes.
"""
