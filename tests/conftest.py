"""Shared fixtures: real JAX (the oracle) on CPU, and x64 toggling for both."""

from __future__ import annotations

import os
from collections.abc import Iterator

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402

import spec  # noqa: E402

# Every jaxpr that spec traces during the tests is type-checked (check_jaxpr).
spec.config.update("jax_enable_checks", True)


@pytest.fixture
def x64() -> Iterator[None]:
    """Run a test with jax_enable_x64 on, in spec and in JAX."""
    import jax

    import spec
    spec.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@pytest.fixture
def four_devices() -> Iterator[None]:
    """Four virtual CPU devices for the test (JAX-side comparisons run in a
    subprocess with JAX_NUM_CPU_DEVICES=4: JAX fixes its count at first use)."""
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        yield
    finally:
        spec.config.update("jax_num_cpu_devices", before)


# CI runs derandomized property tests, so a run is reproducible, with 40
# examples where a test sets no count of its own (most of its time is one JAX
# compilation per example); local runs keep exploring new examples, 100 each.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40)
if os.environ.get("CI") or os.environ.get("SPEC_TESTS_PROFILE") == "ci":
    _hypothesis_settings.load_profile("ci")


# JAX sides of twin programs (tests/support/twin.py) run ahead in a background
# process while earlier tests run here; none starts during the tests that
# launch MPI ranks or time things, whose deadlines assume a quiet machine.
_QUIET_MODULES = {"tests.mpi.test_mpi", "tests.mpi.test_faults", "tests.mpi.test_examples",
                  "tests.benchmarks.test_smoke"}


def pytest_configure(config: pytest.Config) -> None:
    # The controlling process (the only one without xdist's workerinput) makes
    # the folder its workers share for JAX results and compilation caches.
    if not hasattr(config, "workerinput"):
        from tests.support import twin
        twin.make_shared_dir()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        from tests.support import twin
        twin.remove_shared_dir()


def pytest_collection_finish(session: pytest.Session) -> None:
    from tests.support import twin
    modules: list[str] = []
    for item in session.items:
        name = item.module.__name__ if isinstance(item, pytest.Function) else ""
        if name and name not in modules:
            modules.append(name)
    twin.start(modules)


def pytest_runtest_setup(item: pytest.Item) -> None:
    from tests.support import twin
    module = item.module.__name__ if isinstance(item, pytest.Function) else ""
    if module in _QUIET_MODULES:
        twin.pause()
    else:
        twin.resume()


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.support import twin
    twin.stop()
