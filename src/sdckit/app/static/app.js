// sdckit app: the page's only script. Every action posts JSON to the session's API and swaps in the
// panel the server renders; while a job runs (a re-measure, the planner, the report) the page polls
// its status and stays usable. Nothing is fetched from anywhere but this server.
"use strict";

(function () {
  const base = document.body.dataset.base;
  const panel = document.getElementById("panel");
  let polling = null;

  function show(answer) {
    panel.innerHTML = answer.panel;
    document.body.dataset.running = answer.running ? "yes" : "no";
    if (answer.running) startPolling();
  }

  function failed(text) {
    let box = document.getElementById("error");
    if (!box) {
      box = document.createElement("p");
      box.id = "error";
      box.className = "error";
      box.setAttribute("role", "alert");
      panel.prepend(box);
    }
    box.textContent = "Error: " + text;
  }

  async function post(action, body, raw) {
    const url = base + "api/" + action;
    const init = raw
      ? { method: "POST", body: raw.body, headers: { "Content-Type": "application/octet-stream" } }
      : { method: "POST", body: JSON.stringify(body || {}), headers: { "Content-Type": "application/json" } };
    try {
      const response = await fetch(raw ? url + "?" + raw.query : url, init);
      if (!response.ok) { failed(await response.text()); return; }
      show(await response.json());
    } catch (err) {
      failed("the workbench server does not answer (" + err + "); is `sdckit app` still running?");
    }
  }

  function startPolling() {
    if (polling) return;
    polling = setInterval(async function () {
      let status;
      try { status = await (await fetch(base + "status")).json(); } catch (err) { return; }
      const text = document.getElementById("progress-text");
      const bar = document.getElementById("progress");
      if (status.running) {
        if (bar) bar.hidden = false;
        if (text) text.textContent = status.label + ": " + status.stage + " (" + status.seconds + " s)";
        return;
      }
      clearInterval(polling);
      polling = null;
      try { show(await (await fetch(base + "panel")).json()); } catch (err) { failed(String(err)); }
    }, 300);
  }

  function formBody(form) {
    const body = {};
    for (const el of form.elements) {
      if (!el.name || el.disabled) continue;
      if (el.type === "checkbox") body[el.name] = el.checked;
      else if (el.type !== "submit" && el.type !== "button") body[el.name] = el.value;
    }
    return body;
  }

  // A step form: one input per option of its kind (the server renders them from the step registry;
  // a <template id="fields-KIND"> per kind holds them empty), or the options as YAML text.
  function swapFields(form, kind, example) {
    const template = document.getElementById("fields-" + kind);
    const old = form.querySelector(".step-fields");
    if (template && old) {
      const fresh = template.content.firstElementChild.cloneNode(true);
      if (form.id === "add-step") {
        for (const el of fresh.querySelectorAll("[name]")) el.id = "add-opt-" + el.name.slice(4);
      }
      fresh.hidden = old.hidden;
      old.replaceWith(fresh);
    }
    const text = form.querySelector('textarea[name="options"]');
    if (text) text.value = example;
  }

  function showYaml(form, on) {
    const fields = form.querySelector(".step-fields");
    const text = form.querySelector(".step-yaml");
    if (fields) fields.hidden = on;
    if (text) text.hidden = !on;
  }

  panel.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-post]");
    if (!form) return;
    event.preventDefault();
    post(form.dataset.post, formBody(form));
  });

  panel.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-post]");
    if (!button || button.form) return;
    event.preventDefault();
    post(button.dataset.post, button.dataset.body ? JSON.parse(button.dataset.body) : {});
  });

  panel.addEventListener("change", function (event) {
    const el = event.target;
    if (el.dataset.postToggle !== undefined) {
      post("toggle_step", { index: Number(el.dataset.postToggle) });
    } else if (el.classList.contains("step-kind")) {
      swapFields(el.form, el.value, el.options[el.selectedIndex].dataset.template || "");
    } else if (el.classList.contains("yaml-toggle")) {
      showYaml(el.form, el.checked);
    } else if (el.id === "reproducible") {
      document.getElementById("seed").disabled = !el.checked;
    } else if (el.id === "hier-file" && el.files && el.files.length) {
      // a hierarchy file is small text: read here, posted with its column
      el.files[0].text().then(function (text) {
        post("load_hierarchy", { column: document.getElementById("hier-load-column").value, text: text });
      });
    } else if (el.dataset.upload && el.files && el.files.length) {
      const file = el.files[0];
      const form = document.getElementById("load-path");
      const options = formBody(form);
      delete options.source;
      const query = new URLSearchParams(Object.assign({ name: file.name }, options)).toString();
      post(el.dataset.upload, null, { body: file, query: query });
    }
  });

  // The step list reorders by drag and drop (the arrows do the same by one place).
  let dragged = null;
  panel.addEventListener("dragstart", function (event) {
    const item = event.target.closest && event.target.closest("li.step");
    if (!item) return;
    dragged = Number(item.dataset.index);
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", String(dragged));
  });
  panel.addEventListener("dragover", function (event) {
    if (dragged !== null && event.target.closest && event.target.closest("li.step")) event.preventDefault();
  });
  panel.addEventListener("drop", function (event) {
    const item = event.target.closest && event.target.closest("li.step");
    if (!item || dragged === null) return;
    event.preventDefault();
    const to = Number(item.dataset.index);
    const from = dragged;
    dragged = null;
    if (to !== from) post("move_step", { index: from, to: to });
  });
  panel.addEventListener("dragend", function () { dragged = null; });

  if (document.body.dataset.running === undefined && document.getElementById("progress") &&
      !document.getElementById("progress").hidden) startPolling();
})();
