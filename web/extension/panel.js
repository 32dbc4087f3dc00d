/* CLAIRE's side panel, shared by the web app's page and the browser extension.
 *
 * ClairePanel.render(container, facts, {onReview}) fills `container` with one card per fact:
 * verdict and score, the verifier's analysis, the two-sided report, entity clarifications and
 * the cited passages with their links, plus accept / reject / comment controls. `facts` have the
 * shape GET /api/scan/{id} gives them. Everything from the corpus or the model is set with
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

  function verdictLine(fact) {
    if (fact.status === "error") return "Could not be checked: " + (fact.error || "error");
    if (fact.score === null || fact.score === undefined) return fact.status === "running" ? "Checking…" : "Waiting to be checked";
    const label = fact.verdict === "inconsistent" ? "Possibly inconsistent" : "Consistent with the corpus";
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

  function reviewBox(fact, onReview) {
    const box = el("section", "claire-section claire-review");
    box.appendChild(el("h4", null, "Your review"));
    const current = el("p", "claire-decision");
    const describe = (review) => {
      current.textContent = review
        ? "You " + (review.decision === "accept" ? "accepted" : "rejected") + " this" + (review.comment ? ": " + review.comment : ".")
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
    for (const [decision, label] of [["accept", "Accept"], ["reject", "Reject"]]) {
      const button = el("button", "claire-" + decision, label);
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

  function card(fact, options) {
    const node = el("article", "claire-card claire-" + band(fact));
    node.dataset.index = fact.index;
    node.appendChild(el("h3", "claire-fact", fact.fact));
    node.appendChild(el("p", "claire-verdict", verdictLine(fact)));
    const assessment = fact.assessment || {};
    if (assessment.reasoning) {
      section(node, "Analysis").appendChild(el("p", "claire-text", assessment.reasoning));
    }
    if (assessment.report) {
      const box = section(node, "Two-sided report");
      for (const [side, title] of [["inconsistent", "The case that it is contradicted"], ["consistent", "The case that it holds"]]) {
        if (assessment.report[side]) {
          box.appendChild(el("h5", null, title));
          box.appendChild(el("p", "claire-text", assessment.report[side]));
        }
      }
    }
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

  root.ClairePanel = { render, card, band, safeUrl, el };
})(typeof window !== "undefined" ? window : globalThis);
