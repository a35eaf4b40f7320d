/* The variants page (variants --from --format html): one bar per variant, split into the bytes
 * of each AOT entry file in its metallib, the functions in no entry file, the container overhead
 * and the embedded JIT source; a search box that highlights entry files (state in the URL hash:
 * #search=gemm); a table of entry files per variant (bytes when AOT, "JIT" when compiled at run
 * time) and the planner's explanation. Every number is from the embedded JSON, measured on the
 * files the command wrote. */
(function () {
  'use strict';
  var DATA = JSON.parse(document.getElementById('variants-data').textContent);
  var $ = function (id) { return document.getElementById(id); };
  var V = DATA.variants, state = { query: '', rows: 300 };
  var NOT_IN_TREE = '[not in tree]';

  function human(n) {
    var a = Math.abs(n), units = ['B', 'kB', 'MB', 'GB'], u = 0;
    if (a < 1000) return a + ' B';
    while (a >= 1000 && u < units.length - 1) { a /= 1000; u++; }
    return (a >= 100 ? a.toFixed(1) : a.toFixed(2)) + ' ' + units[u];
  }
  function commas(n) {
    var s = String(Math.abs(n)), out = '';
    while (s.length > 3) { out = ',' + s.slice(-3) + out; s = s.slice(0, -3); }
    return (n < 0 ? '-' : '') + s + out;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Every entry file once, in the order the first variant lists them (AOT ones, then JIT ones).
  var files = [], colourOf = {};
  V.forEach(function (v) {
    v.aot_sources.concat(v.jit_sources).forEach(function (s) {
      if (!(s in colourOf)) { colourOf[s] = 'hsl(' + ((files.length * 137.508) % 360).toFixed(1) + ',48%,62%)'; files.push(s); }
    });
  });
  var maxTotal = Math.max.apply(null, V.map(function (v) { return v.total_bytes; }).concat([1]));

  function segments(v) {
    var out = v.bytes_by_source.map(function (r) {
      return { label: r.source, bytes: r.bytes, cls: r.source === NOT_IN_TREE ? 'other' : '',
        match: r.source === NOT_IN_TREE ? [] : [r.source],
        info: commas(r.function_count) + ' functions in ' + (v.metallib || '-') };
    });
    if (v.metallib_bytes) out.push({ label: '[container overhead]', bytes: v.overhead_bytes, cls: 'overhead', match: [], info: 'metallib ' + v.metallib });
    if (v.embedded_bytes) out.push({ label: 'embedded JIT source', bytes: v.embedded_bytes, cls: 'jit', match: v.jit_sources,
      info: v.jit_sources.length + ' JIT entry files, ' + commas(v.jit_kernels) + ' kernels compiled at run time; ' +
        commas(v.embedded_compressed_bytes) + ' bytes compressed (' + DATA.compression + '); ' + v.jit_sources_file });
    return out;
  }

  var drawn = [];
  function drawBars() {
    var host = $('bars');
    host.textContent = '';
    drawn = [];
    V.forEach(function (v) {
      var row = el('div', 'vrow'), bar = el('div', 'vbar');
      row.appendChild(el('div', 'vname', v.name));
      bar.style.width = (100 * v.total_bytes / maxTotal).toFixed(3) + '%';
      segments(v).forEach(function (s) {
        if (!s.bytes) return;
        var i = el('i', s.cls);
        i.style.flexGrow = String(s.bytes);
        if (!s.cls) i.style.background = colourOf[s.label];
        i.dataset.k = String(drawn.length);
        drawn.push({ seg: s, node: i, variant: v });
        bar.appendChild(i);
      });
      var wrap = el('div');
      wrap.appendChild(bar);
      row.appendChild(wrap);
      row.appendChild(el('div', 'vtotal', human(v.total_bytes)));
      row.appendChild(el('div', 'vdesc', v.description + ' — metallib ' + commas(v.metallib_bytes) + ' B, embedded ' +
        commas(v.embedded_bytes) + ' B, ' + commas(v.jit_kernels) + ' run-time kernels'));
      host.appendChild(row);
    });
  }

  function hits(seg, q) {
    if (!q) return false;
    if (seg.label.toLowerCase().indexOf(q) >= 0 && seg.cls !== 'jit') return true;
    return seg.match.some(function (s) { return s.toLowerCase().indexOf(q) >= 0; });
  }
  function refresh() {
    var q = state.query.toLowerCase();
    $('bars').classList.toggle('searching', q !== '');
    drawn.forEach(function (d) { d.node.classList.toggle('hit', hits(d.seg, q)); });
    var matched = files.filter(function (s) { return !q || s.toLowerCase().indexOf(q) >= 0; });
    $('matches').textContent = q ? commas(matched.length) + ' of ' + commas(files.length) + ' entry files match' : '';
    drawTable(matched);
    history.replaceState(null, '', q ? '#search=' + encodeURIComponent(state.query) : location.pathname + location.search);
  }

  function drawTable(matched) {
    var head = $('table').tHead, body = $('table').tBodies[0];
    head.textContent = ''; body.textContent = '';
    var tr = el('tr');
    tr.appendChild(el('th', '', 'entry file'));
    V.forEach(function (v) { tr.appendChild(el('th', 'num', v.name)); });
    head.appendChild(tr);
    var bytesIn = V.map(function (v) {
      var m = {};
      v.bytes_by_source.forEach(function (r) { m[r.source] = r.bytes; });
      v.jit_sources.forEach(function (s) { m[s] = -1; });
      return m;
    });
    var first = bytesIn[0];
    var rows = matched.slice().sort(function (a, b) { return (first[b] || 0) - (first[a] || 0) || (a < b ? -1 : 1); });
    rows.slice(0, state.rows).forEach(function (s) {
      var r = el('tr');
      r.appendChild(el('td', 'name', s));
      bytesIn.forEach(function (m) {
        var b = m[s];
        r.appendChild(b === -1 ? el('td', 'num jit', 'JIT') : el('td', 'num', b === undefined ? '0' : commas(b)));
      });
      body.appendChild(r);
    });
    $('more').hidden = rows.length <= state.rows;
    $('table-note').textContent = '(' + commas(Math.min(rows.length, state.rows)) + ' of ' + commas(rows.length) + '; bytes in each variant\'s metallib, JIT = compiled at run time)';
  }

  function drawPlan() {
    var host = $('plan');
    V.forEach(function (v) {
      if (!v.plan) return;
      var p = v.plan;
      host.appendChild(el('h2', '', 'How ' + v.name + ' was chosen'));
      host.appendChild(el('p', '', 'Budget ' + commas(p.budget) + ' B: metallib ' + commas(p.metallib_bytes) + ' B, ' +
        commas(p.jit_kernels) + ' kernels compiled at run time (all AOT: ' + commas(p.all_aot_bytes) + ' B; least reachable: ' +
        commas(p.least_bytes) + ' B). Started from the ' + p.start + ' answer; ' + p.exact_layouts + ' exact layouts.'));
      p.steps.forEach(function (s) {
        host.appendChild(el('div', '', s.action === 'aot' ? s.source + ' back to AOT (not needed): metallib ' + commas(s.metallib_bytes) + ' B'
          : 'swapped ' + s.swapped_for + ' for ' + s.source + ': metallib ' + commas(s.metallib_bytes) + ' B'));
      });
      if (!p.files.length) {  // the budget holds every entry file AOT: no table of moves
        host.appendChild(el('p', '', 'Nothing moved to JIT: every entry file fits AOT.'));
        return;
      }
      var t = el('table'), h = el('tr');
      ['moved to JIT', 'kernels', 'saves', 'metallib if AOT again'].forEach(function (c, k) { h.appendChild(el('th', k ? 'num' : '', c)); });
      t.appendChild(el('thead')).appendChild(h);
      var b = el('tbody');
      p.files.forEach(function (f) {
        var r = el('tr');
        r.appendChild(el('td', 'name', f.source));
        [f.kernels, f.saved_bytes, f.metallib_bytes_if_aot].forEach(function (n) { r.appendChild(el('td', 'num', commas(n))); });
        b.appendChild(r);
      });
      t.appendChild(b);
      host.appendChild(t);
    });
  }

  function tip(ev) {
    var t = $('tip'), k = ev.target && ev.target.dataset ? ev.target.dataset.k : undefined;
    if (k === undefined) { t.hidden = true; return; }
    var d = drawn[+k];
    t.textContent = '';
    t.appendChild(el('b', '', d.seg.label));
    t.appendChild(el('div', '', d.variant.name + ': ' + commas(d.seg.bytes) + ' B (' + human(d.seg.bytes) + ')'));
    t.appendChild(el('div', 'o', d.seg.info));
    t.hidden = false;
    t.style.left = Math.min(ev.clientX + 12, window.innerWidth - 540) + 'px';
    t.style.top = (ev.clientY + 14) + 'px';
  }

  $('summary').textContent = DATA.heading;
  DATA.notes.forEach(function (n) { $('notes').appendChild(el('div', '', n)); });
  drawBars();
  drawPlan();
  $('bars').addEventListener('mousemove', tip);
  $('bars').addEventListener('mouseleave', function () { $('tip').hidden = true; });
  var timer = 0;
  $('search').addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.query = $('search').value.trim(); state.rows = 300; refresh(); }, 120);
  });
  $('more').addEventListener('click', function () { state.rows += 300; refresh(); });
  var m = /(?:^#|&)search=([^&]*)/.exec(location.hash);
  if (m) { try { state.query = decodeURIComponent(m[1]); } catch (e) { state.query = ''; } $('search').value = state.query; }
  refresh();
  window.__variants = { bars: V.length, segments: drawn.length };
  document.documentElement.setAttribute('data-painted', '1');
})();
