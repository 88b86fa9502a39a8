/* AnimaHub dashboard: one page, no build step. Everything shown comes from /api/* and
   WS /ws, which apply the caller's rights; admin controls are only drawn for admins, and
   the API refuses a person's admin calls anyway. Text from the hub is set as text, or as
   markdown through markdown.js (shared with the web chat), which escapes it first. Chart.js
   and Cytoscape.js are served by the hub (vendor/). */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  const TOKEN_KEY = "animahub.token"; // shared with the web chat: same origin, same token
  // The session's page key (signin.js keeps it at sign-in): the session cookie counts only
  // with it, so a cookie planted from another port of this host is nobody.
  const PAGE_KEY = "animahub.pagekey";

  function pageKey() {
    try {
      return window.localStorage.getItem(PAGE_KEY) || "";
    } catch {
      return "";
    }
  }

  /** An element: h("a", {href: "#x", class: "y", onclick: fn}, "text", child, ...) */
  function h(tag, attrs = {}, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "class") el.className = value;
      else if (key === "dataset") Object.assign(el.dataset, value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const { renderMarkdown } = window.AnimaHubMarkdown;

  /** Markdown someone wrote (a message, a memory), rendered safely: escaped, then formatted. */
  function md(text, cls = "") {
    const el = h("div", { class: `md ${cls}`.trim() });
    el.innerHTML = renderMarkdown(text); // escaped inside renderMarkdown
    return el;
  }

  // "_(answered in offline mode)_": a note the hub keeps in place of a reply, not words said.
  const NOTE = /^_\(([^)]*)\)_$/;

  /** What a turn said: its markdown, or the hub's note in place of a reply, dimmed. */
  function said(text, cls = "") {
    const note = NOTE.exec(text.trim());
    return note ? h("div", { class: `note ${cls}`.trim() }, note[1]) : md(text, cls);
  }

  function plural(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  function clear(el, ...children) {
    el.replaceChildren(...children.flat().filter((c) => c));
  }

  function when(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
  }

  function ago(iso) {
    if (!iso) return "never";
    const s = (Date.now() - new Date(iso).getTime()) / 1000;
    const fmt = (n, u) => `${Math.round(n)} ${u}${Math.round(n) === 1 ? "" : "s"}`;
    const future = s < 0;
    const a = Math.abs(s);
    const text = a < 60 ? fmt(a, "second") : a < 3600 ? fmt(a / 60, "minute") : a < 86400 ? fmt(a / 3600, "hour") : fmt(a / 86400, "day");
    return future ? `in ${text}` : `${text} ago`;
  }

  // ---------------------------------------------------------------------------
  // The API
  // ---------------------------------------------------------------------------

  const state = { token: "", me: null, admin: false, animas: [], view: "", memView: "episodes", charts: {}, graph: null, episodeDay: null, sharing: new Map() };

  try {
    state.token = window.localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    state.token = "";
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, { method = "GET", body } = {}) {
    const headers = new Headers();
    if (state.token) headers.set("Authorization", `Bearer ${state.token}`);
    if (pageKey()) headers.set("X-Page-Key", pageKey());
    if (body !== undefined) headers.set("Content-Type", "application/json");
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
    if (res.status === 401) {
      showSignin(state.token ? "The hub did not accept that token." : "");
      throw new ApiError(401, "sign in needed");
    }
    if (!res.ok) {
      let detail = `${res.status} ${res.statusText}`;
      try {
        const data = await res.json();
        if (typeof data.detail === "string") detail = data.detail;
      } catch {
        /* not JSON: keep the status line */
      }
      throw new ApiError(res.status, detail);
    }
    return res.status === 204 ? null : res.json();
  }

  function flash(text, kind = "info") {
    const el = $("flash");
    el.textContent = text;
    el.className = `flash flash-${kind}`;
    el.hidden = false;
    clearTimeout(flash.timer);
    flash.timer = setTimeout(() => (el.hidden = true), 6000);
  }

  /** Runs an admin action, says how it went, and redraws the view. */
  async function act(label, path, body = {}) {
    try {
      await api(path, { method: "POST", body });
      flash(`${label}: done`);
    } catch (err) {
      flash(`${label}: ${err.message}`, "error");
    }
    refresh();
  }

  // ---------------------------------------------------------------------------
  // Signing in
  // ---------------------------------------------------------------------------

  function showSignin(error) {
    $("signin").hidden = false;
    $("main").hidden = true;
    $("signin-error").textContent = error || "";
    $("signin-token").focus();
  }

  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    state.token = $("signin-token").value.trim();
    try {
      window.localStorage.setItem(TOKEN_KEY, state.token);
    } catch {
      /* storage unavailable: keep it for this page only */
    }
    $("signin").hidden = true;
    $("main").hidden = false;
    await start();
  });

  async function loadMe() {
    const me = await api("/api/me");
    state.me = me;
    state.admin = me.via === "owner" || me.via === "admin token";
    $("who").textContent = `${me.name || me.id}${state.admin ? " (admin)" : ""}`;
    for (const el of document.querySelectorAll("[data-admin]")) el.hidden = !state.admin;
  }

  // ---------------------------------------------------------------------------
  // Views
  // ---------------------------------------------------------------------------

  const views = {
    animas: loadAnimas,
    conversations: loadConversations,
    memory: loadMemory,
    tasks: loadTasks,
    outbox: loadOutbox,
    audit: loadAudit,
    charts: loadCharts,
  };
  const ADMIN_VIEWS = new Set(["tasks", "outbox", "audit"]);

  function route() {
    let view = (location.hash || "#animas").slice(1);
    if (!(view in views) || (ADMIN_VIEWS.has(view) && !state.admin)) view = "animas";
    state.view = view;
    for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${view}`;
    for (const tab of document.querySelectorAll(".tabs a")) {
      if (tab.dataset.view === view) tab.setAttribute("aria-current", "page");
      else tab.removeAttribute("aria-current");
    }
    refresh();
  }

  let refreshing = null;
  function refresh() {
    // One reload at a time; a notice arriving meanwhile asks for one more after it.
    if (refreshing) {
      refreshing.again = true;
      return;
    }
    refreshing = { again: false };
    Promise.resolve(views[state.view]())
      .catch((err) => {
        if (!(err instanceof ApiError && err.status === 401)) flash(err.message, "error");
      })
      .finally(() => {
        const again = refreshing.again;
        refreshing = null;
        if (again) refresh();
      });
  }

  // Animas ------------------------------------------------------------------------

  // "telegram down" rather than "platform down": the Anima still answers everywhere else.
  function animaStatus(a) {
    const cls = `status status-${a.state.replace(" ", "-")}`;
    if (a.state !== "platform down") return h("span", { class: cls }, a.state);
    const down = a.platforms_down.join(", ");
    return h("span", { class: cls, title: `unreachable on ${down}; every other platform works` }, `${down} down`);
  }

  // Why a platform is not up, in the page (not only in a chip's tooltip): what is wrong,
  // since when, the hub's reason (redacted by the hub) and what happens next.
  function platformProblem(name, p) {
    const since = p.since ? ` since ${when(p.since)}` : "";
    const reason = p.reason ? `: ${p.reason}` : "";
    const tries = p.failures > 1 ? ` (${p.failures} tries failed)` : "";
    const text = {
      down: () => `${name} cannot be reached${since}${tries}${reason}. ${p.next_retry_at ? `The hub tries again ${ago(p.next_retry_at)}` : "The hub keeps trying"}; the Animas answer everywhere else meanwhile.`,
      unauthorized: () => `${name} refused the hub's credentials${since}${reason}. Not retried: fix the token in hub.toml ([${name}]) and restart the hub.`,
      starting: () => `${name} is connecting${since}…`,
      stopped: () => `${name} is stopped.`,
    }[p.state];
    return text ? h("li", { class: `problem problem-${p.state}`, dataset: { platform: name } }, text()) : null;
  }

  async function loadAnimas() {
    const data = await api("/api/dashboard/animas");
    state.animas = data.animas;
    const platforms = Object.entries(data.platforms || {});
    clear(
      $("platforms"),
      platforms.map(([name, p]) =>
        h("span", { class: `chip chip-${p.state}`, title: p.reason || "" }, `${name}: ${p.state}`),
      ),
    );
    showModelState(data.model);
    const problems = platforms.filter(([, p]) => p.state !== "up").map(([name, p]) => platformProblem(name, p));
    clear($("platform-problems"), problems);
    $("platform-problems").hidden = !problems.length;
    const byName = new Map(data.animas.map((a) => [a.name, a]));
    const roots = data.animas.filter((a) => !a.supervisor || !byName.has(a.supervisor));
    const tree = (anima, depth) => [
      animaCard(anima, depth),
      ...data.animas.filter((a) => a.supervisor === anima.name).flatMap((a) => tree(a, depth + 1)),
    ];
    clear($("anima-tree"), roots.flatMap((a) => tree(a, 0)));
    fillAnimaSelects();
  }

  // A model degraded or down, in full view above the Animas: why, since when, what to do.
  function showModelState(model) {
    const failing = Object.entries((model && model.models) || {}).filter(([, m]) => m.state === "down" || m.state === "degraded");
    const box = $("model-state");
    box.hidden = !failing.length;
    box.className = `model-state model-${failing.some(([, m]) => m.state === "down") ? "down" : "degraded"}`;
    clear(
      box,
      failing.map(([name, m]) =>
        h(
          "div",
          { class: "model-line", dataset: { model: name, state: m.state } },
          h("strong", {}, `Model ${name} is ${m.state}: ${m.reason}`),
          h("span", {}, ` since ${when(m.since)}${m.next_check ? `; next check ${ago(m.next_check)}` : ""}.`),
          h("div", {}, `Fix: ${m.fix}.`),
          m.detail ? h("div", { class: "muted" }, m.detail) : null,
        ),
      ),
    );
  }

  function animaCard(a, depth) {
    const controls = state.admin
      ? h(
          "div",
          { class: "card-actions" },
          a.paused
            ? h("button", { class: "button", type: "button", onclick: () => act(`resume ${a.name}`, `/api/animas/${enc(a.name)}/resume`) }, "Resume")
            : h("button", { class: "button button-secondary", type: "button", onclick: () => act(`pause ${a.name}`, `/api/animas/${enc(a.name)}/pause`) }, "Pause"),
          h("button", { class: "button button-secondary", type: "button", onclick: () => act(`heartbeat of ${a.name}`, `/api/animas/${enc(a.name)}/heartbeat`) }, "Run heartbeat"),
        )
      : null;
    const runs = (a.next_runs || []).map((r) => h("li", {}, `${r.kind} ${ago(r.at)}`, h("span", { class: "muted" }, ` (${when(r.at)})`)));
    return h(
      "article",
      { class: `card anima depth-${Math.min(depth, 4)}`, dataset: { anima: a.name, state: a.state } },
      h("header", {}, h("h3", {}, a.name), animaStatus(a)),
      h("p", { class: "role" }, a.title || a.role, a.supervisor ? h("span", { class: "muted" }, ` · reports to ${a.supervisor}`) : null),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Model"), h("dd", {}, a.model || "offline mode"),
        h("dt", {}, "Last heartbeat"), h("dd", {}, ago(a.last_heartbeat), a.last_heartbeat_outcome ? h("span", { class: "muted" }, ` — ${a.last_heartbeat_outcome}`) : null),
        h("dt", {}, "Next heartbeat"), h("dd", {}, a.next_heartbeat ? ago(a.next_heartbeat) : "not scheduled"),
        h("dt", {}, "Turns today"), h("dd", {}, String(a.turns_today ?? 0)),
        ...(a.skipped_runs && a.skipped_runs.count
          ? [h("dt", {}, "Runs skipped"), h("dd", { class: "skipped" }, `${a.skipped_runs.count} in the last day, latest ${ago(a.skipped_runs.last_at)}`)]
          : []),
      ),
      runs.length ? h("details", {}, h("summary", {}, "Next scheduled runs"), h("ul", { class: "runs" }, runs)) : null,
      controls,
    );
  }

  function fillAnimaSelects() {
    for (const id of ["conv-anima", "mem-anima"]) {
      const select = $(id);
      const chosen = select.value;
      const first = id === "conv-anima" ? [h("option", { value: "" }, "all")] : [];
      clear(select, first, state.animas.map((a) => h("option", { value: a.name }, a.name)));
      if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
      else if (id === "mem-anima" && state.me && state.me.default_anima) select.value = state.me.default_anima;
    }
  }

  const ticker = [];
  // A notice in words, or null for one the ticker does not show.
  function noticeText(notice) {
    const what = {
      turn: (n) => `${n.anima}: turn ${n.state}${n.seconds !== undefined ? ` in ${n.seconds.toFixed(1)} s` : ""}${n.error ? ` (${n.error})` : ""}`,
      anima: (n) => `${n.name} ${n.paused ? "paused" : "resumed"}${n.by ? ` by ${n.by}` : ""}`,
      heartbeat: (n) => `${n.anima}: ${n.outcome}`,
      delivery: (n) => `delivery to ${n.address || "?"}: ${n.status}`,
      task: (n) => `task ${n.id} (${n.assignee}): ${n.state}`,
      platform: (n) => `${n.name} is ${n.state}`,
      model: (n) => `model ${n.name} is ${n.state}${n.reason ? ` (${n.reason})` : ""}`,
    }[notice.type];
    return what ? what(notice) : null;
  }

  function tick(notice) {
    const text = noticeText(notice);
    if (text === null) return;
    // `at`: when it happened (what was kept before the page opened); else it is now.
    const at = notice.at ? new Date(notice.at) : new Date();
    const stamp = h("time", { datetime: at.toISOString() }, at.toLocaleTimeString());
    const top = ticker[0];
    if (top && top.dataset.text === text) {
      // The same again (a platform's every failed retry): one line, its latest time, a count.
      const times = Number(top.dataset.times) + 1;
      top.dataset.times = String(times);
      top.replaceChildren(stamp, " ", text, h("span", { class: "muted" }, ` (${times} times)`));
    } else {
      ticker.unshift(h("li", { dataset: { text, times: "1" } }, stamp, " ", text));
      ticker.length = Math.min(ticker.length, 30);
    }
    clear($("ticker"), ticker);
  }

  // The "history" frame, on every (re)connection: what happened before, as this caller may
  // see it, oldest first. It replaces the ticker: a reconnection tells nothing twice.
  function showHistory(frame) {
    ticker.length = 0;
    for (const notice of frame.notices) tick(notice);
    if (!ticker.length) {
      const since = new Date(frame.since).toLocaleTimeString();
      clear($("ticker"), h("li", { class: "muted" }, `Nothing yet since the hub started (${since}): turns, heartbeats and other changes appear here as they happen.`));
    }
  }

  // Conversations ------------------------------------------------------------------

  let openConversation = "";

  async function loadConversations() {
    if (!state.animas.length) state.animas = (await api("/api/dashboard/animas")).animas;
    fillAnimaSelects();
    const form = new FormData($("conv-filter"));
    const query = new URLSearchParams();
    for (const [key, value] of form) if (value) query.set(key, value);
    const data = await api(`/api/conversations?${query}`);
    const platforms = new Set(data.conversations.map((c) => c.platform));
    const select = $("conv-platform");
    for (const p of platforms) if (![...select.options].some((o) => o.value === p)) select.append(h("option", { value: p }, p));
    clear(
      $("conv-list"),
      data.conversations.length
        ? data.conversations.map((c) =>
            h(
              "li",
              {},
              h(
                "button",
                { type: "button", class: `list-item${c.key === openConversation ? " selected" : ""}`, onclick: () => showConversation(c.key) },
                h("strong", {}, c.place), h("span", { class: "muted" }, ` · ${c.anima} · ${plural(c.turns, "turn")} · ${ago(c.last_at)}`),
                said(c.last_text || "", "excerpt"),
              ),
            ),
          )
        : h("li", { class: "muted" }, "No conversations match."),
    );
    if (openConversation) await showConversation(openConversation);
  }

  async function showConversation(key) {
    openConversation = key;
    const data = await api(`/api/conversation?key=${enc(key)}`);
    clear(
      $("conv-turns"),
      h("h2", {}, data.place),
      data.turns.map((t) =>
        h("div", { class: `turn turn-${t.role}` }, h("div", { class: "turn-meta" }, `${t.author} · ${when(t.at)}`), said(t.text, "turn-text")),
      ),
    );
  }

  $("conv-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });

  // Memory -------------------------------------------------------------------------

  function memAnima() {
    return $("mem-anima").value || (state.animas[0] && state.animas[0].name) || "";
  }

  async function loadMemory() {
    if (!state.animas.length) state.animas = (await api("/api/dashboard/animas")).animas;
    fillAnimaSelects();
    for (const button of document.querySelectorAll("[data-mem]")) button.setAttribute("aria-pressed", String(button.dataset.mem === state.memView));
    for (const pane of document.querySelectorAll(".mem-pane")) pane.hidden = pane.id !== `mem-${state.memView}`;
    const name = memAnima();
    if (!name) return;
    const loaders = { episodes: loadEpisodes, graph: loadGraph, search: loadSearch, forgotten: loadForgotten, about: loadAbout };
    await loaders[state.memView](name);
  }

  /** A memory file: its body, its front matter folded away and each section's
   * `<!-- memory: {…} -->` line left out (both are for the hub). */
  async function readInto(el, name, path) {
    const data = await api(`/api/memory/${enc(name)}/read?path=${enc(path)}`);
    const found = /^---\n([\s\S]*?)\n---\n?/.exec(data.content);
    const body = (found ? data.content.slice(found[0].length) : data.content).replace(/^<!-- memory: .*-->\n?/gm, "");
    clear(
      el,
      h("h2", {}, path),
      found ? h("details", { class: "front-matter" }, h("summary", {}, "Front matter"), h("pre", {}, found[1])) : null,
      md(body.trim(), "markdown"),
    );
  }

  /** Under a day: the signed-in person's own messages in it, each shared with the team at
   * a click (what they said in a DM stays theirs until they do; docs/people.md). The page
   * re-reads itself on live notices, so a share's outcome is kept in `state.sharing` by
   * message and shown on whichever copy of its button is on the page when it lands. */
  async function showMine(el, name, path) {
    const data = await api(`/api/memory/${enc(name)}/mine?path=${enc(path)}`);
    if (!data.messages.length) return;
    const key = (m) => `${name}\n${path}\n${m.id}`;
    const sharedMark = () => h("span", { class: "muted" }, "shared with the team");
    const buttonFor = (m) => document.querySelector(`button.share[data-key="${CSS.escape(key(m))}"]`);
    const share = async (message) => {
      state.sharing.set(key(message), "pending");
      buttonFor(message)?.setAttribute("disabled", "");
      try {
        const done = await api(`/api/memory/${enc(name)}/share`, { method: "POST", body: { path, id: message.id } });
        state.sharing.set(key(message), "shared");
        buttonFor(message)?.replaceWith(sharedMark());
        flash(done.told);
      } catch (e) {
        state.sharing.delete(key(message));
        buttonFor(message)?.removeAttribute("disabled");
        flash(e.message, "error");
      }
    };
    const item = (m) => {
      const now = m.shared ? "shared" : state.sharing.get(key(m));
      if (now === "shared") return h("li", {}, h("span", { class: "muted" }, m.section), md(m.text), sharedMark());
      const button = h("button", { type: "button", class: "share", "data-key": key(m) }, "Share with the team");
      if (now === "pending") button.disabled = true;
      button.onclick = () => share(m);
      return h("li", {}, h("span", { class: "muted" }, m.section), md(m.text), button);
    };
    el.append(
      h("section", { class: "mine", "aria-label": "Your messages" },
        h("h3", {}, "Your messages"),
        h("p", { class: "muted" }, `What you said in a DM stays between you and ${name}. Share a message to let everyone ${name} talks with know it.`),
        h("ul", { class: "list" }, data.messages.map(item)),
      ),
    );
  }

  async function loadEpisodes(name) {
    const data = await api(`/api/memory/${enc(name)}/episodes`);
    const open = (day) => {
      state.episodeDay = { name, day };
      return readInto($("episode-text"), name, `episodes/${day}.md`)
        .then(() => showMine($("episode-text"), name, `episodes/${day}.md`))
        .catch((e) => flash(e.message, "error"));
    };
    clear(
      $("episode-days"),
      data.days.length
        ? data.days.map((d) =>
            h("li", {}, h("button", { type: "button", class: "list-item", onclick: () => open(d.day) }, h("strong", {}, d.day), h("span", { class: "muted" }, ` · ${plural(d.items, "item")}`))),
          )
        : h("li", { class: "muted" }, "No episodes yet."),
    );
    // The latest day opens by itself; a day chosen stays open (and fresh) as the page re-reads.
    const chosen = state.episodeDay?.name === name && data.days.some((d) => d.day === state.episodeDay.day);
    const day = chosen ? state.episodeDay.day : data.days[0]?.day;
    if (day) await open(day);
    else clear($("episode-text"));
  }

  const LAYER_COLOURS = { knowledge: "#2451c9", procedures: "#1a7f37", missing: "#9aa4b2" };

  /** Linked notes in levels, the notes that link to nothing in a grid below them, each
   * place as large as its title: a force layout packed lone notes two to a row, their titles
   * written over each other. */
  function layoutGraph(cy) {
    const linked = cy.nodes().filter((n) => n.degree() > 0);
    const alone = cy.nodes().filter((n) => n.degree() === 0);
    let top = 0;
    let width = 600;
    if (linked.length) {
      linked.union(linked.connectedEdges()).layout({ name: "breadthfirst", animate: false, avoidOverlap: true, nodeDimensionsIncludeLabels: true, spacingFactor: 1 }).run();
      const box = linked.boundingBox({ includeLabels: true });
      top = box.y2 + 60;
      width = Math.max(width, box.w);
    }
    if (alone.length) {
      const rows = Math.ceil(alone.length / 4);
      alone.layout({ name: "grid", animate: false, avoidOverlap: true, nodeDimensionsIncludeLabels: true, condense: true, rows, boundingBox: { x1: 0, y1: top, w: width, h: rows * 90 } }).run();
    }
    cy.fit(undefined, 40);
  }

  async function loadGraph(name) {
    const data = await api(`/api/memory/${enc(name)}/graph`);
    const elements = [
      ...data.nodes.map((n) => ({ data: { id: n.id, label: n.title || n.id, layer: n.layer } })),
      ...data.edges.map((e, i) => ({ data: { id: `e${i}`, source: e.source, target: e.target } })),
    ];
    if (state.graph) state.graph.destroy();
    state.graph = null;
    if (!data.nodes.length) {
      clear($("graph"), h("p", { class: "muted" }, "No knowledge or procedures yet: they appear after consolidation."));
      return;
    }
    clear($("graph"));
    state.graph = window.cytoscape({
      container: $("graph"),
      elements,
      layout: { name: "preset" }, // placed by layoutGraph
      maxZoom: 1.6, // a few notes would otherwise fill the pane at a giant size
      minZoom: 0.2,
      style: [
        { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4, "text-wrap": "wrap", "text-max-width": "140px", width: 18, height: 18, "background-color": (n) => LAYER_COLOURS[n.data("layer")] || "#57606a" } },
        { selector: "edge", style: { width: 1.5, "line-color": "#c3cad5", "target-arrow-color": "#c3cad5", "target-arrow-shape": "triangle", "curve-style": "bezier" } },
        { selector: "node:selected", style: { "border-width": 3, "border-color": "#1f6feb" } },
      ],
    });
    layoutGraph(state.graph);
    state.graph.on("tap", "node", (event) => {
      const node = event.target;
      if (node.data("layer") === "missing") {
        clear($("note-text"), h("p", { class: "muted" }, `${node.id()} is linked to but not written yet.`));
        return;
      }
      readInto($("note-text"), name, node.id()).catch((e) => flash(e.message, "error"));
    });
  }

  async function loadSearch(name) {
    const form = new FormData($("mem-search-form"));
    const query = String(form.get("query") || "").trim();
    if (!query) {
      clear($("mem-results"), h("li", { class: "muted" }, "Ask something; each result says why it matched."));
      return;
    }
    const params = new URLSearchParams({ query, layer: String(form.get("layer") || "all"), limit: "20" });
    const data = await api(`/api/memory/${enc(name)}/search?${params}`);
    clear(
      $("mem-results"),
      data.results.length
        ? data.results.map((r) =>
            h("li", { class: "result" }, h("div", { class: "result-head" }, h("strong", {}, r.section ? `${r.path} · ${r.section}` : r.path), h("span", { class: "why" }, Array.isArray(r.why) ? r.why.join(" · ") : r.why || "")), md(r.text)),
          )
        : h("li", { class: "muted" }, "Nothing matched."),
    );
  }

  $("mem-search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });

  async function loadForgotten(name) {
    const data = await api(`/api/memory/${enc(name)}/forgotten`);
    clear(
      $("forgotten-rows"),
      data.items.length
        ? data.items.map((item) =>
            h("tr", {}, h("td", {}, item.title || item.path, h("div", { class: "muted" }, item.path)), h("td", {}, when(item.archived_at)), h("td", {}, h("button", { class: "button button-secondary", type: "button", onclick: () => act(`restore ${item.path}`, `/api/memory/${enc(name)}/restore`, { path: item.path }) }, "Restore"))),
          )
        : h("tr", {}, h("td", { colspan: "3", class: "muted" }, "Nothing has been forgotten.")),
    );
  }

  async function loadAbout() {
    const me = await api("/api/me/about");
    const learned = (me.learned || []).map((l) => h("li", {}, l.fact || l.text || JSON.stringify(l), l.anima ? h("span", { class: "muted" }, ` (${l.anima})`) : null));
    const accounts = (me.accounts || []).map((a) => h("li", {}, `${a.platform}: ${a.name || a.user_id || ""}`));
    const privates = Object.entries(me.private_memories || {}).map(([anima, n]) => `${anima}: ${n}`);
    clear(
      $("about"),
      h("dt", {}, "You are"), h("dd", {}, me.name || me.id),
      h("dt", {}, "Accounts"), h("dd", {}, accounts.length ? h("ul", {}, accounts) : "none"),
      h("dt", {}, "Learned about you"), h("dd", {}, learned.length ? h("ul", {}, learned) : "nothing yet"),
      h("dt", {}, "Kept private to you"), h("dd", {}, privates.length ? privates.join(", ") : "nothing"),
    );
  }

  for (const button of document.querySelectorAll("[data-mem]")) {
    button.addEventListener("click", () => {
      state.memView = button.dataset.mem;
      refresh();
    });
  }
  $("mem-anima").addEventListener("change", () => refresh());

  // Tasks, outbox, audit -----------------------------------------------------------

  const TASK_COLUMNS = ["todo", "running", "blocked", "review", "done", "failed", "cancelled"];

  async function loadTasks() {
    const tasks = await api("/api/tasks?limit=300");
    clear(
      $("kanban"),
      TASK_COLUMNS.map((column) => {
        const cards = tasks.filter((t) => t.state === column);
        return h(
          "section",
          { class: "column", dataset: { state: column } },
          h("h2", {}, column, h("span", { class: "count" }, String(cards.length))),
          cards.map((t) => h("article", { class: "task" }, h("strong", {}, `#${t.id} ${t.title}`), h("div", { class: "muted" }, `${t.manager} → ${t.assignee}`), t.due_at ? h("div", { class: "muted" }, `due ${when(t.due_at)}`) : null)),
        );
      }),
    );
  }

  async function loadOutbox() {
    const status = $("outbox-status").value;
    const rows = await api(`/api/deliveries?status=${enc(status)}&limit=200`);
    clear(
      $("outbox-rows"),
      rows.length
        ? rows.map((d) =>
            h(
              "tr",
              { dataset: { delivery: d.id } },
              h("td", {}, when(d.created_at)), h("td", {}, d.anima), h("td", { class: "address" }, d.address), h("td", {}, d.kind),
              h("td", {}, String(d.attempts)), h("td", { class: "error-text" }, d.error || ""),
              h(
                "td",
                { class: "row-actions" },
                d.status === "failed" ? h("button", { class: "button", type: "button", onclick: () => act("retry", `/api/deliveries/${enc(d.id)}/retry`) }, "Retry") : null,
                d.status === "failed" || d.status === "pending" ? h("button", { class: "button button-secondary", type: "button", onclick: () => act("cancel", `/api/deliveries/${enc(d.id)}/cancel`) }, "Cancel") : null,
              ),
            ),
          )
        : h("tr", {}, h("td", { colspan: "7", class: "muted" }, `No ${status} deliveries.`)),
    );
  }
  $("outbox-status").addEventListener("change", () => refresh());

  async function loadAudit() {
    const data = await api("/api/audit?limit=200");
    clear(
      $("audit-rows"),
      data.entries.length
        ? data.entries.map((e) =>
            h("tr", {}, h("td", {}, when(e.at)), h("td", {}, e.actor), h("td", {}, e.action), h("td", {}, e.target), h("td", { class: "address" }, e.where), h("td", { class: "detail" }, Object.keys(e.detail || {}).length ? JSON.stringify(e.detail) : "")),
          )
        : h("tr", {}, h("td", { colspan: "6", class: "muted" }, "Nothing audited yet: admin actions, failed deliveries and paced floods are listed here.")),
    );
  }

  // Charts -------------------------------------------------------------------------

  const PALETTE = ["#2451c9", "#1a7f37", "#bf3989", "#9a6700", "#0969da", "#8250df", "#cf222e"];

  function chart(id, config) {
    if (state.charts[id]) state.charts[id].destroy();
    state.charts[id] = new window.Chart($(id), { ...config, options: { responsive: true, maintainAspectRatio: false, animation: false, ...config.options } });
  }

  async function loadCharts() {
    const s = await api("/api/stats?days=14");
    const labels = s.days.map((d) => d.slice(5));
    const series = (obj, extra = {}) => Object.entries(obj).map(([label, data], i) => ({ label, data, backgroundColor: PALETTE[i % PALETTE.length], borderColor: PALETTE[i % PALETTE.length], ...extra }));
    chart("chart-messages", { type: "bar", data: { labels, datasets: series(s.messages) }, options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } } });
    chart("chart-latency", { type: "line", data: { labels, datasets: series(s.turn_seconds, { spanGaps: true }) }, options: { scales: { y: { beginAtZero: true } } } });
    chart("chart-memory", { type: "line", data: { labels, datasets: series(s.memory.per_day) }, options: { scales: { y: { beginAtZero: true } } } });
    chart("chart-forgotten", { type: "bar", data: { labels, datasets: series({ archived: s.forgotten }) }, options: { scales: { y: { beginAtZero: true } } } });
    const r = s.recall_ms || {};
    $("recall-figure").textContent = r.count
      ? `Recall since start: p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms over ${r.count} primings. Memory now: ${Object.entries(s.memory.layers).map(([k, v]) => `${v} ${k}`).join(", ")}.`
      : `No recall since start. Memory now: ${Object.entries(s.memory.layers).map(([k, v]) => `${v} ${k}`).join(", ") || "empty"}.`;
  }

  // ---------------------------------------------------------------------------
  // Live updates
  // ---------------------------------------------------------------------------

  // Which views a notice can change: the view shown is re-read (through the API).
  const AFFECTS = {
    turn: ["animas", "conversations", "charts", "memory"],
    anima: ["animas"],
    heartbeat: ["animas"],
    delivery: ["outbox", "animas"],
    task: ["tasks"],
    platform: ["animas"],
    model: ["animas"],
    resync: Object.keys(views),
  };

  let socket = null;
  let retryMs = 1000;
  let refreshTimer = null;

  function setLive(text, on) {
    const el = $("live");
    el.textContent = text;
    el.className = `live ${on ? "live-on" : "live-off"}`;
  }

  function connectLive() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws`);
    socket.addEventListener("open", () => {
      // A browser sets no header on a WebSocket: the credential comes in the first frame.
      if (state.token) socket.send(JSON.stringify({ token: state.token }));
      else if (pageKey()) socket.send(JSON.stringify({ page_key: pageKey() }));
    });
    socket.addEventListener("message", (event) => {
      const notice = JSON.parse(event.data);
      if (notice.type === "hello") {
        retryMs = 1000;
        setLive("live", true);
        return;
      }
      if (notice.type === "ping") return;
      if (notice.type === "history") {
        showHistory(notice);
        return;
      }
      tick(notice);
      if ((AFFECTS[notice.type] || []).includes(state.view)) {
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(refresh, 250); // a burst of notices, one re-read
      }
    });
    socket.addEventListener("close", (event) => {
      setLive(event.code === 4401 ? "signed out" : "reconnecting…", false);
      if (event.code === 4401) return;
      setTimeout(connectLive, retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    });
  }

  // ---------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------

  async function start() {
    try {
      await loadMe();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) flash(`Could not reach the hub: ${err.message}`, "error");
      return;
    }
    if (!state.started) {
      state.started = true;
      window.addEventListener("hashchange", route);
      connectLive();
    }
    route();
  }

  start();
})();
