// Queuety UI: live refresh of list pages and two-step confirmation of
// actions. No inline script: the page's Content-Security-Policy forbids it.
"use strict";

(function () {
  const base = document.body.dataset.base || "";
  const live = document.getElementById("live");
  const toggle = document.getElementById("live-toggle");
  const storeKey = "queuety-ui-live";

  // Two-step confirmation: the first submit of a form with data-confirm
  // arms it (its button asks to confirm), the second one within five
  // seconds goes through.
  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (form.dataset.armed === "1") return;
    ev.preventDefault();
    const button = form.querySelector("button[type=submit]");
    const label = button ? button.textContent : "";
    form.dataset.armed = "1";
    form.classList.add("armed");
    if (button) {
      button.textContent = "Confirm " + label.toLowerCase();
      button.title = form.dataset.confirm;
    }
    const note = document.createElement("span");
    note.className = "confirm-note";
    note.textContent = form.dataset.confirm;
    form.appendChild(note);
    setTimeout(function () {
      delete form.dataset.armed;
      form.classList.remove("armed");
      if (button) button.textContent = label;
      note.remove();
    }, 5000);
  });

  // Row selection for the bulk actions: the ticked boxes of the list
  // (inputs of class "pick" that belong to a bulk form), a box that ticks
  // every row of the page, and the count the bulk form shows.
  function picks() {
    return Array.prototype.slice.call(document.querySelectorAll("input.pick"));
  }
  function countPicked() {
    const n = picks().filter(function (b) { return b.checked; }).length;
    const out = document.getElementById("picked");
    if (out) out.textContent = String(n);
    const all = document.getElementById("pick-all");
    if (all) {
      const boxes = picks();
      all.checked = boxes.length > 0 && n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    }
  }
  document.addEventListener("change", function (ev) {
    const t = ev.target;
    if (!(t instanceof HTMLInputElement)) return;
    if (t.id === "pick-all") {
      picks().forEach(function (b) { b.checked = t.checked; });
    }
    if (t.id === "pick-all" || t.classList.contains("pick")) countPicked();
  });
  // A bulk form with nothing ticked is not sent.
  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("bulk")) return;
    if (!picks().some(function (b) { return b.checked; })) {
      ev.preventDefault();
      const out = document.getElementById("picked");
      if (out) out.parentElement.classList.add("nothing");
    }
  });
  countPicked();

  if (!live || !toggle) return;

  const interval = parseInt(toggle.dataset.interval, 10) || 5000;
  let paused = localStorage.getItem(storeKey) === "off";
  let timer = null;
  let busy = false;

  function show() {
    toggle.textContent = paused ? "Paused" : "Live";
    toggle.classList.toggle("paused", paused);
    toggle.setAttribute("aria-pressed", paused ? "false" : "true");
    document.body.dataset.live = paused ? "off" : "on";
  }

  function url() {
    const here = live.dataset.live || "/";
    return base + here + (here.indexOf("?") >= 0 ? "&" : "?") + "partial=1";
  }

  async function refresh() {
    if (paused || busy || document.hidden) return;
    if (live.querySelector("form.armed")) return; // an action awaits its confirmation
    if (editing()) return;
    // Rows are ticked for a bulk action: they stay where they are until
    // the action is sent or the boxes cleared.
    if (picks().some(function (b) { return b.checked; })) {
      // Counts the refreshes held back (tests wait on it).
      live.dataset.held = String((parseInt(live.dataset.held, 10) || 0) + 1);
      return;
    }
    delete live.dataset.held;
    busy = true;
    try {
      const res = await fetch(url(), { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (res.status === 401) {
        paused = true;
        show();
        toggle.textContent = "Logged out";
        return;
      }
      if (!res.ok) return;
      const html = await res.text();
      // Paused meanwhile, or an action armed: the page stays as it is, so
      // the button a person is about to click is not replaced under them.
      if (!paused && !live.querySelector("form.armed") && !editing()) {
        // Keep the rows a person ticked while the request ran: the new
        // rows with the same ids are ticked again.
        const ticked = picks().filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
        live.innerHTML = html;
        picks().forEach(function (b) { b.checked = ticked.indexOf(b.value) >= 0; });
        countPicked();
        live.dataset.updated = String(Date.now());
        document.dispatchEvent(new CustomEvent("queuety:refreshed"));
      }
    } catch (e) {
      // The server is unreachable for now; the next tick tries again.
    } finally {
      busy = false;
    }
  }

  // editing reports whether a person is typing in a field of the live
  // part, which a refresh would replace.
  function editing() {
    const a = document.activeElement;
    return !!a && live.contains(a) && (a instanceof HTMLInputElement || a instanceof HTMLTextAreaElement ||
      a instanceof HTMLSelectElement) && !a.classList.contains("pick") && a.id !== "pick-all";
  }

  // A hidden tab does not refresh; when it shows again it refreshes at
  // once.
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) refresh();
  });

  function start() {
    if (timer) clearInterval(timer);
    timer = setInterval(refresh, interval);
  }

  toggle.addEventListener("click", function () {
    paused = !paused;
    localStorage.setItem(storeKey, paused ? "off" : "on");
    show();
    if (!paused) refresh();
  });

  show();
  start();
})();
