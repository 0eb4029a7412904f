//! The head of every page: the style all pages share (`BASE_STYLE`), the run report's
//! own style and script, the hidden element the script counts what the browser built
//! into (for the browser tests), and the head itself with its policy that nothing is
//! fetched. Text, apart from the page's sections so they read as the page they make.

use std::fmt::Write as _;

use super::esc;

/// What every page shares: type, tables, notes, and the charts' axes.
pub(super) const BASE_STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 24px 0 8px; }
pre { background: #f4f5f8; padding: 10px; overflow-x: auto; font-size: 12px; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #c0262d; font-weight: 600; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; text-align: left; border-bottom: 1px solid #e3e5ea; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #7a5b00; }
.scroll { overflow-x: auto; border: 1px solid #e3e5ea; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
line.tick { stroke: #eceef2; } text.tick { fill: #889; text-anchor: middle; }
code { font-size: 12px; }
"#;

/// The run report's own: the diagram, the theory band, the histograms, the findings.
pub(super) const STYLE: &str = r#"
line.lane { stroke: #b8bfcc; } text.lane { font-weight: 600; }
rect.cs { fill: #3d7bd9; fill-opacity: .75; } rect.cs.open { fill: #8aa9d9; }
rect.cs.bad { fill: #d62d2d; fill-opacity: .9; }
rect.wait { fill: #9aa3b3; } rect.wait.unserved { fill: #e08a2e; }
rect.stopped { fill: url(#hatch); fill-opacity: .6; } rect.down { fill: #dfe2e8; }
line.fault-time { stroke: #999; stroke-width: .8; stroke-dasharray: 1 3; }
g.msg line { stroke-width: 1.3; } g.msg.lost line { stroke-dasharray: 3 2; }
g.msg.out line, g.msg.in line { stroke-dasharray: 1 2; }
text[data-label] { font: 9px monospace; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
text.role { fill: #8a5a00; font-weight: 700; }
rect.token { fill: #f2b600; fill-opacity: .35; }
g.stall line { stroke: #d62d2d; stroke-width: 1.5; stroke-dasharray: 4 3; } g.deadlock path { stroke: #d62d2d; stroke-width: 2.5; fill: none; }
text.deadlock { fill: #d62d2d; font-weight: 700; } div.stall { border-left: 4px solid #d62d2d; padding-left: 10px; }
g.break rect { fill: #f4f5f8; } g.break path { stroke: #778; stroke-width: 1.5; fill: none; }
g.fault.across polyline { stroke: #8a3ffc; stroke-width: 1.5; stroke-dasharray: 6 3; }
svg.defs { position: absolute; } svg.logical[hidden] { display: none; }
#axis-logical:checked ~ .view.wall, #axis-wall:checked ~ .view.logical { display: none; }
.axes label { margin-right: 14px; font-weight: 600; } .why-axis, .help { color: #555; font-size: 12px; }
.aggregate { display: flex; gap: 24px; flex-wrap: wrap; } figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
.legend .key { margin-right: 14px; white-space: nowrap; } .legend svg { vertical-align: middle; margin-right: 3px; }
g.fault.kill path { stroke: #000; stroke-width: 3; } g.fault.restart path { fill: #1a7f37; }
g.fault.pause line { stroke: #a07f00; stroke-width: 2; }
g.fault.across line { stroke: #8a3ffc; stroke-width: 1.5; stroke-dasharray: 6 3; } g.fault.across text { fill: #8a3ffc; }
g.leader path { fill: #fff; stroke: #b07800; stroke-width: 1.5; } g.leader.own path { fill: #f2b600; }
g.refused circle { fill: #fff; stroke: #e08a2e; stroke-width: 2; }
g.violation circle { fill: #d62d2d; stroke: #fff; stroke-width: 1.5; }
svg.theory rect.band { fill: #2da44e; fill-opacity: .45; } svg.theory rect.measured { fill: #3d7bd9; }
svg.hist rect { fill: #3d7bd9; } svg.hist line.axis { stroke: #999; }
svg.wait-time circle { fill: #3d7bd9; fill-opacity: .7; } svg.wait-time rect.fault-period { fill: #e08a2e; fill-opacity: .18; }
svg.wait-time path.unserved { fill: #e08a2e; } svg.wait-time line.axis { stroke: #999; }
svg.hist line.p50 { stroke: #1a7f37; stroke-width: 2; } svg.hist line.p99 { stroke: #d62d2d; stroke-width: 2; }
.violations td:first-child, .listing td:first-child { white-space: nowrap; }
.listing tr:target, .violations tr:target { background: #ffe9a8; }
g.overlap rect { fill: #d62d2d; fill-opacity: .14; stroke: #d62d2d; stroke-width: 1.5; stroke-dasharray: 4 2; }
text.overlap { fill: #c0262d; font-weight: 700; } g.msg.enabler line { stroke-width: 3.5; }
g.jump path { stroke: #1a7f37; stroke-width: 2; fill: none; }
.finder { font-size: 12px; margin: 4px 0; } .finder .group { margin-right: 12px; } .finder label { white-space: nowrap; }
.pinned { font-size: 12px; border-left: 4px solid #3d7bd9; padding-left: 8px; margin: 4px 0; }
.pinned pre { margin: 2px 0; white-space: pre-wrap; }
.pinned table.state { border-collapse: collapse; margin: 2px 0 6px; } .pinned .state-head { margin-top: 4px; font-weight: 600; }
.pinned table.state th { text-align: left; font-weight: 600; padding-right: 10px; vertical-align: top; }
.pinned table.state td { font-family: monospace; white-space: pre-wrap; word-break: break-all; }
g[data-lmsg] { cursor: pointer; } g[data-lmsg] line.hit-area { stroke: transparent; stroke-width: 9; }
g[data-lmsg].hit line:first-child { stroke-width: 4; } g[data-lmsg].pinned line:first-child { stroke-width: 4; stroke: #000; }
g[data-lmsg].past line:first-child { stroke: #3d7bd9; stroke-width: 2.5; }
g[data-lmsg].future line:first-child { stroke: #1a7f37; stroke-width: 2.5; }
g[data-lmsg].dim { opacity: .15; }
"#;

/// Moves the logical diagram from window to window (its buttons), and counts what the
/// browser built, so a test can read it back from the rendered DOM:
/// for each `name=selector` in `#rendered`'s `data-count`, how many elements match, in
/// its `data-name`.
pub(super) const SCRIPT: &str = r#"
document.addEventListener('click', function (ev) {
  var f = ev.target.closest && ev.target.closest('[data-show-window]');
  if (f) {
    var all = Array.prototype.slice.call(document.querySelectorAll('svg.logical'));
    var want = all[parseInt(f.getAttribute('data-show-window'), 10)];
    if (!want) return;
    all.forEach(function (w) { w.setAttribute('hidden', ''); });
    want.removeAttribute('hidden');
    var ax = document.getElementById('axis-logical');
    if (ax) ax.checked = true;
    var cap = document.getElementById('window-caption');
    if (cap) cap.textContent = want.getAttribute('data-caption');
    return;
  }
  var b = ev.target.closest && ev.target.closest('[data-go]');
  if (!b) return;
  var ws = Array.prototype.slice.call(document.querySelectorAll('svg.logical'));
  var cur = ws.findIndex(function (w) { return !w.hasAttribute('hidden'); });
  var next = Math.max(0, Math.min(ws.length - 1, cur + parseInt(b.getAttribute('data-go'), 10)));
  if (next === cur || cur < 0) return;
  ws[cur].setAttribute('hidden', '');
  ws[next].removeAttribute('hidden');
  var c = document.getElementById('window-caption');
  if (c) c.textContent = ws[next].getAttribute('data-caption');
});
// Both views' arrows: the logical windows' and the wall clock's.
function arrows() { return Array.prototype.slice.call(document.querySelectorAll('svg.logical [data-lmsg], svg.diagram [data-arrow]')); }
function kind(g) { return g.getAttribute('data-lmsg') || g.getAttribute('data-arrow'); }
function bound(id) { var b = document.getElementById(id), v = b ? parseFloat(b.value) : NaN; return isNaN(v) ? null : v; }
function said(name, n) { var r = document.getElementById('rendered'); if (r) r.setAttribute('data-' + name, String(n)); }
function ticked(sel, attr) {
  var off = {};
  document.querySelectorAll(sel).forEach(function (c) { if (!c.checked) off[c.getAttribute(attr)] = true; });
  return off;
}
// Hide, in both views, the unticked workers' lanes, bars and arrows, the unticked types'
// arrows, and the arrows whose event is outside the times asked for (ms).
function filter() {
  var w = ticked('[data-filter-w]', 'data-filter-w'), k = ticked('[data-filter-kind]', 'data-filter-kind'), hidden = 0;
  var lo = bound('from-ms'), hi = bound('to-ms');
  arrows().forEach(function (g) {
    var ms = parseFloat(g.getAttribute('data-ms'));
    var off = w[g.getAttribute('data-from')] || w[g.getAttribute('data-to')] || k[kind(g)] ||
      (lo !== null && ms < lo) || (hi !== null && ms > hi);
    if (off) { g.setAttribute('display', 'none'); hidden++; } else g.removeAttribute('display');
  });
  document.querySelectorAll('svg.logical [data-llane], svg.logical [data-w], svg.diagram [data-lane], svg.diagram [data-w]').forEach(function (e) {
    if (w[e.getAttribute('data-llane') || e.getAttribute('data-lane') || e.getAttribute('data-w')]) e.setAttribute('display', 'none'); else e.removeAttribute('display');
  });
  said('filter-hidden', hidden);
  find();
}
// Mark the shown arrows whose hover (type, ends, times, contents) holds the text.
function find() {
  var box = document.getElementById('find-text');
  var q = box ? box.value.trim().toLowerCase() : '', hits = 0;
  arrows().forEach(function (g) {
    var t = g.querySelector('title'), on = q !== '' && !g.hasAttribute('display') && !!t && t.textContent.toLowerCase().indexOf(q) >= 0;
    g.classList.toggle('hit', on);
    if (on) hits++;
  });
  var c = document.getElementById('find-count');
  if (c) c.textContent = q === '' ? '' : hits + (hits === 1 ? ' arrow matches' : ' arrows match') + ' (both views, every window)';
  said('search-hits', hits);
}
function vc(g) { return (g.getAttribute('data-vc') || '').split(',').map(Number); }
function le(a, b) { for (var i = 0; i < a.length; i++) if (!(a[i] <= b[i])) return false; return a.length === b.length; }
// Pin an arrow: its hover in the panel, and the shown arrows of its window in its causal
// past (their event's clock at most its own) and future (at least) marked, the rest dimmed.
function pin(g) {
  var me = vc(g), past = 0, future = 0;
  arrows().forEach(function (o) { o.classList.remove('pinned', 'past', 'future', 'dim'); });
  g.closest('svg').querySelectorAll('[data-lmsg]').forEach(function (o) {
    if (o === g) { o.classList.add('pinned'); return; }
    if (o.hasAttribute('display')) return;
    var v = vc(o);
    if (le(v, me)) { o.classList.add('past'); past++; }
    else if (le(me, v)) { o.classList.add('future'); future++; }
    else o.classList.add('dim');
  });
  var t = g.querySelector('title'), p = document.getElementById('pinned-text');
  if (p) p.textContent = (t ? t.textContent : '') + '\n' + past + ' arrows in its causal past, ' + future + ' in its future';
  pinStates(g);
  said('causal-past', past);
  said('causal-future', future);
}
// The pinned arrow's node states (run --states): the sender's last recorded state before
// its SEND (after the step that sent it), the receiver's before its RECV (before handling it).
function pinStates(g) {
  var ps = document.getElementById('pinned-states'), store = document.getElementById('node-states'), shown = 0;
  if (!ps) return;
  ps.textContent = '';
  if (!store) { ps.textContent = ps.getAttribute('data-none') || ''; said('pinned-states', 0); return; }
  [['data-sst', 'data-from', 'when it sent this (after the step that sent it)'],
   ['data-rst', 'data-to', 'when this arrived (before it handled it)']].forEach(function (x) {
    var i = g.getAttribute(x[0]);
    if (i === null) return;
    var src = i === '-' ? null : store.querySelector('[data-state="' + i + '"]');
    var d = document.createElement('div'), h = document.createElement('div');
    h.className = 'state-head';
    var none = 'none recorded before it in this life' +
      (store.getAttribute('data-over') !== '0' ? ', or past the page\'s ' + store.getAttribute('data-max') + ' states' : '');
    h.textContent = 'w' + g.getAttribute(x[1]) + '\'s state ' + x[2] + ': ' + (src ? src.getAttribute('data-caption') : none);
    d.appendChild(h);
    if (src && src.firstElementChild) { d.appendChild(src.firstElementChild.cloneNode(true)); shown++; }
    ps.appendChild(d);
  });
  said('pinned-states', shown);
}
document.addEventListener('change', function (ev) {
  if (ev.target.closest && ev.target.closest('.finder')) filter();
});
document.addEventListener('input', function (ev) {
  if (ev.target.id === 'find-text') find();
  if (ev.target.id === 'from-ms' || ev.target.id === 'to-ms') filter();
});
// A wall-clock arrow has no vector clock: pinned, its contents only.
function pinWall(g) {
  arrows().forEach(function (o) { o.classList.remove('pinned', 'past', 'future', 'dim'); });
  g.classList.add('pinned');
  var t = g.querySelector('title'), p = document.getElementById('pinned-text');
  if (p) p.textContent = (t ? t.textContent : '') + '\n(its causal past and future, and its ends\' states, are shown for its arrow on the logical axis)';
  var ps = document.getElementById('pinned-states');
  if (ps) ps.textContent = '';
}
document.addEventListener('click', function (ev) {
  var g = ev.target.closest && ev.target.closest('svg.logical [data-lmsg]');
  if (g) pin(g);
  var a = ev.target.closest && ev.target.closest('svg.diagram [data-arrow]');
  if (a) pinWall(a);
});
document.addEventListener('DOMContentLoaded', function () {
  // A wider, invisible line over each arrow, so a 1.3 px arrow can be clicked.
  arrows().forEach(function (g) {
    var l = g.querySelector('line');
    if (!l) return;
    var h = l.cloneNode(false);
    h.setAttribute('class', 'hit-area');
    h.removeAttribute('marker-end');
    g.appendChild(h);
  });
  var r = document.getElementById('rendered');
  if (!r) return;
  (r.getAttribute('data-count') || '').split(';').forEach(function (pair) {
    var i = pair.indexOf('=');
    if (i > 0) r.setAttribute('data-' + pair.slice(0, i), String(document.querySelectorAll(pair.slice(i + 1)).length));
  });
});
"#;

/// The hidden element [`SCRIPT`] writes its counts into, asking for each `(name,
/// selector)` of `counts`.
pub(super) fn rendered(counts: &[(&str, &str)]) -> String {
    let asked: Vec<String> = counts.iter().map(|(name, sel)| format!("{name}={sel}")).collect();
    format!("<div id=\"rendered\" hidden data-count=\"{}\"></div>", esc(&asked.join(";")))
}

/// The start of a page up to its heading: nothing may be fetched (the policy allows
/// only what is inline), the shared style plus `style`, and `script`.
pub(super) fn head(s: &mut String, title: &str, style: &str, script: &str) {
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
         <title>{}</title><style>{BASE_STYLE}{style}</style><script>{script}</script></head><body>\n",
        esc(title)
    );
    let _ = writeln!(s, "<h1>{}</h1>", esc(title));
}
