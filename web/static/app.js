/* The CLAIRE page: submit an article (or one fact), follow the check live over server-sent
 * events, see the text with its facts highlighted by score, open the side panel, review.
 * Plain browser JavaScript, no build step. Text from the corpus, the model or the user is only
 * ever set with textContent. */
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const el = window.ClairePanel.el;
  const TOKEN_KEY = "claire-token";
  let current = null; // {kind, id, data, abort}
  let panelKey = null;
  let panelSignature = "";

  // -- talking to the server ----------------------------------------------------------------
  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const token = localStorage.getItem(TOKEN_KEY);
    if (token) h["Authorization"] = "Bearer " + token;
    return h;
  }

  async function api(path, options) {
    options = options || {};
    const init = { method: options.method || "GET", headers: headers(options.body ? { "Content-Type": "application/json" } : {}) };
    if (options.body) init.body = JSON.stringify(options.body);
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) { // the request never reached the server
      throw new Error("cannot reach the CLAIRE server at " + location.origin + ": is `claire serve` still running? "
        + "Start it again and retry.");
    }
    if (response.status === 401) {
      $("token-form").hidden = false;
      throw new Error(localStorage.getItem(TOKEN_KEY)
        ? "the server refused the saved access token: enter the token `claire serve` was started with"
        : "this server needs its access token: enter the token `claire serve` was started with");
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const detail = typeof data.detail === "string" ? data.detail : (data.detail && data.detail[0] && data.detail[0].msg) || response.statusText;
      throw new Error(detail);
    }
    return data;
  }

  /* Read server-sent events with fetch (EventSource cannot send the Authorization header). */
  async function follow(path, onEvent, signal) {
    const response = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
    if (!response.ok || !response.body) throw new Error("no event stream (" + response.status + ")");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let kind = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (!data.length) continue;
        let payload = null;
        try { payload = JSON.parse(data.join("\n")); } catch (error) { continue; }
        if (onEvent(kind, payload) === false) return;
      }
    }
  }

  function say(text) { $("message").textContent = text || ""; }

  // -- rendering a scan -----------------------------------------------------------------------
  function groups(facts) {
    const byKey = new Map();
    for (const fact of facts) {
      if (fact.start === null || fact.start === undefined) continue;
      const key = fact.start + ":" + fact.end;
      if (!byKey.has(key)) byKey.set(key, { key, start: fact.start, end: fact.end, facts: [] });
      byKey.get(key).facts.push(fact);
    }
    return Array.from(byKey.values()).sort((a, b) => a.start - b.start);
  }

  /* Plain text of the article, its "== Heading ==" lines shown as headings (as the article reads). */
  const HEADING = /^(={2,6})[ \t]*(.+?)[ \t]*\1[ \t]*$/;
  function appendText(article, text) {
    const lines = text.split("\n");
    let plain = "";
    lines.forEach((line, index) => {
      const found = HEADING.exec(line);
      if (!found) { plain += line + (index < lines.length - 1 ? "\n" : ""); return; }
      if (plain) article.appendChild(document.createTextNode(plain));
      plain = "";
      article.appendChild(el(found[1].length <= 2 ? "h3" : "h4", "article-heading", found[2]));
    });
    if (plain) article.appendChild(document.createTextNode(plain));
  }

  function renderArticle(text, facts) {
    const article = $("article");
    article.replaceChildren();
    let at = 0;
    for (const group of groups(facts)) {
      if (group.start < at) continue; // overlaps the previous highlight: listed below instead
      appendText(article, text.slice(at, group.start));
      const top = window.ClairePanel.strongest(group.facts);
      const mark = el("mark", "claire-mark claire-" + window.ClairePanel.groupBand(group.facts), text.slice(group.start, group.end));
      if (group.facts.every((f) => f.review)) mark.classList.add("claire-reviewed");
      if (panelKey === group.key) mark.classList.add("claire-active");
      mark.dataset.key = group.key;
      mark.dataset.score = top.score ?? "";
      mark.title = group.facts.map((f) => f.fact).join("\n");
      mark.addEventListener("click", () => openPanel(group.key));
      article.appendChild(mark);
      at = group.end;
    }
    appendText(article, text.slice(at));
  }

  function renderFactList(facts) {
    const list = $("fact-list");
    list.replaceChildren();
    const sorted = facts.slice().sort((a, b) => (b.score ?? -1) - (a.score ?? -1));
    const shared = current && current.data ? current.data.reason : null;
    for (const fact of sorted) {
      const item = el("li", "claire-" + window.ClairePanel.band(fact));
      const failed = fact.status === "error";
      const score = failed ? "failed" : fact.score === null || fact.score === undefined ? "…" : Number(fact.score).toFixed(2);
      item.appendChild(el("span", failed ? "score claire-failed" : "score", score));
      item.appendChild(el("span", null, fact.fact));
      if (failed) {
        item.title = "Could not be checked: " + (fact.reason || fact.error || "error");
        if (fact.reason && fact.reason !== shared) item.appendChild(el("span", "reason", " — " + fact.reason));
      }
      if (fact.review) item.appendChild(el("em", null, " — " + window.ClairePanel.decisionLabel(fact)));
      item.addEventListener("click", () => openPanel("fact-" + fact.index));
      list.appendChild(item);
    }
  }

  function panelFacts(key) {
    if (!current || !current.data) return [];
    const facts = current.data.facts;
    if (key.startsWith("fact-")) return facts.filter((f) => "fact-" + f.index === key);
    return facts.filter((f) => f.start + ":" + f.end === key);
  }

  function signature(facts) {
    return JSON.stringify(facts.map((f) => [f.index, f.status, f.score, f.review && f.review.decision, f.review && f.review.comment]));
  }

  // Bring a part of the page that has just opened to the top of the window when it starts out of
  // sight or low on the screen (below the fold, or under the article on a narrow window), so what
  // it holds can be read; a page that already shows it near the top does not move.
  function reveal(node) {
    const box = node.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight * 0.35) node.scrollIntoView({ block: "start" });
  }

  function openPanel(key, force) {
    const facts = panelFacts(key);
    if (!facts.length) return;
    if (facts.some((f) => f.status === "done" && !f.assessment)) { // checked, but polled without details
      refresh(true).then(() => openPanel(key, true)).catch((e) => say(e.message));
      return;
    }
    const sig = signature(facts);
    if (!force && key === panelKey && sig === panelSignature) return;
    const panel = $("panel");
    const opening = key !== panelKey || panel.hidden; // opened now, not redrawn as the check goes on
    panelKey = key;
    panelSignature = sig;
    panel.hidden = false;
    window.ClairePanel.render(panel, facts, {
      title: facts.length > 1 ? facts.length + " facts in this sentence" : "Fact",
      onReview: review,
      onResolve: (fact) => api("/api/resolve", { method: "POST", body: { job_id: current.id, fact: String(fact.index) } }),
      onClose: () => { panel.hidden = true; panelKey = null; draw(); },
    });
    draw();
    if (opening) reveal(panel);
  }

  async function review(fact, decision, comment) {
    const saved = await api("/api/reviews", { method: "POST", body: { job_id: current.id, fact: String(fact.index), decision, comment } });
    await refresh();
    return saved;
  }

  function draw() {
    const data = current && current.data;
    if (!data) return;
    $("result").hidden = !$("patrol-view").hidden; // drawn in the background while the Patrol tab is open
    const progress = data.progress;
    $("result-title").textContent = current.kind === "scan" ? data.title : "Fact check";
    $("progress-bar").style.width = (progress.total ? (100 * progress.done) / progress.total : 0) + "%";
    const errors = progress.errors || 0;
    const state = data.status === "error" ? "Stopped" + (errors ? "" : ": " + (data.reason || data.error || "error"))
      : data.status === "done" ? "Done" : data.status === "queued" && progress.total ? "Queued"
        : progress.total ? "Checking" : "Extracting facts";
    // a job that stopped before it had any fact (its extraction failed) says so once, below, with its reason
    const parts = data.status === "error" && !progress.total ? ["Stopped before any fact was checked"]
      : [state, (progress.done - errors) + " of " + progress.total + (progress.total === 1 ? " fact checked" : " facts checked")];
    if (progress.total && errors) parts.push(errors + " could not be checked");
    if (progress.total) parts.push(progress.flagged + " flagged");
    $("progress-text").textContent = parts.join(" · ");
    $("progress-text").classList.toggle("claire-progress-error", errors > 0 || data.status === "error");
    const finished = data.status === "done" || data.status === "error";
    $("failures").hidden = !(finished && (errors > 0 || (data.status === "error" && !progress.total)));
    $("failure-reason").textContent = errors
      ? (errors === 1 ? "1 fact" : errors + " facts") + " could not be checked: " + (data.reason || "error")
      : "Why: " + (data.reason || data.error || "error");
    $("recheck").textContent = progress.total ? "Re-check the facts that failed" : "Try again";
    const sig = signature(data.facts) + "|" + panelKey;
    if (sig !== current.drawn) { // re-render only what changed (keeps the reader's place and selection)
      current.drawn = sig;
      renderArticle(data.text, data.facts);
      renderFactList(data.facts);
    }
    if (panelKey && !$("panel").hidden) openPanel(panelKey);
  }

  function checkAsScan(check) {
    const running = check.status === "queued" || check.status === "running";
    const a = running ? null : check.assessment; // a re-checked fact keeps its failed assessment until it is done
    const fact = {
      index: 0, id: "check", fact: check.request.fact, start: 0, end: check.request.fact.length,
      status: running ? "running" : a && a.score !== null ? "done" : "error",
      score: a ? a.score : null, verdict: a ? a.verdict : null, error: check.error, reason: check.reason, cited: check.cited,
      assessment: a, review: check.review,
    };
    return {
      status: check.status, error: check.error, reason: check.reason, title: "Fact check", text: check.request.fact, facts: [fact],
      progress: {
        total: 1, done: a || check.status === "error" ? 1 : 0, errors: fact.status === "error" ? 1 : 0,
        flagged: fact.status !== "error" && fact.verdict === "inconsistent" ? 1 : 0,
      },
    };
  }

  /* While a scan runs, poll the light summary (no assessments); fetch the full view once it is
   * finished, or when the reader opens a fact that is already checked. */
  async function refresh(full) {
    if (!current) return;
    const job = current;
    const base = "/api/" + job.kind + "/" + encodeURIComponent(job.id);
    let data;
    if (job.kind === "scan") {
      data = full || job.full ? null : await api(base + "?view=summary");
      if (!data || ["done", "error"].includes(data.status)) {
        data = await api(base + "?view=full");
        job.full = ["done", "error"].includes(data.status);
      }
    } else {
      data = checkAsScan(await api(base));
    }
    if (job !== current) return;
    if (!current.data && job.kind === "scan") { // opened by its #scan= address: show what was checked in the form
      if (!$("scan-title").value) $("scan-title").value = data.title || "";
      if (!$("scan-text").value) $("scan-text").value = data.text || "";
    }
    current.data = data;
    draw();
  }

  let refreshTimer = null;
  function refreshSoon() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => { refreshTimer = null; refresh().catch((e) => say(e.message)); }, 250);
  }

  function logStep(data) {
    const steps = $("steps");
    const argument = data.action_argument === null || data.action_argument === undefined ? "" : String(data.action_argument);
    steps.appendChild(el("li", null, "fact " + (data.fact + 1) + " · " + data.action_name + (argument ? " (" + argument.slice(0, 120) + ")" : "")));
    steps.scrollTop = steps.scrollHeight;
  }

  async function show(kind, id) {
    if (current && current.abort) current.abort.abort();
    const abort = new AbortController();
    current = { kind, id, data: null, abort };
    panelKey = null;
    $("panel").hidden = true;
    $("steps").replaceChildren();
    say("");
    try {
      await refresh();
    } catch (error) {
      say(error.message);
      return;
    }
    reveal($("result")); // the results open below the forms: show where they are
    if (current.data.status === "done" || current.data.status === "error") {
      if (kind === "check") openPanel("fact-0", true);
      return;
    }
    try {
      await follow("/api/" + kind + "/" + encodeURIComponent(id) + "/events", (event, data) => {
        if (event === "step") logStep(data);
        if (event === "end") { refresh().then(() => { if (kind === "check") openPanel("fact-0", true); }); return false; }
        if (event !== "step" || current.data.progress.total === 0) refreshSoon();
        return true;
      }, abort.signal);
    } catch (error) {
      if (error.name === "AbortError") return;
      while (current && current.id === id && !["done", "error"].includes(current.data.status)) { // fall back to polling
        await new Promise((resolve) => setTimeout(resolve, 1000));
        await refresh().catch(() => null);
      }
    }
  }

  /* Queue the facts that failed again and follow the job as it runs once more. */
  $("recheck").addEventListener("click", async () => {
    if (!current) return;
    const { kind, id } = current;
    $("recheck").disabled = true;
    try {
      await api("/api/" + kind + "/" + encodeURIComponent(id) + "/recheck", { method: "POST" });
      await show(kind, id);
    } catch (error) { say(error.message); } finally { $("recheck").disabled = false; }
  });

  function route() {
    const match = /^#(scan|check)=([\w-]+)$/.exec(location.hash);
    if (match) show(match[1], match[2]);
  }

  // -- forms ----------------------------------------------------------------------------------
  $("scan-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    say("");
    try {
      const created = await api("/api/scan", { method: "POST", body: { title: $("scan-title").value.trim(), text: $("scan-text").value } });
      location.hash = "scan=" + created.id;
    } catch (error) { say(error.message); }
  });

  $("check-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    say("");
    const body = { fact: $("check-fact").value.trim(), title: $("check-title").value.trim() || null,
      section: $("check-section").value.trim() || null, context: $("check-context").value.trim() || null };
    try {
      const created = await api("/api/check", { method: "POST", body });
      location.hash = "check=" + created.id;
    } catch (error) { say(error.message); }
  });

  let suggestTimer = null;
  $("scan-title").addEventListener("input", () => {
    clearTimeout(suggestTimer);
    const q = $("scan-title").value.trim();
    if (q.length < 2) return;
    suggestTimer = setTimeout(async () => {
      try {
        const data = await api("/api/articles?q=" + encodeURIComponent(q));
        $("titles").replaceChildren(...data.titles.map((t) => { const o = el("option"); o.value = t; return o; }));
      } catch (error) { /* suggestions are optional */ }
    }, 250);
  });

  $("load-article").addEventListener("click", async () => {
    say("");
    try {
      const article = await api("/api/article?title=" + encodeURIComponent($("scan-title").value.trim()));
      $("scan-text").value = article.text;
    } catch (error) { say(error.message); }
  });

  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => {
      for (const other of document.querySelectorAll(".tab")) other.classList.toggle("active", other === tab);
      for (const body of document.querySelectorAll(".tab-body")) body.hidden = body.id !== tab.dataset.tab;
      const patrol = tab.dataset.tab === "patrol-view" || tab.dataset.tab === "worklist-view"; // not the last check
      $("result").hidden = patrol || !(current && current.data);
      if (patrol) { $("panel").hidden = true; panelKey = null; }
    });
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    localStorage.setItem(TOKEN_KEY, $("token").value);
    $("token-form").hidden = true;
    route();
  });

  /* Earlier scans, newest first, each a link to its #scan= address (read when the list is opened). */
  async function listScans() {
    const list = $("recent-list");
    try {
      const scans = await api("/api/scan?limit=30");
      list.replaceChildren(...scans.map((scan) => {
        const item = el("li", "recent-item");
        const link = el("a", "", scan.title || scan.id);
        link.href = "#scan=" + scan.id;
        const when = new Date(scan.created * 1000).toLocaleString();
        const counts = scan.errors ? ", " + scan.errors + " could not be checked" : "";
        item.append(link, el("span", "recent-meta", " · " + when + " · " + scan.status + " · " + scan.checked + " of "
          + scan.facts + " checked" + counts + ", " + scan.flagged + " flagged"));
        return item;
      }));
      if (!scans.length) list.replaceChildren(el("li", "recent-meta", "No scans yet."));
    } catch (error) { list.replaceChildren(el("li", "recent-meta", error.message)); }
  }
  $("recent").addEventListener("toggle", () => { if ($("recent").open) listScans(); });

  /* The Patrol view: flagged facts of new edits, newest first, each on one screen (the sentence the
   * edit wrote, the verdict, the agent's report, the passages it conflicts with) with its diff,
   * reviewed in place. */
  let patrolTimer = null;
  async function showPatrol() {
    const list = $("patrol-list");
    try {
      const data = await api("/api/patrol?flagged=" + ($("patrol-all").checked ? "false" : "true"));
      const counts = Object.entries(data.edits || {}).map(([status, n]) => n + " " + status).join(", ");
      $("patrol-status").textContent = (data.watching ? "Watching live edits. "
        : data.stopped ? "The patrol has stopped (" + data.stopped + "). " : "This server is not watching a wiki now. ")
        + (counts ? "Edits so far: " + counts + ". " : "No edits yet. ") + data.items.length + (data.items.length === 1 ? " fact shown." : " facts shown.");
      const signatureNow = JSON.stringify(data.items.map((i) => [i.job_id, i.claim_id, i.review && i.review.decision]));
      if (list.dataset.signature === signatureNow) return;
      list.dataset.signature = signatureNow;
      list.replaceChildren(...data.items.map((item) => {
        const entry = el("li", "patrol-item");
        const head = el("p", "patrol-head");
        head.appendChild(el("strong", null, item.title));
        const when = item.timestamp || item.received; // the edit's own time; when it arrived, for older records
        head.appendChild(el("span", "recent-meta", " · revision " + item.revision + (item.user ? " by " + item.user : "")
          + (when ? " · " + (item.timestamp ? "edited " : "received ") + new Date(when * 1000).toLocaleString() : "") + " · "));
        const diff = window.ClairePanel.safeUrl(item.diff_url);
        if (diff) {
          const link = el("a", "patrol-diff", "see the edit");
          link.href = diff;
          link.target = "_blank";
          link.rel = "noopener noreferrer";
          head.appendChild(link);
        }
        if (item.left_out) head.appendChild(el("span", "recent-meta", " · " + item.left_out.note));
        entry.appendChild(head);
        entry.appendChild(window.ClairePanel.editCard(item, {
          onResolve: () => api("/api/resolve", { method: "POST", body: { job_id: item.job_id, fact: item.claim_id } }),
          onReview: async (fact, decision, comment) => {
            const saved = await api("/api/reviews", { method: "POST", body: { job_id: item.job_id, fact: item.claim_id, decision, comment } });
            list.dataset.signature = "";
            return saved;
          },
        }));
        return entry;
      }));
    } catch (error) { $("patrol-status").textContent = error.message; }
  }
  function patrolVisible() { return !$("patrol-view").hidden; }
  $("patrol-tab").addEventListener("click", () => {
    showPatrol();
    clearInterval(patrolTimer);
    patrolTimer = setInterval(() => { if (patrolVisible()) showPatrol(); else clearInterval(patrolTimer); }, 3000);
  });
  $("patrol-all").addEventListener("change", () => { $("patrol-list").dataset.signature = ""; showPatrol(); });

  /* The Worklist view: the corpus run's contradictions, one entry each, filtered by article,
   * decision and status; each opens to the resolve card and takes an editor's decision with a note,
   * kept with the run. */
  async function showWorklist() {
    const list = $("worklist-list");
    const query = new URLSearchParams({ article: $("worklist-article").value.trim(), decision: $("worklist-decision").value,
                                        status: $("worklist-status-filter").value });
    try {
      const data = await api("/api/worklist?" + query.toString());
      $("worklist-status").textContent = data.run === null
        ? "This server shows no worklist: run claire worklist, then claire serve --worklist DIR."
        : data.open + " of " + data.total + " contradictions still open in " + data.run + "; " + data.entries.length + " shown.";
      list.replaceChildren(...data.entries.map((entry) => {
        const item = el("li", "patrol-item worklist-item");
        const sides = entry.sides || [];
        const wrong = sides.find((s) => s.document_title === entry.should_change) || sides[0] || {};
        const other = sides.find((s) => s !== wrong) || {};
        const head = el("p", "patrol-head");
        head.appendChild(el("strong", null, wrong.document_title || "?"));
        head.appendChild(el("span", "recent-meta", " against " + (other.document_title || "?") + " · "
          + (entry.should_change ? entry.should_change + " should change" : entry.decision_words || "no decision")
          + (entry.confidence && entry.decision !== "unknown" ? " · confidence " + Number(entry.confidence).toFixed(2) : "")
          + (entry.status !== "open" ? " · " + entry.status : "")));
        item.appendChild(head);
        item.appendChild(el("p", "worklist-sentence", wrong.sentence || wrong.text || ""));
        const details = el("details", "worklist-card");
        details.appendChild(el("summary", null, "Open the card"));
        const box = el("div", "claire-sides");
        window.ClairePanel.resolutionView(box, entry);
        details.appendChild(box);
        item.appendChild(details);
        const note = el("input", "worklist-note");
        note.placeholder = "a note for the record (optional)";
        note.value = entry.note || "";
        const buttons = el("p", "worklist-actions");
        for (const [status, label] of [["accepted", "Accept"], ["rejected", "Reject"], ["open", "Reopen"]]) {
          if (status === entry.status || (status === "open" && entry.status === "open")) continue;
          const button = el("button", null, label);
          button.type = "button";
          button.addEventListener("click", async () => {
            try {
              await api("/api/worklist/" + encodeURIComponent(entry.id), { method: "POST", body: { status, note: note.value } });
              showWorklist();
            } catch (error) { $("worklist-status").textContent = error.message; }
          });
          buttons.appendChild(button);
        }
        buttons.appendChild(note);
        item.appendChild(buttons);
        return item;
      }));
    } catch (error) { $("worklist-status").textContent = error.message; }
  }
  $("worklist-tab").addEventListener("click", showWorklist);
  for (const id of ["worklist-decision", "worklist-status-filter"]) $(id).addEventListener("change", showWorklist);
  $("worklist-article").addEventListener("input", showWorklist);

  /* The server's threshold and whether it calibrates scores, for the legend. */
  async function describeServer() {
    try {
      const health = await api("/api/health");
      if (typeof health.threshold === "number") $("legend-threshold").textContent = String(health.threshold);
      if (health.calibrated) {
        $("legend-probability").textContent = "This server calibrates scores on a validation run: each fact's panel "
          + "also shows the calibrated probability that it is inconsistent. Open a fact to read the passages and "
          + "the analysis before you edit.";
      }
    } catch (error) { /* the page says what is wrong when a check is started */ }
  }

  window.addEventListener("hashchange", route);
  describeServer();
  route();
})();
