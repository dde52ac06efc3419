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
      if (!paused && !live.querySelector("form.armed")) {
        live.innerHTML = html;
        live.dataset.updated = String(Date.now());
        document.dispatchEvent(new CustomEvent("queuety:refreshed"));
      }
    } catch (e) {
      // The server is unreachable for now; the next tick tries again.
    } finally {
      busy = false;
    }
  }

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
