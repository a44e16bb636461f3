// WorkRail console: live updates (Server-Sent Events, polling fallback, pause toggle) and
// the node panel. Plain JavaScript, no library; the server renders every page, this only
// re-fetches a page and swaps the regions marked data-live.
(() => {
  "use strict";
  const body = document.body;
  const liveUrl = body.dataset.liveUrl;
  const toggle = document.getElementById("live-toggle");
  const PAUSE_KEY = "workrail.console.paused";
  const POLL_MS = 3000;
  const STREAM_RETRY_MS = 30000;
  let paused = localStorage.getItem(PAUSE_KEY) === "1";
  let source = null;
  let pollTimer = null;
  let retryTimer = null;
  let failures = 0;
  let refreshing = false;
  let again = false;

  function setState(state, label) {
    body.dataset.liveState = state;
    if (!toggle) return;
    toggle.dataset.state = state;
    toggle.querySelector(".label").textContent = label;
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
  }

  function parse(text) {
    return new DOMParser().parseFromString(text, "text/html");
  }

  function swapRegions(doc) {
    const open = new Set(
      [...document.querySelectorAll("details[open][data-fold-id]")].map((d) => d.dataset.foldId),
    );
    for (const el of document.querySelectorAll("[data-live][id]")) {
      const fresh = doc.getElementById(el.id);
      if (fresh) el.replaceWith(document.importNode(fresh, true));
    }
    for (const d of document.querySelectorAll("details[data-fold-id]")) {
      if (open.has(d.dataset.foldId)) d.open = true;
    }
  }

  // A fold's steps come with the page only when asked for (?open=<first node id>): a
  // 2,000-step run's page is a few lines. Opening a fold fetches them; a refresh asks for
  // the folds already opened, so they stay open and filled.
  function loadedFolds() {
    return [...document.querySelectorAll("details[open][data-fold-id]")]
      .filter((d) => !d.querySelector(":scope > ol[data-fold-body]"))
      .map((d) => d.dataset.foldId);
  }

  function withOpenFolds(href, extra) {
    const url = new URL(href);
    url.hash = "";
    const open = new Set(url.searchParams.getAll("open"));
    for (const id of [...loadedFolds(), ...(extra ? [extra] : [])]) {
      if (!open.has(id)) url.searchParams.append("open", id);
      open.add(id);
    }
    return url.toString();
  }

  async function loadFold(details) {
    const placeholder = details.querySelector(":scope > ol[data-fold-body]");
    if (!placeholder || placeholder.dataset.loading) return;
    placeholder.dataset.loading = "1";
    const id = details.dataset.foldId;
    const href = withOpenFolds(location.href, id);
    try {
      const resp = await fetch(href, { cache: "no-store" });
      const doc = parse(await resp.text());
      const fresh = [...doc.querySelectorAll("details[data-fold-id]")]
        .find((d) => d.dataset.foldId === id)
        ?.querySelector(":scope > ol.folded:not([data-fold-body])");
      if (!fresh) throw new Error("the fold is gone");
      placeholder.replaceWith(document.importNode(fresh, true));
    } catch (_err) {
      location.href = href; // the page with the fold open, as without JavaScript
    }
  }

  document.addEventListener(
    "toggle",
    (ev) => {
      const details = ev.target;
      if (details instanceof HTMLDetailsElement && details.open && details.dataset.foldId) {
        loadFold(details);
      }
    },
    true,
  );

  async function refresh() {
    if (paused) return;
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      const resp = await fetch(withOpenFolds(location.href), { cache: "no-store" });
      if (!resp.ok) return;
      const doc = parse(await resp.text());
      const version = doc.body.dataset.version || "";
      if (version === body.dataset.version) return;
      swapRegions(doc);
      body.dataset.version = version;
      body.dataset.refreshes = String(Number(body.dataset.refreshes || "0") + 1);
    } catch (_err) {
      // The console stopped or the network blinked; the next change or poll retries.
    } finally {
      refreshing = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }

  function stop() {
    if (source) {
      source.close();
      source = null;
    }
    if (pollTimer) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
    if (retryTimer) {
      clearTimeout(retryTimer);
      retryTimer = null;
    }
  }

  function startPolling() {
    stop();
    setState("polling", "polling");
    pollTimer = setInterval(refresh, POLL_MS);
  }

  function openStream() {
    const stream = new EventSource(liveUrl);
    source = stream;
    stream.addEventListener("ready", () => {
      failures = 0;
      if (pollTimer) {
        clearInterval(pollTimer); // streaming again after a refusal: stop polling
        pollTimer = null;
      }
      setState("live", "live");
    });
    stream.addEventListener("change", () => refresh());
    stream.addEventListener("problem", () => startPolling());
    stream.onerror = () => {
      if (stream !== source) return;
      if (stream.readyState === EventSource.CLOSED) {
        // Refused rather than dropped (503: the console has as many streams open as it
        // takes), which EventSource does not retry by itself: poll, try again later.
        startPolling();
        retryTimer = setTimeout(() => {
          retryTimer = null;
          if (!paused) openStream();
        }, STREAM_RETRY_MS);
        return;
      }
      failures += 1;
      if (failures >= 3) startPolling();
      else setState("connecting", "reconnecting…");
    };
  }

  function connect() {
    if (!liveUrl || paused) return;
    const forcePoll = new URLSearchParams(location.search).get("live") === "poll";
    if (forcePoll || !window.EventSource) {
      startPolling();
      return;
    }
    openStream();
  }

  if (toggle) {
    toggle.addEventListener("click", () => {
      paused = !paused;
      localStorage.setItem(PAUSE_KEY, paused ? "1" : "0");
      if (paused) {
        stop();
        setState("paused", "paused — click to resume");
      } else {
        setState("connecting", "connecting…");
        connect();
        refresh();
      }
    });
  }

  async function loadPanel(href, push) {
    let doc;
    try {
      const resp = await fetch(href, { cache: "no-store" });
      doc = parse(await resp.text());
    } catch (_err) {
      location.href = href;
      return;
    }
    const fresh = doc.getElementById("node-panel");
    const panel = document.getElementById("node-panel");
    if (!fresh || !panel) {
      location.href = href;
      return;
    }
    panel.replaceWith(document.importNode(fresh, true));
    const idEl = fresh.querySelector("#panel-node-id");
    const id = idEl ? idEl.textContent.trim() : "";
    for (const el of document.querySelectorAll("a.node.selected")) el.classList.remove("selected");
    for (const el of document.querySelectorAll("a.node[data-node-id]")) {
      if (el.dataset.nodeId !== id) continue;
      el.classList.add("selected");
      const fold = el.closest("details");
      if (fold) fold.open = true;
    }
    if (push) history.pushState({ panel: href }, "", href);
  }

  document.addEventListener("click", async (ev) => {
    const copy = ev.target.closest("button[data-copy]");
    if (copy) {
      const source = document.querySelector(copy.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent);
        copy.textContent = "Copied";
      } catch (_err) {
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        copy.textContent = "Selected: press Ctrl-C";
      }
      return;
    }
    const link = ev.target.closest("a[data-node-link]");
    if (!link || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    if (!document.getElementById("node-panel")) return;
    ev.preventDefault();
    loadPanel(link.href, true);
  });
  window.addEventListener("popstate", () => {
    if (document.getElementById("node-panel")) loadPanel(location.href, false);
  });

  if (liveUrl) {
    if (paused) setState("paused", "paused — click to resume");
    else connect();
  }
  body.dataset.ready = "1";
})();
