// batchplace dashboard: the little behaviour the server-rendered pages need.
//   - hover on a GPU cell: which pod holds it (ids into the page's #bp-pods table);
//   - the login form keeps the token in this tab's sessionStorage for the What-if call;
//   - What-if: build the job, POST /v1/what-if, draw where it lands and whom it preempts.
// No framework, no build step: served as it is from service/ui/static/.
"use strict";
(function () {
  const TOKEN_KEY = "batchplace-token";
  let pods = null;

  function podTable() {
    if (pods === null) {
      const el = document.getElementById("bp-pods");
      pods = el ? JSON.parse(el.textContent) : [];
    }
    return pods;
  }

  function cellIndex(cell) {
    const row = cell.closest(".node");
    const position = Array.prototype.indexOf.call(cell.parentNode.children, cell);
    const explicit = row && row.dataset.idx ? row.dataset.idx.split(",") : null;
    return explicit ? explicit[position] : String(position);
  }

  function describeCell(cell) {
    const row = cell.closest(".node");
    const lines = [`${row ? row.dataset.node : "?"} · GPU ${cellIndex(cell)}`];
    const ids = (cell.dataset.p || "").split(" ").filter(Boolean);
    if (!ids.length) lines.push(cell.classList.contains("o") ? "held by work outside any queue" : "free");
    for (const id of ids) {
      const [key, group, queue, gpu, state] = podTable()[Number(id)] || [];
      if (!key) continue;
      const what = state === "reserved" ? "reserved: bound this cycle" : state === "evicted" ? "evicted this cycle" : "running";
      lines.push(`${key}${group ? " (PodGroup " + group + ")" : ""}\nqueue ${queue || "—"} · ${gpu} GPU · ${what}`);
    }
    if (cell.classList.contains("land")) lines.push("what-if: the new job lands here");
    if (cell.classList.contains("victim")) lines.push("what-if: preempted for the new job");
    return lines.join("\n");
  }

  function setUpTips() {
    const picture = document.getElementById("picture");
    const tip = document.getElementById("tip");
    if (!picture || !tip) return;
    picture.addEventListener("mouseover", (event) => {
      const cell = event.target.closest(".g");
      if (!cell) return;
      tip.textContent = describeCell(cell);
      tip.hidden = false;
      const box = cell.getBoundingClientRect();
      tip.style.left = `${Math.min(box.right + 8, window.innerWidth - 320)}px`;
      tip.style.top = `${box.bottom + 6}px`;
    });
    picture.addEventListener("mouseout", (event) => {
      if (event.target.closest(".g")) tip.hidden = true;
    });
  }

  function setUpLogin() {
    const form = document.getElementById("login");
    if (!form) return;
    form.addEventListener("submit", () => {
      try { sessionStorage.setItem(TOKEN_KEY, form.elements.token.value.trim()); } catch (e) { /* storage off: ask again later */ }
    });
  }

  // ---- what-if ----

  function jobFromSize(form) {
    const pods = Number(form.elements.pods.value);
    const gpus = Number(form.elements.gpus.value);
    const cpu = Number(form.elements.cpu.value || 0);
    if (!Number.isInteger(pods) || pods < 1) throw new Error("pods: a whole number, at least 1");
    const requests = {};
    if (cpu > 0) requests.cpu = String(cpu);
    const limits = {};
    if (gpus >= 1) {
      if (!Number.isInteger(gpus)) throw new Error("GPUs per pod: whole devices, or a fraction below 1 (0.5 = half a device)");
      requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = String(gpus);
    } else if (gpus > 0) {
      requests["batchplace.io/gpu-milli"] = limits["batchplace.io/gpu-milli"] = String(Math.round(gpus * 1000));
    }
    const spec = {
      minAvailable: pods,
      schedulerName: "batchplace",
      queue: form.elements.queue.value || "default",
      tasks: [{ name: "worker", replicas: pods, template: { spec: { containers: [{ name: "main", image: "what-if", resources: { requests, limits } }] } } }],
    };
    if (form.elements.priority.value) spec.priorityClassName = form.elements.priority.value;
    if (form.elements.topology.value) {
      const [mode, tier] = form.elements.topology.value.split(":");
      spec.networkTopology = { mode, highestTierAllowed: Number(tier) };
    }
    return { apiVersion: "batch.volcano.sh/v1alpha1", kind: "Job", metadata: { name: form.elements.name.value, namespace: form.elements.namespace.value || "default" }, spec };
  }

  function clearMarks() {
    document.querySelectorAll(".g.land, .g.victim").forEach((c) => c.classList.remove("land", "victim"));
    document.querySelectorAll(".node.land-node, .node.victim-node").forEach((r) => r.classList.remove("land-node", "victim-node"));
  }

  function rowOf(node) {
    return document.querySelector(`.node[data-node="${CSS.escape(node)}"]`);
  }

  function cellOf(row, gpuIndex) {
    const cells = row.querySelectorAll(".g");
    if (row.dataset.idx) {
      const position = row.dataset.idx.split(",").indexOf(String(gpuIndex));
      return position >= 0 ? cells[position] : null;
    }
    return cells[gpuIndex] || null;
  }

  function draw(job) {
    let first = null;
    for (const bind of job.binds || []) {
      const row = rowOf(bind.node);
      if (!row) continue;
      row.classList.add("land-node");
      first = first || row;
      for (const index of bind.gpus || []) {
        const cell = cellOf(row, index);
        if (cell) cell.classList.add("land");
      }
    }
    const victims = new Set((job.preempts || []).map((e) => e.pod));
    if (victims.size) {
      const ids = new Set();
      podTable().forEach((entry, id) => { if (victims.has(entry[0])) ids.add(String(id)); });
      document.querySelectorAll("#picture .g[data-p]").forEach((cell) => {
        if (cell.dataset.p.split(" ").some((id) => ids.has(id))) {
          cell.classList.add("victim");
          cell.closest(".node").classList.add("victim-node");
        }
      });
      for (const eviction of job.preempts) {
        const row = rowOf(eviction.node);
        if (row) row.classList.add("victim-node");
      }
    }
    if (first) first.scrollIntoView({ block: "center" });
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function list(items) {
    const ul = el("ul");
    for (const item of items) ul.appendChild(el("li", "", item));
    return ul;
  }

  function showVerdict(answer, job) {
    const box = el("div", `verdict ${job.starts ? "starts" : "blocked"}`);
    box.dataset.job = job.name;
    if (job.starts) {
      box.appendChild(el("b", "", `${job.name} starts now: ${job.placed} of ${job.pods} pods placed (min ${job.min_member}) on ${job.nodes.join(", ") || "—"}.`));
      if (job.preempts.length) {
        box.appendChild(el("div", "", `It preempts ${job.preempts.length} pod(s):`));
        box.appendChild(list(job.preempts.map((e) => `${e.pod} on ${e.node} (${e.reason})`)));
      } else {
        box.appendChild(el("div", "", "It preempts nobody."));
      }
      if ((job.claims || []).length) {
        box.appendChild(el("div", "", "Its DRA claims get:"));
        const claims = list(job.claims.map((c) => `${c.claim || `${c.pod} ${c.pod_claim}`} on ${c.node}: ${c.devices.map((d) => `${d.request} ${d.device}`).join(", ")}`));
        claims.className = "claims";
        box.appendChild(claims);
      }
    } else {
      box.appendChild(el("b", "", `${job.name} cannot start now: ${job.placed} of min ${job.min_member} pods would be placed.`));
      box.appendChild(list(job.blocking));
      if (job.gpus_short > 0) box.appendChild(el("div", "", `${job.gpus_short} more GPUs must come free (needs ${job.gpus_to_start}, ${job.gpus_free_eligible} free where it may run).`));
    }
    answer.appendChild(box);
  }

  function problemText(problem) {
    const where = [problem.pointer || (problem.loc || []).join("."), problem.document ? `document ${problem.document}` : "", problem.object || "", problem.path || ""]
      .filter(Boolean).join(" · ");
    return where ? `${where}: ${problem.msg}` : problem.msg;
  }

  function setUpWhatIf() {
    const form = document.getElementById("whatif");
    if (!form) return;
    const answer = document.getElementById("answer");
    const tokenBox = form.querySelector(".token");
    const sizeBox = form.querySelector(".size");
    const yamlBox = form.elements.yaml;
    for (const radio of form.elements.mode) {
      radio.addEventListener("change", () => {
        const yaml = form.elements.mode.value === "yaml";
        sizeBox.hidden = yaml;
        yamlBox.hidden = !yaml;
        for (const input of sizeBox.querySelectorAll("input")) input.disabled = yaml;
      });
    }
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      answer.replaceChildren(el("div", "verdict", "Asking the solver…"));
      clearMarks();
      const body = { changes: {}, options: { engine: form.elements.engine.value } };
      try {
        if (form.elements.mode.value === "yaml") {
          if (!yamlBox.value.trim()) throw new Error("paste a vcjob, or a PodGroup with its pods, first");
          body.changes.add_jobs_yaml = yamlBox.value;
        } else {
          body.changes.add_jobs = [jobFromSize(form)];
        }
        if (form.dataset.base === "upload") {
          const base = await fetch(form.dataset.snapshotUrl, { credentials: "same-origin" });
          if (!base.ok) throw new Error(`the uploaded snapshot is gone from the server (${base.status}): upload it again`);
          body.snapshot = await base.json();
        }
      } catch (error) {
        answer.replaceChildren(el("div", "verdict blocked error", error.message));
        return;
      }
      const headers = { "Content-Type": "application/json" };
      const typed = form.elements.token.value.trim();
      if (typed) { try { sessionStorage.setItem(TOKEN_KEY, typed); } catch (e) { /* keep it for this call only */ } }
      let token = typed;
      try { token = token || sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { /* no storage */ }
      if (token) headers.Authorization = `Bearer ${token}`;
      let response;
      try {
        response = await fetch("/v1/what-if", { method: "POST", headers, body: JSON.stringify(body) });
      } catch (error) {
        answer.replaceChildren(el("div", "verdict blocked error", `no answer from the server: ${error.message}`));
        return;
      }
      const data = await response.json().catch(() => ({}));
      answer.replaceChildren();
      if (response.status === 200) {
        for (const job of data.jobs) { showVerdict(answer, job); draw(job); }
        if (!data.jobs.length) answer.appendChild(el("div", "verdict", "The YAML adds no job."));
      } else if (response.status === 401) {
        tokenBox.hidden = false;
        answer.appendChild(el("div", "verdict blocked error", "This server's API wants its token: enter it above and ask again."));
      } else if (response.status === 422 && Array.isArray(data.detail)) {
        const box = el("div", "verdict blocked error", "The job cannot be read:");
        box.appendChild(list(data.detail.map(problemText)));
        answer.appendChild(box);
      } else {
        const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || data);
        answer.appendChild(el("div", "verdict blocked error", `${response.status}: ${detail}`));
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    setUpTips();
    setUpLogin();
    setUpWhatIf();
  });
})();
