// skyform dashboard: the log view follows a running job (server-sent events) and a
// service page redraws its charts every two seconds. Text is only ever set as text.
"use strict";

function followLog(pre) {
  const state = document.getElementById("log-state");
  const source = new EventSource(pre.dataset.src);
  source.addEventListener("line", (e) => {
    pre.append(JSON.parse(e.data) + "\n");
    state.textContent = "streaming";
  });
  source.addEventListener("end", (e) => {
    state.textContent = "ended: " + JSON.parse(e.data);
    pre.dataset.ended = "1";
    source.close();
  });
  source.onerror = () => {
    if (!pre.dataset.ended) state.textContent = "disconnected";
    source.close();
  };
}

function drawLine(id, chart) {
  const svg = document.getElementById(id);
  if (!svg) return;
  svg.querySelector("polyline").setAttribute("points", chart.points);
  document.getElementById(id + "-top").textContent = Number(chart.top).toPrecision(4);
  document.getElementById(id + "-count").textContent = String(chart.count);
}

function pollTraffic(section) {
  const tick = async () => {
    try {
      const reply = await fetch(section.dataset.src, { credentials: "same-origin" });
      if (reply.ok) {
        const data = await reply.json();
        drawLine("rps-chart", data.rps);
        drawLine("latency-chart", data.latency);
        drawLine("latency95-chart", data.latency95);
        document.getElementById("rps-total").textContent = String(Math.round(data.rps_total));
      }
    } catch (err) {
      // the next tick tries again
    }
    setTimeout(tick, 2000);
  };
  setTimeout(tick, 2000);
}

document.addEventListener("DOMContentLoaded", () => {
  const log = document.getElementById("log");
  if (log) followLog(log);
  const traffic = document.getElementById("traffic");
  if (traffic) pollTraffic(traffic);
});
