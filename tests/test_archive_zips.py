"""Issue 83: ``--data-dir`` takes the archives as users have them: the official
``UCRArchive_2018.zip`` (ZipCrypto, the password its README states), the UEA
``Multivariate2018_ts.zip``, and both unpacked. Tiny zips made here; no download."""

import struct
import zipfile
import zlib

import numpy as np
import pytest

from sktspt.benchmark import datasets, load_dataset, local_problems
from sktspt.benchmark.options import build_parser, resolve_options
from sktspt.benchmark.zips import PASSWORD_ENV, zip_problems


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SKTSPT_DATA_CACHE", str(tmp_path / "cache"))
    # recorded, so that teardown also removes what --zip-password sets; empty is no password
    monkeypatch.setenv(PASSWORD_ENV, "")
    load_dataset.cache_clear()
    return tmp_path / "cache"


def _tsv(n, seed, length=10):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        label = 1 + i % 2
        values = np.sin(np.linspace(0, 3, length) * label) + 0.1 * rng.normal(size=length)
        lines.append("\t".join([str(label), *(f"{v:.4f}" for v in values)]))
    return ("\n".join(lines) + "\n").encode()


def _ts(name, n, seed, length=8):
    rng = np.random.default_rng(seed)
    head = (f"@problemName {name}\n@timeStamps false\n@missing false\n@univariate false\n"
            f"@dimensions 2\n@equalLength true\n@seriesLength {length}\n"
            "@classLabel true a b\n@data\n")
    rows = [":".join(",".join(f"{v:.3f}" for v in rng.normal(size=length) + i % 2)
                     for _ in range(2)) + f":{'ab'[i % 2]}" for i in range(n)]
    return (head + "\n".join(rows) + "\n").encode()


def _ucr_members(names, root="UCRArchive_2018"):
    members = {f"{root}/README.md": b"password: someone\n"}
    for k, name in enumerate(names):
        for split, n in (("TRAIN", 6), ("TEST", 4)):
            members[f"{root}/{name}/{name}_{split}.tsv"] = _tsv(n, k * 10 + n)
    # the archive's adjusted copies of the unequal-length sets: the same names, deeper
    adjusted = f"{root}/Missing_value_and_variable_length_datasets_adjusted/{names[0]}"
    for split in ("TRAIN", "TEST"):
        members[f"{adjusted}/{names[0]}_{split}.tsv"] = b"9\t0\t0\n"
    return members


def _uea_members(names, root="Multivariate_ts"):
    return {f"{root}/{name}/{name}_{split}.ts": _ts(name, n, k + n)
            for k, name in enumerate(names) for split, n in (("TRAIN", 6), ("TEST", 4))}


class _ZipCrypto:
    """PKWARE's traditional encryption (APPNOTE 6.1), what the UCR zip uses; zipfile reads
    it but cannot write it."""

    def __init__(self, password: bytes):
        self.keys = [0x12345678, 0x23456789, 0x34567890]
        for c in password:
            self._update(c)

    @staticmethod
    def _crc(crc, byte):
        return zlib.crc32(bytes([byte]), crc ^ 0xFFFFFFFF) ^ 0xFFFFFFFF

    def _update(self, c):
        k0, k1, k2 = self.keys
        k0 = self._crc(k0, c)
        k1 = ((k1 + (k0 & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        k2 = self._crc(k2, k1 >> 24)
        self.keys = [k0, k1, k2]

    def encrypt(self, data: bytes) -> bytes:
        out = bytearray()
        for c in data:
            t = (self.keys[2] | 2) & 0xFFFF
            out.append(c ^ (((t * (t ^ 1)) >> 8) & 0xFF))
            self._update(c)
        return bytes(out)


def _encrypted_zip(path, members: dict, password: bytes):
    """A zip of stored members, each encrypted with ZipCrypto under ``password``."""
    local, central = bytearray(), bytearray()
    for name, data in members.items():
        crc, raw = zlib.crc32(data), name.encode()
        body = _ZipCrypto(password).encrypt(bytes(range(11)) + bytes([crc >> 24]) + data)
        fields = (20, 1, 0, 0, 0x21, crc, len(body), len(data), len(raw), 0)
        offset = len(local)
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + raw + body
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0,
                               offset) + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                      len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path


def _plain_zip(path, members: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _unpack(folder, members: dict):
    for name, data in members.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def _options(*argv):
    parser = build_parser()
    return resolve_options(parser.parse_args(list(argv)), parser)


def test_the_ucr_zip_reads_with_the_password_its_readme_states(tmp_path):
    archive = _encrypted_zip(tmp_path / "UCRArchive_2018.zip",
                             _ucr_members(["Alpha", "Beta"]), b"someone")
    with zipfile.ZipFile(archive) as z, pytest.raises(RuntimeError, match="password"):
        z.read("UCRArchive_2018/Alpha/Alpha_TRAIN.tsv")  # really encrypted
    assert local_problems(archive) == ["Alpha", "Beta"]  # not the adjusted copy's folder
    X, y, X_test, y_test, info = load_dataset("Alpha", str(archive))
    assert X.shape == (6, 1, 10) and X_test.shape == (4, 1, 10)
    assert sorted(set(y)) == ["1", "2"] and info.n_classes == 2  # the archive's, not 9
    opts = _options("--datasets", "all", "--data-dir", str(archive), "--models", "minirocket")
    assert opts.datasets == ["Alpha", "Beta"] and opts.task == "classification"


def test_a_wrong_password_says_how_to_give_the_right_one(tmp_path, monkeypatch, capsys):
    archive = _encrypted_zip(tmp_path / "mine.zip", _ucr_members(["Alpha"], root="mine"),
                             b"secret")
    with pytest.raises(ValueError, match="--zip-password"):
        load_dataset("Alpha", str(archive))  # no password known for this zip
    load_dataset.cache_clear()
    with pytest.raises(SystemExit):
        _options("--datasets", "all", "--data-dir", str(archive), "--zip-password", "nope",
                 "--models", "minirocket")
    monkeypatch.setenv(PASSWORD_ENV, "secret")
    assert load_dataset("Alpha", str(archive))[0].shape == (6, 1, 10)


def test_the_uea_zip_and_its_unpacked_folder(tmp_path):
    members = _uea_members(["Gamma", "Delta"])
    archive = _plain_zip(tmp_path / "Multivariate2018_ts.zip", members)
    unpacked = _unpack(tmp_path / "downloads", members)  # DIR/Multivariate_ts/<Name>/...
    for data_dir in (archive, unpacked, unpacked / "Multivariate_ts"):
        assert local_problems(data_dir) == ["Delta", "Gamma"]
        X, y, X_test, _, info = load_dataset("Gamma", str(data_dir))
        assert X.shape == (6, 2, 8) and X_test.shape == (4, 2, 8) and info.n_channels == 2
        assert _options("--datasets", "all", "--data-dir", str(data_dir),
                        "--models", "minirocket").datasets == ["Delta", "Gamma"]


def test_the_unpacked_ucr_archive_and_todays_layout(tmp_path):
    members = _ucr_members(["Alpha"])
    unpacked = _unpack(tmp_path / "unzipped", members)  # DIR/UCRArchive_2018/<Name>/...
    flat = _unpack(tmp_path / "flat", {k.split("/", 1)[1]: v for k, v in members.items()})
    for data_dir in (unpacked, flat):
        assert local_problems(data_dir) == ["Alpha"]
        assert load_dataset("Alpha", str(data_dir))[-1].n_train == 6


def test_a_zip_is_extracted_once_and_read_from_the_cache_after(tmp_path, cache,
                                                               monkeypatch):
    archive = _plain_zip(tmp_path / "Multivariate2018_ts.zip", _uea_members(["Gamma"]))
    load_dataset("Gamma", str(archive))
    extracted = sorted(p.name for p in cache.rglob("*.ts"))
    assert extracted == ["Gamma_TEST.ts", "Gamma_TRAIN.ts"]
    assert not [p for p in cache.rglob(".Gamma-*")]  # no staging folder left behind

    def no_second_extraction(*args, **kwargs):
        raise AssertionError("a member was extracted again")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_second_extraction)
    load_dataset.cache_clear()
    assert load_dataset("Gamma", str(archive))[-1].n_train == 6


def test_data_dir_that_is_neither_folder_nor_zip_is_one_usage_error(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not a zip")
    with pytest.raises(SystemExit):
        _options("--data-dir", str(text))
    err = capsys.readouterr().err
    assert "neither a folder nor a zip file" in err and len(err.splitlines()) == 1
    with pytest.raises(ValueError, match="not a readable zip"):
        zip_problems(text)
    assert datasets.ARCHIVE_URL.startswith("https://")
