/* CLAIRE's content script for Wikipedia article pages.
 *
 * Adds a "Check consistency" button under the article title. On click it sends the article's
 * paragraph text to the configured CLAIRE server (POST /api/scan), follows the scan, and wraps
 * each flagged sentence of the page in a highlight; clicking one opens the shared side panel
 * (panel.js) with the verdict, analysis, report, clarifications, cited passages and review
 * buttons. The page is only changed by splitting its text nodes: nothing from the server is
 * ever parsed as HTML.
 *
 * Settings come from chrome.storage.sync (options page); where the script is injected without
 * the extension APIs (tests), from window.CLAIRE_SETTINGS.
 */
(function () {
  "use strict";
  if (window.__claireContentScript) return;
  window.__claireContentScript = true;

  const DEFAULTS = { server: "http://127.0.0.1:8000", token: "" };
  const SKIP = "sup.reference, .mw-editsection, style, script, .noprint, .mw-ref, .claire-ui";
  const content = document.querySelector("#mw-content-text .mw-parser-output");
  const heading = document.querySelector("#firstHeading");
  if (!content || !heading || !document.body.classList.contains("ns-0")) return; // articles only

  function settings() {
    const fallback = Object.assign({}, DEFAULTS, window.CLAIRE_SETTINGS || {});
    if (typeof chrome !== "undefined" && chrome.storage && chrome.storage.sync) {
      return new Promise((resolve) => chrome.storage.sync.get(DEFAULTS, (s) => resolve(Object.assign({}, DEFAULTS, s))));
    }
    return Promise.resolve(fallback);
  }

  async function call(path, options) {
    const s = await settings();
    const headers = { "Content-Type": "application/json" };
    if (s.token) headers["Authorization"] = "Bearer " + s.token;
    const server = s.server.replace(/\/+$/, "");
    let response;
    try {
      response = await fetch(server + path, {
        method: options && options.body ? "POST" : "GET", headers, body: options && options.body ? JSON.stringify(options.body) : undefined,
      });
    } catch (error) { // the request never reached the server
      throw new Error("cannot reach the CLAIRE server at " + server + ": is `claire serve` running there? "
        + "Check the server address in the extension's options.");
    }
    if (response.status === 401) {
      throw new Error(s.token ? "the server refused the access token: set the token `claire serve` was started with in the extension's options"
        : "the server needs an access token: set it in the extension's options");
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(typeof data.detail === "string" ? data.detail : "the CLAIRE server answered " + response.status);
    return data;
  }

  /* The article's paragraphs as one text, and where each text node starts in it. */
  function collect() {
    const pieces = [];
    let text = "";
    const paragraphs = Array.from(content.querySelectorAll("p")).filter(
      (p) => !p.closest("table, figure, .infobox, .navbox, .reflist, .thumb, .hatnote, .claire-ui"));
    for (const paragraph of paragraphs) {
      const walker = document.createTreeWalker(paragraph, NodeFilter.SHOW_TEXT, {
        acceptNode: (node) => (node.parentElement && node.parentElement.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
      });
      const before = text.length;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        pieces.push({ node, start: text.length });
        text += node.nodeValue;
      }
      if (text.length > before && text.trim()) text += "\n\n";
      else if (text.length > before) text = text.slice(0, before);
    }
    return { text: text.trimEnd(), pieces };
  }

  const state = { job: null, data: null, marked: new Set(), panel: null, text: "" };

  function wrap(start, end, key, band) {
    const { pieces } = collect();
    const cuts = [];
    for (const piece of pieces) {
      const length = piece.node.nodeValue.length;
      const from = Math.max(start - piece.start, 0);
      const to = Math.min(end - piece.start, length);
      if (from < to) cuts.push({ node: piece.node, from, to });
    }
    for (const cut of cuts.reverse()) {
      let node = cut.node;
      if (cut.to < node.nodeValue.length) node.splitText(cut.to);
      if (cut.from > 0) node = node.splitText(cut.from);
      const mark = document.createElement("mark");
      mark.className = "claire-mark claire-" + band;
      mark.dataset.claireKey = key;
      mark.addEventListener("click", (event) => { event.preventDefault(); openPanel(key); });
      node.parentNode.insertBefore(mark, node);
      mark.appendChild(node);
    }
  }

  function factsFor(key) {
    return ((state.data && state.data.facts) || []).filter((f) => f.start + ":" + f.end === key);
  }

  function openPanel(key) {
    if (!state.panel) {
      state.panel = document.createElement("aside");
      state.panel.className = "claire-panel claire-floating claire-ui";
      document.body.appendChild(state.panel);
    }
    state.panel.hidden = false;
    const facts = factsFor(key);
    window.ClairePanel.render(state.panel, facts, {
      title: "CLAIRE",
      onClose: () => { state.panel.hidden = true; },
      onResolve: (fact) => call("/api/resolve", { body: { job_id: state.job, fact: String(fact.index) } }),
      onReview: (fact, decision, comment) =>
        call("/api/reviews", { body: { job_id: state.job, fact: String(fact.index), decision, comment } }),
    });
  }

  function highlight() {
    for (const fact of state.data.facts) {
      if (fact.verdict !== "inconsistent" || fact.start === null || fact.start === undefined) continue;
      const key = fact.start + ":" + fact.end;
      if (state.marked.has(key)) continue;
      state.marked.add(key);
      wrap(fact.start, fact.end, key, window.ClairePanel.groupBand(factsFor(key)));
    }
  }

  const bar = document.createElement("div");
  bar.className = "claire-ui";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "claire-check-button";
  button.textContent = "Check consistency";
  const status = document.createElement("span");
  status.className = "claire-status";
  bar.append(button, status);
  heading.insertAdjacentElement("afterend", bar);

  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "Sending the article to CLAIRE…";
    try {
      const { text } = collect();
      state.text = text;
      const edition = /^([a-z]{2,3}(?:-[a-z0-9]{2,8})*)\.(?:m\.)?wikipedia\.org$/.exec(location.hostname);  /* de.wikipedia.org: the German edition */
      const created = await call("/api/scan", { body: { title: heading.textContent.trim(), text,
        language: edition ? edition[1] : undefined } });
      state.job = created.id;
      for (;;) {
        state.data = await call("/api/scan/" + encodeURIComponent(state.job));
        const p = state.data.progress;
        highlight();
        const failed = p.errors ? ", " + p.errors + " could not be checked" : "";
        status.textContent = state.data.status === "error" ? "CLAIRE stopped: " + (state.data.error || "error")
          : (state.data.status === "done" ? "Done: " : "Checking… ") + p.checked + " of " + p.total + " facts checked, "
            + p.flagged + " flagged" + failed;
        status.classList.toggle("claire-progress-error", Boolean(p.errors) || state.data.status === "error");
        if (state.data.status === "done" || state.data.status === "error") break;
        await new Promise((resolve) => setTimeout(resolve, 1500));
      }
    } catch (error) {
      status.textContent = "CLAIRE: " + error.message;
    } finally {
      button.disabled = false;
    }
  });
})();
