"""Where the recipe data comes from: explicit path, environment, user cache, download."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tpdisc.domain.recipes import RecipeGraph, load_recipes
from tpdisc.errors import RecipeDataError
from tpdisc.safefiles import (
    FileRefused,
    env_path,
    folder_usable,
    open_regular,
    write_file,
    writing,
)

ENV_VAR = "TPDISC_RECIPES"
FILE_NAME = "alchemy2.json"
SHA256 = "757422df36f8805b1a56c418e613c6418c905b0956e6f2fb3dff78569933d25d"
# The public file is 0.4 MB; an install reads no more than this of whatever it is given.
MAX_INSTALL_BYTES = 16_000_000
URL = "https://raw.githubusercontent.com/minqi/wordcraft/main/datasets/alchemy2.json"


def cache_dir() -> Path:
    """The user cache directory of tpdisc (``TPDISC_CACHE`` overrides it); one that
    cannot be a folder (a file is in the way) is a one-line error naming the variable."""
    override = env_path("TPDISC_CACHE", "folder")
    if override is not None:
        return override
    import platformdirs  # here: a command given its recipes and no prior never asks

    # platformdirs' folder comes from $XDG_CACHE_HOME, else from $HOME.
    source = "$XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "$HOME"
    return folder_usable(Path(platformdirs.user_cache_dir("tpdisc")), f"the cache (from {source})")


def download(url: str | None = None, dest: Path | None = None, sha256: str | None = None) -> Path:
    """Fetch the public recipe file, check its sha256, and store it in the user cache.

    Defaults are read from the module at call time, so a mirror (or a test server) can be
    set by changing ``URL`` and ``SHA256``.
    """
    import urllib.request  # with http and ssl, 8 ms of every process's start otherwise

    url = url or URL
    sha256 = sha256 or SHA256
    dest = dest or cache_dir() / FILE_NAME
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            payload = response.read()
    except OSError as err:
        raise RecipeDataError(f"download of {url} failed: {err}") from None
    digest = hashlib.sha256(payload).hexdigest()
    if digest != sha256:
        raise RecipeDataError(f"download of {url}: sha256 {digest} does not match {sha256}")
    # A fresh temporary name: two commands filling the cache at once do not mix their bytes.
    return write_file(dest, payload)


def install(path: str | Path) -> Path:
    """Check that ``path`` is the public recipe file (its sha256) and copy it to the user
    cache, where every later run finds it without ``--recipes``.

    The path is untrusted: only a regular file no larger than :data:`MAX_INSTALL_BYTES` is
    read, hashed while it streams, so neither ``/dev/zero`` nor a FIFO nor a huge file
    costs more than a moment and a chunk of memory.
    """
    path = Path(path)
    dest = cache_dir() / FILE_NAME
    digest = hashlib.sha256()
    try:
        # Into place only once checked: a fresh temporary name beside it until then.
        with open_regular(path, MAX_INSTALL_BYTES) as source, writing(dest) as copy:
            size = 0
            while chunk := source.read(1 << 20):
                size += len(chunk)
                if size > MAX_INSTALL_BYTES:  # it grew while being read
                    raise RecipeDataError(
                        f"{path}: more than the {MAX_INSTALL_BYTES:,} bytes allowed here"
                    )
                digest.update(chunk)
                copy.write(chunk)
            if digest.hexdigest() != SHA256:
                raise RecipeDataError(
                    f"{path}: sha256 {digest.hexdigest()[:12]}… is not the public Little "
                    f"Alchemy 2 file's ({SHA256[:12]}…); to play another file, give it with "
                    f"--recipes or ${ENV_VAR}"
                )
    except FileRefused as err:
        raise RecipeDataError(str(err)) from None
    return dest


def installed() -> Path | None:
    """The checked copy of the public file in the user cache, if one is there."""
    cached = cache_dir() / FILE_NAME
    try:
        with open_regular(cached, MAX_INSTALL_BYTES) as stream:
            digest = hashlib.sha256(stream.read()).hexdigest()
    except FileRefused:  # none there, or not a file
        return None
    return cached if digest == SHA256 else None


def fetch() -> tuple[Path, bool]:
    """Keep the checked public file in the user cache, downloading it only when no checked
    copy is there yet: ``(its path, whether it was downloaded now)``."""
    present = installed()
    if present is not None:
        return present, False
    return download(dest=cache_dir() / FILE_NAME), True


def locate_recipes(path: str | Path | None = None, *, allow_download: bool = True) -> Path:
    """Find the recipe file: ``path``, then ``$TPDISC_RECIPES``, the user cache, a download."""
    if path:
        return Path(path)
    env = env_path(ENV_VAR, "file")
    if env is not None:
        return env
    cached = cache_dir() / FILE_NAME
    if cached.is_file():
        return cached
    if allow_download:
        try:
            return download(dest=cached)
        except RecipeDataError as err:
            reason = str(err)
    else:
        reason = "download disabled"
    raise RecipeDataError(
        f"no recipe data: no --recipes path, ${ENV_VAR} unset, nothing in {cached}, and {reason}; "
        f"keep a local copy in the cache once with 'tpdisc data install PATH', or give it "
        f"with --recipes PATH or {ENV_VAR}=PATH"
    )


def default_graph(path: str | Path | None = None) -> RecipeGraph:
    """Load the recipe graph from wherever :func:`locate_recipes` finds it."""
    return load_recipes(locate_recipes(path))
