// tensorjudge pages: math, the editor, Run/Submit with live verdicts. Everything here is an
// enhancement: without JavaScript the forms post and the pages reload.
(function () {
  "use strict";

  var store = {
    get: function (k) { try { return window.localStorage.getItem(k); } catch (e) { return null; } },
    set: function (k, v) { try { window.localStorage.setItem(k, v); } catch (e) { /* full or off */ } },
    del: function (k) { try { window.localStorage.removeItem(k); } catch (e) { /* off */ } },
  };

  // --- math ------------------------------------------------------------------------------
  function renderMath(root) {
    if (!window.katex) return;
    var nodes = (root || document).querySelectorAll(".math:not(.rendered)");
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      var tex = el.textContent;
      try {
        window.katex.render(tex, el, {
          displayMode: el.classList.contains("math-display"),
          throwOnError: false,
          strict: "ignore",
          output: "htmlAndMathml",
        });
        el.classList.add("rendered");
      } catch (e) {
        el.textContent = tex;
      }
    }
  }

  // --- boxes wider than their column ----------------------------------------------------
  // A display equation wider than its column is set smaller, down to MIN_SCALE; what still
  // does not fit scrolls inside its own box, like wide tables and code, and every such box
  // is marked (has-overflow) so the stylesheet fades its hidden side.
  var MIN_SCALE = 0.6;
  var SCROLLERS = ".math-display, .table-scroll, .prose pre, pre.code-block, pre.traceback, .signature";

  function fitMath(root) {
    var nodes = (root || document).querySelectorAll(".math-display.rendered");
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      el.style.fontSize = "";
      if (el.clientWidth === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
      // Not every part of a formula scales with the font: step down until it fits.
      var pct = Math.floor(100 * Math.max(MIN_SCALE, (el.clientWidth - 2) / el.scrollWidth));
      el.style.fontSize = pct + "%";
      while (el.scrollWidth > el.clientWidth + 1 && pct > MIN_SCALE * 100) {
        pct = Math.max(MIN_SCALE * 100, pct - 3);
        el.style.fontSize = pct + "%";
      }
    }
  }

  function markScroll(el) {
    var over = el.scrollWidth > el.clientWidth + 1;
    el.classList.toggle("has-overflow", over);
    el.classList.toggle("scrolled", over && el.scrollLeft > 1);
    el.classList.toggle("at-end", over && el.scrollLeft + el.clientWidth >= el.scrollWidth - 1);
    if (over && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");  // reachable by keyboard, to scroll it
      el.addEventListener("scroll", function () { markScroll(el); }, { passive: true });
    }
  }

  function fitWide(root) {
    fitMath(root);
    var boxes = (root || document).querySelectorAll(SCROLLERS);
    for (var i = 0; i < boxes.length; i++) markScroll(boxes[i]);
  }

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { fitWide(document); }, 150);
  });

  // --- fragments -------------------------------------------------------------------------
  function fetchHTML(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      });
  }

  function loadSamples() {
    var box = document.querySelector(".samples-pending[data-samples-url]");
    if (!box) return;
    fetchHTML(box.getAttribute("data-samples-url")).then(function (html) {
      box.outerHTML = html;
      renderMath(document.getElementById("samples"));
      fitWide(document.getElementById("samples"));
    }).catch(function () {
      box.innerHTML = '<p class="muted">The samples could not be loaded. <a href="' +
        box.getAttribute("data-samples-url") + '">Try again</a>.</p>';
    });
  }

  // --- live verdicts ---------------------------------------------------------------------
  // Follows one submission: on every status event of the server's stream (queued, running,
  // done) the result panel is fetched again and swapped in. If the stream fails, polling.
  function follow(id, opts) {
    var seq = 0, applied = 0, finished = false, es = null, timer = null;

    function refresh() {
      var mine = ++seq;
      return fetchHTML("/submissions/" + id + "/result").then(function (html) {
        if (mine < applied || finished) return;
        applied = mine;
        var tmp = document.createElement("div");
        tmp.innerHTML = html;
        var section = tmp.querySelector(".result");
        if (!section) return;
        var first = !opts.container.querySelector(".result");
        opts.container.innerHTML = "";
        opts.container.appendChild(section);
        fitWide(section);
        if (first && opts.reveal) opts.reveal(section);
        var status = section.getAttribute("data-status");
        var verdict = section.getAttribute("data-verdict");
        var words = section.querySelector(".verdict.big");
        var score = section.querySelector(".score");
        if (opts.announce) {
          opts.announce.textContent = (words ? words.textContent.trim() : status) +
            (score ? ", " + score.textContent.trim() : "");
        }
        if (status === "done") {
          finished = true;
          stop();
          if (opts.onDone) opts.onDone(verdict);
        }
      }).catch(function () { /* the next event or poll tries again */ });
    }

    function stop() {
      if (es) { es.close(); es = null; }
      if (timer) { clearInterval(timer); timer = null; }
    }

    function poll() {
      if (timer || finished) return;
      timer = setInterval(refresh, 1500);
    }

    refresh();
    if (window.EventSource) {
      es = new EventSource("/api/v1/submissions/" + id + "/events");
      es.addEventListener("status", function () { refresh(); });
      es.onerror = function () {
        if (finished) return;
        if (es) { es.close(); es = null; }
        poll();
      };
    } else {
      poll();
    }
    return { stop: stop };
  }

  // --- the problem page ------------------------------------------------------------------
  function setupProblem(form) {
    var slug = form.getAttribute("data-slug");
    var key = "tj:code:" + slug;
    var textarea = document.getElementById("code");
    var starterNode = document.getElementById("starter-code");
    var starter = starterNode ? JSON.parse(starterNode.textContent) : "";
    var startersNode = document.getElementById("starters");
    var starters = startersNode ? JSON.parse(startersNode.textContent) : null;
    var picker = document.getElementById("starter-framework");
    var fwKey = "tj:framework:" + slug;
    if (starters && picker) {
      var chosen = store.get(fwKey);
      if (chosen && starters[chosen]) { picker.value = chosen; starter = starters[chosen]; }
    }
    var host = document.getElementById("editor");
    var panel = document.getElementById("verdict");
    var announce = document.getElementById("verdict-status");
    var autoBox = document.getElementById("autoindent");
    var editor = null;
    var saveTimer = null;

    var saved = store.get(key);
    // A page re-rendered after a failed plain post shows that code: keep it.
    var initial = form.hasAttribute("data-keep-code") || saved === null ? textarea.value : saved;
    if (saved === null && !form.hasAttribute("data-keep-code")) initial = starter;

    function save(text) {
      textarea.value = text;
      clearTimeout(saveTimer);
      saveTimer = setTimeout(function () { store.set(key, text); }, 250);
    }

    if (window.TJEditor && host) {
      editor = window.TJEditor.create(host, {
        doc: initial,
        autoIndent: store.get("tj:autoindent") === "1",
        label: "Code editor: your solution in Python",
        describedBy: "editor-help",
        onChange: save,
      });
      host.tjEditor = editor;  // for tests and the console: getValue(), setValue(text)
      textarea.value = initial;
      textarea.hidden = true;
      host.hidden = false;
      var label = document.querySelector('label[for="code"]');
      if (label) {
        label.removeAttribute("for");
        label.addEventListener("click", function () { editor.focus(); });
      }
      if (autoBox) {
        autoBox.checked = store.get("tj:autoindent") === "1";
        autoBox.addEventListener("change", function () {
          store.set("tj:autoindent", autoBox.checked ? "1" : "0");
          editor.setAutoIndent(autoBox.checked);
        });
      }
    } else {
      textarea.value = initial;
      textarea.addEventListener("input", function () { save(textarea.value); });
      if (autoBox) autoBox.closest("label").hidden = true;
    }

    function currentCode() { return editor ? editor.getValue() : textarea.value; }
    function useStarter(text) {
      if (editor) editor.setValue(text); else textarea.value = text;
      save(text);
    }

    var reset = document.getElementById("reset-code");
    if (reset) {
      reset.addEventListener("click", function () {
        if (!window.confirm("Replace your code with the starter code?")) return;
        useStarter(starter);
      });
    }

    // A framework's starter replaces the code at once while it is still the previous
    // starter (nothing of the user's is lost); otherwise only after asking.
    if (starters && picker) {
      picker.addEventListener("change", function () {
        var next = starters[picker.value];
        if (next === undefined) return;
        var untouched = currentCode() === starter;
        if (!untouched && !window.confirm("Replace your code with the " +
            picker.options[picker.selectedIndex].text + " starter?")) {
          picker.value = store.get(fwKey) || picker.options[0].value;
          return;
        }
        starter = next;
        store.set(fwKey, picker.value);
        useStarter(next);
      });
    }

    // The page's header (solved mark, acceptance, attempts) and recent submissions, as the
    // server has them now.
    function refreshLive() {
      fetchHTML("/problems/" + encodeURIComponent(slug) + "/live").then(function (html) {
        var tmp = document.createElement("div");
        tmp.innerHTML = html;
        ["problem-head", "recent"].forEach(function (id) {
          var fresh = tmp.querySelector("#" + id);
          var old = document.getElementById(id);
          if (fresh && old) old.replaceWith(fresh);
        });
      }).catch(function () { /* the next verdict tries again */ });
    }

    var buttons = form.querySelectorAll('button[name="mode"]');
    function busy(on) {
      for (var i = 0; i < buttons.length; i++) buttons[i].disabled = on;
      form.setAttribute("aria-busy", on ? "true" : "false");
    }

    function showError(message, signIn) {
      panel.innerHTML = "";
      var p = document.createElement("p");
      p.className = "form-error";
      p.setAttribute("role", "alert");
      p.textContent = message + " ";
      if (signIn) {
        var a = document.createElement("a");
        a.href = "/signin?next=" + encodeURIComponent(location.pathname);
        a.textContent = "Sign in";
        p.appendChild(a);
      }
      panel.appendChild(p);
    }

    function showSolution() {
      var box = document.getElementById("solution");
      if (!box) return;
      fetchHTML(box.getAttribute("data-url")).then(function (html) {
        box.innerHTML = html;
        box.hidden = false;
        var details = box.querySelector("details");
        if (details) details.open = false;
      }).catch(function () { /* not unlocked */ });
    }

    var current = null;
    form.addEventListener("submit", function (ev) {
      if (form.getAttribute("data-signed-in") !== "yes") return;
      ev.preventDefault();
      var mode = ev.submitter && ev.submitter.value ? ev.submitter.value : "submit";
      var code = editor ? editor.getValue() : textarea.value;
      store.set(key, code);
      var body = new URLSearchParams();
      body.set("csrf", form.querySelector('input[name="csrf"]').value);
      body.set("code", code);
      body.set("mode", mode);
      busy(true);
      if (current) current.stop();
      panel.innerHTML = '<p class="muted sending">' + (mode === "run" ? "Running" : "Submitting") +
        " your code…</p>";
      if (announce) announce.textContent = mode === "run" ? "Running the samples" : "Submitted";
      fetch(form.action, {
        method: "POST",
        credentials: "same-origin",
        headers: { Accept: "application/json" },
        body: body,
      }).then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (data) {
          if (r.status !== 202) {
            busy(false);
            showError(data.detail || ("The judge answered " + r.status + "."), r.status === 401);
            return;
          }
          refreshLive();
          current = follow(data.id, {
            container: panel,
            announce: announce,
            reveal: function (el) {
              // Bring the verdict line into view (the table follows below it).
              var head = el.querySelector(".result-head") || el;
              if (head.scrollIntoView) head.scrollIntoView({ block: "nearest" });
            },
            onDone: function (verdict) {
              busy(false);
              refreshLive();
              if (verdict === "AC" && mode === "submit") showSolution();
            },
          });
        });
      }).catch(function () {
        busy(false);
        showError("The server could not be reached; your code is kept in this browser.");
      });
    });
  }

  // --- the submission page ---------------------------------------------------------------
  function setupSubmission(box) {
    if (box.getAttribute("data-status") === "done") return;
    follow(box.getAttribute("data-submission"), {
      container: box,
      announce: document.getElementById("verdict-status"),
    });
  }

  function init() {
    renderMath(document);
    fitWide(document);
    // Web fonts change widths once they arrive.
    if (document.fonts && document.fonts.ready) {
      document.fonts.ready.then(function () { fitWide(document); });
    }
    loadSamples();
    var form = document.getElementById("code-form");
    if (form) setupProblem(form);
    var live = document.querySelector(".live-result[data-submission]");
    if (live) setupSubmission(live);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
