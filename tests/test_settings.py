"""Every ``DISPATCH_*`` variable is read and checked in one place (``dispatch.base.settings``):
good values are taken, bad ones refused with a message naming the variable and what it accepts;
``dispatch.config`` gathers the settings (``get_config``, ``set_config``, ``config_context``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import dispatch
from dispatch import cluster, config, targets
from dispatch.base import settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("raw, want", [("", "auto"), ("auto", "auto"), ("numpy", "numpy"), ("dask", "dask")])
def test_backend_variable(raw, want):
    assert settings.read({"DISPATCH_BACKEND": raw}).backend == want


@pytest.mark.parametrize("raw, want", [("", False), ("0", False), ("1", True), ("true", True), ("False", False)])
@pytest.mark.parametrize("name, field", [("DISPATCH_TRACE", "trace"), ("DISPATCH_PURE_PYTHON", "pure_python")])
def test_switch_variables(name, field, raw, want):
    assert getattr(settings.read({name: raw}), field) is want


@pytest.mark.parametrize("name", ["DISPATCH_TRACE", "DISPATCH_PURE_PYTHON"])
def test_switch_variables_refuse_other_words(name):
    with pytest.raises(ValueError, match=rf"^{name}='maybe': expected 0 or 1 \(or false / true\)$"):
        settings.read({name: "maybe"})


@pytest.mark.parametrize("raw, want", [("", "keep"), ("keep", "keep"), ("system", "system"), ("SYSTEM", "system")])
def test_heap_variable(raw, want):
    assert settings.read({"DISPATCH_HEAP": raw}).heap == want


def test_heap_variable_refuses_other_words():
    with pytest.raises(ValueError, match=r"^DISPATCH_HEAP='glibc': expected one of: keep, system$"):
        settings.read({"DISPATCH_HEAP": "glibc"})


@pytest.mark.parametrize("raw, want", [("", 0.5), ("0.25", 0.25), ("1", 1.0), ("1e-3", 0.001)])
def test_memory_fraction_variable(raw, want):
    assert settings.read({"DISPATCH_MEMORY_FRACTION": raw}).memory_fraction == want


@pytest.mark.parametrize("raw", ["abc", "0", "-0.5", "1.5", "nan", "inf"])
def test_memory_fraction_variable_refuses_what_is_not_in_0_1(raw):
    with pytest.raises(ValueError, match=rf"^DISPATCH_MEMORY_FRACTION='{raw}': expected a number in \(0, 1\]$"):
        settings.read({"DISPATCH_MEMORY_FRACTION": raw})


@pytest.mark.parametrize("raw, want", [("", None), ("1", 1), ("1048576", 1 << 20)])
def test_chunk_bytes_variable(raw, want):
    assert settings.read({"DISPATCH_DASK_CHUNK_BYTES": raw}).chunk_bytes == want


@pytest.mark.parametrize("raw", ["xyz", "0", "-1", "1.5", "1e400"])
def test_chunk_bytes_variable_refuses_what_is_not_a_count_of_bytes(raw):
    want = rf"^DISPATCH_DASK_CHUNK_BYTES='{raw}': expected a whole number of bytes >= 1$"
    with pytest.raises(ValueError, match=want):
        settings.read({"DISPATCH_DASK_CHUNK_BYTES": raw})


def test_backend_variable_refuses_what_names_no_target():
    """Read at import, checked against the registered targets' names once they have registered."""
    assert settings.read({"DISPATCH_BACKEND": "cuda"}).backend == "cuda"
    with pytest.raises(ValueError, match=r"^DISPATCH_BACKEND='cuda' is not a backend; choose one of: auto, numpy"):
        settings.check_backend("cuda", "DISPATCH_BACKEND", targets.names())
    assert settings.check_backend("numpy", "DISPATCH_BACKEND", targets.names()) == "numpy"


def test_cache_dir_variable_is_read_at_each_use(tmp_path):
    assert settings.cache_dir({}) is None
    assert settings.cache_dir({"DISPATCH_CACHE_DIR": str(tmp_path)}) == tmp_path
    with pytest.raises(ValueError, match=r"^DISPATCH_CACHE_DIR='a\\x00b': expected a directory path$"):
        settings.cache_dir({"DISPATCH_CACHE_DIR": "a\0b"})


def test_cache_dir_variable_moves_the_calibration_cache(monkeypatch, tmp_path):
    from dispatch.routing import calibration

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    assert calibration.cache_dir() == tmp_path
    assert config.get_config()["cache_dir"] == str(tmp_path)


def test_dask_scheduler_variable_is_read_at_each_use(monkeypatch):
    assert settings.dask_scheduler({}) is None
    assert settings.dask_scheduler({"DISPATCH_DASK_SCHEDULER": " tcp://h:8786 "}) == "tcp://h:8786"
    with pytest.raises(ValueError, match=r"^DISPATCH_DASK_SCHEDULER='tcp://a b': expected a Dask scheduler address"):
        settings.dask_scheduler({"DISPATCH_DASK_SCHEDULER": "tcp://a b"})
    monkeypatch.setenv("DISPATCH_DASK_SCHEDULER", "tcp://a b")
    with pytest.raises(ValueError, match="DISPATCH_DASK_SCHEDULER"):
        cluster.connected()  # first use


def _import_with(name: str, value: str) -> subprocess.CompletedProcess:
    env = {**os.environ, name: value}
    return subprocess.run([sys.executable, "-c", "import dispatch; dispatch.ones(3) + 1"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("name, value, accepted", [
    ("DISPATCH_MEMORY_FRACTION", "abc", "expected a number in (0, 1]"),
    ("DISPATCH_DASK_CHUNK_BYTES", "xyz", "expected a whole number of bytes >= 1"),
    ("DISPATCH_TRACE", "maybe", "expected 0 or 1 (or false / true)"),
    ("DISPATCH_HEAP", "glibc", "expected one of: keep, system"),
])
def test_a_bad_variable_fails_the_import_naming_it(name, value, accepted):
    done = _import_with(name, value)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"ValueError: {name}={value!r}: {accepted}"


def test_the_setters_check_as_the_variables_do():
    with pytest.raises(ValueError, match=r"^memory_fraction=1.5: expected a number in \(0, 1\]$"):
        config.set_memory_fraction(1.5)
    with pytest.raises(ValueError, match=r"^chunk_bytes=0: expected a whole number of bytes >= 1$"):
        config.set_chunk_bytes(0)
    assert config.get_config()["memory_fraction"] == 0.5


def test_get_config_set_config_and_config_context():
    assert dispatch.get_config is config.get_config and dispatch.set_memory_fraction is config.set_memory_fraction
    before = config.get_config()
    assert before["backend"] == "auto" and before["memory_fraction"] == 0.5 and before["chunk_bytes"] is None
    with config.config_context(backend="numpy", memory_fraction=0.25, chunk_bytes=1 << 20):
        now = config.get_config()
        assert (now["backend"], now["memory_fraction"], now["chunk_bytes"]) == ("numpy", 0.25, 1 << 20)
        assert cluster.chunk_bytes() == 1 << 20
    assert config.get_config() == before
    try:
        config.set_config(backend="numpy", memory_fraction=0.75)
        assert dispatch.get_backend() == "numpy" and cluster.memory_fraction() == 0.75
    finally:
        config.set_config(backend="auto", memory_fraction=0.5, chunk_bytes=None)
    assert config.get_config() == before


def test_config_context_backend_is_local_to_its_thread():
    seen = []
    with config.config_context(backend="numpy"):
        worker = threading.Thread(target=lambda: seen.append(config.get_config()["backend"]))
        worker.start()
        worker.join()
        assert config.get_config()["backend"] == "numpy"
    assert seen == ["auto"]
