/* CLAIRE's side panel, shared by the web app's page and the browser extension.
 *
 * ClairePanel.render(container, facts, {onReview}) fills `container` with one card per fact:
 * verdict and score, the verifier's analysis, the two-sided report, entity clarifications and
 * the cited passages with their links, plus review controls named for what is decided ("Contradiction
 * confirmed" / "Not a contradiction") and a comment. `facts` have the shape GET /api/scan/{id} gives
 * them. ClairePanel.editCard(item) is the Patrol tab's shorter card of a patrolled edit's fact. With
 * options.onResolve, a flagged fact's card offers "Which side is right?" (POST /api/resolve) and shows
 * the answer with its talk-page draft and a copy button. Everything from the corpus or the model is set with
 * textContent (never parsed as HTML), and only http(s) links are made clickable.
 */
(function (root) {
  "use strict";

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function safeUrl(value) {
    if (typeof value !== "string" || !value) return null;
    try {
      const url = new URL(value);
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
    } catch (error) {
      return null;
    }
  }

  function band(fact) {
    if (fact.status === "error") return "error";
    if (fact.score === null || fact.score === undefined) return "pending";
    if (fact.verdict === "inconsistent") return fact.score >= 0.75 ? "high" : "mid";
    return fact.score >= 0.25 ? "low" : "ok";
  }

  function strongest(facts) {
    return facts.reduce((best, f) => ((f.score ?? -1) > (best.score ?? -1) ? f : best), facts[0]);
  }

  // The colour of a sentence that states several facts never claims more than they support: a
  // flagged fact colours it; otherwise a failed or unchecked fact does (failed or unchecked wins
  // over consistent); only when every fact was checked and none flagged is it consistent.
  function groupBand(facts) {
    const flagged = facts.filter((f) => f.status !== "error" && f.verdict === "inconsistent");
    if (flagged.length) return band(strongest(flagged));
    if (facts.some((f) => f.status === "error")) return "error";
    if (facts.some((f) => f.score === null || f.score === undefined)) return "pending";
    return band(strongest(facts));
  }

  function verdictLine(fact) {
    if (fact.status === "error") return "Could not be checked: " + (fact.reason || fact.error || "error");
    if (fact.score === null || fact.score === undefined) return fact.status === "running" ? "Checking…" : "Waiting to be checked";
    const label = fact.verdict === "inconsistent" ? "Inconsistent" : "Consistent";  // the words of every surface
    const probability = fact.assessment && typeof fact.assessment.probability === "number"
      ? " · calibrated probability " + Math.round(100 * fact.assessment.probability) + "%" : "";
    return label + " · score " + Number(fact.score).toFixed(2) + probability;
  }

  function section(card, title) {
    const box = el("section", "claire-section");
    box.appendChild(el("h4", null, title));
    card.appendChild(box);
    return box;
  }

  function twoSided(box, report) {
    for (const [side, title] of [["inconsistent", "The case that it is contradicted"], ["consistent", "The case that it holds"]]) {
      if (report[side]) {
        box.appendChild(el("h5", null, title));
        box.appendChild(el("p", "claire-text", report[side]));
      }
    }
  }

  function passage(evidence) {
    const item = el("li", "claire-passage");
    const head = el("div", "claire-passage-head");
    head.appendChild(el("span", "claire-passage-n", "[" + evidence.n + "] "));
    const where = [evidence.document_title, evidence.section_title].filter(Boolean).join(" › ");
    const url = safeUrl(evidence.url);
    if (url) {
      const link = el("a", null, where);
      link.href = url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      head.appendChild(link);
    } else {
      head.appendChild(el("span", null, where));
    }
    item.appendChild(head);
    item.appendChild(el("p", "claire-passage-text", evidence.content));
    return item;
  }

  /* What the two decisions mean for this fact: an editor confirms or dismisses a contradiction
   * (for a fact found consistent: agrees that it holds, or marks it contradicted after all). */
  function decisions(fact) {
    if (fact.verdict === "consistent") {
      return { accept: ["It holds", "You agreed that it holds"], reject: ["A contradiction after all", "You marked it a contradiction"] };
    }
    return { accept: ["Contradiction confirmed", "You confirmed the contradiction"], reject: ["Not a contradiction", "You marked it not a contradiction"] };
  }

  function decisionLabel(fact) {
    return fact.review ? decisions(fact)[fact.review.decision][0].toLowerCase() : "";
  }

  function reviewBox(fact, onReview) {
    const box = el("section", "claire-section claire-review");
    box.appendChild(el("h4", null, "Your review"));
    const current = el("p", "claire-decision");
    const labels = decisions(fact);
    const describe = (review) => {
      current.textContent = review
        ? labels[review.decision][1] + (review.comment ? ": " + review.comment : ".")
        : "Not reviewed yet.";
      current.dataset.decision = review ? review.decision : "";
    };
    describe(fact.review);
    box.appendChild(current);
    const comment = el("textarea", "claire-comment");
    comment.placeholder = "Comment (optional)";
    comment.rows = 2;
    comment.maxLength = 4000;
    comment.value = fact.review && fact.review.comment ? fact.review.comment : "";
    box.appendChild(comment);
    const buttons = el("div", "claire-buttons");
    for (const decision of ["accept", "reject"]) {
      const button = el("button", "claire-" + decision, labels[decision][0]);
      button.type = "button";
      button.dataset.decision = decision;
      button.addEventListener("click", async () => {
        button.disabled = true;
        try {
          const saved = await onReview(fact, decision, comment.value.trim() || null);
          fact.review = saved;
          describe(saved);
        } catch (error) {
          current.textContent = "Could not save the review: " + error.message;
        } finally {
          button.disabled = false;
        }
      });
      buttons.appendChild(button);
    }
    box.appendChild(buttons);
    return box;
  }

  /* "Which side is right?": for a flagged fact, a button that asks the server (options.onResolve)
   * and shows the resolver's card — each side's article, its sources with their tier and what they
   * say, the decision with its reasons, what is missing — and the talk-page draft with a copy button. */
  /* the words of each decision and of where each source stands come with the card (decision_words,
   * support_words): one table, on the server, for the terminal, this card and the worklist */
  const capitalised = (text) => text ? text.charAt(0).toUpperCase() + text.slice(1) : "";

  function link(text, href) {
    const url = safeUrl(href);
    if (!url) return el("span", null, text);
    const node = el("a", null, text);
    node.href = url;
    node.target = "_blank";
    node.rel = "noopener noreferrer";
    return node;
  }

  function languageName(code) {  /* "de" -> "German" by the browser's own CLDR data; the code itself where it has none */
    try {
      return new Intl.DisplayNames(["en"], { type: "language" }).of(code) || code;
    } catch (error) {
      return code;
    }
  }

  function sideView(side) {
    const box = el("div", "claire-side" + (side.verified ? " claire-verified" : ""));
    const head = el("h5");
    head.appendChild(document.createTextNode(side.side === "fact" ? "The fact — " : "The passage — "));
    head.appendChild(link([side.document_title, side.section_title].filter(Boolean).join(" › ") || "(no article)", side.link));
    if (side.language) {
      head.appendChild(el("span", "claire-badge claire-edition", languageName(side.language) + " edition"));
    }
    if (side.verified) head.appendChild(el("span", "claire-badge", "verified"));
    box.appendChild(head);
    box.appendChild(el("p", "claire-text", "“" + side.text + "”"));
    if (side.translation) {  /* another edition's sentence, as written above; the model's translation, marked as such */
      box.appendChild(el("p", "claire-translation", "Translation into " + languageName(side.translated_into)
        + " (by the model): “" + side.translation + "”"));
    }
    const list = el("ul", "claire-sources");
    if (!side.sources.length) list.appendChild(el("li", "claire-missing", "cites no source"));
    for (const source of side.sources) {
      const item = el("li", "claire-source claire-support-" + source.support.replace(/ /g, "-"));
      const reference = source.reference || {};
      item.appendChild(link(reference.title || reference.url || "untitled source", reference.url));
      item.appendChild(document.createTextNode(" "));
      // the tier as a coloured badge, as editors' citation tools show it (its row of the list in the tooltip)
      const tier = el("span", "claire-tier-badge claire-tier-" + String(source.tier).replace(/ /g, "-"), source.tier);
      tier.title = source.tier_detail || source.tier;
      item.appendChild(tier);
      item.appendChild(el("span", "claire-tier", (reference.site ? " · " + reference.site : "") + (source.date ? " · " + source.date : "")));
      item.appendChild(el("div", "claire-support", source.support_words || source.support));
      if (source.quote) item.appendChild(el("blockquote", "claire-quote", source.quote));
      if (source.note) item.appendChild(el("div", "claire-note", source.note));
      list.appendChild(item);
    }
    box.appendChild(list);
    if (side.agreeing && side.agreeing.length) {
      const count = side.agreeing.length;
      box.appendChild(el("p", "claire-note", count + " other independent source" + (count > 1 ? "s give" : " gives")
        + " this value: " + side.agreeing.join("; ")));
    }
    return box;
  }

  function copyText(text, button) {
    const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy the talk-page draft"; }, 2000); };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, () => { button.textContent = "Select the text and copy it"; });
    } else {
      button.textContent = "Select the text and copy it";
    }
  }

  function resolutionView(box, resolution) {
    box.replaceChildren(el("h4", null, "Which side is right?"));
    const decision = el("p", "claire-sides-decision claire-sides-" + resolution.decision,
      capitalised(resolution.decision_words) + (resolution.decision === "unknown" ? "" : " · confidence " + Number(resolution.confidence).toFixed(2)));
    box.appendChild(decision);
    resolution.sides.forEach((side) => box.appendChild(sideView(side)));
    if (resolution.values_from === "word overlap") {
      box.appendChild(el("p", "claire-missing", "The values compared are the words that set the two statements apart: "
        + "the model named no conflicting passage and values."));
    }
    if (resolution.reasons.length) {
      box.appendChild(el("h5", null, "Why"));
      const list = el("ul", "claire-list");
      resolution.reasons.forEach((reason) => list.appendChild(el("li", null, reason)));
      box.appendChild(list);
    }
    if (resolution.missing.length) {
      box.appendChild(el("h5", null, "What is missing"));
      const list = el("ul", "claire-list claire-missing");
      resolution.missing.forEach((missing) => list.appendChild(el("li", null, missing)));
      box.appendChild(list);
    }
    if (resolution.explanation) box.appendChild(el("p", "claire-note", "The model's reading: " + resolution.explanation));
    if (resolution.talk_page) {
      box.appendChild(el("h5", null, "Talk-page draft for Talk:" + resolution.talk_page_article + " (never posted)"));
      const draft = el("textarea", "claire-talk");
      draft.readOnly = true;
      draft.rows = 8;
      draft.value = resolution.talk_page;
      box.appendChild(draft);
      const copy = el("button", "claire-copy", "Copy the talk-page draft");
      copy.type = "button";
      copy.addEventListener("click", () => { draft.select(); copyText(resolution.talk_page, copy); });
      box.appendChild(copy);
    }
  }

  function sidesBox(fact, onResolve) {
    const box = el("section", "claire-section claire-sides");
    const button = el("button", "claire-resolve", "Which side is right?");
    button.type = "button";
    const status = el("p", "claire-note");
    button.addEventListener("click", async () => {
      button.disabled = true;
      status.textContent = "Reading and rating each side's sources…";
      try {
        resolutionView(box, await onResolve(fact));
      } catch (error) {
        status.textContent = "Could not resolve: " + error.message;
        button.disabled = false;
      }
    });
    box.appendChild(button);
    box.appendChild(status);
    return box;
  }

  function flagged(fact) {
    return fact.status !== "error" && fact.verdict === "inconsistent";
  }

  /* A passage whose text shows its first lines until it is clicked. */
  function foldedPassage(evidence) {
    const item = passage(evidence);
    const text = item.querySelector(".claire-passage-text");
    text.classList.add("claire-folded");
    text.title = "Click to show it all";
    text.addEventListener("click", () => text.classList.toggle("claire-folded"));
    return item;
  }

  /* A patrolled edit's flagged fact on one screen: the sentence the edit wrote, in context; the
   * fact and its verdict; what the agent reported; the one or two passages the verifier cited
   * first. The analysis, the other passages and the two-sided report open on demand. */
  function editCard(item, options) {
    options = options || {};
    const node = el("article", "claire-card claire-edit claire-" + band(item));
    node.dataset.index = item.index;
    const context = item.context;
    if (context && context.text) {
      const quote = el("blockquote", "claire-edit-context");
      const hasSpan = context.start !== null && context.start !== undefined;
      quote.appendChild(document.createTextNode((context.before ? "… " : "") + (hasSpan ? context.text.slice(0, context.start) : context.text)));
      if (hasSpan) {
        quote.appendChild(el("mark", "claire-mark claire-" + band(item), context.text.slice(context.start, context.end)));
        quote.appendChild(document.createTextNode(context.text.slice(context.end)));
      }
      if (context.after) quote.appendChild(document.createTextNode(" …"));
      node.appendChild(quote);
    }
    const fact = el("p", "claire-fact");
    fact.appendChild(el("span", "claire-label", "Fact checked: "));
    fact.appendChild(el("span", null, item.fact));
    node.appendChild(fact);
    node.appendChild(el("p", "claire-verdict", verdictLine(item)));
    const reported = item.reported || [];
    if (reported.length) {
      const box = section(node, "The agent reported");
      reported.forEach((text) => box.appendChild(el("p", "claire-text", text)));
    }
    const evidence = item.evidence || [];
    const shown = evidence.slice(0, 2);
    if (shown.length) {
      const list = el("ol", "claire-passages");
      shown.forEach((e) => list.appendChild(foldedPassage(e)));
      const cited = (item.cited || []).length;
      const heading = !cited ? "Passages found"
        : item.verdict === "inconsistent" && item.status !== "error" ? "The passages it conflicts with" : "The passages the verifier cited";
      section(node, heading).appendChild(list);
    }
    const assessment = item.assessment || {};
    const seen = new Set(shown.map((e) => e.n));
    const others = (assessment.evidence || []).filter((e) => !seen.has(e.n));
    if (item.reasoning || others.length || assessment.report) {
      const more = el("details", "claire-more");
      const parts = [item.reasoning ? "the verifier's analysis" : null, others.length ? others.length + " other passages" : null,
        assessment.report ? "the two-sided report" : null].filter(Boolean);
      more.appendChild(el("summary", null, "More: " + parts.join(", ")));
      if (item.reasoning) section(more, "Analysis").appendChild(el("p", "claire-text", item.reasoning));
      if (others.length) {
        const list = el("ol", "claire-passages");
        others.forEach((e) => list.appendChild(foldedPassage(e)));
        section(more, "Other passages read").appendChild(list);
      }
      if (assessment.report) twoSided(section(more, "Two-sided report"), assessment.report);
      node.appendChild(more);
    }
    if (options.onResolve && flagged(item)) node.appendChild(sidesBox(item, options.onResolve));
    if (options.onReview) node.appendChild(reviewBox(item, options.onReview));
    return node;
  }

  function card(fact, options) {
    const node = el("article", "claire-card claire-" + band(fact));
    node.dataset.index = fact.index;
    node.appendChild(el("h3", "claire-fact", fact.fact));
    node.appendChild(el("p", "claire-verdict", verdictLine(fact)));
    const assessment = fact.assessment || {};
    if (assessment.reasoning) {
      section(node, "Analysis").appendChild(el("p", "claire-text", assessment.reasoning));
    }
    if (assessment.report) twoSided(section(node, "Two-sided report"), assessment.report);
    if (assessment.clarifications && assessment.clarifications.length) {
      const list = el("ul", "claire-list");
      for (const item of assessment.clarifications) {
        const entry = el("li");
        entry.appendChild(el("strong", null, (item.entity || "") + ": "));
        entry.appendChild(el("span", null, item.text || ""));
        list.appendChild(entry);
      }
      section(node, "Clarifications").appendChild(list);
    }
    const evidence = assessment.evidence || [];
    if (evidence.length) {
      const cited = new Set(fact.cited || []);
      const shown = cited.size ? evidence.filter((e) => cited.has(e.n)) : evidence.slice(0, 5);
      const list = el("ol", "claire-passages");
      shown.forEach((e) => list.appendChild(passage(e)));
      section(node, cited.size ? "Cited passages" : "Passages found").appendChild(list);
    }
    if (options.onResolve && flagged(fact)) node.appendChild(sidesBox(fact, options.onResolve));
    if (options.onReview && fact.score !== null && fact.score !== undefined) {
      node.appendChild(reviewBox(fact, options.onReview));
    }
    return node;
  }

  function render(container, facts, options) {
    options = options || {};
    container.replaceChildren();
    const header = el("div", "claire-panel-head");
    header.appendChild(el("h2", null, options.title || "CLAIRE"));
    if (options.onClose) {
      const close = el("button", "claire-close", "×");
      close.type = "button";
      close.title = "Close";
      close.addEventListener("click", options.onClose);
      header.appendChild(close);
    }
    container.appendChild(header);
    facts.forEach((fact) => container.appendChild(card(fact, options)));
  }

  root.ClairePanel = { render, card, editCard, band, groupBand, strongest, safeUrl, el, decisionLabel, resolutionView };
})(typeof window !== "undefined" ? window : globalThis);
