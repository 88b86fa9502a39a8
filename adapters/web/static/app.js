/* AnimaHub web chat: a single page, no build step, no dependencies. */
"use strict";

(() => {
  // ---------------------------------------------------------------------------
  // Small helpers
  // ---------------------------------------------------------------------------

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;

  const KEYS = {
    token: "animahub.token",
    // The session's page key (hub/api/static/signin.js put it here at sign-in): a session
    // cookie counts only with it, so a cookie planted from another port is nobody.
    pageKey: "animahub.pagekey",
    last: "animahub.last",
    session: (user, anima) => `animahub.session.${enc(user)}.${enc(anima)}`,
  };

  const store = {
    get(key) {
      try {
        return window.localStorage.getItem(key);
      } catch {
        return null;
      }
    },
    set(key, value) {
      try {
        if (value === null || value === undefined || value === "") {
          window.localStorage.removeItem(key);
        } else {
          window.localStorage.setItem(key, value);
        }
      } catch {
        /* storage unavailable (private mode, quota): keep going in memory */
      }
    },
  };

  /** A random UUID; crypto.randomUUID only exists in secure contexts (https, localhost). */
  function uuid() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      try {
        return window.crypto.randomUUID();
      } catch {
        /* fall through */
      }
    }
    const b = window.crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") node.className = v;
        else if (k === "text") node.textContent = v;
        else node.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // Safe, simple markdown (the hub's /dashboard-assets/markdown.js, shared with the dashboard).
  const { renderMarkdown } = window.AnimaHubMarkdown;

  // ---------------------------------------------------------------------------
  // Server-Sent Events over fetch: frames may be split across reads, lines may
  // end in \r\n, \n or \r, and lines starting with ":" are comments (keep-alives).
  // ---------------------------------------------------------------------------

  function createSSEParser(onEvent) {
    let buffer = "";
    let pendingCR = false;

    function dispatch(frame) {
      const data = [];
      let event = "message";
      for (const line of frame.split("\n")) {
        if (line === "" || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
      }
      if (data.length) onEvent({ event, data: data.join("\n") });
    }

    return {
      push(chunk) {
        let text = pendingCR ? `\r${chunk}` : chunk;
        pendingCR = text.endsWith("\r");
        if (pendingCR) text = text.slice(0, -1); // may be the first half of \r\n
        buffer += text.replace(/\r\n?/g, "\n");
        let index;
        while ((index = buffer.indexOf("\n\n")) !== -1) {
          const frame = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          dispatch(frame);
        }
      },
      end() {
        if (pendingCR) buffer += "\n";
        pendingCR = false;
        if (buffer.trim()) dispatch(buffer);
        buffer = "";
      },
    };
  }

  // ---------------------------------------------------------------------------
  // API access, with the bearer token and a prompt on 401.
  // ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function formatDetail(detail) {
    if (detail === null || detail === undefined) return "";
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail
        .map((d) => {
          if (d && typeof d === "object" && d.msg) {
            const loc = Array.isArray(d.loc) ? d.loc.filter((p) => p !== "body").join(".") : "";
            return loc ? `${loc}: ${d.msg}` : d.msg;
          }
          return typeof d === "string" ? d : JSON.stringify(d);
        })
        .join("; ");
    }
    if (typeof detail === "object" && detail.msg) return String(detail.msg);
    return JSON.stringify(detail);
  }

  async function errorFromResponse(res) {
    let detail = "";
    try {
      const text = await res.text();
      try {
        const body = JSON.parse(text);
        detail = formatDetail(body && typeof body === "object" ? (body.detail ?? body.message ?? body.error) : body);
      } catch {
        detail = text.length < 300 ? text.trim() : "";
      }
    } catch {
      /* body unreadable */
    }
    return new ApiError(res.status, detail || `The hub answered ${res.status} ${res.statusText || ""}`.trim());
  }

  const tokenUI = {
    dialog: null,
    promise: null,
    declined: false,
  };

  /**
   * Ask the user for the API token. Concurrent callers share one prompt.
   * Resolves to the new token, or null when the user cancels.
   */
  function askToken({ reason = "", manual = false } = {}) {
    if (tokenUI.promise) return tokenUI.promise;
    const dialog = $("token-dialog");
    const input = $("token-input");
    const error = $("token-error");
    $("token-title").textContent = manual ? "API token" : "API token needed";
    error.textContent = reason;
    input.value = "";
    input.placeholder = manual && state.token ? "Leave empty to remove the stored token" : "";
    tokenUI.promise = new Promise((resolve) => {
      const finish = (value) => {
        $("token-form").removeEventListener("submit", onSubmit);
        $("token-cancel").removeEventListener("click", onCancel);
        dialog.removeEventListener("cancel", onCancel);
        if (dialog.open) dialog.close();
        tokenUI.promise = null;
        resolve(value);
      };
      const onSubmit = (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (!value && !manual) {
          error.textContent = "Enter the token to continue.";
          input.focus();
          return;
        }
        state.token = value;
        store.set(KEYS.token, value);
        tokenUI.declined = false;
        finish(value);
      };
      const onCancel = (event) => {
        event.preventDefault();
        if (!manual) tokenUI.declined = true;
        finish(null);
      };
      $("token-form").addEventListener("submit", onSubmit);
      $("token-cancel").addEventListener("click", onCancel);
      dialog.addEventListener("cancel", onCancel);
      if (typeof dialog.showModal === "function") dialog.showModal();
      else dialog.setAttribute("open", "");
      input.focus();
    });
    return tokenUI.promise;
  }

  /**
   * fetch() with the token. On 401, prompts for a token and retries. Background
   * callers (polling) do not prompt again after the user cancelled a prompt.
   */
  async function api(path, options = {}, { interactive = true } = {}) {
    for (;;) {
      const used = state.token;
      const headers = new Headers(options.headers || {});
      if (used) headers.set("Authorization", `Bearer ${used}`);
      // A session cookie rides along with any request; this header proves it is this page's.
      const pageKey = store.get(KEYS.pageKey);
      if (pageKey) headers.set("X-Page-Key", pageKey);
      const res = await fetch(path, { ...options, headers, credentials: "same-origin", cache: "no-store" });
      if (res.status !== 401) return res;
      if (state.token !== used) continue; // another request already got a new token
      if (!interactive && tokenUI.declined && !tokenUI.promise) {
        throw new ApiError(401, "This hub needs an API token.");
      }
      const token = await askToken({ reason: used ? "The hub did not accept that token." : "" });
      if (token === null) throw new ApiError(401, "This hub needs an API token.");
    }
  }

  async function apiJSON(path, options, flags) {
    const res = await api(path, options, flags);
    if (!res.ok) throw await errorFromResponse(res);
    return res.json();
  }

  function describeError(err) {
    if (err instanceof ApiError) return err.message;
    if (err && err.name === "TypeError") return "Could not reach the hub. Is it running?";
    return (err && err.message) || String(err);
  }

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------

  const state = {
    // Who the hub says this page speaks as (/api/me): the owner signed in by their link, or the
    // person the sign-in link or token is for. The page never chooses it.
    user: "",
    userName: "",
    defaultAnima: "", // /api/me: the Anima a fresh browser opens (person's own, else the hub's)
    via: "",
    token: store.get(KEYS.token) || "",
    animas: [],
    channels: [],
    current: null, // {kind: "anima" | "channel", name}
    convs: new Map(),
  };

  function conversationId(user, anima) {
    const key = KEYS.session(user, anima);
    let id = store.get(key);
    if (!id) {
      id = uuid();
      store.set(key, id);
    }
    return id;
  }

  function newSession(user, anima) {
    const id = uuid();
    store.set(KEYS.session(user, anima), id);
    return id;
  }

  /** The conversation object for a selection; anima chats are keyed by user and conversation id. */
  function convFor(sel) {
    let key;
    let id = "";
    if (sel.kind === "anima") {
      id = conversationId(state.user, sel.name);
      key = `anima\u0001${state.user}\u0001${sel.name}\u0001${id}`;
    } else {
      key = `channel\u0001${sel.name}`;
    }
    let conv = state.convs.get(key);
    if (!conv) {
      conv = {
        key,
        kind: sel.kind,
        name: sel.name,
        user: state.user,
        conversationId: id,
        items: [],
        loaded: false,
        loading: false,
        loadError: "",
        loadSeq: 0,
        streaming: false,
        polling: false,
        draft: "",
      };
      state.convs.set(key, conv);
    }
    return conv;
  }

  function currentConv() {
    return state.current ? convFor(state.current) : null;
  }

  function isCurrent(conv) {
    const cur = currentConv();
    return cur !== null && cur.key === conv.key;
  }

  function findAnima(name) {
    return state.animas.find((a) => a.name === name) || null;
  }

  function findChannel(name) {
    return state.channels.find((c) => c.name === name) || null;
  }

  function fromServer(m) {
    return {
      key: `s:${m.id}`,
      id: m.id,
      kind: m.author_kind === "anima" ? "anima" : "person",
      author: m.author || "",
      text: m.text || "",
      at: m.at || "",
      anima: m.anima || "",
      messageId: m.message_id || "",
      rev: 0,
    };
  }

  function touch(item) {
    item.rev = (item.rev || 0) + 1;
  }

  // ---------------------------------------------------------------------------
  // Rendering: sidebar
  // ---------------------------------------------------------------------------

  const els = {};

  function renderSidebar() {
    const animaList = els.animaList;
    animaList.replaceChildren();
    for (const anima of state.animas) {
      const selected = state.current && state.current.kind === "anima" && state.current.name === anima.name;
      const offline = anima.model === "";
      const button = el(
        "button",
        {
          type: "button",
          class: "nav-item",
          "aria-current": selected ? "true" : null,
          title: anima.summary || null,
        },
        avatar(anima.name, "anima"),
        el(
          "span",
          { class: "nav-item-text" },
          el("span", { class: "nav-item-name", text: anima.name }),
          anima.title || anima.role ? el("span", { class: "nav-item-sub", text: anima.title || anima.role }) : null,
        ),
        offline ? el("span", { class: "badge badge-offline", text: "offline mode" }) : null,
      );
      button.addEventListener("click", () => select({ kind: "anima", name: anima.name }, { focusComposer: true }));
      animaList.append(el("li", null, button));
    }

    const channelList = els.channelList;
    channelList.replaceChildren();
    for (const channel of state.channels) {
      const selected =
        state.current && state.current.kind === "channel" && state.current.name === channel.name;
      const button = el(
        "button",
        {
          type: "button",
          class: "nav-item nav-item-channel",
          "aria-current": selected ? "true" : null,
          title: channel.address || null,
        },
        el("span", { class: "channel-hash", "aria-hidden": "true", text: "#" }),
        el("span", { class: "nav-item-text" }, el("span", { class: "nav-item-name", text: channel.name })),
      );
      button.setAttribute("aria-label", `Channel ${channel.name}`);
      button.addEventListener("click", () => select({ kind: "channel", name: channel.name }, { focusComposer: true }));
      channelList.append(el("li", null, button));
    }
  }

  const AVATAR_COLORS = ["#2f5fd0", "#0f7b6c", "#9a4dc9", "#c2410c", "#b42357", "#4b5fa8", "#2c7a3f", "#8a5a00"];

  function avatar(name, kind) {
    const label = String(name || "?").trim();
    let hash = 0;
    for (const ch of label) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    const node = el("span", {
      class: `avatar avatar-${kind}`,
      "aria-hidden": "true",
      text: (label[0] || "?").toUpperCase(),
    });
    node.style.setProperty("--avatar-bg", AVATAR_COLORS[hash % AVATAR_COLORS.length]);
    return node;
  }

  // ---------------------------------------------------------------------------
  // Rendering: conversation
  // ---------------------------------------------------------------------------

  const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
  const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short" });

  function timeElement(at) {
    if (!at) return null;
    const date = new Date(at);
    if (Number.isNaN(date.getTime())) return null;
    const today = new Date();
    const sameDay = date.toDateString() === today.toDateString();
    return el("time", {
      datetime: date.toISOString(),
      title: fullFormat.format(date),
      text: sameDay ? timeFormat.format(date) : dateTimeFormat.format(date),
    });
  }

  function isMine(conv, item) {
    if (item.kind !== "person") return false;
    if (conv.kind === "anima") return true;
    const a = String(item.author || "").toLowerCase();
    const mine = [state.user, state.userName].filter(Boolean).map((u) => u.toLowerCase());
    return mine.some((u) => a === u || a.endsWith(`:${u}`)) || item.local === true;
  }

  function buildItem(conv, item) {
    const node = el("div", { class: "msg" });
    node.dataset.key = item.key;
    fillItem(conv, node, item);
    return node;
  }

  function fillItem(conv, node, item) {
    node._rev = item.rev;
    node.replaceChildren();
    if (item.kind === "error") {
      node.className = "msg msg-error";
      node.append(
        el(
          "div",
          { class: "error-box" },
          el("span", { class: "error-icon", "aria-hidden": "true", text: "!" }),
          el("span", { class: "visually-hidden", text: "Error: " }),
          el("span", { class: "error-text", text: item.text }),
        ),
      );
      return;
    }
    const mine = isMine(conv, item);
    const side = mine ? "msg-mine" : item.kind === "anima" ? "msg-anima" : "msg-other";
    node.className = `msg ${side}${item.pending ? " msg-pending" : ""}${item.failed ? " msg-failed" : ""}`;

    const meta = el("div", { class: "msg-meta" });
    const author = mine ? "You" : item.author || (item.kind === "anima" ? conv.name : "someone");
    meta.append(el("span", { class: mine ? "msg-author visually-hidden" : "msg-author", text: author }));
    const time = timeElement(item.at);
    if (time) meta.append(time);
    if (item.pending) meta.append(el("span", { class: "msg-state", text: "sending…" }));
    if (item.failed) meta.append(el("span", { class: "msg-state msg-state-failed", text: "not sent" }));
    if (item.private) meta.append(el("span", { class: "msg-state", text: "only you can see this" }));

    const bubble = el("div", { class: "bubble" });
    if (item.typing) {
      bubble.classList.add("bubble-typing");
      bubble.append(
        el(
          "span",
          { class: "typing", role: "img", "aria-label": `${author} is typing` },
          el("span", { class: "dot" }),
          el("span", { class: "dot" }),
          el("span", { class: "dot" }),
        ),
      );
      // The model has not started answering yet: said in words, not only by the dots.
      if (item.waiting) bubble.append(el("span", { class: "typing-note", role: "status", text: item.waiting }));
    } else {
      const body = el("div", { class: "md" });
      body.innerHTML = renderMarkdown(item.text); // escaped inside renderMarkdown
      bubble.append(body);
      if (item.streaming) bubble.append(el("span", { class: "caret", "aria-hidden": "true" }));
      if (item.interrupted) {
        bubble.append(el("p", { class: "msg-note", text: "The reply was cut off before it finished." }));
      }
    }

    const column = el("div", { class: "msg-body" }, meta, bubble);
    if (mine) node.append(column);
    else node.append(avatar(author, item.kind === "anima" ? "anima" : "person"), column);
  }

  function nearBottom() {
    const list = els.messages;
    return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  }

  function scrollToBottom() {
    els.messages.scrollTop = els.messages.scrollHeight;
  }

  /** Bring the message list in line with conv.items, reusing unchanged nodes. */
  function renderMessages(conv, { forceScroll = false, quiet = false } = {}) {
    if (!isCurrent(conv)) return;
    const list = els.messages;
    const stick = forceScroll || nearBottom();
    if (quiet) list.setAttribute("aria-live", "off");

    for (const node of Array.from(list.children)) if (!node.dataset.key) node.remove();
    const existing = new Map();
    for (const node of list.children) existing.set(node.dataset.key, node);

    let prev = null;
    for (const item of conv.items) {
      let node = existing.get(item.key);
      if (node) {
        existing.delete(item.key);
        if (node._rev !== item.rev) fillItem(conv, node, item);
      } else {
        node = buildItem(conv, item);
      }
      const expected = prev ? prev.nextSibling : list.firstChild;
      if (expected !== node) list.insertBefore(node, expected);
      prev = node;
    }
    for (const node of existing.values()) node.remove();

    if (conv.items.length === 0) list.append(placeholder(conv));
    else if (conv.loadError) list.append(loadErrorNode(conv));

    list.setAttribute("aria-busy", conv.streaming ? "true" : "false");
    if (stick) scrollToBottom();
    if (quiet) requestAnimationFrame(() => list.setAttribute("aria-live", "polite"));
  }

  function placeholder(conv) {
    if (conv.loadError) return loadErrorNode(conv);
    if (conv.loading && !conv.loaded) {
      return el("div", { class: "empty-state" }, el("p", { class: "loading", text: "Loading…" }));
    }
    if (conv.kind === "anima") {
      const anima = findAnima(conv.name);
      return el(
        "div",
        { class: "empty-state" },
        avatar(conv.name, "anima"),
        el("p", { class: "empty-title", text: `Start a conversation with ${conv.name}` }),
        anima && anima.summary ? el("p", { class: "empty-sub", text: anima.summary }) : null,
      );
    }
    return el(
      "div",
      { class: "empty-state" },
      el("p", { class: "empty-title", text: `#${conv.name} has no posts yet` }),
      el("p", { class: "empty-sub", text: "Animas post their heartbeats and reports here." }),
    );
  }

  function loadErrorNode(conv) {
    const retry = el("button", { type: "button", class: "button button-secondary", text: "Try again" });
    retry.addEventListener("click", () => {
      conv.loadError = "";
      if (conv.kind === "anima") loadHistory(conv);
      else pollChannel(conv, { interactive: true });
    });
    return el(
      "div",
      { class: "empty-state empty-error" },
      el("p", { class: "error-text", text: conv.loadError }),
      retry,
    );
  }

  function renderHeader() {
    const conv = currentConv();
    const title = els.title;
    const subtitle = els.subtitle;
    els.offlineBanner.hidden = true;
    els.newConversation.hidden = true;
    if (!conv || conv.kind !== "anima") {
      els.pastConversations.hidden = true;
      els.conversationSearch.hidden = true;
    }
    if (!conv) {
      title.textContent = "AnimaHub";
      subtitle.textContent = "";
      document.title = "AnimaHub";
      els.menuLabel.textContent = "Menu";
      return;
    }
    if (conv.kind === "anima") {
      const anima = findAnima(conv.name);
      title.textContent = conv.name;
      const parts = [];
      if (anima && (anima.title || anima.role)) parts.push(anima.title || anima.role);
      if (anima && anima.supervisor) parts.push(`reports to ${anima.supervisor}`);
      subtitle.textContent = parts.join(" · ");
      subtitle.title = (anima && anima.summary) || "";
      els.offlineBanner.hidden = !(anima && anima.model === "");
      els.newConversation.hidden = false;
      els.newConversation.disabled = conv.streaming;
      document.title = `${conv.name} · AnimaHub`;
      els.menuLabel.textContent = conv.name;
    } else {
      const channel = findChannel(conv.name);
      title.textContent = `#${conv.name}`;
      subtitle.textContent = channel && channel.address ? channel.address : "";
      subtitle.title = "";
      document.title = `#${conv.name} · AnimaHub`;
      els.menuLabel.textContent = `#${conv.name}`;
    }
  }

  function renderComposer() {
    const conv = currentConv();
    const input = els.input;
    input.disabled = !conv;
    els.send.disabled = !conv || conv.streaming;
    if (!conv) {
      input.placeholder = "Choose an Anima or a channel";
      els.composerLabel.textContent = "Message";
      return;
    }
    const target = conv.kind === "anima" ? conv.name : `#${conv.name}`;
    input.placeholder = conv.streaming ? `${conv.name} is replying…` : `Message ${target}`;
    els.composerLabel.textContent = `Message ${target}`;
    els.send.setAttribute("aria-label", conv.streaming ? `Send (waiting for ${conv.name})` : "Send");
  }

  function autosize() {
    const input = els.input;
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 220)}px`;
  }

  // ---------------------------------------------------------------------------
  // Loading
  // ---------------------------------------------------------------------------

  async function loadAnimas() {
    els.animaStatus.textContent = "Loading…";
    try {
      const data = await apiJSON("/api/animas");
      state.animas = Array.isArray(data) ? data.filter((a) => a && typeof a.name === "string") : [];
      els.animaStatus.textContent = state.animas.length ? "" : "No Animas yet.";
    } catch (err) {
      state.animas = [];
      els.animaStatus.textContent = `Couldn't load Animas: ${describeError(err)}`;
    }
  }

  async function loadChannels() {
    els.channelStatus.textContent = "Loading…";
    try {
      const data = await apiJSON("/api/channels");
      state.channels = Array.isArray(data) ? data.filter((c) => c && typeof c.name === "string") : [];
      els.channelStatus.textContent = state.channels.length ? "" : "No channels.";
    } catch (err) {
      state.channels = [];
      els.channelStatus.textContent = `Couldn't load channels: ${describeError(err)}`;
    }
  }

  async function loadHistory(conv) {
    const seq = ++conv.loadSeq;
    conv.loading = true;
    conv.loadError = "";
    renderMessages(conv);
    const query = `conversation_id=${enc(conv.conversationId)}`;
    try {
      const data = await apiJSON(`/api/chat/${enc(conv.name)}/history?${query}`);
      if (seq !== conv.loadSeq) return;
      const messages = Array.isArray(data && data.messages) ? data.messages : [];
      if (!conv.streaming) {
        // The server is the record; keep only local items that are still on their way.
        const server = messages.map(fromServer);
        conv.items = server.concat(conv.items.filter((i) => i.local && (i.pending || i.streaming)));
      }
      conv.loaded = true;
    } catch (err) {
      if (seq !== conv.loadSeq) return;
      conv.loadError = `Couldn't load the conversation: ${describeError(err)}`;
    } finally {
      if (seq === conv.loadSeq) conv.loading = false;
    }
    renderMessages(conv, { forceScroll: true, quiet: true });
  }

  /** What reached a conversation without this page asking (a task's report, a heartbeat in
   * a DM): the server's messages this page does not show yet, less the ones it shows as its
   * own (what it sent, and the replies it streamed). */
  async function refreshHistory(conv) {
    if (conv.polling || conv.streaming || !conv.loaded) return;
    conv.polling = true;
    try {
      const data = await apiJSON(`/api/chat/${enc(conv.name)}/history?conversation_id=${enc(conv.conversationId)}`);
      const messages = Array.isArray(data && data.messages) ? data.messages : [];
      if (conv.streaming) return;
      const sameText = (a, b) => String(a.text).trim() === String(b.text).trim();
      const same = (a, b) => a.kind === b.kind && sameText(a, b);
      const shown = new Set(conv.items.map((i) => i.key));
      const fresh = [];
      let kept = false;
      for (const m of messages.map(fromServer)) {
        if (shown.has(m.key)) continue;
        // What this page sent, known by its id: shown as the hub keeps it (a pasted secret
        // redacted), not added a second time beside it.
        const sent = m.messageId
          ? conv.items.findIndex((i) => i.local && i.kind === "person" && i.id === m.messageId)
          : -1;
        if (sent !== -1) {
          conv.items[sent] = m;
          kept = true;
        } else if (!conv.items.some((i) => i.local && same(i, m))) fresh.push(m);
      }
      for (const m of fresh) {
        // The hub also delivers some of what the stream reported as an error (a paused
        // Anima's notice): its message takes the error's place, so it is said once.
        const told = conv.items.findIndex((i) => i.kind === "error" && i.local && sameText(i, m));
        if (told === -1 || m.kind !== "anima") conv.items.push(m);
        else conv.items[told] = m;
      }
      if (fresh.length || kept) renderMessages(conv, { quiet: true });
    } catch (err) {
      // The next poll tries again; a failure here is not worth interrupting the person.
    } finally {
      conv.polling = false;
    }
  }

  /** Whether a post the server lists is the one this browser sent (and shows as local). */
  function samePost(local, server, isNew) {
    if (local.serverId !== undefined && local.serverId !== null && String(local.serverId) === String(server.id)) {
      return true;
    }
    // Fallback when ids differ: a new post of mine with the same text.
    return isNew && server.kind === "person" && server.text === local.text && isMine({ kind: "channel" }, server);
  }

  async function pollChannel(conv, { interactive = false } = {}) {
    if (conv.polling) return;
    conv.polling = true;
    const first = !conv.loaded;
    if (first) {
      conv.loading = true;
      renderMessages(conv);
    }
    try {
      const data = await apiJSON(`/api/channels/${enc(conv.name)}/posts?limit=100`, {}, { interactive });
      const server = (Array.isArray(data && data.posts) ? data.posts : []).map(fromServer);
      const previous = new Map(conv.items.map((i) => [i.key, i]));
      // Reuse unchanged items so their nodes are kept.
      const merged = server.map((s) => {
        const old = previous.get(s.key);
        if (old && old.text === s.text && old.author === s.author && old.at === s.at) return old;
        return s;
      });
      const claimed = new Set();
      const locals = conv.items.filter((i) => {
        if (!i.local || !i.sticky) return false;
        if (i.kind !== "person" || i.failed) return true;
        const match = server.find((s) => !claimed.has(s.key) && samePost(i, s, !previous.has(s.key)));
        if (match) claimed.add(match.key);
        return !match;
      });
      conv.items = merged.concat(locals);
      conv.loaded = true;
      conv.loadError = "";
    } catch (err) {
      if (first || interactive) conv.loadError = `Couldn't load #${conv.name}: ${describeError(err)}`;
    } finally {
      conv.loading = false;
      conv.polling = false;
    }
    renderMessages(conv, { forceScroll: first, quiet: first });
  }

  // ---------------------------------------------------------------------------
  // Selecting a conversation
  // ---------------------------------------------------------------------------

  function selectionHash(sel) {
    return `#${sel.kind}/${enc(sel.name)}`;
  }

  function parseHash(hash) {
    const m = /^#(anima|channel)\/(.+)$/.exec(hash || "");
    if (!m) return null;
    try {
      return { kind: m[1], name: decodeURIComponent(m[2]) };
    } catch {
      return null;
    }
  }

  function exists(sel) {
    return sel && (sel.kind === "anima" ? findAnima(sel.name) : findChannel(sel.name)) !== null;
  }

  /** The person's earlier conversations with this Anima, as the hub stores them (so any
   * browser or device lists them), to go back to one after "New conversation". */
  async function loadSessions(conv, query = "") {
    if (!query) els.pastConversations.hidden = true;
    let data;
    try {
      const q = query ? `?q=${enc(query)}` : "";
      data = await apiJSON(`/api/chat/${enc(conv.name)}/conversations${q}`);
    } catch (err) {
      return; // a convenience: the chat itself works without the list
    }
    // Only the answer to what the box says now: a later keystroke's search replaces it.
    if (!isCurrent(conv) || query !== els.conversationSearch.value.trim()) return;
    const past = Array.isArray(data && data.conversations) ? data.conversations : [];
    const current = conversationId(state.user, conv.name);
    const options = past.map((s) =>
      el("option", { value: s.thread, text: `${new Date(s.last_at).toLocaleString()} · ${s.first_text}` }),
    );
    if (query) {
      // The hub searched what was said in each conversation, the Anima's replies included.
      const found = past.length
        ? `${past.length} ${past.length === 1 ? "conversation" : "conversations"} with “${query}”`
        : `No conversation with “${query}”`;
      options.unshift(el("option", { value: "", text: found }));
      els.pastConversations.replaceChildren(...options);
      els.pastConversations.value = "";
      els.pastConversations.hidden = false;
      return;
    }
    if (!past.some((s) => s.thread === current)) {
      options.unshift(el("option", { value: current, text: "This new conversation" }));
    }
    els.pastConversations.replaceChildren(...options);
    els.pastConversations.value = current;
    els.pastConversations.hidden = past.length === 0;
    els.conversationSearch.hidden = past.length === 0;
  }

  let searchTimer = 0;
  function searchSessions() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      const conv = currentConv();
      if (conv && conv.kind === "anima") loadSessions(conv, els.conversationSearch.value.trim());
    }, 250);
  }

  function select(sel, { focusComposer = false } = {}) {
    const previous = currentConv();
    if (previous) previous.draft = els.input.value;

    state.current = sel;
    store.set(KEYS.last, `${sel.kind}/${sel.name}`);
    const hash = selectionHash(sel);
    if (location.hash !== hash) history.replaceState(null, "", hash);

    const conv = currentConv();
    els.messages.replaceChildren();
    els.input.value = conv.draft || "";
    autosize();
    setMenuOpen(false);
    renderSidebar();
    renderHeader();
    renderComposer();

    if (conv.kind === "anima") {
      if (conv.streaming) renderMessages(conv, { forceScroll: true, quiet: true });
      else loadHistory(conv);
      els.conversationSearch.value = "";
      loadSessions(conv);
    } else {
      renderMessages(conv, { forceScroll: true, quiet: true });
      pollChannel(conv, { interactive: true });
    }
    if (focusComposer && window.matchMedia("(min-width: 721px)").matches) els.input.focus();
  }

  // ---------------------------------------------------------------------------
  // Sending
  // ---------------------------------------------------------------------------

  async function sendToAnima(conv, text) {
    const messageId = uuid();
    const mine = {
      key: `l:${messageId}`,
      id: messageId,
      kind: "person",
      author: state.userName || conv.user,
      text,
      at: new Date().toISOString(),
      local: true,
      rev: 0,
    };
    const reply = {
      key: `l:reply:${messageId}`,
      kind: "anima",
      author: conv.name,
      text: "",
      at: "",
      local: true,
      streaming: true,
      typing: true,
      rev: 0,
    };
    conv.items.push(mine, reply);
    conv.streaming = true;
    refreshIfCurrent(conv, { forceScroll: true });

    const fail = (message) => {
      conv.items.push({ key: `l:err:${uuid()}`, kind: "error", text: message, local: true, rev: 0 });
    };

    let finished = false;
    let failed = false;
    let lastPaint = 0;
    let paintTimer = 0;
    const paint = () => {
      paintTimer = 0;
      lastPaint = performance.now();
      touch(reply);
      if (isCurrent(conv)) renderMessages(conv);
    };
    const schedulePaint = () => {
      if (paintTimer) return;
      const wait = Math.max(0, 40 - (performance.now() - lastPaint));
      paintTimer = window.setTimeout(paint, wait);
    };

    const handle = ({ event, data }) => {
      let payload;
      try {
        payload = JSON.parse(data);
      } catch {
        return; // not JSON: ignore
      }
      const type = (payload && payload.type) || event;
      if (type === "text") {
        const piece = typeof payload.text === "string" ? payload.text : "";
        if (!piece) return;
        if (reply.typing) {
          reply.typing = false;
          reply.waiting = "";
          reply.at = new Date().toISOString();
        }
        reply.text += piece;
        schedulePaint();
      } else if (type === "waiting") {
        reply.waiting = formatDetail(payload.message) || "Still waiting for the model…";
        schedulePaint();
      } else if (type === "delayed") {
        // The model failed; the hub tries again and the answer comes later in this stream.
        // What was shown of this attempt goes; the notice (said once) stays above the reply.
        reply.text = "";
        reply.typing = true;
        reply.waiting = "";
        const notice = formatDetail(payload.message);
        if (notice) {
          const item = { key: `l:err:${uuid()}`, kind: "error", text: notice, local: true, rev: 0 };
          conv.items.splice(conv.items.indexOf(reply), 0, item);
        }
        schedulePaint();
      } else if (type === "done") {
        finished = true;
      } else if (type === "error") {
        failed = true;
        fail(formatDetail(payload.message ?? payload.detail) || `${conv.name} could not answer.`);
      }
    };

    try {
      const res = await api(`/api/chat/${enc(conv.name)}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ message: text, conversation_id: conv.conversationId, message_id: messageId }),
      });
      if (!res.ok) throw await errorFromResponse(res);
      const parser = createSSEParser(handle);
      if (res.body && typeof res.body.getReader === "function") {
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(decoder.decode(value, { stream: true }));
          if (finished || failed) {
            // The reply is complete; let the server close the stream on its own time.
            drain(reader);
            break;
          }
        }
        parser.push(decoder.decode());
      } else {
        parser.push(await res.text());
      }
      parser.end();
      if (!finished && !failed) {
        if (reply.text) reply.interrupted = true;
        else fail(`The connection closed before ${conv.name} answered.`);
      }
    } catch (err) {
      failed = true;
      if (err instanceof ApiError) fail(`Couldn't send (${err.status}): ${err.message}`);
      else fail(describeError(err));
    } finally {
      if (paintTimer) window.clearTimeout(paintTimer);
      reply.streaming = false;
      reply.typing = false;
      touch(reply);
      if (!reply.text) conv.items = conv.items.filter((i) => i !== reply);
      conv.streaming = false;
      refreshIfCurrent(conv);
    }
  }

  async function drain(reader) {
    try {
      while (!(await reader.read()).done) {
        /* discard */
      }
    } catch {
      /* connection closed */
    }
  }

  async function postToChannel(conv, text) {
    const localId = uuid();
    const item = {
      key: `l:${localId}`,
      kind: "person",
      author: state.userName || state.user,
      text,
      at: new Date().toISOString(),
      local: true,
      sticky: true,
      pending: true,
      rev: 0,
    };
    conv.items.push(item);
    refreshIfCurrent(conv, { forceScroll: true });
    try {
      const res = await api(`/api/channels/${enc(conv.name)}/posts`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text, message_id: localId }),
      });
      if (!res.ok) throw await errorFromResponse(res);
      const data = await res.json().catch(() => ({}));
      item.serverId = data && data.id !== undefined ? data.id : null;
      item.pending = false; // accepted; stays shown until the server lists it
      touch(item);
      if (data && data.reply) {
        // A hub command (/anima …, /whoami): neither it nor its answer is posted, as on
        // Slack; both stay on this page only, and say so.
        item.private = true;
        conv.items.push({
          private: true,
          key: `l:reply:${localId}`,
          kind: "anima",
          author: "hub",
          text: data.reply,
          at: new Date().toISOString(),
          local: true,
          sticky: true,
          rev: 0,
        });
        refreshIfCurrent(conv, { forceScroll: true });
      }
    } catch (err) {
      item.pending = false;
      item.failed = true;
      touch(item);
      const message =
        err instanceof ApiError ? `Couldn't post (${err.status}): ${err.message}` : describeError(err);
      conv.items.push({ key: `l:err:${uuid()}`, kind: "error", text: message, local: true, sticky: true, rev: 0 });
      refreshIfCurrent(conv);
      return;
    }
    await pollChannel(conv);
  }

  function refreshIfCurrent(conv, opts) {
    if (!isCurrent(conv)) return;
    renderMessages(conv, opts);
    renderHeader();
    renderComposer();
  }

  function submit() {
    const conv = currentConv();
    if (!conv || conv.streaming) return;
    const text = els.input.value;
    if (!text.trim()) {
      els.input.focus();
      return;
    }
    els.input.value = "";
    conv.draft = "";
    autosize();
    if (conv.kind === "anima") sendToAnima(conv, text);
    else postToChannel(conv, text);
    els.input.focus();
  }

  // ---------------------------------------------------------------------------
  // Sidebar on small screens
  // ---------------------------------------------------------------------------

  function setMenuOpen(open) {
    els.app.classList.toggle("menu-open", open);
    els.menuToggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  // ---------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------

  /** Who the hub says this page speaks as; shown in the sidebar. */
  async function loadMe() {
    try {
      const me = await apiJSON("/api/me");
      const changed = me.id !== state.user;
      state.user = me.id;
      state.userName = me.name || me.id;
      state.via = me.via || "";
      state.defaultAnima = me.default_anima || "";
      if (changed) state.convs.clear();
    } catch (err) {
      state.user = "";
      state.userName = "";
      els.userName.textContent = `not signed in (${describeError(err)})`;
      els.signOut.hidden = true;
      return;
    }
    const how = { owner: "the hub's owner", "admin token": "admin token", token: "API token", session: "" };
    els.userName.textContent = state.userName;
    els.userVia.textContent = how[state.via] || "";
    // A session (the owner's too) signs out; a pasted token is removed in its dialog.
    els.signOut.hidden = Boolean(state.token) || !store.get(KEYS.pageKey);
  }

  function fillList(list, items, empty) {
    list.replaceChildren(...(items.length ? items : [empty]).map((text) => el("li", { text })));
  }

  /** "About me": the person's accounts, what the Animas learned, private memories. */
  async function showAbout() {
    els.aboutStatus.textContent = "";
    try {
      const about = await apiJSON("/api/me/about");
      els.aboutName.textContent = `${about.name} (${about.id})`;
      fillList(els.aboutAccounts, about.accounts.map((a) => `${a.platform}: ${a.name || a.user_id}`), "none");
      const learned = about.learned.map((l) =>
        l.anima ? `${l.fact} (${l.anima}, ${l.day}${l.in_dm ? ", in a DM" : ""})` : l.fact,
      );
      fillList(els.aboutLearned, learned, "nothing yet");
      const kept = Object.entries(about.private_memories).map(([anima, n]) => `${anima}: ${n}`);
      els.aboutPrivate.textContent = kept.length ? kept.join(", ") : "nothing";
    } catch (err) {
      els.aboutStatus.textContent = describeError(err);
    }
    els.aboutDialog.showModal();
  }

  async function forgetMe() {
    const sure = window.confirm(
      "Delete what the Animas keep private to you, what they learned about you and your DM " +
        "conversations, on every platform you are linked on? This cannot be undone.",
    );
    if (!sure) return;
    try {
      const gone = await apiJSON("/api/me/forget", { method: "POST" });
      const total = Object.values(gone.memories).reduce((a, b) => a + b, 0);
      state.convs.clear();
      await showAbout();
      els.aboutStatus.textContent = `Forgotten: ${total} memories, ${gone.facts} facts, ${gone.turns} DM turns.`;
    } catch (err) {
      els.aboutStatus.textContent = describeError(err);
    }
  }

  async function signOut() {
    await api("/api/signout", { method: "POST" }).catch(() => null);
    store.set(KEYS.pageKey, null);
    window.location.reload();
  }

  let pollTimer = 0;
  function schedulePoll() {
    window.clearTimeout(pollTimer);
    pollTimer = window.setTimeout(async () => {
      const conv = currentConv();
      if (conv && conv.kind === "channel" && !document.hidden) await pollChannel(conv);
      else if (conv && conv.kind === "anima" && !document.hidden) await refreshHistory(conv);
      schedulePoll();
    }, 3000);
  }

  function chooseInitial() {
    const fromHash = parseHash(location.hash);
    if (exists(fromHash)) return fromHash;
    const last = store.get(KEYS.last);
    if (last) {
      const slash = last.indexOf("/");
      const sel = { kind: last.slice(0, slash), name: last.slice(slash + 1) };
      if (exists(sel)) return sel;
    }
    const preferred = { kind: "anima", name: state.defaultAnima || "" };
    if (exists(preferred)) return preferred; // the configured default, not the first by name
    if (state.animas.length) return { kind: "anima", name: state.animas[0].name };
    if (state.channels.length) return { kind: "channel", name: state.channels[0].name };
    return null;
  }

  async function reloadAll() {
    await loadMe();
    await Promise.all([loadAnimas(), loadChannels()]);
    renderSidebar();
    const sel = state.current && exists(state.current) ? state.current : chooseInitial();
    if (sel) {
      select(sel);
    } else {
      state.current = null;
      renderHeader();
      renderComposer();
      els.messages.replaceChildren(
        el("div", { class: "empty-state" }, el("p", { text: "Nothing to show yet." })),
      );
    }
  }

  function init() {
    Object.assign(els, {
      app: document.querySelector(".app"),
      animaList: $("anima-list"),
      channelList: $("channel-list"),
      animaStatus: $("anima-status"),
      channelStatus: $("channel-status"),
      userName: $("user-name"),
      userVia: $("user-via"),
      signOut: $("signout-button"),
      aboutButton: $("about-button"),
      aboutDialog: $("about-dialog"),
      aboutName: $("about-name"),
      aboutAccounts: $("about-accounts"),
      aboutLearned: $("about-learned"),
      aboutPrivate: $("about-private"),
      aboutStatus: $("about-status"),
      aboutForget: $("about-forget"),
      title: $("conv-title"),
      subtitle: $("conv-subtitle"),
      offlineBanner: $("offline-banner"),
      newConversation: $("new-conversation"),
      pastConversations: $("past-conversations"),
      conversationSearch: $("conversation-search"),
      messages: $("messages"),
      composer: $("composer"),
      composerLabel: $("composer-label"),
      input: $("composer-input"),
      send: $("send-button"),
      menuToggle: $("menu-toggle"),
      menuLabel: $("menu-toggle-label"),
    });

    els.signOut.addEventListener("click", signOut);
    els.aboutButton.addEventListener("click", showAbout);
    els.aboutForget.addEventListener("click", forgetMe);

    els.composer.addEventListener("submit", (event) => {
      event.preventDefault();
      submit();
    });
    els.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
        event.preventDefault();
        submit();
      }
    });
    els.input.addEventListener("input", autosize);

    els.conversationSearch.addEventListener("input", searchSessions);
    els.pastConversations.addEventListener("change", () => {
      const conv = currentConv();
      if (!conv || conv.kind !== "anima" || conv.streaming) return;
      if (!els.pastConversations.value) return; // the search's "found" line
      store.set(KEYS.session(state.user, conv.name), els.pastConversations.value);
      select({ kind: "anima", name: conv.name });
    });

    els.newConversation.addEventListener("click", () => {
      const conv = currentConv();
      if (!conv || conv.kind !== "anima" || conv.streaming) return;
      const typed = els.input.value;
      newSession(state.user, conv.name);
      select({ kind: "anima", name: conv.name });
      conv.draft = "";
      els.input.value = typed;
      autosize();
      els.input.focus();
    });

    els.menuToggle.addEventListener("click", () => {
      setMenuOpen(els.menuToggle.getAttribute("aria-expanded") !== "true");
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && els.app.classList.contains("menu-open")) {
        setMenuOpen(false);
        els.menuToggle.focus();
      }
    });

    $("token-button").addEventListener("click", async () => {
      tokenUI.declined = false;
      const token = await askToken({ manual: true });
      if (token !== null) await reloadAll();
    });

    window.addEventListener("hashchange", () => {
      const sel = parseHash(location.hash);
      if (exists(sel)) select(sel);
    });
    document.addEventListener("visibilitychange", () => {
      const conv = currentConv();
      if (!document.hidden && conv && conv.kind === "channel") pollChannel(conv);
    });

    renderHeader();
    renderComposer();
    reloadAll();
    schedulePoll();
  }

  // Exposed for tests in a browser console; not used by the page itself.
  window.AnimaHubChat = { renderMarkdown, createSSEParser };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
