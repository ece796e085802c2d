"""llama.cpp's process-wide setup, and what every llama.cpp model needs to know.

:func:`import_llama_cpp` loads the bindings (a one-line error if they cannot
load); :func:`prepare_llama` initialises llama.cpp's backend once and captures its
C-level log (silenced on stderr; recent warnings and errors kept for error
messages, see :func:`last_message`).  Also: checking a GGUF file before llama.cpp
reads it, reading its metadata, the CPUs this process may use, and a cheap
identity of a model file for fingerprints.
"""

from __future__ import annotations

import collections
import ctypes
import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

# llama.cpp enum values (llama.h, ggml.h); kept here so Citeline imports without llama_cpp.
POOLING_NONE = 0
POOLING_MEAN = 1
POOLING_CLS = 2
POOLING_LAST = 3
POOLING_RANK = 4
POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}

_LOG_LEVEL_WARN = 3
_LOG_LEVEL_ERROR = 4
_LOG_LEVEL_CONT = 5
_MiB = 1 << 20

_log_lock = threading.Lock()
_log_callback: Any = None  # the ctypes callback; referenced here so it is never freed
_recent_log: collections.deque[str] = collections.deque(maxlen=32)
_backend_ready = False


def _on_llama_log(level: int, text: bytes | None, _user_data: Any) -> None:
    if not text:
        return
    message = text.decode("utf-8", errors="replace")
    if level == _LOG_LEVEL_CONT:
        if _recent_log:
            _recent_log[-1] += message
        return
    if level in (_LOG_LEVEL_WARN, _LOG_LEVEL_ERROR):
        _recent_log.append(message)


#: libgomp reads its wait policy once, when llama.cpp's library loads.  By default a
#: thread that reaches a barrier first spins for its partner; when another process
#: holds a core the partner may be parked, and the spinning starves it: with one
#: busy process beside on 2 cores, embedding fell to 0.37 of its quiet speed and
#: generation to 0.27.  Waiting passively: 0.56 and 0.69 (docs/performance.md).
#: Quiet, passive waiting embeds faster too; it costs generation's per-token
#: barriers, which is why generation decodes on one thread (``generator.py``).
OPENMP_ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE"}


def import_llama_cpp(error: type[Exception], what: str) -> Any:
    """The ``llama_cpp`` module; ``error`` naming ``what`` could not load if it cannot.

    Sets :data:`OPENMP_ENVIRONMENT` first (unless the user set those variables).  The
    package comes back with its C API (``llama_cpp.llama_cpp``, all an encoder uses)
    and the rest of its ``__init__`` deferred: that imports the high-level API
    (``Llama``, chat formats, jinja2), 0.1 s of CPU for every search from the command
    line.  The first name asked of the package that the C API lacks (``Llama``, as
    the generator asks) runs the deferred ``__init__`` (:func:`_lazy_package`)."""
    for name, value in OPENMP_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:
        with _import_lock:
            package = sys.modules.get("llama_cpp") or _lazy_package()
            importlib.import_module("llama_cpp.llama_cpp")
    except Exception as exc:  # ImportError, or OSError from loading the shared library
        raise error(f"cannot load {what}: llama-cpp-python is unavailable ({exc})") from exc
    return package


_import_lock = threading.RLock()


def _lazy_package() -> ModuleType:
    """``llama_cpp`` registered but its ``__init__`` not run: the C API's names are
    found on it (copied once ``llama_cpp.llama_cpp`` loads), any other name runs the
    ``__init__`` in place first."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError("No module named 'llama_cpp'")
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> Any:  # PEP 562: only for names not yet on the module
        with _import_lock:
            if package.__dict__.get("__getattr__") is __getattr__:
                del package.__dict__["__getattr__"]
                loader.exec_module(package)  # the real __init__: C API and high-level API
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'llama_cpp' has no attribute {name!r}") from None

    package.__dict__["__getattr__"] = __getattr__
    sys.modules["llama_cpp"] = package
    try:
        bindings = importlib.import_module("llama_cpp.llama_cpp")
    except BaseException:
        del sys.modules["llama_cpp"]
        raise
    for name, value in vars(bindings).items():  # as ``from .llama_cpp import *`` would
        if not name.startswith("_"):
            package.__dict__.setdefault(name, value)
    return package


def prepare_llama(llama_cpp: Any) -> None:
    """Silence llama.cpp's C-level logging and initialise its backend, once."""
    global _log_callback, _backend_ready
    with _log_lock:
        if _log_callback is None:
            _log_callback = llama_cpp.llama_log_callback(_on_llama_log)
            llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True


def clear_log() -> None:
    """Forget the captured messages: the next error names only what follows."""
    _recent_log.clear()


def last_message() -> str:
    """The latest warning or error llama.cpp logged, on one line."""
    for message in reversed(_recent_log):
        line = " ".join(message.split())
        if line:
            return line
    return "no details from llama.cpp"


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def file_identity(path: Path) -> str:
    """sha256 of the first and last MiB plus the size: cheap, and changes with the model."""
    digest = hashlib.sha256()
    size = path.stat().st_size
    digest.update(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_MiB))
        if size > _MiB:
            handle.seek(max(size - _MiB, _MiB))
            digest.update(handle.read(_MiB))
    return digest.hexdigest()


def check_gguf_file(path: Path, role: str, error: type[Exception]) -> None:
    """Raise ``error`` (one line naming the file) unless ``path`` is a readable GGUF file."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError as exc:
        raise error(f"{role} {path} does not exist") from exc
    except IsADirectoryError as exc:
        raise error(f"{role} {path} is a directory, not a file") from exc
    except OSError as exc:
        raise error(f"cannot read {role} {path}: {exc}") from exc
    if magic != b"GGUF":
        raise error(f"{role} {path} is not a GGUF file")


def model_meta(llama_cpp: Any, model: Any, key: str) -> str | None:
    """A GGUF metadata value of a loaded model, as text; None when it has no ``key``."""
    buf = ctypes.create_string_buffer(256)
    n = int(llama_cpp.llama_model_meta_val_str(model, key.encode(), buf, len(buf)))
    if n < 0:
        return None
    if n >= len(buf):
        buf = ctypes.create_string_buffer(n + 1)
        llama_cpp.llama_model_meta_val_str(model, key.encode(), buf, len(buf))
    return buf.value.decode("utf-8", errors="replace")
