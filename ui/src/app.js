// kith's dashboard: four views over the server's own API and its /ui/api/ routes, drawn
// with Apache ECharts (embedded by the server). No framework: the page is small and every
// number it shows is one fetch away from the API, which the browser test compares against.
'use strict';

const $ = (selector) => document.querySelector(selector);
const FRIENDS_PAGE = 50;
const HISTORY_S = 120;

let token = sessionStorage.getItem('kith-token') || '';

/// A JSON call; an error body becomes an Error carrying its code and message.
async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token) headers.Authorization = 'Bearer ' + token;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const what = body && body.error ? `${body.error}: ${body.message}` : `HTTP ${response.status}`;
    const error = new Error(what);
    error.status = response.status;
    throw error;
  }
  return body;
}

const fmt = {
  int: (x) => Number(x).toLocaleString('en-US'),
  fixed: (x, d) => (x === null || x === undefined || Number.isNaN(x) ? '–' : Number(x).toFixed(d)),
  pct: (x) => (x === null || x === undefined ? '–' : (100 * x).toFixed(1) + ' %'),
  bytes: (x) => {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (x >= 1024 && i < units.length - 1) { x /= 1024; i += 1; }
    return `${x.toFixed(i ? 1 : 0)} ${units[i]}`;
  },
};

function text(el, value) { el.textContent = value; return el; }
function element(tag, value) { return text(document.createElement(tag), value); }

/// Charts by element id, created on first use and resized with the window.
const charts = {};
function chart(id) {
  if (!charts[id]) charts[id] = echarts.init(document.getElementById(id));
  return charts[id];
}
window.addEventListener('resize', () => Object.values(charts).forEach((c) => c.resize()));

// ---------------------------------------------------------------------------------------
// Health: two metric snapshots a second apart give each route's rate and, from the
// difference of their latency histograms, its percentiles over that second.

const health = { previous: null, history: [], timer: null, active: false };

/// The q-quantile of the requests between two cumulative histograms, interpolated linearly
/// within its bucket (what Prometheus' histogram_quantile does); null without requests.
function quantile(q, now, before) {
  const counts = now.map(([le, c], i) => [le, c - (before ? before[i][1] : 0)]);
  const total = counts[counts.length - 1][1];
  if (total <= 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, c] of counts) {
    if (c >= rank) {
      if (le === null) return lower;
      return lower + (le - lower) * ((rank - below) / Math.max(c - below, 1));
    }
    if (le !== null) lower = le;
    below = c;
  }
  return lower;
}

function requestsOf(route) { return Object.values(route.status).reduce((a, b) => a + b, 0); }
function statusClass(route, digit) {
  return Object.entries(route.status).filter(([code]) => code[0] === digit).reduce((a, [, n]) => a + n, 0);
}

async function pollHealth() {
  let m;
  try { m = await api('/ui/api/metrics'); } catch (e) { text($('#health-updated'), 'cannot read the metrics: ' + e.message); return; }
  const prev = health.previous;
  // A snapshot no newer than the last one (an answer overtaken by a later one) is dropped.
  if (prev && m.unix_s <= prev.unix_s) return;
  health.previous = m;
  const stats = m.stats;
  for (const kind of ['post', 'friends', 'timeline']) {
    const h = stats.hit_rate[kind];
    text($('#tile-hit-' + kind), h && h.hits + h.misses > 0 ? fmt.pct(h.rate) : '–');
  }
  text($('#tile-fanout'), fmt.int(stats.fanout_queue_depth));
  text($('#tile-writeback'), fmt.int(stats.writeback_pending + (stats.writeback_waiting || 0)));
  if (!prev) return;
  const dt = Math.max(m.unix_s - prev.unix_s, 1e-3);
  const before = new Map(prev.routes.map((r) => [r.route + ' ' + r.method, r]));
  const rows = m.routes.map((r) => {
    const b = before.get(r.route + ' ' + r.method);
    const n = requestsOf(r);
    const dn = n - (b ? requestsOf(b) : 0);
    return {
      route: r.route, method: r.method, requests: n, rps: dn / dt,
      p50: r.buckets.length ? quantile(0.5, r.buckets, b && b.buckets.length ? b.buckets : null) : null,
      p99: r.buckets.length ? quantile(0.99, r.buckets, b && b.buckets.length ? b.buckets : null) : null,
      c4: statusClass(r, '4'), c5: statusClass(r, '5'),
    };
  }).sort((a, b) => b.rps - a.rps || b.requests - a.requests);
  const total = rows.reduce((a, r) => a + r.rps, 0);
  text($('#tile-rps'), fmt.fixed(total, 1));
  text($('#health-updated'), 'updated ' + new Date(m.unix_s * 1000).toLocaleTimeString());
  const tbody = $('#routes tbody');
  tbody.replaceChildren(...rows.map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.route = r.route;
    tr.dataset.method = r.method;
    const ms = (s) => (s === null ? '–' : fmt.fixed(1000 * s, 2));
    for (const v of [r.route, r.method, fmt.int(r.requests), fmt.fixed(r.rps, 1), ms(r.p50), ms(r.p99), fmt.int(r.c4), fmt.int(r.c5)]) {
      tr.appendChild(element('td', v));
    }
    return tr;
  }));
  health.history.push({ t: m.unix_s * 1000, total, rows });
  while (health.history.length > HISTORY_S) health.history.shift();
  drawHealth();
}

/// One poll a second while the health view is shown, the next asked only once the last has
/// been answered (so answers never overlap).
async function healthLoop() {
  health.timer = 'polling';
  while (health.active) {
    const started = Date.now();
    await pollHealth();
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
  }
  health.timer = null;
}

function drawHealth() {
  const h = health.history;
  // No animation: a redraw a second would otherwise animate for the whole second, and the
  // browser's work competes with the server's when both share a machine.
  chart('chart-rps').setOption({
    animation: false,
    title: { text: 'requests/s', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis' },
    xAxis: { type: 'time' },
    yAxis: { type: 'value', min: 0 },
    series: [{ name: 'all routes', type: 'line', showSymbol: false, data: h.map((s) => [s.t, s.total]) }],
  });
  // Latency of the five busiest routes of the last sample.
  const last = h[h.length - 1];
  const busiest = last.rows.filter((r) => r.rps > 0).slice(0, 5).map((r) => r.method + ' ' + r.route);
  const series = [];
  for (const name of busiest) {
    for (const [q, key] of [['p50', 'p50'], ['p99', 'p99']]) {
      series.push({
        name: `${name} ${q}`, type: 'line', showSymbol: false, lineStyle: q === 'p50' ? {} : { type: 'dashed' },
        data: h.map((s) => {
          const r = s.rows.find((x) => x.method + ' ' + x.route === name);
          return [s.t, r && r[key] !== null ? 1000 * r[key] : null];
        }),
      });
    }
  }
  chart('chart-latency').setOption({
    animation: false,
    title: { text: 'latency, ms (p50 solid, p99 dashed)', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis' },
    legend: { type: 'scroll', top: 22 },
    grid: { top: 60 },
    xAxis: { type: 'time' },
    yAxis: { type: 'value', min: 0 },
    series,
  }, { replaceMerge: ['series'] });
}

// ---------------------------------------------------------------------------------------
// A user: profile, friends a page at a time, the neighbourhood drawn, the feed.

const user = { uid: null, offset: 0, total: 0 };

async function openUser(uid) {
  text($('#user-error'), '');
  $('#user-uid').value = uid;
  let u;
  try { u = await api(`/users/${encodeURIComponent(uid)}`); } catch (e) {
    $('#user-body').hidden = true;
    text($('#user-error'), e.message);
    return;
  }
  user.uid = u.uid;
  user.total = u.friends_total;
  $('#user-body').hidden = false;
  $('#user-body').dataset.uid = u.uid;
  const dl = $('#user-profile');
  const entries = [['uid', u.uid], ['name', u.profile.name], ['age', u.profile.age ?? '–'],
    ...Object.entries(u.profile.fields), ['data block', fmt.bytes(u.data_bytes)]];
  dl.replaceChildren(...entries.flatMap(([k, v]) => {
    const dd = element('dd', v);
    dd.dataset.key = k;
    return [element('dt', k), dd];
  }));
  text($('#user-friends-total'), `(${fmt.int(u.friends_total)})`);
  await friendsPage(0);
  drawEgo(u.uid);
  loadFeed(u.uid);
}

async function friendsPage(offset) {
  const page = await api(`/users/${user.uid}/friends?offset=${offset}&limit=${FRIENDS_PAGE}`);
  user.offset = page.offset;
  user.total = page.total;
  $('#user-friends').start = page.offset + 1;
  $('#user-friends').replaceChildren(...page.friends.map((f) => {
    const li = document.createElement('li');
    const a = element('a', f);
    a.dataset.uid = f;
    a.addEventListener('click', () => { location.hash = '#user/' + f; });
    li.appendChild(a);
    return li;
  }));
  const end = page.offset + page.friends.length;
  text($('#friends-range'), page.total ? `${page.offset + 1}–${end} of ${fmt.int(page.total)}` : 'no friends');
  $('#friends-prev').disabled = page.offset === 0;
  $('#friends-next').disabled = end >= page.total;
}

async function drawEgo(uid) {
  let ego;
  try { ego = await api(`/ui/api/ego/${uid}?limit=60`); } catch (e) { text($('#ego-note'), e.message); return; }
  text($('#ego-note'), ego.friends.length < ego.friends_total
    ? `the user and ${ego.friends.length} of ${fmt.int(ego.friends_total)} friends, with the friendships among them`
    : `the user and every friend (${ego.friends.length}), with the friendships among them`);
  const nodes = [{ id: String(ego.uid), name: String(ego.uid), symbolSize: 22, category: 0 }]
    .concat(ego.friends.map((f) => ({ id: String(f), name: String(f), symbolSize: 10, category: 1 })));
  chart('chart-ego').setOption({
    tooltip: {},
    legend: { data: ['user', 'friends'] },
    series: [{
      type: 'graph', layout: 'force', roam: true, draggable: true,
      categories: [{ name: 'user' }, { name: 'friends' }],
      force: { repulsion: 60, edgeLength: 60, gravity: 0.1 },
      lineStyle: { opacity: 0.4 },
      label: { show: ego.friends.length <= 30, position: 'right' },
      data: nodes,
      links: ego.edges.map(([a, b]) => ({ source: String(a), target: String(b) })),
    }],
  }, true);
  chart('chart-ego').off('click');
  chart('chart-ego').on('click', (p) => { if (p.dataType === 'node' && p.data.id !== String(ego.uid)) location.hash = '#user/' + p.data.id; });
}

async function loadFeed(uid) {
  const list = $('#user-feed');
  try {
    const feed = await api(`/users/${uid}/feed?limit=20`);
    list.replaceChildren(...(feed.posts.length ? feed.posts.map((p) => {
      const li = element('li', `${new Date(p.ts_ms).toLocaleString()} · ${p.author}: ${p.content}`);
      li.dataset.post = p.id;
      return li;
    }) : [element('li', 'no posts from anyone this user follows')]));
  } catch (e) { list.replaceChildren(element('li', e.message)); }
}

// ---------------------------------------------------------------------------------------
// Layout: the adjacency matrix in three orders, and one user's pages in each.

async function drawLayout() {
  for (const order of ['input', 'random', 'current']) {
    api(`/ui/api/matrix?order=${order}&bins=96`).then((m) => {
      text($('#pages-' + order), fmt.fixed(m.pages_mean, 2));
      const data = [];
      let max = 1;
      for (let i = 0; i < m.bins; i += 1) {
        for (let j = 0; j < m.bins; j += 1) {
          const c = m.cells[i * m.bins + j];
          if (c > 0) { data.push([j, m.bins - 1 - i, Math.log1p(c), c]); max = Math.max(max, Math.log1p(c)); }
        }
      }
      const axis = { type: 'category', data: [...Array(m.bins).keys()], show: false };
      chart('matrix-' + order).setOption({
        tooltip: { formatter: (p) => `${p.data[3]} friendships` },
        grid: { left: 8, right: 8, top: 8, bottom: 8 },
        xAxis: axis, yAxis: axis,
        visualMap: { show: false, min: 0, max, inRange: { color: ['#e8eef9', '#08306b'] } },
        series: [{ type: 'heatmap', data, progressive: 0 }],
      }, true);
      $('#matrix-' + order).dataset.pagesMean = m.pages_mean;
    }).catch((e) => text($('#pages-' + order), e.message));
  }
}

async function countPages(uid) {
  text($('#pages-error'), '');
  let p;
  try { p = await api(`/ui/api/pages/${encodeURIComponent(uid)}`); } catch (e) { text($('#pages-error'), e.message); return; }
  $('#chart-pages').dataset.uid = p.uid;
  chart('chart-pages').setOption({
    title: { text: `pages read listing the ${fmt.int(p.friends)} friends of ${p.uid} (${p.record_bytes} B records, ${p.page_bytes} B pages)`, textStyle: { fontSize: 13 } },
    tooltip: {},
    xAxis: { type: 'category', data: ['input order', 'random', "the store's layout"] },
    yAxis: { type: 'value', min: 0 },
    series: [{ type: 'bar', data: [p.input, p.random, p.current], label: { show: true, position: 'top' } }],
  }, true);
}

// ---------------------------------------------------------------------------------------
// The store: its status, and a relayout that shows its progress.

async function loadStatus(fresh) {
  text($('#status-note'), 'Computing a fresh layout to compare with…');
  let s;
  try { s = await api('/ui/api/status' + (fresh ? '?fresh=true' : '')); } catch (e) {
    text($('#status-note'), e.message);
    $('#relayout').disabled = e.status === 501;
    return;
  }
  text($('#status-note'), 'computed ' + new Date(s.computed_unix_s * 1000).toLocaleTimeString());
  const rows = [
    ['users', fmt.int(s.users)], ['friendships', fmt.int(s.friendships)], ['generation', s.generation],
    ['layout', `${s.layout.method} (${s.record_bytes} B records, ${s.page_bytes} B pages)`],
    ['appended since the layout', fmt.int(s.appended_since_layout)],
    ['layout cost', fmt.int(s.layout_cost)], ['fresh layout cost', fmt.int(s.fresh_layout_cost)],
    ['degradation', (s.degradation >= 0 ? '+' : '') + fmt.pct(s.degradation)],
    ['pages per friend list', `${fmt.fixed(s.pages_mean, 3)} now, ${fmt.fixed(s.fresh_pages_mean, 3)} fresh`],
    ['bytes on disk', fmt.bytes(s.bytes_on_disk)],
  ];
  $('#status').replaceChildren(...rows.flatMap(([k, v]) => {
    const dd = element('dd', v);
    dd.dataset.key = k;
    return [element('dt', k), dd];
  }));
  $('#status').dataset.users = s.users;
  $('#status').dataset.generation = s.generation;
}

let relayoutTimer = null;
async function pollRelayout() {
  let job;
  try { job = await api('/ui/api/relayout'); } catch (e) { text($('#relayout-error'), e.message); return; }
  $('#relayout-state').dataset.state = job.state;
  const at = job.at || { phase: '', done: 0, total: 0 };
  const share = job.state === 'done' ? 1 : (at.total ? at.done / at.total : 0);
  $('#relayout-bar').style.width = (100 * share).toFixed(1) + '%';
  if (job.state === 'running') {
    text($('#relayout-state'), `running: ${at.phase}${at.total ? ` ${fmt.int(at.done)}/${fmt.int(at.total)} records` : ''} (${fmt.fixed(job.seconds, 1)} s)`);
    $('#relayout').disabled = true;
    // One chain of polls: a new one replaces any pending.
    clearTimeout(relayoutTimer);
    relayoutTimer = setTimeout(pollRelayout, 300);
    return;
  }
  $('#relayout').disabled = false;
  if (job.state === 'done') {
    const r = job.report;
    text($('#relayout-state'), `done in ${fmt.fixed(job.seconds, 1)} s: generation ${r.from_generation} → ${r.to_generation}, layout cost ${fmt.int(r.cost_before)} → ${fmt.int(r.cost_after)}`);
  } else if (job.state === 'failed') {
    text($('#relayout-state'), '');
    text($('#relayout-error'), 'the relayout failed: ' + job.error);
  } else {
    text($('#relayout-state'), '');
  }
}

async function startRelayout() {
  text($('#relayout-error'), '');
  try {
    await api('/ui/api/relayout', { method: 'POST' });
  } catch (e) {
    text($('#relayout-error'), e.message);
    return;
  }
  clearTimeout(relayoutTimer);
  await pollRelayoutUntilDone();
  loadStatus(true);
}

async function pollRelayoutUntilDone() {
  for (;;) {
    await pollRelayout();
    if ($('#relayout-state').dataset.state !== 'running') return;
    clearTimeout(relayoutTimer);
    await new Promise((r) => setTimeout(r, 300));
  }
}

// ---------------------------------------------------------------------------------------
// Navigation: #health, #user[/uid], #layout, #store.

function route() {
  const [view, arg] = (location.hash.slice(1) || 'health').split('/');
  for (const v of ['health', 'user', 'layout', 'store']) {
    $('#view-' + v).classList.toggle('active', v === view);
    $('#nav-' + v).classList.toggle('active', v === view);
  }
  health.active = view === 'health';
  clearTimeout(relayoutTimer);
  relayoutTimer = null;
  if (view === 'health') {
    if (!health.timer) healthLoop();
  } else if (view === 'user' && arg) {
    openUser(arg);
  } else if (view === 'layout') {
    drawLayout();
  } else if (view === 'store') {
    loadStatus(false);
    pollRelayout();
  }
  Object.values(charts).forEach((c) => c.resize());
}

function start() {
  $('#token').value = token;
  $('#token').addEventListener('change', (e) => { token = e.target.value.trim(); sessionStorage.setItem('kith-token', token); });
  $('#user-form').addEventListener('submit', (e) => { e.preventDefault(); location.hash = '#user/' + $('#user-uid').value.trim(); });
  $('#user-random').addEventListener('click', async () => {
    try {
      const r = await api('/users/random?n=1');
      if (r.users.length) location.hash = '#user/' + r.users[0].uid;
    } catch (e) { text($('#user-error'), e.message); }
  });
  $('#friends-prev').addEventListener('click', () => friendsPage(Math.max(0, user.offset - FRIENDS_PAGE)));
  $('#friends-next').addEventListener('click', () => friendsPage(user.offset + FRIENDS_PAGE));
  $('#pages-form').addEventListener('submit', (e) => { e.preventDefault(); countPages($('#pages-uid').value.trim()); });
  $('#relayout').addEventListener('click', startRelayout);
  window.addEventListener('hashchange', route);
  route();
}

document.addEventListener('DOMContentLoaded', start);
