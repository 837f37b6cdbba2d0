window.DATA = {
  "contract": "omnidr-report-1",
  "title": "Hanging a 6.8 kg glass pendant over a kitchen island: what to keep from the video and what to change",
  "language": "en",
  "query": "I am about to hang the same 6.8 kg glass pendant over my kitchen island myself, following this video. Using the video as the starting point, tell me which of its steps and numbers I can rely on and which I should change, what I need to check about the ceiling box, the wiring, the bulb and the hanging height, and whether anything about this lamp model needs attention before I install it.",
  "video": {
    "src": "video.mp4",
    "duration_s": 36.0,
    "source_url": "https://www.youtube.com/watch?v=Pq7dLmpA3xK"
  },
  "overview": "Most of the video can be followed as shown. Its ceiling box is marked for fixture support with a 50 lb (23 kg) maximum, and the 6.8 kg Orla 12 pendant uses well under a third of that. The wire pairing (black to black, white to white, bare copper to ground) matches the conductor colour rules, and the 13 W LED it fits is far below the fixture's 60 W lamp rating, which counts the power the lamp actually draws.\n\nTwo points need more than the video gives you. First, switching off the breaker and seeing a dark tester is not proof that the wires are dead: prove the tester on a known live outlet, test the wires, then prove it again, because a tester with a flat battery stays dark on a live wire. Second, the video hangs the shade about 24 in (61 cm) above the counter, while the manufacturer recommends 30 to 36 in (76 to 91 cm) over a work surface. Some designers do go down to 24 in, but only over islands used just for seating, and they accept that taller people may bump the shade. If you prepare food at your island, hang the shade 30 to 36 in (76 to 91 cm) above it.\n\nBefore installing, read the date code on the label inside the canopy. The manufacturer has a notice for Orla 12 units with date codes 2201 to 2236, whose canopy set screw may loosen over time, and sends a free replacement kit. The video never shows the date code, so it is unknown whether the unit in the video is affected. Also read the marking inside your own ceiling box: 'marked for fixture support' means the box and its fastening were tested to hold a hanging fixture by themselves; without that marking the box should not carry the pendant.",
  "timeline": [
    {
      "id": "T1",
      "start_s": 0,
      "end_s": 6,
      "title": "Introduction: the fixture",
      "note": "Title card 'Hanging a glass pendant'. On-screen text names the fixture (Orla 12 glass pendant, 6.8 kg) and the setting (kitchen island install). Narration: the presenter will hang a glass pendant over a kitchen island."
    },
    {
      "id": "T2",
      "start_s": 6,
      "end_s": 12,
      "title": "Step 1: breaker off, test the wires",
      "note": "Text 'STEP 1 BREAKER OFF / test the wires first'. A drawn voltage tester is shown with its indicator window dark and the caption 'tester: no light'. Narration: switch off the breaker and check the wires with a voltage tester.",
      "media": [
        {
          "type": "image",
          "src": "assets/frame_007.jpg",
          "caption": "0:07 - the voltage tester with a dark indicator window ('tester: no light')."
        }
      ]
    },
    {
      "id": "T3",
      "start_s": 12,
      "end_s": 18,
      "title": "The ceiling box label",
      "note": "A close-up of the ceiling box label reads 'FOR FIXTURE SUPPORT' and 'MAX 50 LB (23 KG)'. Narration: the box is marked for fixture support, up to fifty pounds.",
      "media": [
        {
          "type": "image",
          "src": "assets/frame_013.jpg",
          "caption": "0:13 - ceiling box label: FOR FIXTURE SUPPORT, MAX 50 LB (23 KG)."
        }
      ]
    },
    {
      "id": "T4",
      "start_s": 18,
      "end_s": 24,
      "title": "Step 2: connecting the wires",
      "note": "Text 'black-black, white-white, bare/green-ground' above three colour swatches: black, white and green. Narration: connect black to black, white to white and the bare copper to ground."
    },
    {
      "id": "T5",
      "start_s": 24,
      "end_s": 30,
      "title": "Step 3: hanging height",
      "note": "Text '24 in (61 cm) above counter' beside a sketch of the shade above a counter with a measuring line. Narration: hang the shade about twenty-four inches above the counter.",
      "media": [
        {
          "type": "image",
          "src": "assets/frame_025.jpg",
          "caption": "0:25 - the height step: shade about 24 in (61 cm) above the counter."
        }
      ]
    },
    {
      "id": "T6",
      "start_s": 30,
      "end_s": 36,
      "title": "Step 4: the bulb",
      "note": "Text 'socket label: MAX 60 W' and 'using: 13 W LED'. Narration: the socket allows sixty watts at most, so a thirteen-watt LED is used."
    }
  ],
  "anchors": [
    {
      "id": "A1",
      "time_s": 6,
      "label": "Breaker off and voltage test before touching the wires",
      "goal": "verify"
    },
    {
      "id": "A2",
      "time_s": 12,
      "label": "Ceiling box marked for fixture support, max 50 lb (23 kg)",
      "goal": "verify"
    },
    {
      "id": "A3",
      "time_s": 18,
      "label": "Wire pairing: black to black, white to white, bare copper to ground",
      "goal": "verify"
    },
    {
      "id": "A4",
      "time_s": 24,
      "label": "Shade hung about 24 in (61 cm) above the counter",
      "goal": "compare"
    },
    {
      "id": "A5",
      "time_s": 30,
      "label": "Socket rated MAX 60 W, 13 W LED fitted",
      "goal": "explain"
    },
    {
      "id": "A6",
      "time_s": 0,
      "label": "Orla 12 glass pendant, 6.8 kg",
      "goal": "update"
    }
  ],
  "findings": [
    {
      "id": "F1",
      "title": "The box in the video can carry this pendant; check that yours has the same marking",
      "summary": "The label shown at 0:12 is the marking the wiring guide requires for a box that holds a luminaire on its own, and the pendant's weight is far below the marked limit.",
      "anchor_ids": [
        "A2",
        "A6"
      ],
      "claims": [
        {
          "text": "The ceiling box label in the video reads 'FOR FIXTURE SUPPORT' and 'MAX 50 LB (23 KG)'.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            12
          ],
          "relation": "support"
        },
        {
          "text": "The wiring practice guide requires a box that is the only support of a ceiling luminaire to be marked for fixture support, and limits it to 50 lb (23 kg) unless a higher weight is marked.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            12
          ],
          "relation": "support"
        },
        {
          "text": "'Marked for fixture support' means the box and its fastening were tested to hold a hanging luminaire on their own.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            12
          ],
          "relation": "explanation"
        },
        {
          "text": "The manufacturer's data sheet lists the Orla 12 at 6.8 kg (15 lb), the same weight the video's title card gives.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            0
          ],
          "relation": "support"
        },
        {
          "text": "At 6.8 kg the pendant uses under a third of the 23 kg the box is marked for, so the box in the video is adequate for this fixture.",
          "citations": [
            "S1",
            "S3"
          ],
          "video_times_s": [
            0,
            12
          ],
          "relation": "application"
        },
        {
          "text": "Read the marking inside your own ceiling box before hanging the pendant; an unmarked box should not carry it.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            12
          ],
          "relation": "application"
        }
      ]
    },
    {
      "id": "F2",
      "title": "A dark tester is not proof: prove it before and after",
      "summary": "The video's isolation step is right as far as it goes, but a single dark reading can come from a dead tester.",
      "anchor_ids": [
        "A1"
      ],
      "claims": [
        {
          "text": "At 0:06 the narrator switches off the breaker and checks the wires with a voltage tester; the drawn tester's indicator stays dark.",
          "citations": [
            "S2"
          ],
          "video_times_s": [
            6
          ],
          "relation": "support"
        },
        {
          "text": "The standards board's safe-isolation procedure is to prove the tester on a known live source, test the circuit conductors, then prove the tester again before touching any conductor.",
          "citations": [
            "S2"
          ],
          "video_times_s": [
            6
          ],
          "relation": "support"
        },
        {
          "text": "A dark indicator on its own does not show the wires are dead: a non-contact tester with a flat battery stays dark even on a live wire.",
          "citations": [
            "S7",
            "S2"
          ],
          "video_times_s": [
            6,
            7
          ],
          "relation": "explanation"
        }
      ]
    },
    {
      "id": "F3",
      "title": "The wire pairing matches the colour code",
      "summary": "Each joint in the video follows the conductor identification rules and the fixture's own lead colours.",
      "anchor_ids": [
        "A3"
      ],
      "claims": [
        {
          "text": "The video joins black to black, white to white and bare copper to ground, with black, white and green swatches on screen for the three joints.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            18
          ],
          "relation": "support"
        },
        {
          "text": "The wiring guide identifies the grounded (neutral) conductor by white or gray insulation and the equipment ground by bare, green or green-and-yellow insulation, so the video's pairing is correct.",
          "citations": [
            "S1"
          ],
          "video_times_s": [
            18
          ],
          "relation": "support"
        },
        {
          "text": "The data sheet assigns the fixture's leads the same way: black to line, white to neutral, green to ground.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            18
          ],
          "relation": "support"
        }
      ]
    },
    {
      "id": "F4",
      "title": "Hanging height: 24 inches is below the recommended range for a work surface",
      "summary": "The manufacturer and the encyclopedia give 30 to 36 in; only designers hanging over seating-only islands go down to 24 in, so the sources disagree on whether 24 in is acceptable.",
      "anchor_ids": [
        "A4"
      ],
      "claims": [
        {
          "text": "At 0:24 the video sets the shade about 24 in (61 cm) above the counter.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            24
          ],
          "relation": "contradiction"
        },
        {
          "text": "The Orla 12 data sheet recommends 30 to 36 in (76 to 91 cm) from the counter to the bottom of the shade over a work surface, 6 to 12 in more than the video uses.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            24
          ],
          "relation": "contradiction"
        },
        {
          "text": "The encyclopedia entry on pendant lights gives the same 30 to 36 in range as usual practice over kitchen islands.",
          "citations": [
            "S5"
          ],
          "video_times_s": [
            24
          ],
          "relation": "contradiction"
        },
        {
          "text": "Some designers do hang pendants at 24 in over islands used only for seating, accepting that taller people may bump the shade, so the sources disagree on whether 24 in is acceptable.",
          "citations": [
            "S6"
          ],
          "video_times_s": [
            24
          ],
          "relation": "comparison"
        },
        {
          "text": "If you prepare food at your island, hang the shade 30 to 36 in (76 to 91 cm) above it rather than at the video's 24 in.",
          "citations": [
            "S3",
            "S5"
          ],
          "video_times_s": [
            24
          ],
          "relation": "application"
        }
      ],
      "media": [
        {
          "type": "image",
          "src": "assets/frame_025.jpg",
          "caption": "The video's height step at 0:25: about 24 in (61 cm) between counter and shade."
        }
      ]
    },
    {
      "id": "F5",
      "title": "The 13 W LED is within the 60 W rating",
      "summary": "The lampholder limit concerns the power a lamp draws, not the incandescent wattage printed on LED packaging.",
      "anchor_ids": [
        "A5"
      ],
      "claims": [
        {
          "text": "The socket label in the video reads MAX 60 W, and the presenter fits a 13 W LED.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            30
          ],
          "relation": "support"
        },
        {
          "text": "The data sheet states that the 60 W rating limits the lamp's actual wattage, not its incandescent-equivalent label.",
          "citations": [
            "S3"
          ],
          "video_times_s": [
            30
          ],
          "relation": "explanation"
        },
        {
          "text": "An LED sold as a '100 W equivalent' typically draws 13 to 15 W, so it does not exceed the 60 W limit; the 13 W LED in the video is well inside the rating.",
          "citations": [
            "S5",
            "S3"
          ],
          "video_times_s": [
            30
          ],
          "relation": "application"
        }
      ]
    },
    {
      "id": "F6",
      "title": "Check the date code: manufacturer notice on the canopy set screw",
      "summary": "A notice published after the data sheet concerns the model in the video.",
      "anchor_ids": [
        "A6"
      ],
      "claims": [
        {
          "text": "The manufacturer's notice says Orla 12 pendants with date codes 2201 to 2236 may have a canopy set screw that loosens over time, and offers a free replacement screw kit.",
          "citations": [
            "S4"
          ],
          "video_times_s": [
            0
          ],
          "relation": "update"
        },
        {
          "text": "The date code is printed on a label inside the canopy. The video never shows it, so it is unknown whether the unit in the video falls under the notice.",
          "citations": [
            "S4"
          ],
          "video_times_s": [
            0
          ],
          "relation": "update"
        },
        {
          "text": "Read your own unit's date code before installing and request the kit if it is between 2201 and 2236.",
          "citations": [
            "S4"
          ],
          "video_times_s": [
            0
          ],
          "relation": "application"
        }
      ]
    }
  ],
  "sources": [
    {
      "id": "S1",
      "type": "web",
      "title": "Residential Wiring Practice Guide, Section 4.12: Outlet boxes that support luminaires",
      "url": "https://www.example-standards.org/rwpg/section-4-12-luminaire-boxes",
      "publisher": "Home Wiring Standards Board",
      "date": "2023-05-15",
      "quote": "A box that is the sole support of a ceiling luminaire shall be marked for fixture support and shall carry no more than 50 lb (23 kg) unless it is marked with a higher permitted weight.",
      "anchor_ids": [
        "A2",
        "A3"
      ]
    },
    {
      "id": "S2",
      "type": "web",
      "title": "Safe isolation: test before you touch",
      "url": "https://www.example-standards.org/safety/test-before-touch",
      "publisher": "Home Wiring Standards Board",
      "date": "2022-11-02",
      "quote": "Prove the tester on a known live source, test the circuit conductors, then prove the tester again before touching any conductor.",
      "anchor_ids": [
        "A1"
      ]
    },
    {
      "id": "S3",
      "type": "document",
      "title": "Orla 12 Glass Pendant - Product Data Sheet, Rev B",
      "url": "https://www.example-northbeam-lighting.com/datasheets/orla-12-datasheet-rev-b.pdf",
      "publisher": "Northbeam Lighting",
      "date": "2022-09-01",
      "quote": "Recommended height above a work surface: 30 to 36 in, or 76 to 91 cm, measured from the counter to the bottom of the shade.",
      "anchor_ids": [
        "A2",
        "A3",
        "A4",
        "A5",
        "A6"
      ]
    },
    {
      "id": "S4",
      "type": "web",
      "title": "Safety notice: Orla 12 canopy set screw",
      "url": "https://www.example-northbeam-lighting.com/support/notices/orla-12-canopy-screw",
      "publisher": "Northbeam Lighting",
      "date": "2024-01-22",
      "quote": "Orla 12 pendants with date codes 2201 to 2236 may have a canopy set screw that loosens over time; contact us for a free replacement screw kit.",
      "anchor_ids": [
        "A6"
      ]
    },
    {
      "id": "S5",
      "type": "web",
      "title": "Pendant light",
      "url": "https://en.example-wiki.org/wiki/Pendant_light",
      "publisher": "Example Wiki",
      "date": "2024-06-03",
      "quote": "Over kitchen islands, pendants are usually hung so that the bottom of the shade sits 30 to 36 inches above the countertop.",
      "anchor_ids": [
        "A4",
        "A5"
      ]
    },
    {
      "id": "S6",
      "type": "web",
      "title": "Lower and lower: why some designers hang island pendants at 24 inches",
      "url": "https://www.example-homenews.com/2024/03/18/low-hung-pendants",
      "publisher": "Example Home News",
      "date": "2024-03-18",
      "quote": "A few designers now drop pendants to 24 inches over islands that are used only for seating, accepting that taller people may bump the shade.",
      "anchor_ids": [
        "A4"
      ]
    },
    {
      "id": "S7",
      "type": "video",
      "title": "Why a dark voltage tester can lie (electrician explains)",
      "url": "https://www.example-videohub.com/watch?v=Vt3sterD4rk",
      "publisher": "VideoHub / SparkSafe with Dana",
      "date": "2024-02-10",
      "quote": "A non-contact tester with a flat battery stays dark on a live wire, so always check it on an outlet you know is live.",
      "anchor_ids": [
        "A1"
      ]
    }
  ]
};
