"""JavaScript the probes run in the page's isolated world (its own globals, the shared DOM).

Each constant is a function source taking one JSON argument. They only read the DOM, except
SETTLE (which asks lazy media to load) and the interaction helpers, which touch the source
video and the citation links the way a reader would.
"""

SETTLE = """async (waitMs) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const imgs = Array.from(document.images).slice(0, 5000);
  for (const i of imgs) { if (i.loading === 'lazy') i.loading = 'eager'; }
  const media = Array.from(document.querySelectorAll('video, audio')).slice(0, 500);
  const pending = imgs.map((i) => i.decode().catch(() => null));
  for (const v of media) {
    if (v.readyState >= 1 || v.error) continue;
    if (v.preload === 'none') { v.preload = 'metadata'; try { v.load(); } catch (e) {} }
    pending.push(new Promise((r) => {
      v.addEventListener('loadedmetadata', r, {once: true});
      v.addEventListener('error', r, {once: true});
    }));
  }
  if (document.fonts && document.fonts.ready) pending.push(document.fonts.ready.catch(() => null));
  await Promise.race([Promise.allSettled(pending), sleep(waitMs)]);
  return true;
}"""

FACTS = """(opts) => {
  const ORIGIN = opts.origin;
  const MAXN = 5000, MAXT = opts.maxText;
  const nodes = document.getElementsByTagName('*').length;
  if (nodes > opts.maxNodes) return {domNodes: nodes, tooLarge: true};
  const q = (sel, root) => root ? Array.from(root.querySelectorAll(sel)).slice(0, MAXN) : [];
  const norm = (s) => (s || '').replace(/[ \\t\\r\\f\\v]+/g, ' ').replace(/\\n\\s*\\n+/g, '\\n').trim();
  const flat = (s) => (s || '').replace(/\\s+/g, ' ').trim().slice(0, 4000);
  const text = (el) => el ? flat(el.innerText || el.textContent) : '';
  const num = (s) => { if (s === undefined || s === null || s === '') return null; const x = Number(s); return Number.isFinite(x) ? x : null; };
  const stamps = (el) => q('.ts', el).map((a) => num(a.getAttribute('data-t'))).filter((x) => x !== null);
  const byId = (id) => document.getElementById(id);
  const visible = (el) => el.getClientRects().length > 0;
  const sec = {};
  for (const id of opts.sections) sec[id] = !!byId(id);
  const timeline = byId('timeline'), findings = byId('findings'), sources = byId('sources');
  const anchors = byId('anchors'), overview = byId('overview');
  const video = byId('source-video');
  const mediaOf = (el) => {
    const out = [];
    for (const m of q('img, video', el)) {
      if (m === video) continue;
      const src = m.currentSrc || m.src || '';
      const fig = m.closest('figure');
      const cap = fig && fig.querySelector('figcaption');
      const shown = m.tagName === 'IMG' ? (m.complete && m.naturalWidth > 0) : (!m.error && m.readyState >= 1);
      out.push({tag: m.tagName.toLowerCase(), src, local: src.startsWith(ORIGIN + '/'), shown: shown && visible(m),
                caption: flat(cap ? (cap.innerText || cap.textContent) : (m.getAttribute('alt') || ''))});
    }
    return out;
  };
  const claims = [];
  const findingList = q('.finding', findings).map((f) => {
    const own = q('.claim', f).map((c) => {
      const cites = q('a.cite', c).map((a) => a.getAttribute('href') || '');
      const item = {text: text(c), cites, stamps: stamps(c)};
      claims.push(item);
      return item;
    });
    const head = f.querySelector('h3, h2, h4');
    const summary = Array.from(f.children).filter((c) => c.tagName === 'P').map(text).join(' ');
    return {id: f.id || '', title: text(head), summary, stamps: stamps(f), claims: own.length};
  });
  const citeEls = new Set(q('a.cite', document.body));
  for (const a of q('a[href^="#src-"]', findings)) citeEls.add(a);
  const assets = [];
  const urlAttrs = [['img', 'src'], ['video', 'src'], ['video', 'poster'], ['audio', 'src'], ['source', 'src'],
                    ['track', 'src'], ['script', 'src'], ['iframe', 'src'], ['embed', 'src'], ['object', 'data'],
                    ['input', 'src']];
  for (const [tag, attr] of urlAttrs) {
    for (const el of q(tag + '[' + attr + ']', document)) {
      const raw = el.getAttribute(attr);
      if (!raw) continue;
      let url;
      try { url = new URL(raw, document.baseURI).href; } catch (e) { url = raw; }
      let state = null;
      if (tag === 'img' && attr === 'src') state = el.complete && el.naturalWidth > 0 ? 'ok' : 'broken';
      if ((tag === 'video' || tag === 'audio') && attr === 'src') state = el.error ? 'error ' + el.error.code : (el.readyState >= 1 ? 'ok' : 'no metadata');
      assets.push({tag, attr, url, local: url.startsWith(ORIGIN + '/'), state});
    }
  }
  for (const el of q('link[href]', document)) {
    const rel = (el.getAttribute('rel') || '').toLowerCase();
    if (!/stylesheet|icon|preload|modulepreload/.test(rel)) continue;
    let url;
    try { url = new URL(el.getAttribute('href'), document.baseURI).href; } catch (e) { continue; }
    assets.push({tag: 'link', attr: 'href', url, local: url.startsWith(ORIGIN + '/'), state: null});
  }
  const units = [];
  const unit = (section, kind, t, extra) => { if (t) units.push(Object.assign({section, kind, text: t}, extra || {})); };
  for (const p of q('p', overview)) unit('overview', 'paragraph', text(p));
  for (const s of q('.segment', timeline)) unit('timeline', 'segment', text(s));
  for (const li of q('li', anchors)) unit('anchors', 'anchor', text(li));
  for (const f of q('.finding', findings)) {
    const head = f.querySelector('h3, h2, h4');
    const summary = Array.from(f.children).filter((c) => c.tagName === 'P').map(text).join(' ');
    unit('findings', 'finding', [text(head), summary].filter(Boolean).join(' — '));
    for (const c of q('.claim', f)) {
      const cites = q('a.cite', c).map((a) => (a.getAttribute('href') || '').replace(/^#src-/, ''));
      unit('findings', 'claim', text(c), {cited: cites.length > 0, cites});
    }
    for (const cap of q('figcaption', f)) unit('findings', 'caption', text(cap));
  }
  for (const s of q('.source', sources)) unit('sources', 'source', text(s), {id: (s.id || '').replace(/^src-/, '')});
  for (const id of ['overview', 'timeline', 'anchors', 'findings', 'sources']) {
    const el = byId(id);
    if (el && !units.some((u) => u.section === id)) {
      for (const line of (el.innerText || '').split('\\n').map(flat).filter(Boolean).slice(1, MAXN)) unit(id, 'line', line);
    }
  }
  const sectionText = {}, sectionLength = {};
  for (const id of opts.sections) {
    const el = byId(id);
    if (el && el.tagName !== 'VIDEO') {
      const full = norm(el.innerText || el.textContent);
      sectionText[id] = full.slice(0, MAXT);
      sectionLength[id] = full.length;
    }
  }
  const title = byId('report-title');
  return {
    domNodes: nodes, tooLarge: false, sections: sec,
    title: title ? text(title) : flat(document.title), query: text(byId('report-query')), lang: document.documentElement.lang || '',
    segments: q('.segment', timeline).map((s) => ({id: s.id || '', stamps: stamps(s)})),
    anchors: q('[id^="anchor-"]', anchors).map((a) => ({id: a.id, stamps: stamps(a)})),
    findings: findingList,
    claims,
    sources: q('.source', sources).map((s) => ({id: s.id || '', hasQuote: !!s.querySelector('.quote')})),
    citations: citeEls.size,
    stamps: q('.ts', document.body).length,
    moments: q('.ts', document.body).map((a) => num(a.getAttribute('data-t'))).filter((x) => x !== null),
    media: mediaOf(document.body),
    assets: assets.slice(0, MAXN),
    video: video ? {tag: video.tagName.toLowerCase(), src: video.currentSrc || video.src || '', duration: Number.isFinite(video.duration) ? video.duration : null,
                    readyState: video.readyState, error: video.error ? video.error.code : null} : null,
    units: units.slice(0, MAXN),
    sectionText,
    sectionLength,
    pageHeight: Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0),
  };
}"""

SECTION_BOX = """(id) => {
  const el = document.getElementById(id);
  if (!el || el.getClientRects().length === 0) return null;
  // Let the whole section show: lift height limits and scrolling of its ancestors for the capture.
  const changed = [];
  for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
    const cs = getComputedStyle(a);
    if (cs.overflowY !== 'visible' || cs.maxHeight !== 'none' || cs.position === 'sticky' || cs.position === 'fixed') {
      changed.push([a, a.getAttribute('style')]);
      a.style.setProperty('overflow', 'visible', 'important');
      a.style.setProperty('max-height', 'none', 'important');
      if (cs.position === 'sticky' || cs.position === 'fixed') a.style.setProperty('position', 'static', 'important');
    }
  }
  window.__omnidrRestore = changed;
  const r = el.getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};
}"""

RESTORE_STYLES = """() => {
  for (const [a, style] of (window.__omnidrRestore || [])) {
    if (style === null) a.removeAttribute('style'); else a.setAttribute('style', style);
  }
  window.__omnidrRestore = [];
  return true;
}"""

FIND_STAMP = """(t) => {
  const all = Array.from(document.querySelectorAll('.ts'));
  const parse = (s) => { const m = /^(?:(\\d+):)?(\\d+):(\\d\\d)$/.exec((s || '').trim()); return m ? (Number(m[1] || 0) * 3600 + Number(m[2]) * 60 + Number(m[3])) : null; };
  let best = -1, bestDiff = Infinity, how = '';
  all.forEach((a, i) => {
    const v = Number(a.getAttribute('data-t'));
    const shown = parse(a.textContent);
    let d = Number.isFinite(v) && a.getAttribute('data-t') !== '' ? Math.abs(v - t) : Infinity;
    let h = 'data-t';
    if (!(d <= 0.5) && shown !== null && Math.abs(shown - Math.floor(t)) < 1e-9) { d = 0.5; h = 'label'; }
    if (d <= 0.5 && a.getClientRects().length > 0 && d < bestDiff) { best = i; bestDiff = d; how = h; }
  });
  return {index: best, count: all.length, label: best >= 0 ? all[best].textContent.trim().slice(0, 40) : '', how};
}"""

ARM_SEEKS = """() => {
  const v = document.getElementById('source-video');
  if (!v || !(v instanceof HTMLMediaElement)) return {ok: false, why: 'the report has no #source-video element'};
  if (!window.__omnidrSeekLog) {
    window.__omnidrSeekLog = [];
    const rec = (e) => { if (e.target && e.target.id === 'source-video') window.__omnidrSeekLog.push({type: e.type, t: e.target.currentTime}); };
    document.addEventListener('seeking', rec, true);
    document.addEventListener('seeked', rec, true);
  }
  v.pause();
  window.__omnidrSeekLog.length = 0;
  return {ok: true, readyState: v.readyState};
}"""

AWAIT_SEEK = """async (waitMs) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const log = window.__omnidrSeekLog || [];
  const end = Date.now() + waitMs;
  while (Date.now() < end) {
    const seeking = log.filter((e) => e.type === 'seeking');
    const last = seeking.length ? log.lastIndexOf(seeking[seeking.length - 1]) : -1;
    if (last >= 0 && log.slice(last).some((e) => e.type === 'seeked')) break;
    await sleep(25);
  }
  const v = document.getElementById('source-video');
  if (v && v.pause) v.pause();
  return {log: log.slice(0, 50), now: v ? v.currentTime : null};
}"""

PLAY = """async (waitMs) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const v = document.getElementById('source-video');
  if (!v || !(v instanceof HTMLMediaElement)) return {ok: false, why: 'the report has no #source-video element'};
  v.muted = true;
  v.pause();
  if (v.currentTime !== 0) {
    const done = new Promise((r) => v.addEventListener('seeked', r, {once: true}));
    v.currentTime = 0;
    await Promise.race([done, sleep(waitMs)]);
  }
  const t0 = v.currentTime;
  let playError = null;
  try { await Promise.race([v.play(), sleep(waitMs)]); } catch (e) { playError = String(e).slice(0, 200); }
  const end = Date.now() + waitMs;
  while (Date.now() < end && !(v.currentTime >= t0 + 0.25)) await sleep(25);
  const t1 = v.currentTime;
  const wasPlaying = !v.paused;
  v.pause();
  return {ok: true, t0, t1, wasPlaying, playError, error: v.error ? v.error.code : null, readyState: v.readyState};
}"""

CLICK_CITATIONS = """(max) => {
  const findings = document.getElementById('findings');
  const set = new Set(document.querySelectorAll('a.cite'));
  if (findings) for (const a of findings.querySelectorAll('a[href^="#src-"]')) set.add(a);
  const links = Array.from(set);
  const sources = document.getElementById('sources');
  const bad = [];
  let checked = 0;
  for (const a of links.slice(0, max)) {
    checked += 1;
    const href = a.getAttribute('href') || '';
    const label = (a.textContent || '').trim().slice(0, 30) || href;
    if (!href.startsWith('#') || href.length < 2) { bad.push(label + ': not a link into the report'); continue; }
    let id;
    try { id = decodeURIComponent(href.slice(1)); } catch (e) { bad.push(label + ': malformed link'); continue; }
    const target = document.getElementById(id);
    a.click();
    const now = document.querySelector(':target');
    if (!target) { bad.push(label + ': no element #' + id); continue; }
    if (!(target.classList.contains('source') && sources && sources.contains(target))) { bad.push(label + ': #' + id + ' is not a source record'); continue; }
    if (now !== target) bad.push(label + ': clicking did not jump to #' + id);
  }
  return {total: links.length, checked, bad: bad.slice(0, 20), badCount: bad.length};
}"""
