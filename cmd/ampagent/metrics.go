package main

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/httpmetrics"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// MetricsPath is where the metrics listener answers (docs/CLI.md §3.4).
const MetricsPath = "/metrics"

// metrics are the agent's Prometheus metrics, in a registry of their own
// (never the client library's global default registry). Every label value
// comes from a bounded set: AMP type names, AMP codes (an unregistered
// code is "other"), the configured capability ids, the binding's routes and
// HTTP status codes.
type metrics struct {
	reg         *prometheus.Registry
	messages    *prometheus.CounterVec   // type, code
	duration    *prometheus.HistogramVec // type
	duplicates  prometheus.Counter
	handlerRuns *prometheus.CounterVec // capability
	handlerFail *prometheus.CounterVec // capability, reason
	http        *httpmetrics.Metrics
	ledgerDur   *prometheus.HistogramVec // op (a shared ledger's calls: etcd)
	ledgerErrs  *prometheus.CounterVec   // op
}

// observeLedger records one call of a shared ledger (etcdledger.Options.Observe).
func (m *metrics) observeLedger(op string, d time.Duration, err error) {
	m.ledgerDur.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.ledgerErrs.WithLabelValues(op).Inc()
	}
}

// newMetrics registers the agent's metrics for store and the ledger usage
// function (nil: no ledger gauges).
func newMetrics(store *resolver.Store, ledgerUsage func() (entries int, bytes, budget int64)) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:  reg,
		http: httpmetrics.New(reg, "ampagent"),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampagent_messages_total",
			Help: "AMP messages handled, by request type and outcome code (0: success; unverified messages have type UNVERIFIED)."},
			[]string{"type", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ampagent_message_duration_seconds",
			Help:    "Time to handle one AMP message, by request type.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"type"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "ampagent_duplicates_total",
			Help: "Duplicate messages answered from the idempotency ledger."}),
		handlerRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampagent_handler_runs_total",
			Help: "Handler program runs, by capability."}, []string{"capability"}),
		handlerFail: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampagent_handler_failures_total",
			Help: "Handler program failures, by capability and reason (exit, timeout, canceled, output_too_large, invalid_json)."},
			[]string{"capability", "reason"}),
		ledgerDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ampagent_ledger_call_duration_seconds",
			Help:    "Latency of the shared idempotency ledger's calls (etcd), by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}}, []string{"op"}),
		ledgerErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampagent_ledger_errors_total",
			Help: "Failed calls of the shared idempotency ledger (etcd: unreachable, no quorum, past the deadline), by operation."}, []string{"op"}),
	}
	m.reg.MustRegister(m.messages, m.duration, m.duplicates, m.handlerRuns, m.handlerFail, m.ledgerDur, m.ledgerErrs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampagent_store_generation",
			Help: "The registry store's generation (bumped by every import and removal)."},
			func() float64 { return float64(store.Generation()) }),
		&bundleCollector{store: store},
	)
	if ledgerUsage != nil {
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampagent_ledger_entries",
				Help: "Entries in the idempotency ledger."},
				func() float64 { n, _, _ := ledgerUsage(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampagent_ledger_bytes",
				Help: "Bytes used in the idempotency ledger."},
				func() float64 { _, b, _ := ledgerUsage(); return float64(b) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampagent_ledger_budget_bytes",
				Help: "The idempotency ledger's byte budget."},
				func() float64 { _, _, b := ledgerUsage(); return float64(b) }),
		)
	}
	return m
}

// observe is the agent's Config.Observe.
func (m *metrics) observe(o agent.Observation) {
	typ := "UNVERIFIED"
	if o.Type != 0 {
		typ = o.Type.Name() // registered names, or "UNKNOWN"
	}
	if o.Duplicate {
		m.duplicates.Inc()
	}
	m.messages.WithLabelValues(typ, codeLabel(o.Code)).Inc()
	m.duration.WithLabelValues(typ).Observe(o.Duration.Seconds())
}

// codeLabel is the label of an outcome code: its number when registered,
// "other" otherwise (a handler may return any code).
func codeLabel(c amp.Code) string {
	if c == 0 || c.Known() {
		return strconv.Itoa(int(c))
	}
	return "other"
}

// handlerRun counts a program run of capID and, when reason is not "",
// its failure.
func (m *metrics) handlerRun(capID, reason string) {
	if m == nil {
		return
	}
	m.handlerRuns.WithLabelValues(capID).Inc()
	if reason != "" {
		m.handlerFail.WithLabelValues(capID, reason).Inc()
	}
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4, Timeout: 30 * time.Second})
}

// bundleCollector reports each installed bundle's expiry time, read from
// the store at scrape time.
type bundleCollector struct{ store *resolver.Store }

var bundleExpiryDesc = prometheus.NewDesc("ampagent_bundle_expiry_timestamp_seconds",
	"When an installed bundle expires (Unix time); bundles without expires_at are not listed.", []string{"bundle_id"}, nil)

// Describe implements prometheus.Collector.
func (c *bundleCollector) Describe(ch chan<- *prometheus.Desc) { ch <- bundleExpiryDesc }

// Collect implements prometheus.Collector.
func (c *bundleCollector) Collect(ch chan<- prometheus.Metric) {
	bundles, err := c.store.Bundles()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(bundleExpiryDesc, err)
		return
	}
	for _, b := range bundles {
		if b.ExpiresAt == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, b.ExpiresAt)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(bundleExpiryDesc, prometheus.GaugeValue, float64(t.Unix()), b.BundleID)
	}
}

// routeOf names the route of a request path for labels and logs (the path
// itself is the peer's and is never echoed).
func routeOf(path string) string {
	switch path {
	case amphttp.MessagesPath, amphttp.HealthPath, ReadyPath:
		return path
	}
	return "other"
}

// methodOf is the request method for logs: a standard method, or "other".
func methodOf(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// instrument wraps the agent's HTTP handler: request-scoped state for the
// agent's log lines (the peer's address), the HTTP metrics, and one log
// line for each request refused at the HTTP level (404, 405, 413, 415,
// 400 for bytes that are not a message, 503) that the agent did not log
// itself.
func instrument(next http.Handler, m *metrics, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := routeOf(r.URL.Path)
		ctx := admission.WithRemote(r.Context(), r.RemoteAddr)
		status, d := m.http.Serve(w, r.WithContext(ctx), route, next)
		// A 503 from /readyz is an answer, not a refusal: a probe polling a
		// not-ready agent does not fill the log (the report says why).
		if status >= 400 && !admission.Logged(ctx) && !(route == ReadyPath && status == http.StatusServiceUnavailable) {
			log.Info("http request refused", "status", status, "method", methodOf(r.Method), "route", route,
				"remote", r.RemoteAddr, "length", r.ContentLength, "duration", d)
		}
	})
}
