
'use strict';
// pi-harness timeline: draws the data of this page's application/json elements. Every text
// goes in through textContent or an attribute, never as markup; nothing is fetched.
(function () {
  var CELL = 24;
  var doc = document;
  var body = doc.body;
  window.addEventListener('error', function (e) { body.dataset.error = String(e.message); });

  function el(tag, cls, text) {
    var e = doc.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function ms(t) { return (Math.round(t * 10) / 10).toFixed(1) + ' ms'; }
  function tickText(t, step) {
    if (step >= 1000) { return (t / 1000).toFixed(step >= 10000 ? 0 : 1) + ' s'; }
    if (step >= 1) { return Math.round(t) + ' ms'; }
    return t.toFixed(1) + ' ms';
  }
  function json(id) { return JSON.parse(doc.getElementById(id).textContent); }

  var meta = json('tl-meta');
  document.title = meta.title + ' · pi-harness timeline';
  doc.getElementById('tl-title').textContent = meta.title;
  doc.getElementById('tl-sub').textContent = meta.subtitle;
  var detail = doc.getElementById('tl-detail-body');
  var sections = meta.sections.map(function (s, i) {
    s.items = json('tl-items-' + i);
    s.index = i;
    s.byLane = {};
    s.items.forEach(function (it, n) {
      var lane = s.kinds[it[1]][0];
      (s.byLane[lane] = s.byLane[lane] || []).push(n);
    });
    s.bulksByLane = {};
    s.bulks.forEach(function (b, n) {
      var lane = s.kinds[b[2]][0];
      (s.bulksByLane[lane] = s.bulksByLane[lane] || []).push(n);
    });
    return s;
  });
  var drawOrder = sections.slice().sort(function (a, b) { return (a.order - b.order) || (a.index - b.index); });
  var span = 1;
  sections.forEach(function (s) {
    span = Math.max(span, s.duration);
    s.procs.forEach(function (p) { span = Math.max(span, p.start, p.end || 0); });
    s.arrows.forEach(function (a) { span = Math.max(span, a.t); });
    s.bulks.forEach(function (b) { span = Math.max(span, b[1]); });
    if (s.items.length) { span = Math.max(span, s.items[s.items.length - 1][0]); }
  });
  var full = [0, span * 1.06 + 1];
  var view = full.slice();
  var selected = null;

  function select(node) {
    if (selected) { selected.classList.remove('sel'); }
    selected = node;
    if (node) { node.classList.add('sel'); }
  }
  function clear() { while (detail.firstChild) { detail.removeChild(detail.firstChild); } }
  function dl(pairs) {
    var d = el('dl');
    pairs.forEach(function (p) {
      if (p[1] === undefined || p[1] === null) { return; }
      d.appendChild(el('dt', null, p[0]));
      var dd = el('dd');
      if (p[1] instanceof Node) { dd.appendChild(p[1]); } else { dd.textContent = String(p[1]); }
      d.appendChild(dd);
    });
    return d;
  }
  function kindText(s, k) {
    var kind = s.kinds[k];
    return laneLabel(s, kind[0]) + ': ' + kind[1];
  }
  function laneLabel(s, lane) {
    for (var i = 0; i < s.lanes.length; i++) { if (s.lanes[i].id === lane) { return s.lanes[i].label; } }
    return lane;
  }
  function recordLabel(s, n) {
    var it = s.items[n];
    return kindText(s, it[1]) + ' at ' + ms(it[0]) + ', line ' + it[2];
  }
  function showRecord(s, n) {
    var it = s.items[n];
    clear();
    detail.appendChild(el('h3', null, kindText(s, it[1])));
    var shown = new TextEncoder().encode(it[3]).length;
    detail.appendChild(dl([
      ['section', s.title], ['time', ms(it[0])], ['line', it[2]],
      ['bytes', it[4] > shown ? it[4] + ' (the first ' + shown + ' shown)' : it[4]]
    ]));
    var pre = el('pre', null, it[3]);
    pre.tabIndex = 0;
    pre.setAttribute('aria-label', 'the text of line ' + it[2]);
    detail.appendChild(pre);
  }
  function showBulk(s, b) {
    return el('li', 'bulk', b[5] + ' records of ' + kindText(s, b[2]) + ', ' + ms(b[0]) + ' to ' + ms(b[1]) +
      ', lines ' + b[3] + ' to ' + b[4] + ' (past the page\u2019s ' + meta.limits.max_items +
      ' records drawn one by one: counted here; `pi-harness cassette show` reads them all)');
  }
  function showGroup(s, lane, members, bulks, t0, t1, node, pressed) {
    clear();
    var count = members.length;
    bulks.forEach(function (b) { count += s.bulks[b][5]; });
    detail.appendChild(el('h3', null, count + ' records: ' + laneLabel(s, lane)));
    detail.appendChild(el('p', 'note', ms(t0) + ' to ' + ms(t1) + ' in ' + s.title + '. Each is listed; press one to see its text.'));
    var actions = el('div', 'detail-actions');
    var zoom = el('button', null, 'Zoom to these');
    zoom.type = 'button';
    zoom.addEventListener('click', function () {
      var pad = Math.max((t1 - t0) * 0.1, 0.5);
      view = [Math.max(full[0], t0 - pad), Math.min(full[1], t1 + pad)];
      render();
    });
    actions.appendChild(zoom);
    detail.appendChild(actions);
    var list = el('ul', 'members');
    list.setAttribute('aria-label', count + ' records');
    members.forEach(function (n) {
      var li = el('li');
      var b = el('button', 'mb', recordLabel(s, n));
      b.type = 'button';
      b.dataset.line = s.items[n][2];
      b.addEventListener('click', function () {
        showRecord(s, n);
        var back = el('button', null, 'Back to the ' + count + ' records');
        back.type = 'button';
        back.addEventListener('click', function () { showGroup(s, lane, members, bulks, t0, t1, node, true); });
        detail.insertBefore(back, detail.firstChild);
      });
      li.appendChild(b);
      list.appendChild(li);
    });
    bulks.forEach(function (b) {
      var li = showBulk(s, s.bulks[b]);
      li.dataset.count = s.bulks[b][5];
      list.appendChild(li);
    });
    detail.appendChild(list);
    if (node) {
      node.setAttribute('aria-expanded', 'true');
      // The list is where the keyboard goes next; Escape comes back to the aggregate.
      var first = list.querySelector('button');
      if (first && pressed) { first.focus(); }
    }
  }
  function procName(s, i) { return s.procs[i] ? s.procs[i].name : '#' + i; }
  function showProc(s, i) {
    var p = s.procs[i];
    clear();
    detail.appendChild(el('h3', null, 'process: ' + p.name));
    detail.appendChild(dl([
      ['section', s.title],
      ['started by', p.parent === null ? 'the caller' : procName(s, p.parent)],
      ['command line', p.argv ? p.argv.join(' ') : null],
      ['from', ms(p.start)], ['to', p.end === null ? 'after the record ends' : ms(p.end)],
      ['ends', p.state + ': ' + p.how], ['what else', p.attrs.length ? p.attrs.join('; ') : null],
      ['lines', p.lines.length ? p.lines.join(', ') : null]
    ]));
  }
  function arrowLabel(a) {
    var from = { client: 'sent by the client', ending: 'the ending', 'if sent': 'if sent', received: 'received' }[a.from] || a.from;
    return 'signal ' + a.signal + ' (' + from + ') at ' + ms(a.t) + ': ' + a.what;
  }
  function showArrow(s, a) {
    clear();
    detail.appendChild(el('h3', null, 'signal ' + a.signal + (a.from === 'if sent' ? ' (if sent)' : '')));
    var hits = el('ul');
    a.hits.forEach(function (h) { hits.appendChild(el('li', null, procName(s, h[0]) + ': ' + h[1])); });
    detail.appendChild(dl([['section', s.title], ['time', ms(a.t)], ['line', a.line], ['what', a.what],
      ['processes', a.hits.length ? hits : 'none']]));
  }

  function button(cls, label, onShow) {
    var b = el('button', cls);
    b.type = 'button';
    b.setAttribute('aria-label', label);
    b.addEventListener('click', function () { select(b); onShow(true); });
    b.addEventListener('mouseenter', function () { onShow(false); });
    b.addEventListener('focus', function () { onShow(false); });
    return b;
  }
  function row(parent, label, count, cls) {
    var r = el('div', 'row' + (cls ? ' ' + cls : ''));
    var lab = el('div', 'lab', label);
    if (count !== undefined) { lab.textContent = label + ' (' + count + ')'; }
    var track = el('div', 'track');
    r.appendChild(lab);
    r.appendChild(track);
    parent.appendChild(r);
    return track;
  }
  function x(t, w) { return (t - view[0]) / (view[1] - view[0]) * w; }
  function inView(t) { return t >= view[0] && t <= view[1]; }
  function cellOf(t, w, cells) { return Math.min(cells - 1, Math.max(0, Math.floor(x(t, w) / CELL))); }
  function place(node, cell) { node.style.left = (cell * CELL) + 'px'; }
  function short(n) {
    if (n < 1000) { return String(n); }
    if (n < 10000) { return (n / 1000).toFixed(1) + 'k'; }
    if (n < 1000000) { return Math.round(n / 1000) + 'k'; }
    return Math.round(n / 1000000) + 'M';
  }

  // One row of marks: a cell with one record draws it, a cell with more an aggregate.
  function marks(track, s, lane, w) {
    var cells = Math.max(1, Math.floor(w / CELL));
    var groups = [];
    var cur = null;
    (s.byLane[lane] || []).forEach(function (n) {
      var t = s.items[n][0];
      if (!inView(t)) { return; }
      var c = cellOf(t, w, cells);
      if (!cur || cur.cell !== c) { cur = { cell: c, members: [], bulks: [], t0: t, t1: t }; groups.push(cur); }
      cur.members.push(n);
      cur.t1 = t;
    });
    (s.bulksByLane[lane] || []).forEach(function (b) {
      var bk = s.bulks[b];
      if (!inView(bk[0])) { return; }
      var c = cellOf(bk[0], w, cells);
      var g = null;
      for (var i = 0; i < groups.length; i++) { if (groups[i].cell === c) { g = groups[i]; } }
      if (!g) { g = { cell: c, members: [], bulks: [], t0: bk[0], t1: bk[1] }; groups.push(g); }
      g.bulks.push(b);
      g.t0 = Math.min(g.t0, bk[0]);
      g.t1 = Math.max(g.t1, bk[1]);
    });
    groups.sort(function (a, b) { return a.cell - b.cell; });
    groups.forEach(function (g) {
      var node;
      if (g.members.length === 1 && g.bulks.length === 0) {
        var n = g.members[0];
        node = button('mk L-' + lane, recordLabel(s, n), function () { showRecord(s, n); });
        node.dataset.line = s.items[n][2];
        node.dataset.t = s.items[n][0];
      } else {
        var count = g.members.length;
        g.bulks.forEach(function (b) { count += s.bulks[b][5]; });
        var shortCount = short(count);
        node = button('ag L-' + lane, shortCount + (shortCount === String(count) ? '' : ' (' + count + ')') + ' records of ' +
          laneLabel(s, lane) + ', ' + ms(g.t0) + ' to ' + ms(g.t1) + ': press to list them',
        function (pressed) { showGroup(s, lane, g.members, g.bulks, g.t0, g.t1, node, pressed); });
        node.textContent = short(count);
        node.dataset.count = count;
        node.dataset.t = g.t0;
        node.setAttribute('aria-expanded', 'false');
        node.addEventListener('mouseenter', function () { node.title = count + ' records'; });
      }
      place(node, g.cell);
      track.appendChild(node);
    });
  }

  function axis(track, w, s) {
    var len = view[1] - view[0];
    var raw = len / Math.max(1, w / 110);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * p; }).filter(function (v) { return v >= raw; })[0];
    for (var t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      var tk = el('span', 'tick', tickText(t, step));
      tk.style.left = x(t, w) + 'px';
      tk.setAttribute('aria-hidden', 'true');
      track.appendChild(tk);
    }
    if (s && s.duration < view[1]) {
      var after = el('div', 'after');
      after.style.left = Math.max(0, x(s.duration, w)) + 'px';
      after.style.width = (w - Math.max(0, x(s.duration, w))) + 'px';
      after.title = 'after the record ends (' + ms(s.duration) + ')';
      track.appendChild(after);
    }
  }

  function procRows(box, s, w) {
    var depth = [];
    s.procs.forEach(function (p, i) {
      depth[i] = p.parent === null ? 0 : depth[p.parent] + 1;
      var track = row(box, '\u00a0'.repeat(depth[i] * 3) + p.name);
      if ((p.end !== null && p.end < view[0]) || p.start > view[1]) { return; }
      var left = Math.max(0, x(p.start, w));
      var right = p.end === null ? w : Math.min(w, x(p.end, w));
      var label = 'process ' + p.name + ' from ' + ms(p.start) + ' to ' +
        (p.end === null ? 'after the record ends' : ms(p.end)) + ', ' + p.state + ': ' + p.how;
      var bar = button('bar S-' + p.state + (p.end === null ? ' open' : ''), label, function () { showProc(s, i); });
      bar.dataset.proc = i;
      bar.dataset.t = p.start;
      bar.style.left = Math.min(left, Math.max(0, w - CELL)) + 'px';
      bar.style.width = Math.max(CELL, right - left) + 'px';
      track.appendChild(bar);
    });
  }

  function arrowRows(box, s, w) {
    var cells = Math.max(1, Math.floor(w / CELL));
    var sent = s.arrows.filter(function (a) { return a.from !== 'if sent'; });
    if (sent.length) {
      var track = row(box, 'signals', sent.length);
      var used = {};
      sent.forEach(function (a) {
        if (!inView(a.t)) { return; }
        var c = cellOf(a.t, w, cells);
        while (used[c] && c < cells - 1) { c++; }
        used[c] = true;
        var b = button('ar', arrowLabel(a), function () { showArrow(s, a); });
        b.textContent = '\u25bc';
        b.dataset.t = a.t;
        place(b, c);
        track.appendChild(b);
      });
    }
    s.arrows.filter(function (a) { return a.from === 'if sent'; }).forEach(function (a) {
      var track = row(box, a.signal + ' if sent at the hang');
      if (!inView(a.t)) { return; }
      var b = button('ar if', arrowLabel(a), function () { showArrow(s, a); });
      b.textContent = '\u25bd';
      b.dataset.t = a.t;
      place(b, cellOf(a.t, w, cells));
      track.appendChild(b);
    });
  }

  var holder = doc.getElementById('tl-sections');
  var tools = el('div', 'tools');
  tools.setAttribute('role', 'toolbar');
  tools.setAttribute('aria-label', 'Time axis');
  [['Zoom in', function () { zoom(0.5); }], ['Zoom out', function () { zoom(2); }],
    ['Whole run', function () { view = full.slice(); render(); }]].forEach(function (z) {
    var b = el('button', null, z[0]);
    b.type = 'button';
    b.addEventListener('click', z[1]);
    tools.appendChild(b);
  });
  holder.parentNode.insertBefore(tools, holder);
  function zoom(f) {
    var mid = selectedTime();
    var len = Math.min(full[1] - full[0], Math.max(0.5, (view[1] - view[0]) * f));
    var a = Math.max(full[0], Math.min(mid - len / 2, full[1] - len));
    view = [a, a + len];
    render();
  }
  function selectedTime() {
    if (selected && selected.dataset.t) { return Number(selected.dataset.t); }
    return (view[0] + view[1]) / 2;
  }

  function render() {
    select(null);
    while (holder.firstChild) { holder.removeChild(holder.firstChild); }
    drawOrder.forEach(function (s) {
      var box = el('section', 'sec');
      var h = el('h2', null, s.title);
      h.id = 'tl-sec-' + s.index;
      box.setAttribute('aria-labelledby', h.id);
      box.appendChild(h);
      box.appendChild(el('p', 'sum', [s.summary, s.records + ' records', s.procs.length + ' processes',
        'ends at ' + ms(s.duration)].filter(Boolean).join(' · ')));
      holder.appendChild(box);
      var axisTrack = row(box, 'time', undefined, 'axis');
      var w = Math.max(CELL, axisTrack.clientWidth);
      axis(axisTrack, w, s);
      box.appendChild(el('div', 'group', 'Records, by kind'));
      s.lanes.forEach(function (l) { marks(row(box, l.label, l.count), s, l.id, w); });
      if (s.procs.length) {
        box.appendChild(el('div', 'group', 'Processes'));
        procRows(box, s, w);
      }
      if (s.arrows.length) {
        box.appendChild(el('div', 'group', 'Signals'));
        arrowRows(box, s, w);
      }
    });
    if (!body.dataset.ready) { body.dataset.readyMs = performance.now().toFixed(1); }
    body.dataset.ready = '1';
  }

  // The facts beside the timeline: one heading per part, its values by their paths.
  function flat(v, path, out) {
    if (v === null || v === undefined) { return; }
    if (typeof v !== 'object') { out.push([path, String(v)]); return; }
    if (Array.isArray(v)) {
      if (!v.length) { out.push([path, 'none']); return; }
      if (v.every(function (i) { return i === null || typeof i !== 'object'; })) { out.push([path, v.join(', ')]); return; }
      v.forEach(function (i, n) { flat(i, path + '[' + n + ']', out); });
      return;
    }
    Object.keys(v).forEach(function (k) { flat(v[k], path ? path + '.' + k : k, out); });
  }
  var fb = doc.getElementById('tl-facts-body');
  var f = meta.facts || {};
  var names = { expects: 'what the caller must send', replay: 'how to replay it', signals: 'how signals are answered',
    ending: 'how it ends', output: 'output', origin: 'origin', scenario: 'scenario', pi: 'the CLI',
    placeholders: 'placeholders', report: 'the replay', file: 'file' };
  var order = ['report', 'expects', 'replay', 'signals', 'ending', 'output', 'origin', 'scenario', 'pi', 'placeholders', 'file'];
  order.concat(Object.keys(f)).filter(function (k, i, all) {
    return k in f && all.indexOf(k) === i && k !== 'processes' && k !== 'client';
  }).forEach(function (k) {
    var pairs = [];
    flat(f[k], '', pairs);
    if (!pairs.length) { return; }
    if (k !== 'expects' || fb.firstChild) { fb.appendChild(el('h3', null, names[k] || k)); }
    fb.appendChild(dl(pairs.map(function (p) { return [p[0] || k, p[1]]; })));
  });
  if (!fb.firstChild) { fb.appendChild(el('p', null, 'nothing')); }

  // Left and right arrows move along a row's marks.
  holder.addEventListener('keydown', function (e) {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') { return; }
    var t = e.target;
    if (!t.parentNode || !t.parentNode.classList || !t.parentNode.classList.contains('track')) { return; }
    var next = e.key === 'ArrowRight' ? t.nextElementSibling : t.previousElementSibling;
    while (next && next.tagName !== 'BUTTON') { next = e.key === 'ArrowRight' ? next.nextElementSibling : next.previousElementSibling; }
    if (next) { next.focus(); e.preventDefault(); }
  });
  // Escape in the side panel goes back to the mark that was pressed.
  doc.getElementById('tl-side').addEventListener('keydown', function (e) {
    if (e.key === 'Escape' && selected && selected.isConnected) { selected.focus(); e.preventDefault(); }
  });
  var resize = null;
  window.addEventListener('resize', function () {
    clearTimeout(resize);
    resize = setTimeout(render, 150);
  });
  render();
})();
