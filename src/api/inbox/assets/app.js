// handoff Inbox: reads and writes through the /v1 API with the session
// cookie, re-reads its lists on every event of /v1/events/stream. Two
// views: the items waiting for a person, and (#view=sessions) every agent
// session and what it is doing now (GET /v1/fleet).
// Every piece of data reaches the page as text (textContent / text nodes);
// nothing built from data is ever parsed as HTML.
'use strict';
(() => {
  const $ = (sel, root) => (root || document).querySelector(sel);

  // --- DOM helpers -------------------------------------------------------

  /** An element with attributes and children; strings become text nodes. */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'data') Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }

  function ago(iso) {
    const t = Date.parse(iso);
    if (!iso || Number.isNaN(t)) return '';
    const s = Math.round((Date.now() - t) / 1000);
    if (s < 45) return s >= -45 ? 'just now' : 'in ' + until(-s);
    if (s < 90 * 60) return Math.round(s / 60) + ' min ago';
    if (s < 36 * 3600) return Math.round(s / 3600) + ' h ago';
    return Math.round(s / 86400) + ' d ago';
  }
  function until(s) {
    if (s < 90 * 60) return Math.max(1, Math.round(s / 60)) + ' min';
    if (s < 36 * 3600) return Math.round(s / 3600) + ' h';
    return Math.round(s / 86400) + ' d';
  }
  function time(iso) {
    if (!iso) return null;
    return el('time', { datetime: iso, title: new Date(iso).toLocaleString(), data: { rel: '1' } }, ago(iso));
  }

  // --- API -----------------------------------------------------------------

  async function api(method, path, body) {
    const opt = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    const r = await fetch(path, opt);
    const text = await r.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (_) { data = { message: text }; }
    }
    if (r.status === 401) sessionEnded();
    if (!r.ok) {
      const e = new Error((data && data.message) || ('HTTP ' + r.status));
      e.status = r.status;
      e.data = data;
      throw e;
    }
    return data;
  }

  // --- state ---------------------------------------------------------------

  const state = { questions: [], rows: [], pending: [], unknown: [], grants: [], fleet: [], skew: 0, loads: 0 };
  let project = decodeURIComponent((location.hash.match(/project=([^&]*)/) || [])[1] || '');
  let view = /(^#|&)view=sessions(&|$)/.test(location.hash) ? 'sessions' : 'inbox';

  /** The page's address for the current view and project filter. */
  function hashOf() {
    const parts = [];
    if (view === 'sessions') parts.push('view=sessions');
    if (project) parts.push('project=' + encodeURIComponent(project));
    return parts.length ? '#' + parts.join('&') : '#';
  }

  async function load() {
    // Lists are pages (up to 500 here) of summaries: an action's arguments
    // come with the action itself, read one by one.
    const [questions, pendingList, unknownList, boards, grants, fleet] = await Promise.all([
      api('GET', '/v1/questions?status=open&limit=500'),
      api('GET', '/v1/actions?status=pending&limit=500'),
      api('GET', '/v1/actions?status=unknown&limit=500'),
      api('GET', '/v1/boards?limit=500'),
      api('GET', '/v1/grants?limit=500'),
      api('GET', '/v1/fleet'),
    ]);
    // "For how long" counts on the daemon's clock, not this device's.
    state.skew = Date.parse(fleet.now) - Date.now();
    state.fleet = fleet.sessions;
    const one = (a) => api('GET', '/v1/actions/' + encodeURIComponent(a.id));
    const [pending, unknown] = await Promise.all([
      Promise.all(pendingList.map(one)),
      Promise.all(unknownList.map(one)),
    ]);
    const blocked = boards.filter((b) => b.progress && b.progress.blocked > 0);
    const fulls = await Promise.all(blocked.map((b) => api('GET', '/v1/boards/' + encodeURIComponent(b.id))));
    const newest = (f) => (a, b) => (f(b) || '').localeCompare(f(a) || '');
    state.questions = questions.sort(newest((q) => q.created_at));
    state.rows = fulls
      .flatMap((f) => f.rows.filter((r) => r.status === 'blocked').map((row) => ({ board: f, row })))
      .sort(newest((x) => x.row.action_started_at));
    state.pending = pending.filter((a) => a.status === 'pending').sort(newest((a) => a.created_at));
    state.unknown = unknown.sort(newest((a) => a.updated_at));
    state.grants = grants;
  }

  let loading = false;
  let again = false;
  async function refresh() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      await load();
      render();
      state.loads += 1;
      document.body.dataset.loads = String(state.loads);
      if (!ended) notice('');
    } catch (e) {
      if (e.status !== 401) notice('Could not load the Inbox: ' + e.message);
    } finally {
      loading = false;
      if (again) { again = false; refresh(); }
    }
  }

  let timer = null;
  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 120);
  }

  let ended = false;
  function sessionEnded() {
    ended = true;
    notice('Your Inbox session ended. Run `handoff inbox-link` and open the new link to log in again.');
  }
  function notice(text) {
    const n = $('#notice');
    n.textContent = text;
    n.hidden = !text;
  }

  // --- rendering -----------------------------------------------------------

  const WHERE = { inbox: 'in the Inbox', chat: 'in Telegram', agent: "in the agent's terminal" };
  const VERB = { answer: 'answered', clarify: 'clarified', decline: 'declined' };

  /** "answered in Telegram by @bob, not yet picked up" ("answered by
   *  voice in Telegram …" for a confirmed voice note). */
  function whoWhere(kind, source, by, seenAt, medium) {
    let s = (VERB[kind] || 'answered') + (medium === 'voice' ? ' by voice' : '') + ' '
      + (WHERE[source] || ('via ' + (source || 'unknown')));
    if (by) s += ' by ' + by;
    s += seenAt ? ', picked up by the agent ' + ago(seenAt) : ', not yet picked up';
    return s;
  }

  function visible(p) { return !project || p === project; }

  function render() {
    const projects = new Set();
    for (const q of state.questions) projects.add(q.project);
    for (const x of state.rows) projects.add(x.board.project);
    for (const a of state.pending.concat(state.unknown)) projects.add(a.project);
    for (const g of state.grants) projects.add(g.project);
    for (const f of state.fleet) projects.add(f.project);
    if (project) projects.add(project);
    const sel = $('#project');
    const want = ['', ...[...projects].sort()];
    const have = [...sel.options].map((o) => o.value);
    if (want.join('\u0000') !== have.join('\u0000')) {
      sel.replaceChildren(...want.map((p) => el('option', { value: p }, p ? p : 'All projects')));
    }
    sel.value = project;

    const shown = [
      section('questions', state.questions.filter((q) => visible(q.project)), (q) => 'q:' + q.id, questionCard),
      section('rows', state.rows.filter((x) => visible(x.board.project)), (x) => 'r:' + x.row.id, rowCard),
      section('pending', state.pending.filter((a) => visible(a.project)), (a) => 'a:' + a.id, actionCard),
      section('unknown', state.unknown.filter((a) => visible(a.project)), (a) => 'u:' + a.id, unknownCard),
    ].reduce((n, k) => n + k, 0);
    // Standing grants wait for nobody: listed, not counted as waiting.
    section('grants', state.grants.filter((g) => visible(g.project)), (g) => 'g:' + g.id, grantCard);
    $('#empty').hidden = shown > 0 || view !== 'inbox';
    document.title = shown ? '(' + shown + ') handoff Inbox' : 'handoff Inbox';
    renderFleet();
    showView();
  }

  // --- the Sessions view ---------------------------------------------------

  const STATE_WORDS = {
    waiting_question: 'waiting on a question',
    waiting_approval: 'waiting on an approval',
    working: 'working',
    idle: 'idle',
    ended: 'ended',
  };

  /** `ms` as people read it at a glance: 40 s, 3 min, 2 h, 5 d. */
  function howLong(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + ' s';
    if (s < 5400) return Math.floor(s / 60) + ' min';
    if (s < 129600) return Math.floor(s / 3600) + ' h';
    return Math.floor(s / 86400) + ' d';
  }
  function forHowLong(iso) {
    return 'for ' + howLong(Date.now() + state.skew - Date.parse(iso));
  }

  /** Show the chosen view's sections, hide the other's. */
  function showView() {
    const sessions = view === 'sessions';
    document.body.dataset.view = view;
    for (const id of ['questions', 'rows', 'pending', 'unknown', 'grants']) {
      const sec = document.getElementById(id);
      if (sessions) sec.hidden = true;
      else sec.hidden = $('.list', sec).children.length === 0;
    }
    if (sessions) $('#empty').hidden = true;
    $('#fleet').hidden = !sessions;
    $('#tab-inbox').classList.toggle('on', !sessions);
    $('#tab-sessions').classList.toggle('on', sessions);
    $('#tab-inbox').setAttribute('aria-current', sessions ? 'false' : 'page');
    $('#tab-sessions').setAttribute('aria-current', sessions ? 'page' : 'false');
  }

  function renderFleet() {
    const list = state.fleet.filter((f) => visible(f.project));
    const waiting = list.filter((f) => f.state.startsWith('waiting_')).length;
    $('#tab-sessions .count').textContent = waiting ? '(' + waiting + ' waiting)' : '';
    $('#fleet > h2 .count').textContent = '(' + list.length + ')';
    $('#fleet [data-none]').hidden = list.length > 0;
    const groups = $('#fleet .groups');
    const old = new Map([...groups.querySelectorAll('article.session')].map((c) => [c.dataset.key, c]));
    const byProject = new Map();
    for (const f of list) {
      if (!byProject.has(f.project)) byProject.set(f.project, []);
      byProject.get(f.project).push(f);
    }
    const next = [...byProject.entries()].map(([p, sessions]) => el('div', { class: 'group', data: { project: p } },
      el('h3', { class: 'project' }, (p || '(no project)') + ' ', el('span', { class: 'count' }, '(' + sessions.length + ')')),
      sessions.map((f) => {
        const key = 's:' + f.session_id;
        const ver = JSON.stringify(f);
        const have = old.get(key);
        if (have && have.dataset.ver === ver) return have;
        const card = sessionCard(f);
        card.dataset.key = key;
        card.dataset.ver = ver;
        return card;
      })));
    groups.replaceChildren(...next);
  }

  function sessionCard(f) {
    const d = f.last_delivery;
    const wake = f.wake
      ? 'wakes by ' + f.wake + (d ? '; last delivery ' + d.status + (d.last_error ? ' (' + d.last_error + ')' : '') : '; nothing delivered yet')
      : 'no wake target';
    return el('article', { class: 'card session', data: { state: f.state } },
      meta(el('span', { class: 'badge state-' + f.state }, STATE_WORDS[f.state] || f.state),
        el('span', { data: { for: f.since }, title: new Date(f.since).toLocaleString() }, forHowLong(f.since)),
        f.host ? 'on ' + f.host : null, f.agent || null),
      el('h3', { class: 'sid' }, f.session_id),
      f.cwd ? el('p', { class: 'note cwd' }, f.cwd) : null,
      el('p', { class: 'note', data: { wake: f.wake || 'none' } }, wake),
      f.pending.length ? el('ul', { class: 'items' }, f.pending.map((i) => el('li', {},
        el('a', {
          href: '#', class: 'item', data: { item: (i.kind === 'question' ? 'q:' : 'a:') + i.id },
          onclick: (ev) => { ev.preventDefault(); openItem(ev.currentTarget.dataset.item); },
        }, (i.kind === 'question' ? '❓ ' : '⚠️ ') + '#' + i.short_id + ' ' + i.title)))) : null);
  }

  /** One tap from a session to what it waits on: the Inbox view, the
   *  item's card scrolled into sight and its answer box focused. */
  function openItem(key) {
    view = 'inbox';
    history.replaceState(null, '', hashOf());
    render();
    const card = document.querySelector('article[data-key="' + key + '"]');
    if (!card) return;
    card.scrollIntoView({ block: 'start' });
    card.classList.add('opened');
    setTimeout(() => card.classList.remove('opened'), 2000);
    const box = card.querySelector('textarea, input[type=text], button');
    if (box) box.focus({ preventScroll: true });
  }

  /** Keyed update: an unchanged item keeps its card (and whatever the
   *  person is typing in it); a changed one is rebuilt with its drafts. */
  function section(id, items, keyOf, build) {
    const sec = document.getElementById(id);
    const list = $('.list', sec);
    $('.count', sec).textContent = '(' + items.length + ')';
    sec.hidden = items.length === 0;
    const old = new Map([...list.children].map((c) => [c.dataset.key, c]));
    const next = items.map((it) => {
      const key = keyOf(it);
      const ver = JSON.stringify(it);
      let node = old.get(key);
      if (!node || node.dataset.ver !== ver) {
        const fresh = build(it);
        fresh.dataset.key = key;
        fresh.dataset.ver = ver;
        if (node) carryDrafts(node, fresh);
        node = fresh;
      }
      return node;
    });
    const same = next.length === list.children.length && next.every((n, i) => list.children[i] === n);
    if (!same) list.replaceChildren(...next);
    return items.length;
  }

  function carryDrafts(from, to) {
    // Ticks the person changed and has not sent yet.
    for (const f of from.querySelectorAll('[data-pick]')) {
      const t = to.querySelector('[data-pick="' + f.dataset.pick + '"]');
      if (t && f.checked !== f.defaultChecked) t.checked = f.checked;
    }
    for (const f of from.querySelectorAll('[data-draft]')) {
      const t = to.querySelector('[data-draft="' + f.dataset.draft + '"]');
      if (t && f.value && f.value !== f.defaultValue) t.value = f.value;
      if (t && f.closest('[data-panel]') && !f.closest('[data-panel]').hidden) {
        const panel = t.closest('[data-panel]');
        if (panel) panel.hidden = false;
      }
    }
  }

  /** A button that runs `fn` with the card's error line cleared first and
   *  filled with the API's message if it fails; nothing else changes then. */
  function act(label, name, fn, cls) {
    return el('button', {
      type: 'button', class: cls || null, data: { act: name },
      onclick: async (ev) => {
        const card = ev.currentTarget.closest('.card');
        const err = $('.err', card);
        err.textContent = '';
        const buttons = card.querySelectorAll('button');
        buttons.forEach((b) => { b.disabled = true; });
        try {
          await fn(card);
          // Sent: the drafts are spent, so the rebuilt card starts empty.
          card.querySelectorAll('[data-draft]').forEach((f) => { f.value = f.defaultValue; });
          card.querySelectorAll('[data-pick]').forEach((f) => { f.checked = f.defaultChecked; });
          card.dataset.done = name;
          refresh();
        } catch (e) {
          err.textContent = e.message;
        } finally {
          buttons.forEach((b) => { b.disabled = false; });
        }
      },
    }, label);
  }

  function draft(card, name) { return $('[data-draft="' + name + '"]', card).value; }

  /** Show the card's panel `name` (hiding the others), or hide it again. */
  function toggle(name) {
    return (ev) => {
      const card = ev.currentTarget.closest('.card');
      for (const p of card.querySelectorAll('[data-panel]')) p.hidden = p.dataset.panel !== name ? true : !p.hidden;
    };
  }

  function meta(...parts) { return el('div', { class: 'meta' }, parts.filter(Boolean).map((p) => el('span', {}, p))); }

  function questionCard(q) {
    if (q.choice === 'one' || q.choice === 'many') return choiceCard(q);
    const path = '/v1/questions/' + encodeURIComponent(q.id);
    const reply = (kind, text) => (card) => api('POST', path + '/reply', {
      text: text === undefined ? draft(card, 'text') : text, kind, expected_revision: q.revision,
    });
    const r = q.reply;
    return el('article', { class: 'card question' },
      meta(el('span', { class: 'badge' }, 'question'), q.project, q.agent, time(q.created_at), '#' + q.short_id),
      el('h3', {}, q.title),
      q.detail ? el('p', { class: 'detail' }, q.detail) : null,
      q.context ? el('details', {}, el('summary', {}, 'context'), el('pre', {}, q.context)) : null,
      r ? el('p', { class: 'status' + (r.seen_at ? '' : ' waiting'), data: { status: 'reply' } },
        '“' + r.text + '” — ' + whoWhere(r.kind, r.source, r.by, r.seen_at, r.medium)) : null,
      q.options.length ? el('div', { class: 'buttons options' }, q.options.map((o) =>
        act(o.label + (o.recommended ? ' ★' : ''), 'option', reply('answer', o.label),
          'option' + (o.recommended ? ' recommended' : '')))) : null,
      el('textarea', { 'aria-label': 'Your answer', placeholder: 'Your answer…', data: { draft: 'text' } }),
      el('div', { class: 'buttons' },
        act('Answer', 'answer', reply('answer'), 'primary'),
        act('Clarify', 'clarify', reply('clarify')),
        act('Decline', 'decline', reply('decline')),
        act('Dismiss', 'dismiss', (card) => api('POST', path + '/dismiss', {
          reason: draft(card, 'text') || null,
        }), 'danger')),
      el('p', { class: 'err', role: 'alert' }));
  }

  /** An agent's own multiple-choice prompt (Claude Code's AskUserQuestion):
   *  one click per option, or ticks and Submit for a multiple choice; both
   *  take another answer in words. The answer has the chat's shape: the
   *  ticked labels in option order, then the words, joined with ", ". */
  function choiceCard(q) {
    const path = '/v1/questions/' + encodeURIComponent(q.id);
    const send = (text, kind) => api('POST', path + '/reply', { text, kind: kind || 'answer', expected_revision: q.revision });
    const many = q.choice === 'many';
    const r = q.reply;
    const options = many
      ? el('div', { class: 'options picks' }, q.options.map((o, i) => el('label', { class: 'pick' },
        el('input', { type: 'checkbox', value: o.label, checked: (q.picked & (1 << i)) !== 0, data: { pick: String(i) } }),
        ' ' + o.label)))
      : el('div', { class: 'buttons options' }, q.options.map((o) =>
        act(o.label + (o.recommended ? ' ★' : ''), 'option', () => send(o.label),
          'option' + (o.recommended ? ' recommended' : ''))));
    const submit = (card) => {
      const parts = many ? [...card.querySelectorAll('[data-pick]')].filter((c) => c.checked).map((c) => c.value) : [];
      const other = draft(card, 'other').trim();
      if (other) parts.push(other);
      if (!parts.length) throw new Error(many ? 'Tick at least one option, or write another answer.' : 'Write your answer first.');
      return send(parts.join(', '));
    };
    return el('article', { class: 'card question choice' },
      meta(el('span', { class: 'badge' }, many ? 'pick any' : 'pick one'), q.project, q.agent, time(q.created_at), '#' + q.short_id),
      el('h3', {}, q.title),
      q.detail ? el('p', { class: 'detail' }, q.detail) : null,
      q.context ? el('details', {}, el('summary', {}, 'context'), el('pre', {}, q.context)) : null,
      r ? el('p', { class: 'status' + (r.seen_at ? '' : ' waiting'), data: { status: 'reply' } },
        '“' + r.text + '” — ' + whoWhere(r.kind, r.source, r.by, r.seen_at, r.medium)) : null,
      options,
      el('input', { type: 'text', 'aria-label': 'Other answer', placeholder: 'Other… (your own words)', data: { draft: 'other' } }),
      el('div', { class: 'buttons' },
        act(many ? 'Submit' : 'Send other answer', 'submit', submit, 'primary'),
        act('Decline', 'decline', () => send('', 'decline'), 'danger')),
      el('p', { class: 'err', role: 'alert' }));
  }

  function grantCard(g) {
    const path = '/v1/grants/' + encodeURIComponent(g.id) + '/revoke';
    const where = g.scope === 'session'
      ? 'in session ' + g.session
      : 'in every session of ' + (g.project || 'this project');
    const place = g.path ? ', run in ' + g.path : '';
    const end = g.expires_at ? 'until ' + new Date(g.expires_at).toLocaleString() : 'until revoked';
    return el('article', { class: 'card grant' },
      meta(el('span', { class: 'badge' }, g.scope === 'session' ? 'this session' : (g.expires_at ? 'until a time' : 'always')),
        g.project, g.agent, 'granted by ' + g.created_by, time(g.created_at), '#' + g.id.slice(-8)),
      el('h3', { data: { rule: g.rule } }, g.rule),
      el('p', { class: 'note' }, 'Approves ' + g.agent + ' prompts of ' + g.tool + ' it covers, at once, ' + where + place + '.'),
      el('p', { class: 'status', data: { end: g.expires_at || 'never' } }, 'Holds ' + end + '.'),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', class: 'danger', data: { act: 'revoke-open' }, onclick: toggle('revoke') }, 'Revoke…')),
      el('div', { data: { panel: 'revoke' }, hidden: true },
        el('p', { class: 'note' }, 'From now on the prompts it covers ask again.'),
        el('div', { class: 'buttons' },
          act('Revoke ' + g.rule, 'revoke', () => api('POST', path, {}), 'danger'))),
      el('p', { class: 'err', role: 'alert' }));
  }

  function rowCard(x) {
    const { board, row } = x;
    const path = '/v1/boards/' + encodeURIComponent(board.id) + '/rows/' + encodeURIComponent(row.label);
    const annotate = (kind, text) => (card) => api('POST', path + '/annotate', {
      text: text === undefined ? draft(card, 'text') : text, kind, expected_revision: row.revision,
    });
    const lines = [];
    if (row.annotation !== null && row.annotation !== undefined) {
      lines.push(el('p', { class: 'status' + (row.annotation_seen_at ? '' : ' waiting'), data: { status: 'annotation' } },
        '“' + row.annotation + '” — ' + whoWhere(row.annotation_kind, row.annotation_source, row.annotated_by, row.annotation_seen_at)));
    }
    if (row.handled_at) {
      lines.push(el('p', { class: 'status' + (row.handled_seen_at ? '' : ' waiting'), data: { status: 'handled' } },
        'marked handled' + (row.handled_by ? ' by ' + row.handled_by : '') + ' ' + ago(row.handled_at) +
        (row.handled_seen_at ? ', the agent has it' : ', not yet picked up')));
    }
    return el('article', { class: 'card row' },
      meta(el('span', { class: 'badge' }, 'blocked row'), board.project, board.title, time(row.action_started_at)),
      el('h3', {}, row.label + (row.next_step ? ': ' + row.next_step : '')),
      row.note ? el('p', { class: 'note' }, row.note) : null,
      row.impact ? el('p', { class: 'note' }, 'Impact: ' + row.impact) : null,
      row.context ? el('details', {}, el('summary', {}, 'context'), el('pre', {}, row.context)) : null,
      lines,
      row.options.length ? el('div', { class: 'buttons options' }, row.options.map((o) =>
        act(o.label + (o.recommended ? ' ★' : ''), 'option', annotate('answer', o.label), 'option'))) : null,
      el('textarea', { 'aria-label': 'Your answer', placeholder: 'Your answer…', data: { draft: 'text' } }),
      el('div', { class: 'buttons' },
        act('Answer', 'annotate', annotate('answer'), 'primary'),
        act('Clarify', 'clarify', annotate('clarify')),
        act('Decline', 'decline', annotate('decline')),
        row.handled_at && !row.handled_seen_at
          ? act('Undo handled', 'unhandle', () => api('POST', path + '/handled', { clear: true, expected_revision: row.revision }))
          : act('Mark handled', 'handled', () => api('POST', path + '/handled', { expected_revision: row.revision }))),
      el('p', { class: 'err', role: 'alert' }));
  }

  function args(a) { return a.effective_args !== undefined ? a.effective_args : a.args; }

  /** The keys of `edited` that differ from `shown`: only real changes are
   *  sent, so redacted values the person did not touch stay as they are. */
  function patchOf(shown, edited) {
    if (!edited || typeof edited !== 'object' || Array.isArray(edited)) {
      throw new Error('The arguments must be a JSON object.');
    }
    const gone = Object.keys(shown || {}).filter((k) => !(k in edited));
    if (gone.length) throw new Error('Arguments can be changed, not removed: put back ' + gone.join(', ') + '.');
    const patch = {};
    for (const [k, v] of Object.entries(edited)) {
      if (!(k in shown) || JSON.stringify(shown[k]) !== JSON.stringify(v)) patch[k] = v;
    }
    return patch;
  }

  /** Where else an "always" grant is written, as the chat message says. */
  function alsoSaved(a) {
    if (a.kind.startsWith('claude.')) return ', and Claude Code\'s local settings';
    if (a.codex_rule) return ', and adds ' + a.codex_rule + ' to Codex\'s rules file';
    if (a.kind.startsWith('codex.')) return '; not a command prefix, so Codex\'s own rules file is left alone';
    return '';
  }

  /** The end a person typed for a grant, as the API takes it: `for 2h`
   *  as is; `until 18:00` in this browser's time zone, as an RFC 3339 time. */
  function grantEnd(text) {
    const t = (text || '').trim();
    const m = /^until (\d{1,2}):(\d{2})$/.exec(t);
    if (!t) throw new Error('Type when the grant ends first: for 2h, or until 18:00.');
    if (!m) return t;
    const at = new Date();
    at.setHours(Number(m[1]), Number(m[2]), 0, 0);
    if (at <= new Date()) at.setDate(at.getDate() + 1);
    return 'until ' + at.toISOString();
  }

  function actionCard(a) {
    const path = '/v1/actions/' + encodeURIComponent(a.id);
    const text = JSON.stringify(args(a), null, 2);
    return el('article', { class: 'card action' },
      meta(el('span', { class: 'badge' }, 'action'), a.project, a.kind, a.proposer ? 'by ' + a.proposer : null,
        time(a.created_at), a.expires_at ? 'expires ' + ago(a.expires_at) : null),
      el('h3', {}, a.summary),
      a.expiry_note ? el('p', { class: 'status', data: { expiry: 'note' } }, '⌛ ' + a.expiry_note) : null,
      a.escalation_note ? el('p', { class: 'status', data: { escalation: 'note' } }, '📣 ' + a.escalation_note) : null,
      a.approvals_required > 1 ? el('p', { class: 'status' }, a.approvals + ' of ' + a.approvals_required + ' approvals') : null,
      a.preview ? el('pre', { class: 'args', data: { preview: 'prompt' } }, a.preview) : el('pre', { class: 'args' }, text),
      a.grant_rule ? el('p', { class: 'status', data: { grant: 'rule' } },
        'This session / For 1 h / Always here saves ' + a.grant_rule +
        ' (this tool only; for 1 h and always here = every session of ' + (a.project || 'this project') +
        ' run in this prompt\'s folder' + alsoSaved(a) + '). Or give your own end: for 2h, until 18:00.') : null,
      el('div', { class: 'buttons' },
        act(a.grant_rule ? 'This once' : 'Approve', 'approve', () => api('POST', path + '/approve', {}), 'primary'),
        a.grant_rule && a.session ? act('This session', 'approve-session', () => api('POST', path + '/approve', { grant: 'session' })) : null,
        a.grant_rule ? act('For 1 h', 'approve-hour', () => api('POST', path + '/approve', { grant: 'always', until: 'for 1h', here: true })) : null,
        a.grant_rule ? act('Always here', 'approve-always', () => api('POST', path + '/approve', { grant: 'always', here: true })) : null,
        a.grant_rule ? act('Until…', 'approve-until', (card) => api('POST', path + '/approve',
          { grant: 'always', until: grantEnd(draft(card, 'until')), here: true })) : null,
        el('button', { type: 'button', data: { act: 'edit' }, onclick: toggle('edit') }, 'Edit arguments'),
        a.grant_rule ? el('input', { type: 'text', 'aria-label': 'Grant end', placeholder: 'for 2h / until 18:00', data: { draft: 'until' } }) : null,
        el('button', { type: 'button', class: 'danger', data: { act: 'reject-open' }, onclick: toggle('reject') }, 'Reject…')),
      el('div', { data: { panel: 'edit' }, hidden: true },
        el('textarea', { class: 'json', 'aria-label': 'Arguments (JSON)', spellcheck: 'false', data: { draft: 'args' } }, text),
        el('div', { class: 'buttons' },
          act('Approve with these arguments', 'approve-edited', async (card) => {
            let edited;
            try { edited = JSON.parse(draft(card, 'args')); } catch (e) { throw new Error('Not valid JSON: ' + e.message); }
            const patch = patchOf(args(a), edited);
            return api('POST', path + '/approve', Object.keys(patch).length ? { patch } : {});
          }, 'primary'))),
      el('div', { data: { panel: 'reject' }, hidden: true },
        el('input', { type: 'text', 'aria-label': 'Reason', placeholder: 'Why not?', data: { draft: 'reason' } }),
        el('div', { class: 'buttons' },
          act('Reject', 'reject', (card) => api('POST', path + '/reject', { reason: draft(card, 'reason') }), 'danger'))),
      el('p', { class: 'err', role: 'alert' }));
  }

  function unknownCard(a) {
    const path = '/v1/actions/' + encodeURIComponent(a.id) + '/resolve-unknown';
    const settle = (resolution) => () => api('POST', path, { resolution });
    return el('article', { class: 'card unknown' },
      meta(el('span', { class: 'badge' }, 'unknown outcome'), a.project, a.kind, time(a.updated_at)),
      el('h3', {}, a.summary),
      el('p', { class: 'note' }, 'The run was interrupted' + (a.owner ? ' (executor ' + a.owner + ')' : '') +
        ': nobody knows whether it happened. Check, then say what you found, or run it again.'),
      el('pre', { class: 'args' }, JSON.stringify(args(a), null, 2)),
      el('div', { class: 'buttons' },
        act('It ran: mark executed', 'executed', settle('executed')),
        act('It did not: mark failed', 'failed', settle('failed')),
        act('Run it again', 'retry', settle('retry'), 'danger')),
      el('p', { class: 'err', role: 'alert' }));
  }

  // --- live updates ----------------------------------------------------------

  function connect() {
    const live = $('#live');
    const es = new EventSource('/v1/events/stream');
    es.onopen = () => { live.textContent = 'live'; live.classList.add('on'); soon(); };
    es.onmessage = () => soon();
    es.onerror = () => {
      live.textContent = 'reconnecting…';
      live.classList.remove('on');
      if (es.readyState === EventSource.CLOSED) {
        // Refused outright (e.g. the session ended): check, then retry later.
        api('GET', '/inbox/me').then(() => setTimeout(connect, 3000), () => {});
      }
    };
  }

  function start() {
    $('#project').addEventListener('change', (ev) => {
      project = ev.target.value;
      history.replaceState(null, '', hashOf());
      render();
    });
    for (const tab of document.querySelectorAll('.tabs a')) {
      tab.addEventListener('click', (ev) => {
        ev.preventDefault();
        view = ev.currentTarget.dataset.view;
        history.replaceState(null, '', hashOf());
        render();
      });
    }
    showView();
    api('GET', '/inbox/me').then((m) => { $('#me').textContent = 'as ' + m.name; }, () => {});
    setInterval(() => {
      for (const t of document.querySelectorAll('time[data-rel]')) t.textContent = ago(t.getAttribute('datetime'));
      for (const t of document.querySelectorAll('[data-for]')) t.textContent = forHowLong(t.dataset.for);
    }, 30000);
    refresh();
    connect();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
