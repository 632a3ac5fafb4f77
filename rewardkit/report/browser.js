// The sample browser of a rewardkit report: filter, sort, show one sample in full.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("sample-data").textContent);
  var rows = data.rows;
  var names = data.components;
  var LIMIT = 300;
  var $ = function (id) { return document.getElementById(id); };
  var controls = ["f-component", "f-status", "f-min", "f-max", "f-flag", "f-text", "f-sort"];

  function num(v) {
    if (v === null || v === undefined) { return "-"; }
    return Number(v.toPrecision(4)).toString();
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (cls) { node.className = cls; }
    return node;
  }

  function matches(row, f) {
    var picked = f.component ? [f.component] : names;
    var statusOk = !f.status || picked.some(function (n) { return row.comp[n].s === f.status; });
    if (!statusOk) { return false; }
    if (f.min !== null || f.max !== null) {
      // the value of the chosen component, or the total when none is chosen
      var v = f.component ? row.comp[f.component].v : row.t;
      if (v === null) { return false; }
      if ((f.min !== null && v < f.min) || (f.max !== null && v > f.max)) { return false; }
    }
    if (f.flag && row.f.indexOf(f.flag) < 0) { return false; }
    if (f.text) {
      var hay = (row.p + "\n" + row.c + "\n" + (row.tr || "")).toLowerCase();
      if (hay.indexOf(f.text) < 0) { return false; }
    }
    return true;
  }

  function readFilters() {
    var min = $("f-min").value, max = $("f-max").value;
    return {
      component: $("f-component").value,
      status: $("f-status").value,
      min: min === "" ? null : Number(min),
      max: max === "" ? null : Number(max),
      flag: $("f-flag").value,
      text: $("f-text").value.trim().toLowerCase(),
      sort: $("f-sort").value
    };
  }

  function sortKey(f) {
    var comp = f.component || names[0];
    var key = {
      "total-desc": function (r) { return r.t === null ? -Infinity : r.t; },
      "total-asc": function (r) { return r.t === null ? Infinity : -r.t; },
      "value-desc": function (r) { var v = r.comp[comp].v; return v === null ? -Infinity : v; },
      "value-asc": function (r) { var v = r.comp[comp].v; return v === null ? Infinity : -v; },
      "len-desc": function (r) { return r.len; }
    }[f.sort];
    return key || null;
  }

  function render() {
    var f = readFilters();
    var found = rows.filter(function (r) { return matches(r, f); });
    var key = sortKey(f);
    if (key) {
      found.sort(function (a, b) { return key(b) - key(a) || a.i - b.i; });
    }
    var body = document.querySelector("#sample-table tbody");
    body.textContent = "";
    found.slice(0, LIMIT).forEach(function (r) {
      var tr = el("tr");
      tr.dataset.index = r.i;
      tr.appendChild(el("td", String(r.i)));
      tr.appendChild(el("td", num(r.t)));
      names.forEach(function (n) {
        var c = r.comp[n];
        var td = el("td", c.s === "ok" ? num(c.v) : c.s, "status-" + c.s);
        td.title = c.r;
        tr.appendChild(td);
      });
      tr.appendChild(el("td", r.c.slice(0, 120), "text"));
      tr.appendChild(el("td", r.f.map(function (k) { return data.flags[k]; }).join("; "),
                        r.f.length ? "flagged" : ""));
      tr.addEventListener("click", function () { show(r); });
      body.appendChild(tr);
    });
    $("match-count").textContent = found.length + " of " + rows.length + " samples match" +
      (found.length > LIMIT ? " (first " + LIMIT + " shown)" : "");
  }

  function show(r) {
    var box = $("detail");
    box.textContent = "";
    box.hidden = false;
    box.appendChild(el("h3", "Sample " + r.i + " · total " + num(r.t)));
    [["prompt", r.p], ["completion", r.c], ["trajectory", r.tr], ["reference", r.ref], ["metadata", r.m]]
      .forEach(function (pair) {
        if (!pair[1]) { return; }
        box.appendChild(el("h4", pair[0]));
        box.appendChild(el("pre", pair[1], "detail-" + pair[0]));
      });
    var table = el("table", null, "grid");
    var head = el("tr");
    ["component", "value", "status", "reason"].forEach(function (h) { head.appendChild(el("th", h)); });
    table.appendChild(head);
    names.forEach(function (n) {
      var c = r.comp[n];
      var tr = el("tr");
      tr.appendChild(el("td", n));
      tr.appendChild(el("td", num(c.v)));
      tr.appendChild(el("td", c.s, "status-" + c.s));
      tr.appendChild(el("td", c.r));
      table.appendChild(tr);
    });
    box.appendChild(table);
    if (r.f.length) {
      box.appendChild(el("p", "Signs: " + r.f.map(function (k) { return data.flags[k]; }).join("; "),
                         "flagged"));
    }
    box.scrollIntoView({block: "nearest"});
  }

  controls.forEach(function (id) {
    $(id).addEventListener("input", render);
    $(id).addEventListener("change", render);
  });
  Array.prototype.forEach.call(document.querySelectorAll(".flag-link"), function (a) {
    a.addEventListener("click", function () {
      $("f-flag").value = a.dataset.flag;
      render();
    });
  });
  render();
}());
