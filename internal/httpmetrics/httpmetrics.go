package httpmetrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ampbundle/ampbundle/transport"
)

// Metrics are the HTTP metrics of one server, named after its prefix:
//
//	PREFIX_http_requests_total{route,status}        counter
//	PREFIX_http_request_duration_seconds{route}     histogram, prometheus.DefBuckets
//	PREFIX_http_requests_in_flight                  gauge
type Metrics struct {
	requests *prometheus.CounterVec   // route, status
	duration *prometheus.HistogramVec // route
	inFlight prometheus.Gauge
}

// New makes the HTTP metrics named after prefix ("ampagent",
// "ampbundle_mirror") and registers them with reg, panicking as
// MustRegister does when reg holds metrics of those names already.
func New(reg prometheus.Registerer, prefix string) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "_http_requests_total",
			Help: "HTTP requests, by route and status code."}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + "_http_request_duration_seconds",
			Help: "HTTP request latency, by route.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "_http_requests_in_flight",
			Help: "HTTP requests being served."}),
	}
	reg.MustRegister(m.requests, m.duration, m.inFlight)
	return m
}

// Serve serves r with next and counts it: in flight while next runs, then
// one request of route with the status next answered (200 when it wrote
// nothing, as net/http answers then) and how long it took, which it
// returns for the caller's log line. route is a label value: it must come
// from a bounded set. A request whose handler panics is counted too, with
// the status written so far, before the panic goes on.
func (m *Metrics) Serve(w http.ResponseWriter, r *http.Request, route string, next http.Handler) (status int, d time.Duration) {
	start := time.Now()
	m.inFlight.Inc()
	rec := &transport.StatusRecorder{ResponseWriter: w}
	defer func() {
		status, d = rec.Status(), time.Since(start)
		m.inFlight.Dec()
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(route).Observe(d.Seconds())
	}()
	next.ServeHTTP(rec, r)
	return // status and d: set by the deferred count
}
