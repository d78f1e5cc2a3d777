// A cluster's metrics charts (views/cluster_metrics.templ). The page's
// #cluster-metrics names the JSON of the range shown (data-src); each
// .metrics-chart in it names its series (data-series: the JSON's keys and
// their labels) and a factor for display (data-scale). One uPlot chart is
// drawn per container, as wide as the container, nulls as gaps. A range
// switch swaps #cluster-metrics through htmx: the new one is drawn when
// htmx has loaded it.
//
// Each chart records what it drew, for tests and for debugging:
// data-state (loading, drawn or error), data-range and data-points (the
// number of points of the range).
(function () {
  "use strict";

  // htmx runs the scripts of a whole page it swaps in (a history
  // restore): one set of listeners is enough.
  if (window.kubebyonMetrics) {
    return;
  }
  window.kubebyonMetrics = true;

  var HEIGHT = 180;
  var COLORS = {
    requests: ["#2563eb", "#d97706", "#059669"],
    errors: ["#dc2626"],
    latency: ["#2563eb", "#dc2626"],
    objects: ["#7c3aed"],
    nodes: ["#16a34a", "#6b7280"],
  };

  // drawn are the charts on the page, with what keeps them sized.
  var drawn = [];

  var lang = document.documentElement.lang || undefined;
  var timeFmt = new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit" });
  var dayFmt = new Intl.DateTimeFormat(lang, { month: "short", day: "numeric" });
  var fullFmt = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });

  function figure(v) {
    if (v === null || v === undefined) {
      return "—";
    }
    var a = Math.abs(v);
    var digits = a >= 100 ? 0 : a >= 10 ? 1 : a > 0 && a < 0.01 ? 4 : 2;
    return v.toLocaleString(lang, { maximumFractionDigits: digits });
  }

  // timeTicks labels the time axis: hours and minutes within a day,
  // dates beyond (foundIncr is the distance between ticks, in seconds).
  function timeTicks(u, splits, axisIdx, foundSpace, foundIncr) {
    var fmt = foundIncr >= 86400 ? dayFmt : timeFmt;
    return splits.map(function (s) {
      return fmt.format(new Date(s * 1000));
    });
  }

  // fromZero starts the y axis at zero, with room above the highest value.
  function fromZero(u, min, max) {
    if (max === null || !(max > 0)) {
      return [0, 1];
    }
    return [0, max * 1.1];
  }

  // latest shows the last point's figures in the legend while the
  // pointer is not over the chart.
  function latest(u) {
    if (u.cursor.idx === null || u.cursor.idx === undefined) {
      u.setLegend({ idx: u.data[0].length - 1 });
    }
  }

  function options(el, series, timeLabel) {
    var ink = getComputedStyle(el).color;
    var grid = { stroke: "rgba(128, 128, 128, 0.2)", width: 1 };
    var colors = COLORS[el.dataset.chart] || COLORS.requests;
    return {
      width: Math.max(el.clientWidth, 200),
      height: HEIGHT,
      scales: { y: { range: fromZero } },
      hooks: { ready: [latest], setCursor: [latest] },
      axes: [
        { stroke: ink, grid: grid, ticks: grid, values: timeTicks },
        { stroke: ink, grid: grid, ticks: grid, size: 56, values: function (u, splits) { return splits.map(figure); } },
      ],
      series: [
        {
          label: timeLabel,
          value: function (u, v) {
            return v === null ? "—" : fullFmt.format(new Date(v * 1000));
          },
        },
      ].concat(
        series.map(function (s, i) {
          return {
            label: s.label,
            stroke: colors[i % colors.length],
            width: 2,
            spanGaps: false,
            value: function (u, v) {
              return figure(v);
            },
          };
        })
      ),
    };
  }

  // columns are the chart's data as uPlot takes it: the times, then one
  // array per series, nulls kept.
  function columns(el, data, series) {
    var scale = parseFloat(el.dataset.scale) || 1;
    var cols = [data.time || []];
    series.forEach(function (s) {
      var values = data[s.key] || [];
      cols.push(
        values.map(function (v) {
          return v === null ? null : v * scale;
        })
      );
    });
    return cols;
  }

  function draw(el, data, timeLabel) {
    var series = JSON.parse(el.dataset.series);
    el.textContent = "";
    var plot = new uPlot(options(el, series, timeLabel), columns(el, data, series), el);
    var observer = new ResizeObserver(function () {
      var width = Math.max(el.clientWidth, 200);
      if (width !== plot.width) {
        plot.setSize({ width: width, height: HEIGHT });
      }
    });
    observer.observe(el);
    drawn.push({ el: el, plot: plot, observer: observer });
    el.dataset.range = data.range;
    el.dataset.points = String((data.time || []).length);
    el.dataset.state = "drawn";
  }

  // forget drops the charts a range switch took off the page.
  function forget() {
    drawn = drawn.filter(function (c) {
      if (c.el.isConnected) {
        return true;
      }
      c.observer.disconnect();
      c.plot.destroy();
      return false;
    });
  }

  function failed(box, charts) {
    charts.forEach(function (el) {
      el.dataset.state = "error";
    });
    var message = box.querySelector(".metrics-error");
    if (message) {
      message.textContent = box.dataset.loadFailed;
      message.hidden = false;
    }
  }

  // load draws the charts of the #cluster-metrics in root, once.
  function load(root) {
    var box = root.id === "cluster-metrics" ? root : root.querySelector("#cluster-metrics");
    if (!box || box.dataset.loaded) {
      return;
    }
    box.dataset.loaded = "true";
    forget();
    var charts = Array.prototype.slice.call(box.querySelectorAll(".metrics-chart"));
    if (charts.length === 0 || typeof uPlot === "undefined") {
      return;
    }
    charts.forEach(function (el) {
      el.dataset.state = "loading";
    });
    fetch(box.dataset.src, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("metrics: HTTP " + res.status);
        }
        return res.json();
      })
      .then(function (data) {
        if (box.isConnected) {
          charts.forEach(function (el) {
            draw(el, data, box.dataset.timeLabel);
          });
        }
      })
      .catch(function () {
        failed(box, charts);
      });
  }

  document.addEventListener("htmx:load", function (event) {
    load(event.target);
  });
  load(document);
})();
