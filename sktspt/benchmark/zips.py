"""The archives' zip files as they are downloaded, read for ``--data-dir``.

The UCR archive (https://www.cs.ucr.edu/~eamonn/time_series_data_2018/) ships as
``UCRArchive_2018.zip``: ``UCRArchive_2018/<Name>/<Name>_TRAIN.tsv`` and ``_TEST.tsv``,
encrypted with ZipCrypto under the password its README states ("someone",
:data:`PASSWORDS`). The UEA multivariate and the univariate ``.ts`` archives
(https://www.timeseriesclassification.com/) ship as ``Multivariate2018_ts.zip``
(``Multivariate_ts/<Name>/<Name>_TRAIN.ts``) and ``Univariate2018_ts.zip``
(``Univariate_ts/<Name>/...``), unencrypted. Unpacked, the same top folders are
:data:`ARCHIVE_ROOTS`.

A problem is extracted from the zip the first time it is read, into a cache folder
(:func:`cache_folder`), by writing to a temporary folder and renaming it, so that processes
reading the same zip at once never see half a problem; later reads, in any process, find
it there and need neither the zip's password nor its decryption again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path

__all__ = ["ARCHIVE_ROOTS", "CACHE_ENV", "PASSWORDS", "PASSWORD_ENV", "cache_folder",
           "extract_problem", "zip_problems"]

#: The top folder of each official archive zip, which unpacking it leaves in the folder.
ARCHIVE_ROOTS = ("UCRArchive_2018", "Univariate_ts", "Multivariate_ts")
#: The passwords the archives' READMEs state, by top folder: the UCR 2018 archive's.
PASSWORDS = {"UCRArchive_2018": "someone"}
#: An environment variable naming the password of an encrypted zip (``--zip-password``);
#: it wins over :data:`PASSWORDS`.
PASSWORD_ENV = "SKTSPT_ZIP_PASSWORD"
#: An environment variable naming the folder problems are extracted into (default
#: ``$XDG_CACHE_HOME/sktspt/archives``, else ``~/.cache/sktspt/archives``).
CACHE_ENV = "SKTSPT_DATA_CACHE"

_MEMBER = re.compile(r"(?:^|.*/)(?P<name>[^/]+)/(?P=name)_(?P<split>TRAIN|TEST)\.(?P<ext>tsv?)$")


def zip_problems(path: str | os.PathLike) -> dict[str, tuple[str, str, str]]:
    """The problems in a zip: name -> (extension, training member, test member).

    A problem is a folder ``<Name>`` holding ``<Name>_TRAIN`` and ``<Name>_TEST`` in
    ``.ts`` or ``.tsv``, at any depth. Where a name is there twice (the UCR zip also holds
    ``Missing_value_and_variable_length_datasets_adjusted/<Name>``), the shallower copy is
    the problem: the archive's own files. Reads only the zip's directory, which is never
    encrypted.

    Raises
    ------
    ValueError
        If ``path`` is not a zip file.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{path} is not a readable zip file ({exc}).") from None
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for member in members:
        match = _MEMBER.match(member)
        if match is None or member.startswith("__MACOSX/"):
            continue
        key = (member[: match.start("name")], match["name"], match["ext"])
        found.setdefault(key, {})[match["split"]] = member
    problems: dict[str, tuple[str, str, str]] = {}
    for (_, name, ext), splits in sorted(found.items(), key=lambda kv: kv[0][0].count("/")):
        if name not in problems and len(splits) == 2:
            problems[name] = (ext, splits["TRAIN"], splits["TEST"])
    return problems


def cache_folder(path: str | os.PathLike) -> Path:
    """The folder a zip's problems are extracted into: one per zip file, by its resolved
    path, size and modification time, so that a replaced zip is extracted afresh."""
    path = Path(path).resolve()
    stat = path.stat()
    key = hashlib.sha256(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()
    base = os.environ.get(CACHE_ENV) or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sktspt" / "archives"
    return Path(base) / f"{path.stem}-{key[:12]}"


def _password(archive: zipfile.ZipFile, member: str) -> bytes | None:
    given = os.environ.get(PASSWORD_ENV)
    if given:
        return given.encode()
    top = member.split("/", 1)[0]
    known = PASSWORDS.get(top) or PASSWORDS.get(Path(archive.filename or "").stem)
    return None if known is None else known.encode()


def extract_problem(path: str | os.PathLike, name: str) -> Path:
    """The cache folder holding ``<name>/<name>_TRAIN`` and ``_TEST``, extracted from the
    zip at ``path`` if they are not there yet; the cache folder alone where the zip has no
    such problem (what a download would then fill).

    Raises
    ------
    ValueError
        If the zip is encrypted and the password is wrong or unknown; the message says how
        to give it.
    """
    folder = cache_folder(path)
    problem = zip_problems(path).get(name)
    if problem is None:
        return folder
    ext, *members = problem
    target = folder / name
    if all((target / f"{name}_{split}.{ext}").is_file() for split in ("TRAIN", "TEST")):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    try:
        with zipfile.ZipFile(path) as archive:
            for member, split in zip(members, ("TRAIN", "TEST")):
                with archive.open(member, pwd=_password(archive, member)) as src, \
                        open(staging / f"{name}_{split}.{ext}", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        try:
            os.replace(staging, target)
        except OSError:  # another process extracted it first: keep its copy
            if not target.is_dir():
                raise
    except (RuntimeError, zipfile.BadZipFile, zlib.error) as exc:  # no or a wrong password
        raise ValueError(
            f"{path}: {name} could not be extracted ({exc}); if the zip is encrypted, give the "
            f"password its README states with --zip-password (or ${PASSWORD_ENV}).") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
