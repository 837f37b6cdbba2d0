window.DATA = {
  "contract": "omnidr-report-1",
  "title": "",
  "language": "",
  "query": "",
  "video": {
    "src": "video.mp4",
    "duration_s": 36.0,
    "source_url": ""
  },
  "overview": "",
  "timeline": [],
  "anchors": [],
  "findings": [],
  "sources": []
};
