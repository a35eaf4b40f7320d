/* The size report page: builds the tree from the embedded columns, draws the treemap as SVG,
 * and keeps the search box, the status filter, the zoom path and the table in step.
 * State that a link can carry lives in the URL hash: #search=copy&status=added&lib=0&zoom=gemm */
(function () {
  'use strict';
  var T_START = performance.now();
  var DATA = JSON.parse(document.getElementById('report-data').textContent);
  var T_PARSED = performance.now();
  var COMPARE = DATA.mode === 'compare';
  var MIN_AREA = 64;       // px²: smaller cells are folded into one "N smaller …" cell
  var MAX_CELLS = 400;     // children drawn per node at most, the rest folded
  var HEAD = 15, PAD = 2;  // header band and padding of a node drawn with its children
  var SVGNS = 'http://www.w3.org/2000/svg';
  var $ = function (id) { return document.getElementById(id); };
  // A comparison's table starts with what changed most (grew or shrank), unchanged functions last.
  var state = { lib: 0, zoom: [], query: '', status: 'all', sortKey: COMPARE ? 'change' : 'bytes', sortDir: -1, rows: 300, measure: 'bytes' };
  var lib, fn, root, lower, match, matchCount, timings, drawn = [], drawnParent = [];
  var SIZE, BASE, WHOLE, UNIT;  // what areas and numbers show: bytes, or download bytes (--download)
  function measure() {
    var dl = state.measure === 'download' && !!fn.download;
    SIZE = dl ? fn.download : fn.bytes; BASE = dl ? fn.base_download : fn.base;
    WHOLE = dl ? lib.download.total : lib.file_size; UNIT = dl ? 'modelled download' : 'metallib';
    return dl;
  }

  // -- formatting (decimal units, as the command line prints them) ---------------------------
  function human(n) {
    var a = Math.abs(n), units = ['B', 'kB', 'MB', 'GB'], u = 0;
    if (a < 1000) return a + ' B';
    while (a >= 1000 && u < units.length - 1) { a /= 1000; u++; }
    return (a >= 100 ? a.toFixed(1) : a.toFixed(2)) + ' ' + units[u];
  }
  function signed(n) { return (n > 0 ? '+' : n < 0 ? '-' : '') + human(n); }
  function commas(n) {  // toLocaleString builds a formatter per call: far too slow for tables
    var s = String(Math.abs(n)), out = '';
    while (s.length > 3) { out = ',' + s.slice(-3) + out; s = s.slice(0, -3); }
    return (n < 0 ? '-' : '') + s + out;
  }
  function pct(part, whole) {
    if (!whole) return '-';
    var v = (100 * part) / whole;
    return (v >= 10 ? v.toFixed(1) : v >= 0.1 || v === 0 ? v.toFixed(2) : v.toFixed(4)) + '%';
  }
  function esc(s) {
    return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }
  function relpct(base, head) { return base > 0 ? ((100 * (head - base)) / base).toFixed(1) + '%' : 'new'; }

  // -- tree ---------------------------------------------------------------------------------------
  // The level under the groups: the dtype named in the function names, or with two --by keys the
  // second key's groups; what it is called in the tip and the table's header.
  function subgroupOf(l) { return l.subgroup_by || 'dtype'; }
  function node(name, kind, parent) {
    var n = { name: name, kind: kind, size: 0, base: 0, count: 0, children: [], parent: parent, gi: -1 };
    if (parent) parent.children.push(n);
    return n;
  }
  function statusOf(i) {
    var b = fn.base[i], h = fn.bytes[i];
    return b < 0 ? 'added' : h < 0 ? 'removed' : h > b ? 'grew' : h < b ? 'shrank' : 'same';
  }
  function origins(l) {
    var o = l.origin;
    return {
      fn: 'metallib ' + (o.metallib || '-') + (o.wheel ? ' (from ' + o.wheel + ')' : ''),
      group: l.grouping === 'manifest' ? 'units per build manifest ' + o.manifest
        : l.grouping.indexOf('discovery:') === 0 ? 'entry files per kernel tree ' + l.grouping.slice(10)
        : 'grouping ' + l.grouping + ' of names in the metallib',
      jit: l.jit_measured ? l.jit_origin : 'host library ' + (o.host_library || '(path not in manifest)') + ', bytes per build manifest ' + o.manifest,
      overhead: 'metallib ' + (o.metallib || '-') + ' (container regions)'
    };
  }
  function build(l) {
    var n = fn.name.length, hasSub = !!fn.subgroup, where = origins(l);
    // Two --by keys: the second key's groups nest in the first's, kept even when a group has one.
    var nested = !!l.subgroup_by, subOrigin = nested ? l.subgroup_by + ' per ' + l.subgrouping : 'dtype named in the function names';
    var top = node(l.label, 'library', null), ml = top;
    var jit = l.jit, baseJit = COMPARE ? l.base.jit : [];
    if (jit.length || baseJit.length) {
      top.kind = 'target'; top.origin = 'target ' + l.origin.target;
      ml = node('metallib', 'library', top);
    }
    ml.origin = where.fn;
    var groups = l.groups.map(function (name, gi) {
      var g = { name: name, kind: 'group', size: 0, base: 0, count: 0, children: [], parent: ml, gi: gi, origin: where.group, subs: {} };
      return g;
    });
    // Grouped by source file: files sit in their folders ("steel/gemm/x.metal" under steel/ › gemm/).
    var folders = {};
    function folderOf(path) {
      var cut = l.by === 'source' ? path.lastIndexOf('/') : -1;
      if (cut < 0) return ml;
      var dir = path.slice(0, cut), f = folders[dir];
      if (!f) {
        f = folders[dir] = node(dir.slice(dir.lastIndexOf('/') + 1) + '/', 'folder', folderOf(dir));
        f.origin = where.group;
      }
      return f;
    }
    var attached = new Uint8Array(groups.length);
    for (var i = 0; i < n; i++) {
      var gi = fn.group[i], g = groups[gi], parent = g;
      if (!attached[gi]) {
        attached[gi] = 1; g.parent = folderOf(g.name); g.parent.children.push(g);
        if (g.parent !== ml) g.name = g.name.slice(g.name.lastIndexOf('/') + 1);
      }
      if (hasSub) {
        var si = fn.subgroup[i];
        parent = g.subs[si];
        if (!parent) { parent = g.subs[si] = node(l.subgroups[si], 'subgroup', g); parent.gi = gi; parent.origin = subOrigin; parent.says = subgroupOf(l); }
      }
      parent.children.push({ name: fn.name[i], kind: 'fn', i: i, gi: gi, parent: parent, origin: where.fn,
        size: Math.max(SIZE[i], 0), base: COMPARE ? Math.max(BASE[i], 0) : 0, count: 1 });
    }
    if (!nested) groups.forEach(function (g) { if (g.children.length === 1 && g.children[0].kind === 'subgroup') { g.children = g.children[0].children; g.children.forEach(function (c) { c.parent = g; }); } });
    var oh = node('[container overhead]', 'overhead', ml), baseOh = {}, dl = SIZE === fn.download;
    if (COMPARE) (dl ? l.base.download : l.base).overhead.forEach(function (r) { baseOh[r[0]] = r[1]; });
    (dl ? l.download : l).overhead.forEach(function (r) { var c = node(r[0], 'region', oh); c.size = r[1]; c.base = baseOh[r[0]] || 0; c.origin = where.overhead; });
    oh.origin = where.overhead;
    if (top !== ml) {
      var j = node('JIT source in the host library', 'jit', top), baseJ = {};
      j.origin = where.jit;
      baseJit.forEach(function (r) { baseJ[r[0]] = r[1]; });
      jit.forEach(function (r) { var c = node(r[0], 'jitunit', j); c.size = r[1]; c.base = baseJ[r[0]] || 0; c.origin = where.jit; });
    }
    total(top);
    return top;
  }
  function total(n) {
    if (n.kind === 'fn' || !n.children.length) { if (n.kind !== 'fn') n.count = 0; return; }
    var size = 0, base = 0, count = 0;
    n.children.forEach(function (c) { total(c); size += c.size; base += c.base; count += c.count; });
    n.size = size; n.base = base; n.count = count;
    n.children.sort(function (a, b) { return b.size - a.size || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0); });
  }

  // -- colours ------------------------------------------------------------------------------------
  var DEPTH_LIGHT = { group: 46, subgroup: 60, fn: 74, more: 74 };
  function mix(a, b, t) {
    return 'rgb(' + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * t); }).join(',') + ')';
  }
  function colour(n) {
    if (n.kind === 'library' || n.kind === 'target' || n.kind === 'folder') return '#dfe3e8';
    if (n.kind === 'overhead' || n.kind === 'region') return '#9aa0a6';
    if (COMPARE) {
      if (n.base === 0 && n.size > 0) return '#b2182b';
      var r = n.base ? (n.size - n.base) / n.base : 0, t = Math.min(1, Math.sqrt(Math.abs(r) / 0.5));
      return r > 0 ? mix([230, 230, 230], [215, 48, 39], t) : r < 0 ? mix([230, 230, 230], [69, 117, 180], t) : '#e6e6e6';
    }
    if (n.kind === 'jit' || n.kind === 'jitunit') return n.kind === 'jit' ? '#b98a3c' : '#e2c07d';
    var hue = (n.gi * 137.508) % 360;
    return 'hsl(' + hue.toFixed(1) + ',48%,' + (DEPTH_LIGHT[n.kind] || 70) + '%)';
  }
  function darkFill(n) {
    if (n.kind === 'library' || n.kind === 'target' || n.kind === 'folder') return false;
    if (COMPARE) { var r = n.base ? Math.abs(n.size - n.base) / n.base : n.size ? 1 : 0; return r > 0.18; }
    return n.kind === 'group' || n.kind === 'jit';
  }

  // -- treemap ------------------------------------------------------------------------------------
  function folded(n, area) {
    var kids = n.children, perByte = n.size ? area / n.size : 0, keep = [], k;
    for (k = 0; k < kids.length && kids[k].size > 0; k++) {
      if (kids[k].size * perByte < MIN_AREA || keep.length >= MAX_CELLS) break;
      keep.push(kids[k]);
    }
    var rest = kids.slice(keep.length).filter(function (c) { return c.size > 0; });
    if (rest.length === 1) keep.push(rest[0]);
    else if (rest.length) {
      n.more = n.more && n.more.children.length === rest.length ? n.more : moreNode(n, rest);
      keep.push(n.more);
    }
    return keep;
  }
  function moreNode(parent, rest) {
    var leaves = rest.every(function (c) { return c.kind === 'fn'; });
    var m = { name: rest.length + ' smaller ' + (leaves ? 'functions' : 'groups'), kind: 'more', children: rest,
      parent: parent, gi: parent.gi, origin: rest[0].origin, size: 0, base: 0, count: 0 };
    rest.forEach(function (c) { m.size += c.size; m.base += c.base; m.count += c.count; });
    return m;
  }
  function fit(text, w) {
    var max = Math.floor((w - 6) / 6.3);
    return max < 3 ? '' : text.length <= max ? text : text.slice(0, max - 1) + '…';
  }
  function place(out, n, x, y, w, h, parentId) {
    var id = drawn.length;
    drawn.push(n); drawnParent.push(parentId);
    out.push('<rect data-i="' + id + '" x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" width="' + Math.max(w, 0).toFixed(1) +
      '" height="' + Math.max(h, 0).toFixed(1) + '" fill="' + colour(n) + '"' + (n.kind === 'more' ? ' class="more"' : '') + '/>');
    var cls = darkFill(n) ? ' class="light' : ' class="';
    if (n.children && n.children.length && n.kind !== 'more' && w > 26 && h > HEAD + 12) {
      var label = fit(n.name + '  ' + human(n.size), w);
      if (label) out.push('<text' + cls + ' head" x="' + (x + 4).toFixed(1) + '" y="' + (y + 11.5).toFixed(1) + '">' + esc(label) + '</text>');
      var iw = w - 2 * PAD, ih = h - HEAD - PAD, kids = folded(n, iw * ih);
      var rects = Treemap.squarify(kids.map(function (c) { return c.size; }), x + PAD, y + HEAD, iw, ih);
      for (var k = 0; k < kids.length; k++) {
        var r = rects[k];
        if (r && r.w >= 1 && r.h >= 1) place(out, kids[k], r.x, r.y, r.w, r.h, id);
      }
    } else if (w >= 30 && h >= 13) {
      var name = fit(n.name, w);
      if (name) out.push('<text' + cls + '" x="' + (x + 3).toFixed(1) + '" y="' + (y + 11.5).toFixed(1) + '">' + esc(name) + '</text>');
      if (h >= 27) out.push('<text' + cls + '" x="' + (x + 3).toFixed(1) + '" y="' + (y + 24).toFixed(1) + '">' + esc(fit(human(n.size), w)) + '</text>');
    }
  }
  function focus() { return state.zoom.length ? state.zoom[state.zoom.length - 1] : root; }
  function draw() {
    var map = $('map'), w = map.clientWidth, h = map.clientHeight, out = [];
    drawn = []; drawnParent = [];
    var f = focus();
    // a focused "N smaller" cell is shown with all of its members as children
    place(out, f.kind === 'more' ? Object.assign({}, f, { kind: 'group' }) : f, 0, 0, w, h, -1);
    if (f.kind === 'more') drawn[0] = f;
    map.innerHTML = '<svg xmlns="' + SVGNS + '" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + ' ' + h + '">' + out.join('') + '</svg>';
    crumbs();
    highlight();
  }
  function crumbs() {
    var path = [root].concat(state.zoom);
    $('crumbs').innerHTML = path.map(function (n, k) {
      var text = esc(n.name) + ' <small>(' + human(n.size) + ')</small>';
      return k === path.length - 1 ? '<span>' + text + '</span>' : '<a data-k="' + k + '">' + text + '</a>';
    }).join('<span class="sep">›</span>');
  }

  // -- search and status filter --------------------------------------------------------------------
  function recount(n) {
    if (n.kind === 'fn') return (n.hits = match[n.i]);
    var hits = 0;
    for (var k = 0; k < n.children.length; k++) hits += recount(n.children[k]);
    if (n.more) n.more.hits = n.more.children.reduce(function (s, c) { return s + c.hits; }, 0);
    return (n.hits = hits);
  }
  function filter() {
    var q = state.query.toLowerCase(), st = state.status, n = fn.name.length, count = 0, bytes = 0;
    match = new Uint8Array(n);
    for (var i = 0; i < n; i++) {
      if ((q === '' || lower[i].indexOf(q) >= 0) && (st === 'all' || statusOf(i) === st)) {
        match[i] = 1; count++; bytes += Math.max(SIZE[i], 0);
      }
    }
    matchCount = count;
    recount(root);
    var active = q !== '' || st !== 'all';
    $('matches').textContent = active ? commas(count) + ' of ' + commas(n) + ' functions match (' + human(bytes) + ', ' + pct(bytes, WHOLE) + ' of the ' + UNIT + ')' : '';
  }
  function highlight() {
    var active = state.query !== '' || state.status !== 'all', map = $('map');
    map.classList.toggle('searching', active);
    if (!active) return;
    var rects = map.querySelectorAll('rect');
    for (var k = 0; k < rects.length; k++) {
      var n = drawn[k], cls = n.hits ? (n.kind === 'fn' || n.kind === 'more' ? 'hit' : 'within') : '';
      if (n.kind === 'more') cls += ' more';
      rects[k].setAttribute('class', cls.trim());
    }
  }
  function writeHash() {
    var parts = [];
    if (state.query) parts.push('search=' + encodeURIComponent(state.query));
    if (state.status !== 'all') parts.push('status=' + state.status);
    if (state.lib) parts.push('lib=' + state.lib);
    if (state.measure !== 'bytes') parts.push('measure=' + state.measure);
    var names = state.zoom.filter(function (n) { return n.kind !== 'more'; }).map(function (n) { return encodeURIComponent(n.name); });
    if (names.length && names.length === state.zoom.length) parts.push('zoom=' + names.join('/'));
    history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname + location.search);
  }
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var at = kv.indexOf('=');
      if (at > 0) out[kv.slice(0, at)] = kv.slice(at + 1);
    });
    return out;
  }

  // -- table ----------------------------------------------------------------------------------------
  // the size columns say which measure they show: the file's bytes, or download bytes
  function columns() {
    var dl = SIZE === fn.download, unit = dl ? ' download' : '';
    return COMPARE
      ? [['name', 'function'], ['group', 'group'], ['subgroup', subgroupOf(lib)], ['base', 'base' + unit, 1], ['bytes', 'head' + unit, 1], ['delta', 'delta', 1], ['pct', 'delta %', 1], ['status', 'status']]
      : [['name', 'function'], ['group', 'group'], ['subgroup', subgroupOf(lib)], ['bytes', dl ? 'download bytes' : 'bytes', 1], ['share', 'share', 1]];
  }
  function key(i, k) {
    switch (k) {
      case 'name': return lower[i];
      case 'group': return lib.groups[fn.group[i]];
      case 'subgroup': return fn.subgroup ? lib.subgroups[fn.subgroup[i]] : '';
      case 'base': return BASE[i];
      case 'delta': return Math.max(SIZE[i], 0) - Math.max(BASE[i], 0);
      case 'change': return Math.abs(Math.max(SIZE[i], 0) - Math.max(BASE[i], 0));
      case 'pct': return BASE[i] > 0 ? (SIZE[i] - BASE[i]) / BASE[i] : Infinity;
      case 'status': return statusOf(i);
      default: return SIZE[i];
    }
  }
  function table() {
    var head = $('table').tHead, body = $('table').tBodies[0], rows = [], n = fn.name.length, i;
    head.innerHTML = '<tr>' + columns().map(function (c) {
      var sort = c[0] === state.sortKey ? ' aria-sort="' + (state.sortDir > 0 ? 'ascending' : 'descending') + '"' : '';
      return '<th data-k="' + c[0] + '"' + (c[2] ? ' class="num"' : '') + sort + '>' + c[1] + '</th>';
    }).join('') + '</tr>';
    for (i = 0; i < n; i++) if (match[i]) rows.push(i);
    var k = state.sortKey, dir = state.sortDir;
    var keys = rows.map(function (r) { return key(r, k); });
    var order = rows.map(function (_, j) { return j; });
    order.sort(function (a, b) { var x = keys[a], y = keys[b]; return x < y ? -dir : x > y ? dir : rows[a] - rows[b]; });
    var shown = Math.min(order.length, state.rows), html = [];
    for (var j = 0; j < shown; j++) html.push(row(rows[order[j]]));
    body.innerHTML = html.join('');
    $('more').hidden = shown >= order.length;
    var where = COMPARE ? 'base measured in ' + (lib.base.origin.metallib || '-') + ', head in ' + (lib.origin.metallib || '-')
      : (SIZE === fn.download ? 'download bytes modelled from ' : 'bytes measured in ') + (lib.origin.metallib || '-');
    $('table-note').textContent = '(' + commas(shown) + ' of ' + commas(order.length) + ' shown; click a column to sort; ' + where + ')';
  }
  function row(i) {
    var name = '<td class="name">' + esc(fn.name[i]) + '</td><td>' + esc(lib.groups[fn.group[i]]) + '</td><td>' + esc(fn.subgroup ? lib.subgroups[fn.subgroup[i]] : '') + '</td>';
    if (!COMPARE) return '<tr>' + name + '<td class="num">' + commas(SIZE[i]) + '</td><td class="num">' + pct(SIZE[i], WHOLE) + '</td></tr>';
    var b = BASE[i], h = SIZE[i], st = statusOf(i), d = Math.max(h, 0) - Math.max(b, 0);
    return '<tr class="' + st + '">' + name + '<td class="num">' + (b < 0 ? '-' : commas(b)) + '</td><td class="num">' + (h < 0 ? '-' : commas(h)) +
      '</td><td class="num delta">' + (d > 0 ? '+' : '') + commas(d) + '</td><td class="num">' + (b < 0 ? 'new' : h < 0 ? 'gone' : relpct(b, h)) + '</td><td>' + st + '</td></tr>';
  }

  // -- tooltip ----------------------------------------------------------------------------------------
  function tip(n, ev) {
    var t = $('tip'), parent = n.parent, lines = ['<b>' + esc(n.name) + '</b> <span class="o">' + (n.says || n.kind) + '</span>'];
    if (n.kind === 'more') lines.push(commas(n.count) + ' functions too small to draw here; click to zoom in');
    lines.push(human(n.size) + ' (' + commas(n.size) + ' bytes), ' + pct(n.size, WHOLE) + ' of the ' + UNIT +
      (parent && parent.size ? ', ' + pct(n.size, parent.size) + ' of ' + esc(parent.name) : ''));
    if (n.kind !== 'fn' && n.count) lines.push(commas(n.count) + ' functions');
    if (COMPARE) lines.push('base ' + human(n.base) + ' → head ' + human(n.size) + ': ' + signed(n.size - n.base) + ' (' + relpct(n.base, n.size) + ')' + (n.kind === 'fn' ? ', ' + statusOf(n.i) : ''));
    lines.push('<span class="o">origin: ' + esc(n.origin || '') + '</span>');
    t.innerHTML = lines.join('<br>');
    t.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14, r = t.getBoundingClientRect();
    if (x + r.width > innerWidth) x = ev.clientX - r.width - 10;
    if (y + r.height > innerHeight) y = ev.clientY - r.height - 10;
    t.style.left = x + 'px'; t.style.top = y + 'px';
  }

  // -- page -----------------------------------------------------------------------------------------
  function warns(side, l) {  // a library's warnings, the lines stderr printed of it
    return (l.warnings || []).map(function (w) { return '<div class="fail">warning: ' + esc(side + w) + '</div>'; }).join('');
  }

  function header() {
    var s = $('summary'), o = lib.origin;
    var where = 'measured in <code>' + esc(o.metallib || '(no metallib)') + '</code>' + (o.wheel ? ' from ' + esc(o.target) : '') + (o.manifest ? '; manifest <code>' + esc(o.manifest) + '</code>' : '');
    if (COMPARE) {
      var b = lib.base, c = lib.counts;
      if (!o.metallib && !b.origin.metallib && lib.jit_origin) s.innerHTML = 'No metallib on either side: every unit is compiled at run time; base ' + esc(b.label) + ', head ' + esc(lib.label) + '.';
      else s.innerHTML = '<b>' + signed(lib.delta) + ' (' + relpct(b.file_size, lib.file_size) + ')</b>: ' + human(b.file_size) + ' → ' + human(lib.file_size) +
        ' (' + commas(b.function_count) + ' → ' + commas(lib.function_count) + ' functions); added ' + commas(c.added) + ', removed ' + commas(c.removed) +
        ', changed ' + commas(c.changed) + '.<br>base ' + esc(b.label) + ' measured in <code>' + esc(b.origin.metallib || '-') + '</code>; head ' + esc(lib.label) + ' ' + where;
      if (lib.change && lib.change !== 'paired') s.innerHTML = '<b>' + esc(lib.title) + '</b>: ' + (lib.change === 'added' ? 'not in base' : 'not in head') + '.<br>' + s.innerHTML;
      $('gates').innerHTML = lib.gates.map(function (g) { return '<div class="' + (g.passed ? 'pass">pass' : 'fail">FAIL') + ': ' + esc(g.message) + '</div>'; }).join('') +
        lib.notes.map(function (n) { return '<div>note: ' + esc(n) + '</div>'; }).join('') + warns('base: ', b) + warns('head: ', lib);
      $('provenance').innerHTML = '<div>base ' + esc(b.provenance_line) + '</div><div>head ' + esc(lib.provenance_line) + '</div><pre>' + esc(JSON.stringify({ base: b.provenance, head: lib.provenance }, null, 1)) + '</pre>';
      $('legend').innerHTML = '<span><i style="background:#b2182b"></i>added</span><span><i style="background:rgb(215,48,39)"></i>grew</span><span><i style="background:#e6e6e6"></i>same</span><span><i style="background:rgb(69,117,180)"></i>shrank</span><span>area = head ' + (SIZE === fn.download ? 'download bytes' : 'bytes') + '</span>';
      if (lib.download && b.download) s.innerHTML += '<br>download (modelled, zlib 6 as a wheel stores it): ' + human(b.download.total) + ' → ' + human(lib.download.total) + ', ' + signed(lib.download.total - b.download.total) + ' (' + relpct(b.download.total, lib.download.total) + ')';
    } else if (!o.metallib && lib.jit_origin) {
      s.innerHTML = 'No metallib: every unit is compiled at run time; ' + where;
      $('provenance').innerHTML = '<div>' + esc(lib.provenance_line) + '</div><pre>' + esc(JSON.stringify(lib.provenance, null, 1)) + '</pre>';
      $('legend').textContent = 'area = bytes; click to zoom, Esc to zoom out';
    } else {
      s.innerHTML = '<b>' + human(lib.file_size) + '</b> (' + commas(lib.file_size) + ' bytes), ' + commas(lib.function_count) + ' functions in ' + commas(lib.groups.length) +
        ' groups (by ' + esc(lib.by) + ', ' + esc(lib.grouping) + '), format ' + esc(lib.format_version) + '; ' + where;
      $('provenance').innerHTML = '<div>' + esc(lib.provenance_line) + '</div><pre>' + esc(JSON.stringify(lib.provenance, null, 1)) + '</pre>';
      $('legend').textContent = 'area = ' + (SIZE === fn.download ? 'download bytes' : 'bytes') + '; colour = group; click to zoom, Esc to zoom out';
      if (lib.download) s.innerHTML += '<br>' + esc(lib.download.line);
    }
    if (!COMPARE) $('gates').innerHTML = warns('', lib);
    if (lib.jit_origin) s.innerHTML += '<br>' + jitLine(lib);
  }
  function jitLine(l) {
    var what = l.jit_measured ? 'JIT host library ' : 'embedded JIT source ';
    var base = COMPARE ? human(l.base.jit_total || 0) + ' → ' : '';
    return esc(what) + '<b>' + base + human(l.jit_total) + '</b> (' + commas(l.jit_total) + ' bytes); measured: ' + esc(l.jit_origin);
  }
  function zoomByNames(names) {
    var n = root, path = [];
    for (var k = 0; k < names.length; k++) {
      var want = decodeURIComponent(names[k]), next = null;
      for (var c = 0; c < n.children.length; c++) if (n.children[c].name === want) { next = n.children[c]; break; }
      if (!next) break;
      path.push(next); n = next;
    }
    state.zoom = path;
  }
  function load(index, hash) {
    state.lib = Math.min(Math.max(index, 0), DATA.libraries.length - 1);
    lib = DATA.libraries[state.lib]; fn = lib.fn;
    var t0 = performance.now();
    lower = fn.name.map(function (s) { return s.toLowerCase(); });
    measure();
    root = build(lib);
    state.zoom = [];
    if (hash && hash.zoom) zoomByNames(hash.zoom.split('/'));
    header();
    var t1 = performance.now();
    filter();
    var t2 = performance.now();
    draw();
    var t3 = performance.now();
    table();
    timings = { build: t1 - t0, filter: t2 - t1, draw: t3 - t2, table: performance.now() - t3 };
  }
  function refresh() { filter(); highlight(); state.rows = 300; table(); writeHash(); }

  function wire() {
    var timer = 0, resize = 0;
    $('search').addEventListener('input', function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.query = $('search').value.trim(); refresh(); }, 120);
    });
    $('status').addEventListener('change', function () { state.status = $('status').value; refresh(); });
    $('measure').addEventListener('change', function () { state.measure = $('measure').value; load(state.lib, null); writeHash(); });
    $('library').addEventListener('change', function () { load(+$('library').value, null); writeHash(); });
    $('more').addEventListener('click', function () { state.rows += 1000; table(); });
    $('table').tHead.addEventListener('click', function (ev) {
      var k = ev.target.getAttribute('data-k');
      if (!k) return;
      state.sortDir = k === state.sortKey ? -state.sortDir : (k === 'name' || k === 'group' || k === 'subgroup' || k === 'status' ? 1 : -1);
      state.sortKey = k; table();
    });
    var map = $('map');
    map.addEventListener('mousemove', function (ev) {
      var i = ev.target.getAttribute && ev.target.getAttribute('data-i');
      if (i === null || i === undefined) { $('tip').hidden = true; return; }
      tip(drawn[+i], ev);
    });
    map.addEventListener('mouseleave', function () { $('tip').hidden = true; });
    map.addEventListener('click', function (ev) {
      var i = ev.target.getAttribute && ev.target.getAttribute('data-i');
      if (i === null || i === undefined || +i === 0) return;
      var chain = [], k = +i;
      if (!drawn[k].children || !drawn[k].children.length) k = drawnParent[k];
      for (; k > 0; k = drawnParent[k]) chain.unshift(drawn[k]);
      if (!chain.length) return;
      state.zoom = state.zoom.concat(chain); $('tip').hidden = true; draw(); writeHash();
    });
    $('crumbs').addEventListener('click', function (ev) {
      var a = ev.target.closest('a');
      if (!a) return;
      state.zoom = state.zoom.slice(0, +a.getAttribute('data-k')); draw(); writeHash();
    });
    document.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape' && state.zoom.length && document.activeElement !== $('search')) { state.zoom.pop(); draw(); writeHash(); }
    });
    addEventListener('resize', function () { clearTimeout(resize); resize = setTimeout(draw, 150); });
  }

  function start() {
    var hash = readHash();
    if (DATA.libraries.length > 1) {
      $('library-pick').hidden = false;
      $('library').innerHTML = DATA.libraries.map(function (l, k) { return '<option value="' + k + '">' + esc(l.title || l.label) + '</option>'; }).join('');
    }
    if (COMPARE) $('status-pick').hidden = false;
    if (DATA.libraries.some(function (l) { return !!l.fn.download; })) $('measure-pick').hidden = false;
    state.measure = hash.measure === 'download' ? 'download' : 'bytes';
    $('measure').value = state.measure;
    state.query = hash.search ? decodeURIComponent(hash.search) : '';
    state.status = COMPARE && hash.status ? hash.status : 'all';
    $('search').value = state.query; $('status').value = state.status;
    $('library').value = String(+hash.lib || 0);
    wire();
    load(+hash.lib || 0, hash);
    var tEnd = performance.now();
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        window.__report = { firstPaintMs: performance.now(), cells: drawn.length, matches: matchCount, timings: timings, scriptStart: T_START, dataParsed: T_PARSED - T_START, scriptEnd: tEnd };
        document.documentElement.setAttribute('data-painted', '1');
      });
    });
  }
  start();
})();
