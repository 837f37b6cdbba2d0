#!/usr/bin/env python3
"""Regenerate the binary media of the bundled demo snapshot (snapshots/demo/).

What it writes, deterministically (same ffmpeg build -> same bytes):

* tasks/<id>/video.mp4 for the three demo tasks: synthetic "tutorial" videos made of
  scenes at fixed timestamps (coloured background, drawn shapes, on-screen text with the
  scene's key numbers), an audio track (flite speech for the English tasks, one sine tone
  per scene for the Chinese task) and a soft mov_text subtitle track carrying what the
  narrator says in each scene. The scene table below is the ground truth the video facts
  of each task's facts.json point at.
* web/<site>/...pdf: one small PDF per task, written by the tiny PDF 1.4 writer below
  (uncompressed content streams, one text line per string, so verbatim quotes stay
  searchable in the raw bytes).
* reports/<first task>/{good,skeleton}/: index.html (copy of contract/template.html),
  video.mp4 (copy of the task video) and, for the good report, a few frames in assets/.

It prints the sha256 and ffprobe duration of every video. With --write-task-json it also
stores them in tasks/<id>/task.json (video.sha256, video.duration_s), leaving every other
field as it is. Requires ffmpeg/ffprobe built with libx264, libfreetype and libflite, and
the Noto CJK font (Debian: ffmpeg, fonts-noto-cjk).

Usage: python snapshots/make_demo_media.py [--snapshot snapshots/demo] [--write-task-json]

The OpenDS-World demo (snapshots/demo-opends/) has its own script, make_demo_opends_media.py, built on the
scene model, video builder and PDF writer of this one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
FONT_BOLD = "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc"
FPS = 15
AUDIO_RATE = 22050


# --------------------------------------------------------------------------- scene model


@dataclass
class Text:
    text: str
    x: int | str
    y: int
    size: int = 16
    color: str = "white"
    bold: bool = False


@dataclass
class Box:
    x: int
    y: int
    w: int
    h: int
    color: str


@dataclass
class Scene:
    start: float
    end: float
    background: str
    texts: list[Text]
    narration: str  # spoken words (English tasks) and subtitle text (all tasks)
    boxes: list[Box] = field(default_factory=list)
    tone_hz: int = 440  # used when the task has no speech synthesis
    subtitle: str | None = None  # subtitle text when it is written differently from the spoken words ("KR-417")

    @property
    def caption(self) -> str:
        return self.subtitle if self.subtitle is not None else self.narration


@dataclass
class VideoSpec:
    task_id: str
    language: str  # "en" -> flite speech; "zh" -> sine tones
    size: tuple[int, int]
    scenes: list[Scene]

    @property
    def duration(self) -> float:
        return self.scenes[-1].end


def centered(text: str, y: int, size: int = 16, color: str = "white", bold: bool = False) -> Text:
    return Text(text, "(w-text_w)/2", y, size, color, bold)


# --------------------------------------------------------------------------- the three videos

PENDANT = VideoSpec(
    task_id="pendant-lamp-safety",
    language="en",
    size=(426, 240),
    scenes=[
        Scene(0, 6, "0x1f3a5f", [
            centered("HANGING A GLASS PENDANT", 60, 24, bold=True),
            centered("Orla 12 glass pendant  |  6.8 kg", 112, 17),
            centered("kitchen island install", 146, 15, "0xb8c7dd"),
        ], "Today we hang a glass pendant light over a kitchen island."),
        Scene(6, 12, "0x5a2d2d", [
            Text("STEP 1  BREAKER OFF", 24, 40, 22, bold=True),
            Text("test the wires first", 24, 84, 16),
            Text("tester: no light", 24, 176, 15, "0xffd27f"),
        ], "First, switch off the breaker and check the wires with a voltage tester.",
            boxes=[Box(320, 70, 36, 120, "0xf2c200"), Box(326, 78, 24, 18, "0x3a3a3a")]),
        Scene(12, 18, "0x2e4a2e", [
            centered("CEILING BOX LABEL", 28, 20, bold=True),
            centered("FOR FIXTURE SUPPORT", 104, 18, "black", bold=True),
            centered("MAX 50 LB (23 KG)", 138, 18, "black", bold=True),
        ], "This ceiling box is marked for fixture support, up to fifty pounds.",
            boxes=[Box(78, 88, 270, 86, "0xf4f1e6")]),
        Scene(18, 24, "0x3b3b3b", [
            Text("STEP 2  CONNECT WIRES", 24, 30, 21, bold=True),
            Text("black-black   white-white   bare/green-ground", 24, 74, 14),
            Text("black", 58, 196, 14), Text("white", 180, 196, 14), Text("green", 302, 196, 14),
        ], "Connect black to black, white to white, and the bare copper to ground.",
            boxes=[Box(40, 110, 80, 76, "0x0a0a0a"), Box(162, 110, 80, 76, "0xf5f5f5"), Box(284, 110, 80, 76, "0x1f9d3a")]),
        Scene(24, 30, "0x4a3b1f", [
            Text("STEP 3  HANG HEIGHT", 24, 30, 21, bold=True),
            Text("24 in (61 cm) above counter", 24, 70, 16),
        ], "Hang the shade about twenty four inches above the counter.",
            boxes=[Box(250, 100, 60, 30, "0xd9e6f2"), Box(277, 60, 6, 40, "0x999999"),
                   Box(200, 200, 170, 14, "0x8b5a2b"), Box(330, 130, 3, 70, "0xffd27f")]),
        Scene(30, 36, "0x2b2b4f", [
            Text("STEP 4  BULB", 24, 34, 22, bold=True),
            Text("socket label: MAX 60 W", 24, 92, 18),
            Text("using: 13 W LED", 24, 130, 18, "0x9be7a0"),
        ], "The socket says sixty watts maximum, so we use a thirteen watt LED."),
    ],
)

ND_FILTER = VideoSpec(
    task_id="nd-filter-waterfall",
    language="en",
    size=(426, 240),
    scenes=[
        Scene(0, 5, "0x0f4c5c", [
            centered("SILKY WATER IN DAYLIGHT", 64, 23, bold=True),
            centered("ND1000  |  10 stops", 116, 18),
        ], "Let's make silky water in daylight with a ten stop N D filter."),
        Scene(5, 11, "0x2d2d2d", [
            Text("METER, NO FILTER", 24, 36, 21, bold=True),
            Text("1/60 s    f/11    ISO 100", 24, 100, 20, "0x9bd3ff"),
        ], "Without the filter, the meter reads one sixtieth at f eleven."),
        Scene(11, 17, "0x5c1f1f", [
            Text("ADD THE FILTER", 24, 36, 21, bold=True),
            Text("10 stops  ->  about 8 s", 24, 100, 20, "0xffd27f"),
        ], "Ten stops longer means about eight seconds. Easy."),
        Scene(17, 23, "0x1f3d1f", [
            Text("SETUP", 24, 30, 21, bold=True),
            Text("tripod + 2 s timer", 24, 80, 18),
            Text("Stabilizer: OFF", 24, 118, 18, "0xffb0b0"),
        ], "Use a tripod, a two second timer, and switch stabilization off."),
        Scene(23, 28, "0x1a1a1a", [
            Text("COVER THE VIEWFINDER", 24, 30, 20, bold=True),
            Text("eyepiece cap on", 24, 190, 15, "0xcccccc"),
        ], "Cover the viewfinder so stray light cannot leak in.",
            boxes=[Box(230, 80, 150, 90, "0x555555"), Box(330, 66, 40, 24, "0x000000")]),
        Scene(28, 34, "0x4a2450", [
            Text("FINAL: 15 s   f/11   ISO 100", 20, 30, 19, bold=True),
            Text("slight magenta cast", 24, 196, 15, "0xf0b3f0"),
        ], "Our final frame: fifteen seconds. Notice the slight magenta tint.",
            boxes=[Box(90, 70, 246, 110, "0xb06ab0"), Box(190, 70, 46, 110, "0xe6d3ec")]),
    ],
)

SKY = VideoSpec(
    task_id="sky-blue-rayleigh",
    language="zh",
    size=(426, 240),
    scenes=[
        Scene(0, 6, "0x10324a", [
            centered("天空为什么是蓝色？", 78, 28, bold=True),
            centered("三分钟物理小课堂", 134, 17, "0xb8d6ee"),
        ], "今天聊一个老问题：天空为什么是蓝色的？", tone_hz=392),
        Scene(6, 12, "0x1d3557", [
            Text("瑞利散射", 24, 26, 24, bold=True),
            Text("散射强度 ∝ 1/λ⁴", 24, 72, 20),
        ], "空气分子会散射阳光，散射强度和波长的四次方成反比。", tone_hz=440,
            boxes=[Box(24 + 54 * i, 150, 54, 40, c) for i, c in enumerate(
                ["0x7f00ff", "0x2a3bff", "0x00a2ff", "0x19c24a", "0xffe500", "0xff8c00", "0xe8101a"])]),
        Scene(12, 18, "0x3d1d57", [
            Text("蓝光 450 nm  vs  红光 700 nm", 24, 50, 19),
            Text("散射强约 10 倍", 24, 110, 26, "0xffd27f", bold=True),
        ], "所以蓝光的散射大约是红光的十倍。", tone_hz=494),
        Scene(18, 24, "0x2b2d42", [
            Text("为什么不是紫色？", 24, 36, 24, bold=True),
            Text("阳光中紫光少", 24, 100, 18),
            Text("人眼对紫光不敏感", 24, 136, 18),
        ], "紫光散射更强，但阳光里紫光少，人眼对它也不敏感。", tone_hz=523),
        Scene(24, 30, "0x7a3b12", [
            Text("日落：光程更长 → 红橙色", 24, 36, 21, bold=True),
        ], "日落时阳光穿过的大气更厚，蓝光被散射殆尽，只剩红橙色。", tone_hz=587,
            boxes=[Box(300, 110, 60, 60, "0xff9a3c"), Box(0, 190, 426, 50, "0x3b1c08")]),
        Scene(30, 36, "0x1b4332", [
            Text("误区：天空是海洋的倒影", 24, 50, 22, bold=True),
            Text("× 错误", 24, 110, 26, "0xff6b6b", bold=True),
        ], "有人说天空是大海的倒影，这个说法是错的。", tone_hz=659),
    ],
)

VIDEOS = [PENDANT, ND_FILTER, SKY]
REPORT_TASK = PENDANT.task_id
REPORT_FRAMES = [7.0, 13.0, 25.0]  # good report: frames of the tester, box label and height scenes


# --------------------------------------------------------------------------- PDFs


@dataclass
class PdfDoc:
    path: str  # relative to web/
    title: str
    pages: list[list[tuple[str, str]]]  # per page: (style, text) lines; style h1/h2/p/small


def _pdf_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, doc: PdfDoc) -> None:
    """A minimal PDF 1.4 writer: Letter pages, Helvetica, uncompressed text streams."""
    styles = {"h1": ("F2", 16, 24), "h2": ("F2", 11, 18), "p": ("F1", 9, 13), "small": ("F1", 7.5, 11)}
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # placeholders, filled below
    pages_obj = add("")
    font_regular = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    font_bold = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    page_ids = []
    for number, lines in enumerate(doc.pages, start=1):
        ops = ["BT"]
        y = 750.0
        for style, text in lines:
            font, size, lead = styles[style]
            # shrink long lines to fit the 500 pt text width (Helvetica averages about 0.5 em per character)
            size = min(size, round(500 / (0.5 * max(len(text), 1)), 1))
            y -= lead
            ops.append(f"/{font} {size} Tf 1 0 0 1 56 {y:.1f} Tm ({_pdf_escape(text)}) Tj")
        ops.append(f"/F1 7.5 Tf 1 0 0 1 56 40 Tm ({_pdf_escape(doc.title)} - page {number} of {len(doc.pages)}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_ids.append(add(
            f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 {font_regular} 0 R /F2 {font_bold} 0 R >> >> /Contents {content} 0 R >>"))
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R >>".encode("latin-1")
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects[pages_obj - 1] = f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode("latin-1")
    info = add(f"<< /Title ({_pdf_escape(doc.title)}) /Producer (omnidr make_demo_media.py) >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root {catalog} 0 R /Info {info} 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode("latin-1")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))


PDFS = [
    PdfDoc(
        "www.example-northbeam-lighting.com/datasheets/orla-12-datasheet-rev-b.pdf",
        "Orla 12 Glass Pendant - Product Data Sheet, Rev B",
        [[
            ("h1", "Northbeam Lighting - Orla 12 Glass Pendant"),
            ("p", "Product data sheet, revision B, issued 2022-09-01. Model ORLA-12-CLR, clear blown glass shade."),
            ("h2", "1. Physical data"),
            ("p", "Shade: hand-blown borosilicate glass, 300 mm diameter, 260 mm height."),
            ("p", "Net weight: 6.8 kg / 15 lb"),
            ("p", "Suspension: braided cable, field-adjustable up to 1.8 m, with a steel canopy and set screw."),
            ("h2", "2. Electrical data"),
            ("p", "Supply: 120 V AC, 60 Hz. Lampholder: medium screw base E26, porcelain."),
            ("p", "Maximum lamp rating: 60 W, E26 base. The rating limits the actual wattage of the lamp, not its incandescent-equivalent label."),
            ("p", "Leads: black = line, white = neutral, green = equipment ground. Use listed connectors sized for 18 AWG to 14 AWG."),
            ("h2", "3. Mounting"),
            ("p", "Mount only to an outlet box that is marked for fixture support and rated for at least the net weight above."),
            ("p", "Recommended height above a work surface: 30 to 36 in, or 76 to 91 cm, measured from the counter to the bottom of the shade."),
            ("p", "For dining tables, hang the shade slightly lower so that it sits at eye level of seated diners."),
            ("h2", "4. Certification"),
            ("p", "Listed for dry and damp locations. Not for use in showers or directly above bathtubs."),
            ("small", "Northbeam Lighting reserves the right to change specifications. Check the support pages for notices."),
        ]],
    ),
    PdfDoc(
        "www.example-optics.com/pdf/clearline-nd1000-datasheet.pdf",
        "ClearLine ND1000 - Technical Data Sheet",
        [[
            ("h1", "ClearLine ND1000 Neutral Density Filter"),
            ("p", "Technical data sheet, issued 2023-01-20. Screw-in and square 100 mm versions."),
            ("h2", "Optical data"),
            ("p", "Optical density 3.0 - ND1000 - nominal 10 stops, tolerance plus or minus 1/3 stop."),
            ("p", "Substrate: optical glass with multi-layer coating on both faces."),
            ("h2", "Exposure table"),
            ("p", "Metered time without filter and the corresponding time with the filter:"),
            ("p", "1/1000 s = 1 s     1/500 s = 2 s     1/250 s = 4 s     1/125 s = 8 s"),
            ("p", "Exposure table: 1/60 s without filter = 15 s with filter, rounded to the nearest standard shutter speed."),
            ("p", "1/30 s = 30 s     1/15 s = 1 min     1/8 s = 2 min"),
            ("h2", "Colour neutrality"),
            ("p", "Sensors with weak infrared blocking may record a slight warm or magenta cast at exposures above 10 stops."),
            ("p", "Set a custom white balance or correct the cast in raw processing."),
            ("small", "Values are typical. ClearLine Optics, technical support."),
        ]],
    ),
    PdfDoc(
        "www.example-solar-data.org/docs/reference-solar-spectrum-note.pdf",
        "Technical Note 7: Reading the Reference Sea-Level Solar Spectrum",
        [[
            ("h1", "Technical Note 7: the Reference Sea-Level Solar Spectrum"),
            ("p", "Solar Data Working Group, published 2021-05-01."),
            ("h2", "Scope"),
            ("p", "This note explains how to read the tabulated reference spectrum for clear-sky sea-level conditions."),
            ("h2", "Shape of the visible part"),
            ("p", "In the reference sea-level spectrum, irradiance at 400 nm is about 30 percent below the value at 500 nm."),
            ("p", "Irradiance in the visible band peaks in the blue-green region and declines slowly towards the red."),
            ("p", "Below 400 nm the values fall steeply because of absorption by ozone in the upper atmosphere."),
            ("h2", "Use"),
            ("p", "The tables suit comparisons of spectral effects; they are not a forecast for any particular day."),
            ("small", "Solar Data Working Group. Redistribution permitted with attribution."),
        ]],
    ),
]


# --------------------------------------------------------------------------- video building


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"command failed: {' '.join(cmd[:6])} ...")


def _srt_time(t: float) -> str:
    ms = int(round(t * 1000))
    h, ms = divmod(ms, 3600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


def _filter_path(p: Path) -> str:
    # paths inside a filtergraph: escape the characters the option parser treats specially
    return str(p).replace("\\", "\\\\").replace(":", "\\:").replace("'", "\\'")


def speech_seconds(text: str, tmp: Path) -> float:
    f = tmp / "probe.txt"
    f.write_text(text, encoding="utf-8")
    wav = tmp / "probe.wav"
    _run(["ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
          f"flite=textfile={_filter_path(f)}:voice=slt", str(wav)])
    return ffprobe_duration(wav)


def ffprobe_duration(path: Path) -> float:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", str(path)],
        capture_output=True, text=True, check=True)
    return round(float(out.stdout.strip()), 3)


def build_video(spec: VideoSpec, out: Path, tmp: Path) -> None:
    w, h = spec.size
    dur = spec.duration
    inputs = ["-f", "lavfi", "-i", f"color=c=black:s={w}x{h}:r={FPS}:d={dur}"]
    vf = []
    for k, sc in enumerate(spec.scenes):
        on = f"enable='gte(t,{sc.start})*lt(t,{sc.end})'"
        vf.append(f"drawbox=x=0:y=0:w=iw:h=ih:t=fill:color={sc.background}:{on}")
        for b in sc.boxes:
            vf.append(f"drawbox=x={b.x}:y={b.y}:w={b.w}:h={b.h}:t=fill:color={b.color}:{on}")
        for j, t in enumerate(sc.texts):
            tf = tmp / f"{spec.task_id}-s{k}-t{j}.txt"
            tf.write_text(t.text, encoding="utf-8")
            font = FONT_BOLD if t.bold else FONT
            vf.append(
                f"drawtext=fontfile={_filter_path(Path(font))}:textfile={_filter_path(tf)}:expansion=none:"
                f"x={t.x}:y={t.y}:fontsize={t.size}:fontcolor={t.color}:{on}")
    # progress bar along the bottom edge, so every frame differs a little and seeking is visible
    vf.append(f"drawbox=x=0:y=ih-3:w='iw*t/{dur}':h=3:t=fill:color=0xffffff@0.6")
    graph = [f"[0:v]{','.join(vf)},format=yuv420p[v]"]

    audio_labels = []
    for k, sc in enumerate(spec.scenes):
        d = sc.end - sc.start
        if spec.language == "en":
            tf = tmp / f"{spec.task_id}-s{k}-speech.txt"
            tf.write_text(sc.narration, encoding="utf-8")
            spoken = speech_seconds(sc.narration, tmp)
            if spoken + 0.3 > d:
                raise SystemExit(f"{spec.task_id} scene {k}: narration {spoken:.2f}s does not fit {d}s")
            src = f"flite=textfile={_filter_path(tf)}:voice=slt,aresample={AUDIO_RATE},adelay=300:all=1"
        else:
            src = (f"sine=frequency={sc.tone_hz}:sample_rate={AUDIO_RATE}:duration={d},volume=0.12,"
                   f"afade=t=in:d=0.2,afade=t=out:st={d - 0.4}:d=0.4")
        graph.append(f"{src},apad,atrim=0:{d},asetpts=N/SR/TB[a{k}]")
        audio_labels.append(f"[a{k}]")
    graph.append(f"{''.join(audio_labels)}concat=n={len(audio_labels)}:v=0:a=1,"
                 f"aformat=sample_fmts=fltp:channel_layouts=mono[a]")

    srt = tmp / f"{spec.task_id}.srt"
    cues = []
    for k, sc in enumerate(spec.scenes, start=1):
        cues.append(f"{k}\n{_srt_time(sc.start + 0.2)} --> {_srt_time(sc.end - 0.2)}\n{sc.caption}\n")
    srt.write_text("\n".join(cues), encoding="utf-8")

    keyframes = ",".join(str(sc.start) for sc in spec.scenes)
    lang = "eng" if spec.language == "en" else "chi"
    cmd = [
        "ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-threads", "1",
        *inputs, "-i", str(srt),
        "-filter_complex", ";".join(graph),
        "-map", "[v]", "-map", "[a]", "-map", "1:s",
        "-c:v", "libx264", "-preset", "medium", "-crf", "30", "-tune", "stillimage", "-threads", "1",
        "-r", str(FPS), "-g", str(FPS * 4), "-force_key_frames", keyframes,
        "-c:a", "aac", "-b:a", "32k", "-ar", str(AUDIO_RATE), "-ac", "1",
        "-c:s", "mov_text", "-metadata:s:s:0", f"language={lang}", "-metadata:s:a:0", f"language={lang}",
        "-map_metadata", "-1", "-map_chapters", "-1", "-t", str(dur),
        "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
        "-movflags", "+faststart", str(out),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(cmd)


def extract_frame(video: Path, t: float, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(["ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-threads", "1", "-ss", str(t), "-i", str(video),
          "-frames:v", "1", "-q:v", "4", "-fflags", "+bitexact", "-flags:v", "+bitexact", str(out)])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update_task_json(task_json: Path, digest: str, duration: float) -> None:
    data = json.loads(task_json.read_text(encoding="utf-8"))
    data["video"]["sha256"] = digest
    data["video"]["duration_s"] = duration
    task_json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshot", type=Path, default=here / "demo", help="snapshot folder (default: snapshots/demo)")
    ap.add_argument("--write-task-json", action="store_true", help="store sha256/duration in tasks/<id>/task.json")
    args = ap.parse_args()
    snap: Path = args.snapshot.resolve()

    with tempfile.TemporaryDirectory(prefix="omnidr-demo-") as t:
        tmp = Path(t)
        for spec in VIDEOS:
            out = snap / "tasks" / spec.task_id / "video.mp4"
            build_video(spec, out, tmp)
            digest, duration = sha256(out), ffprobe_duration(out)
            print(f"{spec.task_id}: video.mp4 sha256={digest} duration_s={duration} bytes={out.stat().st_size}")
            task_json = out.parent / "task.json"
            if args.write_task_json and task_json.exists():
                update_task_json(task_json, digest, duration)
                print(f"  updated {task_json.relative_to(snap)}")

    for doc in PDFS:
        path = snap / "web" / doc.path
        write_pdf(path, doc)
        print(f"web/{doc.path}: {path.stat().st_size} bytes")

    video = snap / "tasks" / REPORT_TASK / "video.mp4"
    template = snap / "contract" / "template.html"
    for label in ("good", "skeleton"):
        folder = snap / "reports" / REPORT_TASK / label
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(video, folder / "video.mp4")
        shutil.copyfile(template, folder / "index.html")
    for t in REPORT_FRAMES:
        frame = snap / "reports" / REPORT_TASK / "good" / "assets" / f"frame_{int(t):03d}.jpg"
        extract_frame(video, t, frame)
        print(f"{frame.relative_to(snap)}: {frame.stat().st_size} bytes")


if __name__ == "__main__":
    main()
