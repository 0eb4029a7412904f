//! The stepping page: a counterexample (or any walk of the checker's `World`) stepped
//! through one choice at a time. Left, the steps in `check`'s own numbers and words, the
//! breaking step in red with its property and why (a lasso's cycle, which repeats for
//! ever, edged in purple from the step it begins at); middle, a space-time diagram the
//! page's script draws from the walk (a lane per node, a row per step, every message an
//! arrow from its send row to its delivery row, drawn whole even when later ones
//! overtake it); right, the selected step's snapshot: each node's fields as a tree with
//! what changed since the step before highlighted, the messages in flight per channel,
//! the properties.
//!
//! The walk is the JSON of `notes/walk-contract.md`. In [`PageMode::Static`] it is
//! embedded (the page works from `file://` and fetches nothing); in
//! [`PageMode::Explore`] the page is the explorer's client and fetches walks from its
//! own origin (`/api/walk`, `/api/check`, `/api/save`).
//!
//! Everything from the walk reaches the DOM through `textContent`, never as markup: a
//! field holding `<script>` is shown, never run. After each render the script writes
//! what it drew into `#rendered` (step count, the selected step, arrows, changed
//! fields, the breaking step) for the browser tests.

use std::fmt::Write as _;

use super::esc;
use super::head::BASE_STYLE;

/// Where the page's walk comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageMode {
    /// The walk is embedded; nothing is fetched (a counterexample's `steps.html`).
    Static,
    /// No walk embedded: the page asks the explorer's server it was served from.
    Explore,
}

/// The stepping page titled `title`. In [`PageMode::Static`] `walk_json` is embedded
/// (without one the page says it holds no walk); in [`PageMode::Explore`] the walk
/// comes from the server and `walk_json` is not used.
pub fn step_page(title: &str, walk_json: Option<&str>, mode: PageMode) -> String {
    let explore = mode == PageMode::Explore;
    // Only the explorer may talk to its own server; a static page may fetch nothing.
    let connect = if explore { " connect-src 'self';" } else { "" };
    let mut s = String::with_capacity(BODY.len() + SCRIPT.len() + walk_json.map_or(0, str::len) + 4096);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';{connect} style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
         <link rel=\"icon\" href=\"data:,\"><title>{t}</title><style>{BASE_STYLE}{STYLE}</style></head><body>\n<h1>{t}</h1>\n{BODY}",
        t = esc(title)
    );
    let _ = writeln!(s, "<script type=\"application/json\" id=\"config\">{{\"explore\":{explore}}}</script>");
    if let (PageMode::Static, Some(walk)) = (mode, walk_json) {
        let _ = writeln!(s, "<script type=\"application/json\" id=\"walk\">{}</script>", embed(walk));
    }
    let _ = writeln!(s, "<script>{SCRIPT}</script>\n</body></html>");
    s
}

/// JSON made safe inside a `<script>` element: every `<` (which JSON holds only inside
/// strings) becomes the escape `\u003c`, so neither `</script>` nor `<!--` can end or
/// bend the element, and `JSON.parse` gives back the same text.
fn embed(json: &str) -> String {
    json.replace('<', "\\u003c")
}

const STYLE: &str = r#"
nav.bar { position: sticky; top: 0; background: #fff; padding: 6px 0; z-index: 2; border-bottom: 1px solid #e3e5ea; }
nav.bar button { margin-right: 4px; } #position { margin: 0 10px; font-weight: 600; }
body:not(.explore) .explore-only { display: none; }
#error { margin: 4px 0; } .help { color: #555; font-size: 12px; }
.panes { display: grid; grid-template-columns: minmax(220px, 1fr) auto minmax(300px, 1.3fr); gap: 16px; align-items: start; margin-top: 8px; }
.panes > section { min-width: 0; }
#steps { list-style: none; padding: 0; margin: 0; max-height: 78vh; overflow-y: auto; }
#steps li { padding: 3px 6px; border-left: 3px solid transparent; cursor: pointer; }
#steps li:hover { background: #f0f3f9; } #steps li.selected { background: #dbe7fb; border-left-color: #1f4e9c; }
#steps li.breaking { color: #c0262d; border-left-color: #d62d2d; background: #fde8e8; }
#steps li.breaking.selected { background: #f8c9c9; }
#steps li.in-cycle { border-left-color: #7a4fb5; } #steps li.cycle-start { border-top: 2px dashed #7a4fb5; } #steps li.msg-end { outline: 2px solid #e08a2e; }
#steps .num { font-weight: 600; font-variant-numeric: tabular-nums; } #steps .why { font-size: 12px; }
#diagram { overflow: auto; max-height: 78vh; border: 1px solid #e3e5ea; }
svg.spacetime rect.row { fill: transparent; cursor: pointer; } svg.spacetime rect.row:hover { fill: #f0f3f9; }
svg.spacetime rect.row.selected { fill: #dbe7fb; } svg.spacetime rect.row.breaking { fill: #fde8e8; }
svg.spacetime rect.row.breaking.selected { fill: #f8c9c9; } svg.spacetime rect.row.msg-end { fill: #ffe7c2; }
svg.spacetime line.lane { stroke: #b8bfcc; } svg.spacetime text.lane { font-weight: 600; text-anchor: middle; }
svg.spacetime text.rownum { fill: #889; } svg.spacetime rect.inside { fill: #3d7bd9; fill-opacity: .4; }
svg.spacetime rect.down { fill: #c9cdd6; fill-opacity: .6; } svg.spacetime text.crash { font-size: 15px; font-weight: 700; text-anchor: middle; fill: #000; }
svg.spacetime text.restart { font-size: 13px; font-weight: 700; text-anchor: middle; fill: #1a7f37; }
g.msg { cursor: pointer; } g.msg line.shaft { stroke: #5b7fb8; stroke-width: 1.4; } g.msg line.hit { stroke: transparent; stroke-width: 10; }
g.msg.pending line.shaft { stroke-dasharray: 5 3; stroke: #e08a2e; } g.msg.lost line.shaft { stroke-dasharray: 2 3; stroke: #888; }
g.msg.hot line.shaft { stroke: #1f4e9c; stroke-width: 2.4; } g.msg.pinned line.shaft { stroke: #d9480f; stroke-width: 3; }
text.msglabel { font: 10px monospace; text-anchor: middle; paint-order: stroke; stroke: #fff; stroke-width: 3px; } text.msglabel.fan { text-anchor: start; }
#properties ul, #channels ul { margin: 2px 0 8px; padding-left: 18px; }
.node { border: 1px solid #e3e5ea; padding: 4px 8px; margin-bottom: 8px; } .node.down { background: #f4f5f8; color: #667; }
.node h3 { font-size: 14px; margin: 2px 0; } .node ul { list-style: none; margin: 0; padding-left: 14px; font: 12px monospace; }
.node > ul { padding-left: 0; } .key { color: #555; }
.changed { background: #ffe38a; } .changed-within > .key { text-decoration: underline #e0a800 2px; }
#channels li.msg { cursor: pointer; font: 12px monospace; } #channels li.msg.pinned { background: #ffe7c2; }
#pinned { border: 2px solid #d9480f; padding: 6px; margin-bottom: 8px; } #pinned pre { margin: 4px 0; }
button.choice { display: block; margin: 3px 0; text-align: left; } #explore-result code { user-select: all; }
"#;

const BODY: &str = r#"<p id="summary"></p>
<p id="error" class="bad" hidden></p>
<nav class="bar">
<button id="first" title="the start (Home)">&#xAB; first</button><button id="prev" title="one step back (&#x2190;)">&#x25C0; back</button><span id="position"></span><button id="next" title="one step forward (&#x2192;)">forward &#x25B6;</button><button id="last" title="the last step (End)">last &#xBB;</button><button id="violation" title="the step that breaks a property (v)">jump to violation</button>
<span class="explore-only"> &#xB7; path <code id="path"></code> <button id="back" title="drop the last choice">undo choice</button><button id="forward" title="take again the choice undone">redo</button><button id="check-here" title="search for a violation from the selected step">check from here</button><button id="save" title="save the path as a counterexample file">save</button></span>
<span class="help">&#x2190; &#x2192; step, Home/End, v: the violation; click a step, a row or an arrow</span>
</nav>
<p id="explore-result" class="explore-only"></p>
<div class="panes">
<section><h2>Steps</h2><ul id="steps"></ul>
<div class="explore-only"><h3 id="choices-title">Choices</h3><div id="choices"></div></div></section>
<section><h2>Messages</h2><div id="diagram"></div></section>
<section><h2 id="state-title">State</h2><div id="pinned" hidden></div>
<h3>Properties</h3><div id="properties"></div>
<h3>Nodes</h3><div id="nodes"></div>
<h3>In flight, per channel in order</h3><div id="channels"></div>
</section>
</div>
<div id="rendered" hidden></div>
"#;

/// The page's script: reads the walk (embedded, or from the explorer's server), draws
/// the three panes for the selected step, and keeps the URL's hash on the selection.
const SCRIPT: &str = r#"
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var cfg = JSON.parse($('config').textContent);
  var SVG = 'http://www.w3.org/2000/svg', LANE = 120, ROW = 26, TOP = 36, LEFT = 44;
  var W = null, sel = 0, pinned = null, msgs = {}, lanes = {}, names = {};
  var path = [], redo = [], choicesAt = {}, asked = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = String(text);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function show(v) { return typeof v === 'string' ? v : JSON.stringify(v); }
  function error(text) { $('error').textContent = text || ''; $('error').hidden = !text; }
  function name(id) { return names[id] != null ? names[id] : 'node ' + id; }
  function indexOf(number) {
    if (number == null) return -1;
    for (var i = 0; i < W.steps.length; i++) if (W.steps[i].number === number) return i;
    return -1;
  }
  function violation() {
    var v = indexOf(W.violation_step);
    if (v >= 0) return v;
    for (var i = 0; i < W.steps.length; i++) if (W.steps[i].breaks) return i;
    return -1;
  }
  // A message's kind and body, the body's own `type` left out.
  function bodyText(m) {
    var b = m.body, rest = {}, any = false;
    if (b && typeof b === 'object' && !Array.isArray(b)) {
      for (var k in b) if (k !== 'type') { rest[k] = b[k]; any = true; }
      return any ? m.kind + ' ' + JSON.stringify(rest) : m.kind;
    }
    return b == null ? m.kind : m.kind + ' ' + show(b);
  }
  function fate(m) {
    if (m.delivered != null) return 'delivered at step ' + m.delivered;
    if (m.lost != null) return 'lost at step ' + m.lost + (m.lost_why ? ' (' + m.lost_why + ')' : '');
    return 'still in flight';
  }

  function load(walk) {
    if (!walk || !Array.isArray(walk.steps) || !walk.steps.length || !walk.steps[0].state) {
      throw new Error('the walk has no steps');
    }
    W = walk; msgs = {}; lanes = {}; names = {};
    (W.messages || []).forEach(function (m) { msgs[m.id] = m; });
    W.steps[0].state.nodes.forEach(function (n, i) { lanes[n.id] = i; names[n.id] = n.name || 'w' + n.id; });
    if (pinned != null && !msgs[pinned]) pinned = null;
    var s = $('summary'); clear(s);
    var flags = (W.flags || []).join(' ');
    s.appendChild(el('span', null, W.algorithm + ', ' + W.service + ', n = ' + W.n + ', ' + W.entries +
      (W.entries === 1 ? ' entry' : ' entries') + ' each' + (flags ? ', ' + flags : '') + ': ' +
      (W.steps.length - 1) + (W.steps.length === 2 ? ' step. ' : ' steps. ')));
    var v = violation();
    s.appendChild(W.failure || v >= 0
      ? el('span', 'bad', (v >= 0 ? 'Step ' + W.steps[v].number + ' breaks ' : 'Breaks ') + (W.property || 'a property') + ': ' + (W.failure || (W.steps[v].breaks || {}).why || ''))
      : el('span', 'ok', 'No property breaks along this path.'));
    $('violation').disabled = v < 0;
  }

  function select(i) {
    if (!W) return;
    sel = Math.max(0, Math.min(W.steps.length - 1, i));
    var h = (cfg.explore ? '#path=' + path.join(',') + '&' : '#') + 'step=' + W.steps[sel].number;
    if (location.hash !== h) location.hash = h;
    render();
  }
  function fromHash() {
    var h = {}, parts = location.hash.replace(/^#/, '').split('&');
    parts.forEach(function (p) { var i = p.indexOf('='); if (i > 0) h[p.slice(0, i)] = decodeURIComponent(p.slice(i + 1)); });
    return {
      step: /^\d+$/.test(h.step || '') ? parseInt(h.step, 10) : null,
      path: h.path ? h.path.split(',').filter(function (x) { return /^\d+$/.test(x); }).map(Number) : []
    };
  }

  function render() {
    $('position').textContent = 'step ' + W.steps[sel].number + ' of ' + W.steps[W.steps.length - 1].number;
    $('prev').disabled = $('first').disabled = sel === 0;
    $('next').disabled = $('last').disabled = sel === W.steps.length - 1;
    $('path').textContent = '[' + path.join(', ') + ']';
    renderSteps(); renderDiagram(); renderState(); renderChoices(); writeRendered();
  }

  // The steps the pinned message was sent and delivered (or lost) at.
  function pinnedEnds() {
    var m = pinned != null && msgs[pinned];
    return m ? [indexOf(m.sent), indexOf(m.delivered != null ? m.delivered : m.lost)] : [];
  }

  function renderSteps() {
    var ul = $('steps'), ends = pinnedEnds(), v = violation();
    clear(ul);
    W.steps.forEach(function (st, i) {
      var li = el('li', 'step');
      li.setAttribute('data-step', st.number);
      li.appendChild(el('span', 'num', st.number + '. '));
      li.appendChild(el('span', 'words', st.words || (i === 0 ? 'every node starts' : JSON.stringify(st.choice))));
      if (st.breaks || i === v) {
        li.classList.add('breaking');
        var b = st.breaks || { property: W.property, why: W.failure };
        li.appendChild(el('div', 'why', '\u2717 breaks ' + (b.property || 'a property') + (b.why ? ': ' + b.why : '')));
      }
      if (W.cycle_step != null && st.number >= W.cycle_step) {
        // A lasso: from here to the last step is a cycle that repeats for ever.
        li.classList.add('in-cycle');
        if (st.number === W.cycle_step) {
          li.classList.add('cycle-start');
          li.appendChild(el('div', 'why', '\u21bb the cycle begins: steps ' + W.cycle_step + ' to ' +
            W.steps[W.steps.length - 1].number + ' repeat for ever'));
        }
      }
      if (i === sel) li.classList.add('selected');
      if (ends.indexOf(i) >= 0) li.classList.add('msg-end');
      li.addEventListener('click', function () { select(i); });
      ul.appendChild(li);
    });
    var s = ul.children[sel];
    if (s && s.scrollIntoView) s.scrollIntoView({ block: 'nearest' });
  }

  function laneX(id) { return LEFT + (lanes[id] != null ? lanes[id] : 0) * LANE + LANE / 2; }
  function rowY(i) { return TOP + i * ROW + ROW / 2; }

  function renderDiagram() {
    var d = $('diagram'), nodes = W.steps[0].state.nodes, rows = W.steps.length;
    var bottom = TOP + rows * ROW + 34, width = LEFT + nodes.length * LANE, ends = pinnedEnds(), v = violation();
    var under = {}, stacked = {};
    (W.messages || []).forEach(function (m) { if (indexOf(m.delivered) < 0) under[m.to] = (under[m.to] || 0) + 1; });
    var deepest = Math.max.apply(null, [0].concat(Object.keys(under).map(function (k) { return under[k]; })));
    clear(d);
    var svg = sv('svg', { 'class': 'spacetime', width: width, height: bottom + 11 * deepest + 4 });
    var defs = sv('defs', {});
    [['arrow', '#5b7fb8'], ['arrow-hot', '#1f4e9c'], ['arrow-pin', '#d9480f']].forEach(function (a) {
      var mk = sv('marker', { id: a[0], viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 9, markerHeight: 9, markerUnits: 'userSpaceOnUse', orient: 'auto' });
      mk.appendChild(sv('path', { d: 'M0,0 L8,4 L0,8 z', fill: a[1] }));
      defs.appendChild(mk);
    });
    svg.appendChild(defs);
    W.steps.forEach(function (st, i) {
      var cls = 'row' + (i === sel ? ' selected' : '') + (st.breaks || i === v ? ' breaking' : '') + (ends.indexOf(i) >= 0 ? ' msg-end' : '');
      var r = sv('rect', { 'class': cls, x: 0, y: rowY(i) - ROW / 2, width: width, height: ROW, 'data-row': st.number });
      r.appendChild(sv('title', {}, st.number + '. ' + (st.words || '')));
      r.addEventListener('click', function () { select(i); });
      svg.appendChild(r);
      svg.appendChild(sv('text', { 'class': 'rownum', x: 6, y: rowY(i) + 4 }, st.number));
    });
    nodes.forEach(function (n) {
      var x = laneX(n.id);
      svg.appendChild(sv('text', { 'class': 'lane', x: x, y: TOP - 14 }, name(n.id)));
      svg.appendChild(sv('line', { 'class': 'lane', x1: x, x2: x, y1: TOP - 6, y2: bottom }));
    });
    // Each node's phase along its lane: inside the section, down; crashes and restarts.
    W.steps.forEach(function (st, i) {
      var before = i > 0 ? W.steps[i - 1].state.nodes : null;
      st.state.nodes.forEach(function (n, j) {
        var x = laneX(n.id), y = rowY(i) - ROW / 2;
        if (!n.alive) svg.appendChild(sv('rect', { 'class': 'down', x: x - 6, y: y, width: 12, height: ROW }));
        else if (/^inside/.test(String(n.app))) svg.appendChild(sv('rect', { 'class': 'inside', x: x - 5, y: y, width: 10, height: ROW }));
        var was = before && before[j];
        if (was && was.alive && !n.alive) svg.appendChild(sv('text', { 'class': 'crash', 'data-crash': n.id, x: x, y: rowY(i) + 5 }, '\u2715'));
        if (was && !was.alive && n.alive) svg.appendChild(sv('text', { 'class': 'restart', x: x, y: rowY(i) + 5 }, '\u21bb'));
      });
    });
    // A broadcast: one step, one sender, one kind, several receivers: one label.
    var fans = {};
    (W.messages || []).forEach(function (m) {
      var k = m.sent + '|' + m.from + '|' + m.kind;
      (fans[k] = fans[k] || []).push(m);
    });
    var hot = W.steps[sel], placed = [];
    (W.messages || []).forEach(function (m) {
      var s = indexOf(m.sent), e = indexOf(m.delivered), fan = fans[m.sent + '|' + m.from + '|' + m.kind];
      var x1 = laneX(m.from), y1 = rowY(s), x2 = laneX(m.to), y2 = e >= 0 ? rowY(e) : bottom - 4;
      var cls = 'msg' + (e >= 0 ? '' : m.lost != null ? ' lost' : ' pending');
      var isHot = (hot.sent || []).indexOf(m.id) >= 0 || (hot.delivered || []).indexOf(m.id) >= 0;
      if (isHot) cls += ' hot';
      if (pinned === m.id) cls += ' pinned';
      var g = sv('g', { 'class': cls, 'data-msg': m.id });
      g.appendChild(sv('title', {}, '#' + m.id + ' ' + name(m.from) + ' \u2192 ' + name(m.to) + ': ' + bodyText(m) + '; sent at step ' + m.sent + ', ' + fate(m)));
      g.appendChild(sv('line', { 'class': 'hit', x1: x1, y1: y1, x2: x2, y2: y2 }));
      var mark = pinned === m.id ? 'arrow-pin' : isHot ? 'arrow-hot' : 'arrow';
      g.appendChild(sv('line', { 'class': 'shaft', x1: x1, y1: y1, x2: x2, y2: y2, 'marker-end': e >= 0 ? 'url(#' + mark + ')' : '' }));
      if (fan.length > 1) {
        g.setAttribute('data-fan', fan[0].id);
        if (fan[0] === m) {
          var fl = m.kind + ' \u00d7' + fan.length + ' (broadcast)';
          placed.push([x1 + 6 + 3 * fl.length, y1 - 5, 6 * fl.length]);
          g.appendChild(sv('text', { 'class': 'msglabel fan', 'data-fan-label': m.id, x: x1 + 6, y: y1 - 5 }, fl));
        }
      } else {
        // The first place along the arrow, from a third of the way, clear of the labels
        // placed so far (boxes estimated: 6 px a character, 11 px high).
        var w = 6 * m.kind.length, at = null;
        [1 / 3, 0.5, 0.2, 0.65, 0.8, 0.1].some(function (f) {
          var x = x1 + (x2 - x1) * f, y = y1 + (y2 - y1) * f - 3;
          at = at || [x, y];
          var clear = placed.every(function (b) { return Math.abs(b[0] - x) * 2 >= b[2] + w || Math.abs(b[1] - y) >= 11; });
          if (clear) at = [x, y];
          return clear;
        });
        placed.push([at[0], at[1], w]);
        g.appendChild(sv('text', { 'class': 'msglabel', 'data-label': m.id, x: at[0], y: at[1] }, m.kind));
      }
      if (e < 0) {
        // Stacked under the lane, one line per message that never arrived there.
        var k = stacked[m.to] = (stacked[m.to] || 0) + 1;
        g.appendChild(sv('text', { 'class': 'msglabel', x: x2, y: bottom + 11 * k - 4 }, (m.lost != null ? 'lost at step ' + m.lost : 'still in flight') + ' (#' + m.id + ')'));
      }
      g.addEventListener('click', function () { pin(m.id); });
      svg.appendChild(g);
    });
    d.appendChild(svg);
  }

  // Every leaf of a value by its path ("state/deferred/0"), as text to compare.
  function flat(v, p, out) {
    if (v && typeof v === 'object') {
      var ks = Object.keys(v);
      if (!ks.length) out[p] = Array.isArray(v) ? '[]' : '{}';
      ks.forEach(function (k) { flat(v[k], p + '/' + k, out); });
    } else out[p] = JSON.stringify(v);
    return out;
  }
  function view(n) {
    return {
      app: n.app, alive: n.alive, incarnation: n.incarnation,
      down: (n.down || []).map(name),
      timers: (n.timers || []).map(function (t) { return t.timer + (t.stale ? ' (stale)' : ''); }),
      state: n.state
    };
  }
  // The tree of `v` into `ul`; a leaf that changed, or a node under which one did, marked.
  function tree(v, p, ul, changed) {
    Object.keys(v).forEach(function (k) {
      var q = p + '/' + k, x = v[k], li = el('li');
      li.appendChild(el('span', 'key', k + ': '));
      var within = Object.keys(changed).some(function (c) { return c.indexOf(q + '/') === 0; });
      var plain = !x || typeof x !== 'object' || !Object.keys(x).length ||
        (Array.isArray(x) && x.every(function (y) { return y === null || typeof y !== 'object'; }));
      if (plain) {
        var text = Array.isArray(x) ? '[' + x.map(show).join(', ') + ']' : x === undefined ? '' : show(x);
        li.appendChild(el('span', changed[q] || within ? 'val changed' : 'val', text));
      } else {
        if (within || changed[q]) li.classList.add('changed-within');
        var sub = el('ul');
        tree(x, q, sub, changed);
        li.appendChild(sub);
      }
      ul.appendChild(li);
    });
  }

  function renderState() {
    var st = W.steps[sel], prev = sel > 0 ? W.steps[sel - 1] : null;
    $('state-title').textContent = 'After step ' + st.number + (sel === 0 ? ' (the start)' : '');
    var props = $('properties'), ul = el('ul');
    clear(props);
    (st.state.properties || []).forEach(function (p) {
      // null: judged only where nothing more can happen, which this state is not.
      if (p.holds === null) ul.appendChild(el('li', 'help', '\u00b7 ' + p.name + ': judged when nothing more can happen'));
      else ul.appendChild(el('li', p.holds ? 'ok' : 'bad', (p.holds ? '\u2713 ' : '\u2717 ') + p.name + (p.why ? ': ' + p.why : '')));
    });
    props.appendChild(ul);
    var nodes = $('nodes');
    clear(nodes);
    st.state.nodes.forEach(function (n, j) {
      var cur = view(n), was = prev && prev.state.nodes[j] ? view(prev.state.nodes[j]) : null;
      var a = flat(cur, '', {}), b = was ? flat(was, '', {}) : a, changed = {};
      Object.keys(a).forEach(function (k) { if (a[k] !== b[k]) changed[k] = true; });
      // A field gone since the step before marks the nearest field still there.
      Object.keys(b).forEach(function (k) {
        if (k in a) return;
        var up = k;
        while ((up = up.slice(0, up.lastIndexOf('/'))) && !Object.keys(a).some(function (c) { return c === up || c.indexOf(up + '/') === 0; }));
        if (up) changed[up] = true;
      });
      var card = el('div', 'node' + (n.alive ? '' : ' down'));
      card.setAttribute('data-node', n.id);
      card.appendChild(el('h3', null, name(n.id) + (n.alive ? '' : ' (down)')));
      var t = el('ul');
      tree(cur, '', t, changed);
      card.appendChild(t);
      nodes.appendChild(card);
    });
    var ch = $('channels');
    clear(ch);
    var chans = st.state.channels || [];
    if (!chans.length) ch.appendChild(el('p', 'help', 'nothing in flight'));
    chans.forEach(function (c) {
      ch.appendChild(el('div', null, name(c.from) + ' \u2192 ' + name(c.to) + ':'));
      var list = el('ul');
      c.messages.forEach(function (id) {
        var m = msgs[id], li = el('li', 'msg' + (pinned === id ? ' pinned' : ''), m ? '#' + id + ' ' + bodyText(m) : '#' + id);
        li.setAttribute('data-msg', id);
        li.addEventListener('click', function () { pin(id); });
        list.appendChild(li);
      });
      ch.appendChild(list);
    });
    var pin_ = $('pinned'), m = pinned != null && msgs[pinned];
    clear(pin_);
    pin_.hidden = !m;
    if (m) {
      pin_.appendChild(el('b', null, 'message #' + m.id + ': ' + name(m.from) + ' \u2192 ' + name(m.to) + ' ' + m.kind));
      pin_.appendChild(el('div', null, 'sent at step ' + m.sent + ', ' + fate(m)));
      pin_.appendChild(el('pre', null, JSON.stringify(m.body, null, 2)));
      var x = el('button', null, 'unpin');
      x.id = 'unpin';
      x.addEventListener('click', function () { pinned = null; render(); });
      pin_.appendChild(x);
    }
  }

  function pin(id) {
    var m = msgs[id];
    pinned = id;
    var at = indexOf(m.delivered != null ? m.delivered : m.sent);
    if (at !== sel) select(at); else render();
  }

  // The explorer: the choices at the selected step; one taken cuts the path there.
  function renderChoices() {
    if (!cfg.explore) return;
    var box = $('choices'), last = sel === W.steps.length - 1, key = path.slice(0, sel).join(',');
    var enabled = last ? W.enabled : choicesAt[key];
    clear(box);
    $('choices-title').textContent = 'Choices after step ' + W.steps[sel].number + (last ? '' : ' (taking one drops the steps after it)');
    if (!enabled) {
      box.appendChild(el('p', 'help', 'asking the server\u2026'));
      var at = sel;
      api('GET', '/api/walk?path=' + key).then(function (w) {
        choicesAt[key] = w.enabled || [];
        if (sel === at && path.slice(0, sel).join(',') === key) { renderChoices(); writeRendered(); }
      }, function () {});
      return;
    }
    if (!enabled.length) box.appendChild(el('p', 'help', 'nothing can happen from here'));
    enabled.forEach(function (c) {
      var b = el('button', 'choice', c.words || JSON.stringify(c.choice));
      b.setAttribute('data-index', c.index);
      b.addEventListener('click', function () { redo = []; go(path.slice(0, sel).concat([c.index]), 'last'); });
      box.appendChild(b);
    });
  }

  // A call to the explorer's server; its error, or a failure to reach it, in #error.
  function api(method, url) {
    return fetch(url, { method: method }).then(function (r) {
      return r.text().then(function (t) {
        var j;
        try { j = JSON.parse(t); } catch (e) { throw new Error('HTTP ' + r.status + ': ' + t.slice(0, 200)); }
        if (!r.ok) throw new Error(j && j.error ? j.error : 'HTTP ' + r.status);
        return j;
      });
    }).catch(function (e) { error(url.split('?')[0] + ': ' + (e && e.message ? e.message : e)); throw e; });
  }

  // Load the walk along `p` and select `where`: 'last', 'violation' or a step number.
  function go(p, where) {
    var mine = ++asked;
    return api('GET', '/api/walk?path=' + p.join(',')).then(function (w) {
      if (mine !== asked) return; // a later click's walk is the one to show
      try { load(w); } catch (e) { error('/api/walk: ' + e.message); return; }
      error('');
      path = Array.isArray(w.path) ? w.path.slice() : p.slice();
      choicesAt[path.join(',')] = W.enabled || [];
      var i = where === 'violation' ? violation() : where === 'last' ? W.steps.length - 1 : indexOf(where);
      select(i >= 0 ? i : W.steps.length - 1);
    }, function () {});
  }

  function writeRendered() {
    var r = $('rendered'), q = function (s) { return document.querySelectorAll(s).length; };
    var br = document.querySelector('#steps li.breaking'), cur = document.querySelector('#steps li.selected');
    var set = function (k, v) { r.setAttribute('data-' + k, String(v)); };
    set('steps', q('#steps li.step'));
    set('selected', cur ? cur.getAttribute('data-step') : '');
    set('selected-breaking', cur && cur.classList.contains('breaking') ? 1 : 0);
    set('breaking', br ? br.getAttribute('data-step') : '');
    var cy = document.querySelector('#steps li.cycle-start');
    set('cycle', cy ? cy.getAttribute('data-step') : '');
    set('in-cycle', q('#steps li.in-cycle'));
    set('arrows', q('#diagram g[data-msg]'));
    set('fans', q('#diagram [data-fan-label]'));
    set('unfinished', q('#diagram g.pending, #diagram g.lost'));
    set('changed', q('#nodes .changed'));
    set('in-flight', q('#channels li.msg'));
    set('pinned', pinned != null ? pinned : '');
    set('choices', q('#choices .choice'));
    set('path', path.join(','));
  }

  $('first').addEventListener('click', function () { select(0); });
  $('prev').addEventListener('click', function () { select(sel - 1); });
  $('next').addEventListener('click', function () { select(sel + 1); });
  $('last').addEventListener('click', function () { select(W.steps.length - 1); });
  $('violation').addEventListener('click', function () { var v = violation(); if (v >= 0) select(v); });
  document.addEventListener('keydown', function (e) {
    if (!W || e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target && e.target.tagName;
    if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT') return;
    if (e.key === 'ArrowRight') select(sel + 1);
    else if (e.key === 'ArrowLeft') select(sel - 1);
    else if (e.key === 'Home') select(0);
    else if (e.key === 'End') select(W.steps.length - 1);
    else if (e.key === 'v') { var v = violation(); if (v >= 0) select(v); }
    else return;
    e.preventDefault();
  });
  window.addEventListener('hashchange', function () {
    if (!W) return;
    var h = fromHash();
    if (cfg.explore && h.path.join(',') !== path.join(',')) { go(h.path, h.step); return; }
    var i = indexOf(h.step);
    if (i >= 0 && i !== sel) select(i);
  });

  if (cfg.explore) {
    document.body.classList.add('explore');
    $('back').addEventListener('click', function () {
      if (path.length) { redo.push(path[path.length - 1]); go(path.slice(0, -1), 'last'); }
    });
    $('forward').addEventListener('click', function () { if (redo.length) go(path.concat([redo.pop()]), 'last'); });
    $('check-here').addEventListener('click', function () {
      var from = path.slice(0, sel), out = $('explore-result');
      out.textContent = 'checking from step ' + W.steps[sel].number + '\u2026';
      api('GET', '/api/check?path=' + from.join(',')).then(function (r) {
        out.textContent = r.summary || '';
        if (r.found && Array.isArray(r.path)) { redo = []; go(r.path, 'violation'); }
      }, function () { out.textContent = ''; });
    });
    $('save').addEventListener('click', function () {
      var out = $('explore-result');
      api('POST', '/api/save?path=' + path.join(',')).then(function (r) {
        clear(out);
        out.appendChild(el('span', null, 'saved ' + r.file + '; run it as processes: '));
        out.appendChild(el('code', null, r.replay));
      }, function () {});
    });
    var h = fromHash();
    go(h.path, h.step != null ? h.step : 'last');
  } else {
    var holder = $('walk');
    try {
      if (!holder) throw new Error('this page holds no walk');
      load(JSON.parse(holder.textContent));
    } catch (e) {
      error(e.message);
      writeRendered();
      return;
    }
    var i = indexOf(fromHash().step);
    select(i >= 0 ? i : 0);
  }
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk of two steps whose node field holds markup.
    const WALK: &str = r#"{"schema":1,"algorithm":"ricart-agrawala","service":"mutex","n":2,"entries":1,"flags":[],
      "property":null,"failure":null,"violation_step":null,"messages":[],
      "steps":[{"number":0,"choice":null,"words":"every node starts","notes":[],"sent":[],"delivered":[],"lost":[],"breaks":null,
        "state":{"nodes":[{"id":0,"name":"w0","alive":true,"incarnation":0,"app":"idle","down":[],"timers":[],
          "state":{"note":"</script><script>alert(1)</script><!--"}}],"channels":[],"properties":[]}}],"enabled":[]}"#;

    /// The text of the `<script>` element with `id`.
    fn script<'a>(page: &'a str, id: &str) -> Option<&'a str> {
        let open = format!("<script type=\"application/json\" id=\"{id}\">");
        let at = page.find(&open)? + open.len();
        Some(&page[at..at + page[at..].find("</script>")?])
    }

    #[test]
    fn a_static_page_embeds_the_walk_and_fetches_nothing() {
        let page = step_page("steps <of> a run", Some(WALK), PageMode::Static);
        let embedded = script(&page, "walk").expect("the walk is embedded");
        let back: serde_json::Value = serde_json::from_str(embedded).unwrap();
        assert_eq!(back, serde_json::from_str::<serde_json::Value>(WALK).unwrap());
        assert_eq!(script(&page, "config"), Some(r#"{"explore":false}"#));
        assert!(page.contains("<title>steps &lt;of&gt; a run</title>"));
        assert!(super::super::fetches_nothing(&page));
        assert!(!page.contains("connect-src"), "a static page may fetch nothing");
        for id in ["next", "prev", "first", "last", "violation", "save", "check-here", "rendered"] {
            assert!(page.contains(&format!("id=\"{id}\"")), "#{id}");
        }
    }

    #[test]
    fn markup_in_the_walk_cannot_end_its_script_element() {
        let page = step_page("t", Some(WALK), PageMode::Static);
        // The page's own three script elements end; the walk's `</script>` does not.
        assert_eq!(page.matches("</script>").count(), 3, "{page}");
        assert!(!page.contains("<script>alert"));
        assert!(!page.contains("<!--"));
        // The raw text would have ended the element early (twice): the control that the
        // count above can fail.
        let raw = page.replace(&embed(WALK), WALK);
        assert_eq!(raw.matches("</script>").count(), 5);
        // The script writes walk text with textContent only.
        assert!(!SCRIPT.contains("innerHTML"));
    }

    #[test]
    fn an_explore_page_embeds_no_walk_and_may_ask_its_own_server() {
        let page = step_page("explore", Some(WALK), PageMode::Explore);
        assert_eq!(script(&page, "walk"), None);
        assert!(!page.contains("alert(1)"));
        assert_eq!(script(&page, "config"), Some(r#"{"explore":true}"#));
        assert!(page.contains("connect-src 'self';"));
        let none = step_page("explore", None, PageMode::Explore);
        assert_eq!(none, page);
    }
}
