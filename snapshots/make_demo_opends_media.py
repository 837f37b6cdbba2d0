#!/usr/bin/env python3
"""Regenerate the generated files of the bundled OpenDS-World demo snapshot (snapshots/demo-opends/).

The demo has four short-answer tasks (paper 002, Sec. 2: a question on an anchor video, one verifiable answer
reached by a multi-hop evidence path across sources). This script writes, deterministically (same ffmpeg build
and zlib -> same bytes), everything of the snapshot that is not hand-written text:

* tasks/<id>/video.mp4: the four anchor videos, built like the report demo's (scenes at fixed timestamps with
  on-screen text, flite speech, a mov_text subtitle track). Each video carries its task's key clue on screen
  and in the subtitle track: a gauge code, a museum inventory number, an auction lot and year, a model and
  serial number.
* web/...csv: the river agency's data-API answers (annual maximum water levels of two gauges).
* web/...zip: the coffee auction's results archive (a README and a CSV), with fixed member timestamps.
* web/...pdf: the museum's annual report of 1893 and two calculator service bulletins (the PDF writer of
  make_demo_media.py: uncompressed text, so the answer stays checkable in the bytes).

The HTML pages of web/ and web/corpus.json are hand-written files of the snapshot, not generated here.

It prints the sha256, duration and size of every video; with --write-task-json it stores sha256 and duration in
tasks/<id>/task.json. Needs what make_demo_media.py needs (ffmpeg with libx264, libfreetype and libflite; the
Noto CJK font).

Usage: python snapshots/make_demo_opends_media.py [--snapshot snapshots/demo-opends] [--write-task-json]
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_demo_media import (  # noqa: E402  (the sibling script, found through the line above)
    Box,
    PdfDoc,
    Scene,
    Text,
    VideoSpec,
    build_video,
    centered,
    ffprobe_duration,
    sha256,
    update_task_json,
    write_pdf,
)

SIZE = (426, 240)

# --------------------------------------------------------------------------- the four anchor videos

RIVER = VideoSpec(
    task_id="river-gauge-flood",
    language="en",
    size=SIZE,
    scenes=[
        Scene(0, 6, "0x21453a", [
            centered("RIVERSIDE WALK", 62, 26, bold=True),
            centered("after a week of rain", 114, 16, "0xcfe3d6"),
        ], "We are out for a riverside walk after a week of heavy rain."),
        Scene(6, 12, "0x2f3e46", [
            Text("THE FOOTBRIDGE GAUGE", 24, 26, 20, bold=True),
            Text("water-level staff", 24, 196, 14, "0xcccccc"),
        ], "On the footbridge stands a water level gauge.",
            boxes=[Box(0, 150, 426, 90, "0x3d6b8c"), Box(200, 60, 26, 150, "0xf4f4f4")]
            + [Box(200, 66 + 12 * i, 12, 3, "0x111111") for i in range(12)]
            + [Box(236, 70, 90, 34, "0xf2c200")]),
        Scene(12, 18, "0x2f3e46", [
            centered("KR-417", 92, 40, "black", bold=True),
            centered("N.R.A.", 150, 15, "black"),
        ], "The plate on the post reads K R, four one seven.",
            boxes=[Box(93, 70, 240, 110, "0xf2c200")], subtitle="The plate on the post reads KR-417."),
        Scene(18, 24, "0x1d3a4f", [
            Text("STAFF READING TODAY", 24, 36, 20, bold=True),
            Text("about 1.2 m", 24, 92, 22, "0x9bd3ff"),
        ], "Today the water stands at about one point two metres.",
            subtitle="Today the water stands at about 1.2 metres."),
        Scene(24, 30, "0x3b3b3b", [
            Text("THE WORST FLOOD?", 24, 36, 21, bold=True),
            Text("\"the year the gauge was moved\"", 24, 96, 15, "0xffd27f"),
        ], "A local told us the worst flood came the year this gauge was moved here."),
        Scene(30, 36, "0x21453a", [
            Text("NEXT: THE OLD MILL WEIR", 24, 40, 20, bold=True),
        ], "Next, we follow the path down to the old mill weir.",
            boxes=[Box(0, 170, 426, 70, "0x3d6b8c"), Box(120, 150, 190, 22, "0x8a8a7a")]),
    ],
)

ASTROLABE = VideoSpec(
    task_id="astrolabe-donor",
    language="en",
    size=SIZE,
    scenes=[
        Scene(0, 6, "0x3b2a1a", [
            centered("GALLERY 4", 56, 26, bold=True),
            centered("instruments of the sea", 108, 17, "0xe8d5b0"),
        ], "Welcome to gallery four, instruments of the sea."),
        Scene(6, 12, "0x1f1a14", [
            Text("Brass astrolabe", 24, 30, 20, bold=True),
        ], "This brass astrolabe was made for teaching navigation.",
            boxes=[Box(170, 70, 120, 120, "0xb5893a"), Box(190, 90, 80, 80, "0x1f1a14"),
                   Box(226, 72, 8, 116, "0xd9b25c"), Box(172, 126, 116, 8, "0xd9b25c")]),
        Scene(12, 18, "0x1f1a14", [
            Text("Brass astrolabe, c. 1780", 78, 74, 16, "black", bold=True),
            Text("Inv. no. HM 1893.214", 78, 108, 18, "black", bold=True),
            Text("Donation, 1893", 78, 142, 15, "black"),
        ], "Its label gives the inventory number H M, eighteen ninety three point two one four.",
            boxes=[Box(62, 58, 302, 120, "0xf4ecd8")], subtitle="Its label gives the inventory number HM 1893.214."),
        Scene(18, 24, "0x3b2a1a", [
            Text("WHO GAVE IT?", 24, 40, 22, bold=True),
            Text("the label names no donor", 24, 100, 16, "0xe8d5b0"),
        ], "The label does not name the donor, only the year of the gift."),
        Scene(24, 30, "0x2a2a33", [
            Text("NEXT: POCKET SUNDIALS", 24, 40, 20, bold=True),
        ], "Next to it you can see two small pocket sundials.",
            boxes=[Box(110, 100, 70, 70, "0xe9e2cf"), Box(240, 100, 70, 70, "0xe9e2cf")]),
    ],
)

COFFEE = VideoSpec(
    task_id="coffee-lot-buyer",
    language="en",
    size=SIZE,
    scenes=[
        Scene(0, 6, "0x4a2c17", [
            centered("HIGHLAND CUP 2023", 60, 26, bold=True),
            centered("online green coffee auction", 112, 16, "0xf0d9b5"),
        ], "This is the twenty twenty three Highland Cup green coffee auction.",
            subtitle="This is the 2023 Highland Cup green coffee auction."),
        Scene(6, 12, "0x2b1b10", [
            centered("LOT 27", 86, 30, "0x3a2410", bold=True),
            centered("FINCA LOS ALISOS", 132, 17, "0x3a2410", bold=True),
        ], "Lot twenty seven comes from Finca Los Alisos.",
            boxes=[Box(103, 56, 220, 150, "0xd8c29a")], subtitle="Lot 27 comes from Finca Los Alisos."),
        Scene(12, 18, "0x3d2a1e", [
            Text("CUPPING SCORE", 24, 36, 21, bold=True),
            Text("90.5 points", 24, 94, 24, "0xffd27f"),
        ], "The jury scored it ninety point five.", subtitle="The jury scored it 90.5."),
        Scene(18, 24, "0x24323d", [
            Text("BIDDING CLOSES FRIDAY", 24, 40, 20, bold=True),
        ], "Bidding closes on Friday evening.",
            boxes=[Box(60, 100, 300, 16, "0x5c7a8a"), Box(60, 100, 220, 16, "0xffb347")]),
        Scene(24, 30, "0x4a2c17", [
            Text("RESULTS", 24, 40, 22, bold=True),
            Text("on the Highland Cup website", 24, 96, 16, "0xf0d9b5"),
        ], "The results will be published on our website."),
    ],
)

CALCULATOR = VideoSpec(
    task_id="calculator-capacitor",
    language="en",
    size=SIZE,
    scenes=[
        Scene(0, 6, "0x222831", [
            centered("RESTORING A DESK CALCULATOR", 60, 21, bold=True),
            centered("it will not power on", 110, 16, "0xb8c2cc"),
        ], "Today we restore an old desk calculator that will not power on."),
        Scene(6, 12, "0x393e46", [
            Text("TELLMARK HX-38", 130, 180, 17, bold=True),
            Text("0.", 272, 56, 20, "0x7cfc00"),
        ], "It is a Tellmark H X thirty eight.",
            boxes=[Box(110, 40, 206, 130, "0x8d8d86"), Box(126, 54, 174, 30, "0x101510"),
                   Box(126, 96, 174, 62, "0x5b5b55")], subtitle="It is a Tellmark HX-38."),
        Scene(12, 18, "0x222831", [
            Text("MODEL HX-38", 92, 70, 17, "black", bold=True),
            Text("SERIAL 38-20417", 92, 104, 19, "black", bold=True),
            Text("220 V  50 Hz  6 W", 92, 140, 14, "black"),
        ], "The serial number on the back is three eight, two zero four one seven.",
            boxes=[Box(76, 56, 274, 118, "0xd9d4c3")], subtitle="The serial number on the back is 38-20417."),
        Scene(18, 24, "0x1d3b2a", [
            Text("POWER BOARD", 24, 30, 20, bold=True),
            Text("C14 bulging", 24, 190, 16, "0xffb0b0"),
        ], "On the power board, capacitor C fourteen is bulging.",
            boxes=[Box(180, 70, 40, 70, "0x2a4fa0"), Box(180, 64, 40, 8, "0xc0c0c0"), Box(260, 90, 30, 50, "0x2a4fa0")],
            subtitle="On the power board, capacitor C14 is bulging."),
        Scene(24, 30, "0x222831", [
            Text("CHECK THE SERVICE BULLETIN", 24, 40, 19, bold=True),
        ], "Before we order a new one, we check the service bulletin."),
    ],
)

VIDEOS = [RIVER, ASTROLABE, COFFEE, CALCULATOR]


# --------------------------------------------------------------------------- CSV and ZIP


def csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


@dataclass
class CsvFile:
    path: str  # relative to web/
    rows: list[list[str]]


@dataclass
class ZipArchive:
    path: str  # relative to web/
    members: list[tuple[str, bytes]]
    date_time: tuple[int, int, int, int, int, int]  # the timestamp every member carries


def write_zip(path: Path, archive: ZipArchive) -> None:
    """A ZIP whose bytes depend only on its members: fixed timestamps, permissions and creator system."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in archive.members:
            info = zipfile.ZipInfo(name, date_time=archive.date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            z.writestr(info, data, compresslevel=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())


MAXIMA_HEADER = ["year", "max_level_m", "date_of_max", "quality"]

CSVS = [
    # The footbridge gauge (KR-417): its record runs on from the old weir site, where it stood until 2011.
    CsvFile("data.example-rivers.org/api/v1/annual-maxima-KR-417.csv", [MAXIMA_HEADER] + [r.split() for r in [
        "2005 2.61 2005-02-08 verified", "2006 2.95 2006-12-02 verified", "2007 3.12 2007-06-26 verified",
        "2008 2.78 2008-09-06 verified", "2009 3.40 2009-11-19 verified", "2010 2.57 2010-01-10 verified",
        "2011 3.84 2011-01-14 verified", "2012 3.91 2012-11-25 verified", "2013 2.88 2013-03-02 verified",
        "2014 3.22 2014-02-07 verified", "2015 3.67 2015-12-05 verified", "2016 2.70 2016-01-03 verified",
        "2017 2.49 2017-10-22 verified", "2018 2.93 2018-03-17 verified", "2019 3.05 2019-11-08 verified",
        "2020 3.58 2020-02-16 verified", "2021 2.66 2021-01-20 verified", "2022 2.81 2022-02-19 verified",
        "2023 3.29 2023-10-21 provisional",
    ]]),
    # The weir gauge (KR-471), opened in 2011 at the footbridge gauge's old site: a near-miss code and dates.
    CsvFile("data.example-rivers.org/api/v1/annual-maxima-KR-471.csv", [MAXIMA_HEADER] + [r.split() for r in [
        "2011 3.52 2011-01-13 verified", "2012 3.60 2012-11-24 verified", "2013 2.61 2013-03-01 verified",
        "2014 2.97 2014-02-06 verified", "2015 3.38 2015-12-05 verified", "2016 2.44 2016-01-02 verified",
        "2017 2.20 2017-10-21 verified", "2018 2.71 2018-03-16 verified", "2019 2.80 2019-11-07 verified",
        "2020 3.31 2020-02-15 verified", "2021 2.40 2021-01-19 verified", "2022 2.57 2022-02-18 verified",
        "2023 3.02 2023-10-20 provisional",
    ]]),
]

_LOTS = [  # lot, farm, region, variety, score, price (USD per lb), lot size (kg), buyer
    ("1", "Finca El Mirador", "Alta Sierra", "Gesha", "93.2", "48.10", "138", "Kumo Coffee"),
    ("2", "Finca La Cumbre", "Alta Sierra", "Gesha", "92.4", "35.75", "207", "Nordlys Kaffe"),
    ("3", "Finca San Bernardo", "Valle Norte", "Pacamara", "91.8", "27.40", "276", "Kettle & Crane Coffee"),
    ("4", "Finca Las Nubes", "Alta Sierra", "Bourbon", "91.5", "22.05", "345", "Blue Heron Roastery"),
    ("5", "Finca El Roble", "Cordillera Sur", "Caturra", "91.1", "19.80", "345", "Kumo Coffee"),
    ("6", "Finca La Esperanza", "Valle Norte", "SL28", "90.9", "18.35", "276", "Copper Kettle Traders"),
    ("7", "Finca Santa Rita", "Cordillera Sur", "Bourbon", "90.7", "16.90", "345", "Nordlys Kaffe"),
    ("8", "Finca Los Pinos", "Alta Sierra", "Typica", "90.6", "15.55", "207", "Ridgeway Coffee Co."),
    ("17", "Finca Los Aliados", "Valle Norte", "Catuai", "89.4", "11.25", "345", "Harbourside Coffee Traders"),
    ("21", "Finca El Cedro", "Cordillera Sur", "Caturra", "89.0", "10.60", "414", "Blue Heron Roastery"),
    ("24", "Finca La Loma", "Valle Norte", "Bourbon", "88.8", "10.15", "345", "Ridgeway Coffee Co."),
    ("27", "Finca Los Alisos", "Alta Sierra", "Pacamara", "90.5", "14.60", "345", "Harbourline Roasters"),
    ("29", "Finca Buenavista", "Cordillera Sur", "Typica", "88.5", "9.70", "276", "Copper Kettle Traders"),
    ("30", "Finca El Porvenir", "Valle Norte", "Catuai", "88.3", "9.45", "345", "Kettle & Crane Coffee"),
]

_README = """Highland Cup 2023 - online green coffee auction - results
=========================================================

The auction closed on 12 May 2023. This archive holds the final results.

results-2023.csv  one row per sold lot:
  lot                lot number as announced in the auction catalogue
  farm, region       where the coffee was grown
  variety            botanical variety
  score              final jury cupping score (points out of 100)
  price_usd_per_lb   winning bid, US dollars per pound of green coffee
  lot_size_kg        weight of the lot
  buyer              company that placed the winning bid

Lots that did not sell are not listed. Questions: results@example-highlandcup.org
"""

ZIPS = [
    ZipArchive("www.example-highlandcup.org/files/highland-cup-2023-results.zip", [
        ("README.txt", _README.encode("utf-8")),
        ("results-2023.csv", csv_bytes([["lot", "farm", "region", "variety", "score", "price_usd_per_lb",
                                         "lot_size_kg", "buyer"], *map(list, _LOTS)])),
    ], (2023, 5, 13, 9, 0, 0)),
]


# --------------------------------------------------------------------------- PDFs

PDFS = [
    PdfDoc(
        "www.example-harbour-museum.org/archive/annual-report-1893.pdf",
        "Harbour Museum - Annual Report for the Year 1893",
        [[
            ("h1", "Harbour Museum: Report of the Committee for the Year 1893"),
            ("p", "Presented to the annual meeting of members, held in the Museum's lecture room in February 1894."),
            ("h2", "The year in brief"),
            ("p", "Attendance rose to 41,260 visitors, the highest since the Museum opened its doors in 1862."),
            ("p", "The gallery of navigation was re-hung, and new cases were made for the instruments of the sea."),
            ("p", "The Committee thanks the many friends of the Museum whose gifts are listed on the next page."),
            ("h2", "Finances"),
            ("p", "Subscriptions and donations met the year's expenses; a small balance is carried forward."),
        ], [
            ("h1", "List of Donations Received in 1893"),
            ("p", "The inventory number of each object is given first."),
            ("p", "HM 1893.203  Sextant in a mahogany case. Presented by Mrs. Agnes Moir."),
            ("p", "HM 1893.207  Ship's log-line and reel. Presented by Captain J. Ferrier."),
            ("p", "HM 1893.211  Chart of the Firth, engraved. Presented by the Harbour Trustees."),
            ("p", "HM 1893.214  Brass astrolabe. Presented by Messrs. Renwick & Hale, instrument makers, Leith Street."),
            ("p", "HM 1893.229  Telescope, three-draw. Presented by Mr. D. Lamont."),
            ("p", "HM 1893.241  Pocket sundial, ivory. Presented by Messrs. Renwick & Hall, opticians, Castle Wynd."),
            ("p", "HM 1893.256  Ship model, brig Mary Ann. Presented by Miss E. Cairns."),
            ("small", "Objects are numbered by year of receipt and order of entry in the register."),
        ]],
    ),
    PdfDoc(
        "www.example-tellmark.com/support/bulletins/sb-112.pdf",
        "Tellmark Service Bulletin SB-112",
        [[
            ("h1", "Tellmark Service Bulletin SB-112"),
            ("p", "Subject: power board, filter capacitor C14. Issued March 1979."),
            ("h2", "Applies to"),
            ("p", "HX-38 desk calculators with power board revision A (serial numbers 38-00001 to 38-19999)."),
            ("h2", "Symptom"),
            ("p", "The unit does not power on, or the display flickers; C14 is bulging or has leaked."),
            ("h2", "Action"),
            ("p", "Replace C14 with an electrolytic capacitor of 470 \u00b5F, 25 V, rated 105 \u00b0C."),
            ("p", "Observe polarity: the negative stripe faces the edge of the board."),
            ("small", "Tellmark Business Machines, Technical Service Department."),
        ]],
    ),
    PdfDoc(
        "www.example-tellmark.com/support/bulletins/sb-131.pdf",
        "Tellmark Service Bulletin SB-131",
        [[
            ("h1", "Tellmark Service Bulletin SB-131"),
            ("p", "Subject: power board revision B, filter capacitors C14 and C15. Issued November 1980."),
            ("h2", "Applies to"),
            ("p", "HX-38 desk calculators with power board revision B (serial numbers 38-20000 and above)."),
            ("p", "Revision B boards use a larger transformer; the values of SB-112 do not apply to them."),
            ("h2", "Action"),
            ("p", "C14: electrolytic capacitor, 680 \u00b5F, 25 V, rated 105 \u00b0C."),
            ("p", "C15: electrolytic capacitor, 100 \u00b5F, 16 V, rated 105 \u00b0C."),
            ("p", "Observe polarity: the negative stripe faces the edge of the board."),
            ("small", "Tellmark Business Machines, Technical Service Department."),
        ]],
    ),
]


# --------------------------------------------------------------------------- main


def generate(snap: Path, write_task_json: bool = False) -> dict[str, str]:
    """Write every generated file under `snap`; returns the sha256 of each, by path relative to `snap`."""
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="omnidr-opends-demo-") as t:
        tmp = Path(t)
        for spec in VIDEOS:
            out = snap / "tasks" / spec.task_id / "video.mp4"
            build_video(spec, out, tmp)
            digest, duration = sha256(out), ffprobe_duration(out)
            print(f"{spec.task_id}: video.mp4 sha256={digest} duration_s={duration} bytes={out.stat().st_size}")
            task_json = out.parent / "task.json"
            if write_task_json and task_json.exists():
                update_task_json(task_json, digest, duration)
                print(f"  updated {task_json.relative_to(snap)}")
            written.append(out)
    for table in CSVS:
        path = snap / "web" / table.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(csv_bytes(table.rows))
        written.append(path)
    for archive in ZIPS:
        path = snap / "web" / archive.path
        write_zip(path, archive)
        written.append(path)
    for doc in PDFS:
        path = snap / "web" / doc.path
        write_pdf(path, doc)
        written.append(path)
    for path in written[len(VIDEOS):]:
        print(f"{path.relative_to(snap)}: {path.stat().st_size} bytes")
    return {p.relative_to(snap).as_posix(): sha256(p) for p in written}


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshot", type=Path, default=here / "demo-opends",
                    help="snapshot folder (default: snapshots/demo-opends)")
    ap.add_argument("--write-task-json", action="store_true", help="store sha256/duration in tasks/<id>/task.json")
    args = ap.parse_args()
    generate(args.snapshot.resolve(), args.write_task_json)


if __name__ == "__main__":
    main()
