"""NVMe offload through rok's own storage layer (librok_torch_storage).

The library is the executor's store (src/storage: io_uring or psync,
O_DIRECT, pinned staging slots, rok-XXXXXX work folders, $ROK_FAULT fault
injection) behind a small C ABI (src/pytorch/torch-storage.c), called here
with ctypes. Calls block, but release the GIL: the offload engine runs them
on its I/O threads.
"""
import ctypes
import os

_lib = None


def _candidates():
    env = os.environ.get("ROK_TORCH_STORAGE_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build", "librok_torch_storage.so")
    yield "librok_torch_storage.so"  # installed: found by the dynamic loader


def load():
    """The library, loaded once; OSError says where it was looked for."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path}: {e}")
    else:
        raise OSError("librok_torch_storage not found (build rok with scripts/build.sh, or set "
                      "ROK_TORCH_STORAGE_LIB):\n  " + "\n  ".join(tried))
    p, c, u64, i64, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int64, ctypes.c_size_t
    sig = {
        "rok_torch_store_open": (p, [c, u64, ctypes.c_uint32, p, sz]),
        "rok_torch_store_workdir": (c, [p]),
        "rok_torch_store_backend": (c, [p]),
        "rok_torch_store_direct": (ctypes.c_int, [p]),
        "rok_torch_store_notes": (p, [p]),
        "rok_torch_store_free_string": (None, [p]),
        "rok_torch_store_put": (i64, [p, p, u64, p, sz]),
        "rok_torch_store_get": (ctypes.c_int, [p, i64, p, u64, p, sz]),
        "rok_torch_store_drop": (None, [p, i64]),
        "rok_torch_store_stats": (None, [p, ctypes.POINTER(u64 * 3)]),
        "rok_torch_store_close": (None, [p]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


class StorageError(OSError):
    pass


class Store:
    """Tensors' bytes in DIR/rok-XXXXXX/data, removed by close()."""

    def __init__(self, directory, slot_bytes=1 << 20, slots=16):
        self._lib = load()
        err = ctypes.create_string_buffer(1024)
        self._s = self._lib.rok_torch_store_open(os.fsencode(directory), slot_bytes, slots, err, len(err))
        if not self._s:
            raise StorageError(err.value.decode(errors="replace"))
        self.workdir = self._lib.rok_torch_store_workdir(self._s).decode()
        self.backend = self._lib.rok_torch_store_backend(self._s).decode()
        self.direct = bool(self._lib.rok_torch_store_direct(self._s))
        notes = self._lib.rok_torch_store_notes(self._s)
        self.notes = [n for n in ctypes.string_at(notes).decode().split("\n") if n]
        self._lib.rok_torch_store_free_string(notes)

    def put(self, address, nbytes):
        """Writes NBYTES at ADDRESS; returns a handle."""
        err = ctypes.create_string_buffer(1024)
        h = self._lib.rok_torch_store_put(self._s, address, nbytes, err, len(err))
        if h < 0:
            raise StorageError(err.value.decode(errors="replace"))
        return h

    def get(self, handle, address, nbytes):
        err = ctypes.create_string_buffer(1024)
        if self._lib.rok_torch_store_get(self._s, handle, address, nbytes, err, len(err)) != 0:
            raise StorageError(err.value.decode(errors="replace"))

    def drop(self, handle):
        self._lib.rok_torch_store_drop(self._s, handle)

    def stats(self):
        out = (ctypes.c_uint64 * 3)()
        self._lib.rok_torch_store_stats(self._s, ctypes.byref(out))
        return {"bytes_written": out[0], "bytes_read": out[1], "errors": out[2]}

    def close(self):
        if self._s:
            self._lib.rok_torch_store_close(self._s)
            self._s = None

    def __del__(self):
        self.close()
