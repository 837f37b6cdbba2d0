"""Reading the Debian archive's answers: simulation, madison, InRelease, locks and drift (no network)."""

from omnidr.images import PackageDrift, content_tag
from omnidr.images._archive import (
    drift_between,
    drift_summary,
    format_lock,
    index_digest,
    parse_lock,
    parse_madison,
    parse_simulation,
)
from omnidr.images._build import python_lock

SIMULATION = """\
NOTE: This is only a simulation!
Reading package lists...
Inst libonig5 (6.9.8-1 Debian:12.12/oldstable [amd64])
Inst libjq1 (1.6-2.1 Debian:12.12/oldstable [amd64])
Inst libc6 [2.36-9+deb12u10] (2.36-9+deb12u13 Debian-Security:12/oldstable-security [amd64])
Inst jq (1.6-2.1 Debian:12.12/oldstable [amd64])
Conf libonig5 (6.9.8-1 Debian:12.12/oldstable [amd64])
Conf jq (1.6-2.1 Debian:12.12/oldstable [amd64])
"""

MADISON = """\
  chromium | 156.0.8078.114-1~deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
  chromium | 150.0.7000.1-1~deb12u1 | http://deb.debian.org/debian bookworm/main amd64 Packages
        jq |    1.6-2.1 | http://deb.debian.org/debian bookworm/main amd64 Packages
        jq |    1.6-2.1 | http://deb.debian.org/debian bookworm/main Sources
"""

INRELEASE = """\
-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA256

Origin: Debian
Codename: bookworm-security
Date: {date}
Components: updates/main updates/contrib
MD5Sum:
 0123456789abcdef0123456789abcdef  100 main/binary-amd64/Packages
SHA256:
 {main}   2560365 main/binary-amd64/Packages
 {mainxz}   383424 main/binary-amd64/Packages.xz
 aaaa   1000 main/binary-all/Packages
 bbbb   2000 contrib/binary-amd64/Packages
 cccc   3000 main/binary-arm64/Packages
 dddd   4000 main/source/Sources
-----BEGIN PGP SIGNATURE-----
"""


def test_simulation_lists_every_unpacked_package_with_its_new_version():
    assert parse_simulation(SIMULATION) == {"libonig5": "6.9.8-1", "libjq1": "1.6-2.1", "libc6": "2.36-9+deb12u13",
                                            "jq": "1.6-2.1"}


def test_madison_lists_every_served_binary_version():
    served = parse_madison(MADISON)
    assert served == {"chromium": {"156.0.8078.114-1~deb12u1", "150.0.7000.1-1~deb12u1"}, "jq": {"1.6-2.1"}}


def test_index_digest_follows_the_package_indices_not_the_signature_date():
    a = index_digest(INRELEASE.format(date="Sun, 29 Nov 2026", main="1" * 64, mainxz="2" * 64), ["updates/main"], "amd64")
    resigned = index_digest(INRELEASE.format(date="Mon, 30 Nov 2026", main="1" * 64, mainxz="2" * 64),
                            ["updates/main"], "amd64")
    moved = index_digest(INRELEASE.format(date="Mon, 30 Nov 2026", main="3" * 64, mainxz="4" * 64),
                         ["updates/main"], "amd64")
    assert a == resigned
    assert a != moved
    # other components, architectures and sources do not count
    other = index_digest(INRELEASE.format(date="x", main="1" * 64, mainxz="2" * 64).replace("bbbb", "eeee")
                         .replace("cccc", "ffff").replace("dddd", "9999"), ["main"], "amd64")
    assert other == a


def test_lock_round_trip_is_sorted_name_equals_version():
    text = format_lock({"zlib1g": "1:1.2.13.dfsg-1", "chromium": "156.0.8078.114-1~deb12u1"})
    assert text == "chromium=156.0.8078.114-1~deb12u1\nzlib1g=1:1.2.13.dfsg-1\n"
    assert parse_lock("# comment\n\n" + text) == {"zlib1g": "1:1.2.13.dfsg-1", "chromium": "156.0.8078.114-1~deb12u1"}


def test_drift_names_moved_new_and_dropped_packages():
    locked = {"chromium": "156.0.8078.108-1~deb12u1", "libold": "1.0", "fonts-dejavu-core": "2.37-6"}
    got = {"chromium": "156.0.8078.114-1~deb12u1", "libnew": "2.0", "fonts-dejavu-core": "2.37-6"}
    drift = drift_between("images/evaluator/packages.lock", locked, got)
    assert drift == [
        PackageDrift(lock="images/evaluator/packages.lock", package="chromium", locked="156.0.8078.108-1~deb12u1",
                     served="156.0.8078.114-1~deb12u1"),
        PackageDrift(lock="images/evaluator/packages.lock", package="libnew", locked=None, served="2.0"),
        PackageDrift(lock="images/evaluator/packages.lock", package="libold", locked="1.0", served=None),
    ]
    line = drift_summary(drift, limit=1)
    assert line.startswith("chromium 156.0.8078.108-1~deb12u1 -> 156.0.8078.114-1~deb12u1")
    assert "1 moved, 1 not locked, 1 no longer installed" in line


def test_tags_follow_the_installed_versions():
    a = content_tag("evaluator", "r1", "omnidr/base:1", {"chromium": "156.0.8078.108-1~deb12u1"}, {"openai": "3.57.0"})
    b = content_tag("evaluator", "r1", "omnidr/base:1", {"chromium": "156.0.8078.114-1~deb12u1"}, {"openai": "3.57.0"})
    c = content_tag("evaluator", "r1", "omnidr/base:1", {"chromium": "156.0.8078.108-1~deb12u1"}, {"openai": "3.58.0"})
    assert len({a, b, c}) == 3
    assert a == content_tag("evaluator", "r1", "omnidr/base:1", {"chromium": "156.0.8078.108-1~deb12u1"},
                            {"openai": "3.57.0"})


def test_python_lock_reads_hashed_pins(tmp_path):
    (tmp_path / "requirements.lock").write_text(
        "# via pip-compile\naiohttp==3.13.2 \\\n    --hash=sha256:ab\nPyYAML==6.0.3 ; python_version >= '3'\n")
    assert python_lock(tmp_path) == {"aiohttp": "3.13.2", "pyyaml": "6.0.3"}
