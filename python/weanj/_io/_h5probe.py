"""The HDF5 probe process of `_safeh5` (run as a script by `sys.executable`, never imported
by weanj): it imports nothing of weanj (weanj imports JAX, and a crash here must be
libhdf5's, not ours). Protocol on stdin: a JSON line {"size", "lookups", "max_bytes"} and
`size` bytes; on stdout "ready", then one JSON line per file: {"problems": [...]} or
{"error": "..."}."""

import io
import json
import sys


class ObjectError(Exception):
    pass


class TooLarge(Exception):
    pass


def size_text(n: int) -> str:
    """`4 GiB`, `12.5 MiB`, `300 bytes`."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def probe(data, lookups, h5py, max_bytes):
    problems = []
    budget = [max_bytes, max_bytes]  # bytes of dataset values still allowed, and the bound
    with h5py.File(io.BytesIO(data), "r") as f:
        root = f["/"]
        seen = {hash(root.id)}
        stack = [("", root)]
        read_attributes(root, "/", lookups)
        while stack:
            where, group = stack.pop()
            for name in lookups:
                name in group  # noqa: B015 (the lookup itself is what is probed)
            for name in list(group.keys()):
                path = f"{where}/{name}"
                link = group.get(name, getlink=True)
                if isinstance(link, h5py.ExternalLink):
                    problems.append(f"{path} is an external link to {link.filename}:{link.path}")
                    continue
                obj = group.get(name)
                if obj is None:  # a soft link to nothing: the reader finds nothing either
                    continue
                key = hash(obj.id)
                if key in seen:  # hard or soft links back up the tree: visit once
                    continue
                seen.add(key)
                try:
                    read_attributes(obj, path, lookups)
                    if isinstance(obj, h5py.Group):
                        stack.append((path, obj))
                    elif isinstance(obj, h5py.Dataset):
                        problem = read_dataset(obj, path, budget)
                        if problem:
                            problems.append(problem)
                except TooLarge:
                    raise
                except Exception as e:
                    raise ObjectError(f"{path}: {first_line(e)}") from None
    return problems


def read_attributes(obj, path, lookups):
    attrs = obj.attrs
    for name in lookups:
        name in attrs  # noqa: B015 (the lookup itself is what is probed)
    for name in list(attrs.keys()):
        attrs[name]


def read_dataset(ds, path, budget):
    if ds.is_virtual:
        return f"dataset {path} is a virtual dataset (its values live in other files)"
    if ds.external:
        files = ", ".join(str(e[0]) for e in ds.external)
        return f"dataset {path} is stored in external file(s) {files}, not in this file"
    if ds.shape is None:  # an empty dataspace: nothing to read
        return None
    nbytes = int(ds.size) * ds.dtype.itemsize
    filters = ds.id.get_create_plist().get_nfilters()
    stored = ds.id.get_storage_size()
    if not filters and stored < nbytes:
        return (  # the rest would read as fill values
            f"dataset {path} has only {stored} of its {nbytes} bytes stored in the file"
        )
    # The values' size as declared, before they are read: a small compressed file can
    # declare gigabytes. The bound is on all datasets together, whatever the file's size.
    budget[0] -= nbytes
    if budget[0] < 0:
        raise TooLarge(
            f"{path} declares {size_text(nbytes)}, past the {size_text(budget[1])} weanj reads "
            "from one file ($WEANJ_MAX_FILE_BYTES)"
        )
    ds[()]
    return None


def main():
    import h5py
    import numpy  # noqa: F401

    stdin, stdout = sys.stdin.buffer, sys.stdout
    stdout.write("ready\n")
    stdout.flush()
    while True:
        header = stdin.readline()
        if not header:
            return
        request = json.loads(header)
        data = stdin.read(request["size"])
        try:
            reply = {"problems": probe(data, request["lookups"], h5py, request["max_bytes"])}
        except Exception as e:
            reply = {"error": first_line(e)}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
