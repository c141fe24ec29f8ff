package mirror

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/httpmetrics"
	"github.com/ampbundle/ampbundle/resolver"
)

// Operational paths of the mirror, as the agent's (docs/CLI.md §2.15):
// liveness and readiness on the mirror's listener, metrics on a listener
// of their own.
const (
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// DefaultReadyRecheck is how often /readyz re-runs the store check at
// least (it also runs whenever the served generation changes).
const DefaultReadyRecheck = 10 * time.Minute

// maxReadyProblems bounds the problems one /readyz answer lists.
const maxReadyProblems = 50

// ReadyProblem is one reason the mirror (or the agent: ampagent serve's
// /readyz answers the same shape) is not ready.
type ReadyProblem struct {
	// Check is the check that failed: snapshot, refresh, integrity (the
	// agent's: store, trust, integrity, handlers, expiry, ledger).
	Check string `json:"check"`
	// Code is a stable snake_case name.
	Code string `json:"code"`
	// Subject is what the problem is about (a problem kind of the store
	// check, a capability, a bundle_id); never in a public answer.
	Subject string `json:"subject,omitempty"`
	// Message says what is wrong, for people; a public answer has the
	// code's fixed text instead.
	Message string `json:"message"`
	// Degraded marks a problem that leaves everything else served soundly
	// (a bundle the mirror does not relay, and only that bundle): a report
	// whose problems are all degraded is "degraded", answered 200
	// (docs/SPEC-DECISIONS.md MIRROR-19). Never in an answer.
	Degraded bool `json:"-"`
}

// ReadyReport is a readiness report: the /readyz answer is its Public
// form, the log gets it whole (ReadyLog).
type ReadyReport struct {
	// Status is "ready", "degraded" (every problem is Degraded: 200) or
	// "not_ready" (503); Settle sets it from the problems.
	Status string `json:"status"`
	// Generation is the store generation of the snapshot served.
	Generation uint64 `json:"generation"`
	// CheckedAt is when the store check last ran (RFC 3339).
	CheckedAt string         `json:"integrity_checked_at,omitempty"`
	Problems  []ReadyProblem `json:"problems"`

	// severe is set once Add was given a problem that is not Degraded,
	// listed or not: one past maxReadyProblems still makes the report
	// not_ready.
	severe bool
}

// Add lists p unless the report lists maxReadyProblems already; a p
// that is not Degraded makes the report not_ready (Settle) either way.
func (rep *ReadyReport) Add(p ReadyProblem) {
	if !p.Degraded {
		rep.severe = true
	}
	if len(rep.Problems) < maxReadyProblems {
		rep.Problems = append(rep.Problems, p)
	}
}

// Settle sets rep.Status from its problems: "ready" with none, "degraded"
// when each is Degraded (the rest is served soundly; MIRROR-19),
// "not_ready" otherwise.
func (rep *ReadyReport) Settle() {
	rep.Status = "ready"
	for _, p := range rep.Problems {
		if !p.Degraded {
			rep.severe = true
		}
	}
	switch {
	case rep.severe:
		rep.Status = "not_ready"
	case len(rep.Problems) > 0:
		rep.Status = "degraded"
	}
}

// readyMessages are the fixed texts of the /readyz codes (the mirror's
// and the agent's) in a public answer.
var readyMessages = map[string]string{
	"no_snapshot":              "no snapshot of the store is served",
	"store_unreadable":         "the store cannot be read",
	"index_over_limit":         "the store holds more than one mirror index may list: an older snapshot is served",
	"store_damaged":            "the store check found damage",
	"bundle_signature_invalid": "an installed bundle's stored file carries a signature that does not verify: it is not relayed",
	"empty_trust_store":        "the store trusts no publisher key",
	"handler_program_missing":  "a handler program is missing or not executable",
	"bundle_expired":           "an installed bundle has expired",
	"bundle_expiring":          "an installed bundle expires soon",
	"bundle_expiry_unreadable": "an installed bundle has an unreadable expiry",
	"ledger_unavailable":       "the shared idempotency ledger does not answer",
}

// Public is rep as an anonymous peer may see it (MIRROR-9): the status,
// the generation, when the store check ran, and each check and code that
// failed, once, with the code's fixed text; no subject and no message of
// the checks (a blob's hash, a program's path, a schema's compile error
// map a damaged host for an attacker). The full report goes to the log
// (ReadyLog); `ampbundle check` gives the store check's details.
func (rep ReadyReport) Public() ReadyReport {
	out := ReadyReport{Status: rep.Status, Generation: rep.Generation, CheckedAt: rep.CheckedAt, Problems: []ReadyProblem{}}
	seen := map[[2]string]bool{}
	for _, p := range rep.Problems {
		k := [2]string{p.Check, p.Code}
		if seen[k] {
			continue
		}
		seen[k] = true
		msg, ok := readyMessages[p.Code]
		if !ok {
			msg = "not ready: the server's log says why"
		}
		out.Add(ReadyProblem{Check: p.Check, Code: p.Code, Message: msg})
	}
	return out
}

// ReadyLog logs the full readiness reports that the public /readyz
// answers leave out (Public), each time they differ from the last one
// logged: a probe polling /readyz costs the log nothing while nothing
// changes. The zero value is ready to use.
type ReadyLog struct {
	mu   sync.Mutex
	last []ReadyProblem
	seen bool
}

// Note logs rep's problems (one Warn each; Info "ready" once they are
// gone) unless they are those it logged last. A nil log logs nothing.
func (l *ReadyLog) Note(log *slog.Logger, rep ReadyReport) {
	if log == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen && slices.Equal(l.last, rep.Problems) {
		return
	}
	l.seen, l.last = true, slices.Clone(rep.Problems)
	if len(rep.Problems) == 0 {
		log.Info("ready", "generation", rep.Generation)
		return
	}
	for _, p := range rep.Problems {
		log.Warn("not ready", "check", p.Check, "code", p.Code, "subject", p.Subject, "problem", p.Message)
	}
}

// ServeReady writes rep as the answer of GET /readyz: 200 when its status
// is "ready" or "degraded", 503 when not, JSON either way, never cached.
// It writes rep.Public(): log the full report first (ReadyLog.Note).
func ServeReady(w http.ResponseWriter, rep ReadyReport) {
	body, _ := json.Marshal(rep.Public()) // strings, a number and slices of them: it cannot fail
	setSafetyHeaders(w)                   // also served in another server's router (the agent's)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rep.Status != "ready" && rep.Status != "degraded" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write(append(body, '\n'))
}

// StoreCheckProblems are the /readyz problems of a store check's outcome
// (resolver.Store.Check): one per problem found, or store_unreadable when
// the check could not run. A bundle whose stored file carries a signature
// that does not verify (kind "signature": a copy a build before TRUST-20
// kept) is bundle_signature_invalid, Degraded: Export refuses it, so the
// mirror leaves that bundle out and serves the rest soundly (MIRROR-19);
// every other kind is store_damaged.
func StoreCheckProblems(problems []resolver.Problem, err error) []ReadyProblem {
	if err != nil {
		return []ReadyProblem{{Check: "integrity", Code: "store_unreadable", Message: "the store check could not run"}}
	}
	var out []ReadyProblem
	for _, p := range problems {
		rp := ReadyProblem{Check: "integrity", Code: "store_damaged", Subject: p.Kind, Message: p.Message}
		if p.Kind == resolver.ProblemSignature {
			rp.Code, rp.Degraded = "bundle_signature_invalid", true
		}
		out = append(out, rp)
	}
	return out
}

// Checker is a Source that can run the store check (a *resolver.Store
// and the admin socket client both can); /readyz uses it.
type Checker interface {
	Check() ([]resolver.Problem, error)
}

// integrity is the kept result of the last store check.
type integrity struct {
	ran      bool
	at       time.Time
	gen      uint64
	problems []ReadyProblem
}

// Ready runs the readiness checks: a snapshot is served, the last refresh
// succeeded (a mirror that cannot read its store serves an old snapshot
// and would not see new commits), and the store check finds nothing
// (a bundle it leaves out for a signature that does not verify makes it
// "degraded", still 200: MIRROR-19). The
// store check re-hashes every stored artifact: it is re-run only when the
// served generation changed or the last run is older than
// Options.ReadyRecheck, and while one runs, other requests get the last
// result.
func (s *Server) Ready() ReadyReport {
	rep := ReadyReport{Status: "ready", Generation: s.Generation(), Problems: []ReadyProblem{}}
	if s.cur.Load() == nil {
		rep.Add(ReadyProblem{Check: "snapshot", Code: "no_snapshot", Message: "no snapshot of the store is served"})
	}
	if code := s.refreshFailing.Load(); code != nil {
		msg := "the last refresh could not read the store: an older snapshot is served"
		if *code == "index_over_limit" {
			msg = "the store holds more than one mirror index may list (the log names the cap): an older snapshot is served"
		}
		rep.Add(ReadyProblem{Check: "refresh", Code: *code, Message: msg})
	}
	in := s.integrityCheck()
	if in.ran {
		rep.CheckedAt = in.at.UTC().Format(time.RFC3339)
	}
	for _, p := range in.problems {
		rep.Add(p)
	}
	rep.Settle()
	return rep
}

// integrityCheck returns the kept store check, running it again first
// when it is due and no other request is running it.
func (s *Server) integrityCheck() integrity {
	if !s.checkMu.TryLock() {
		return *s.lastCheck.Load()
	}
	defer s.checkMu.Unlock()
	last, gen, now := s.lastCheck.Load(), s.Generation(), s.opts.Now()
	if last.ran && last.gen == gen && now.Sub(last.at) < s.opts.ReadyRecheck {
		return *last
	}
	next := &integrity{ran: true, at: now, gen: gen, problems: StoreCheckProblems(s.check())}
	s.lastCheck.Store(next)
	return *next
}

// refreshProblemCode is the /readyz code of a refresh that failed with
// err: index_over_limit when the store holds more than one index may list
// (bundles, capability versions, statements, bytes), so that no snapshot
// of it is served; store_unreadable otherwise.
func refreshProblemCode(err error) string {
	if amp.NameOf(err) == ErrMisconfigured {
		return "index_over_limit"
	}
	return "store_unreadable"
}

// check opens the store and runs its check.
func (s *Server) check() ([]resolver.Problem, error) {
	src, err := s.opts.Open()
	if err != nil {
		return nil, err
	}
	defer src.Close()
	c, ok := src.(Checker)
	if !ok {
		return nil, nil // nothing to check with
	}
	return c.Check()
}

// serveHealth answers GET /healthz: 200 while the process answers, with
// the generation served.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	body, _ := json.Marshal(map[string]any{"status": "ok", "generation": s.Generation()})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(body, '\n'))
}

// serveReady answers GET /readyz: 200 when ready, 503 when not, with the
// report as JSON either way.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	rep := s.Ready()
	s.readyLog.Note(s.log, rep)
	ServeReady(w, rep)
}

// getOrHead refuses other methods with 405 and reports whether to go on.
func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	return false
}

// metrics are the mirror's Prometheus metrics, in a registry of the
// server's own. Every label value comes from a bounded set: the route
// kinds and HTTP status codes.
type metrics struct {
	reg       *prometheus.Registry
	http      *httpmetrics.Metrics
	snapshots prometheus.Counter
	failures  prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:  reg,
		http: httpmetrics.New(reg, "ampbundle_mirror"),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{Name: "ampbundle_mirror_snapshots_total",
			Help: "Snapshots of the store taken (at start and at each new generation)."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "ampbundle_mirror_refresh_failures_total",
			Help: "Refreshes that could not read the store (the previous snapshot stayed served)."}),
	}
	m.reg.MustRegister(m.snapshots, m.failures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampbundle_mirror_generation",
			Help: "The store generation of the snapshot served."},
			func() float64 { return float64(s.Generation()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ampbundle_mirror_bundles",
			Help: "Bundles the snapshot served offers."},
			func() float64 {
				if snap := s.cur.Load(); snap != nil {
					return float64(len(snap.bundles))
				}
				return 0
			}),
	)
	return m
}

// MetricsHandler serves the server's metrics in the Prometheus text
// format; serve it on a listener of its own (the mirror's clients need not
// see its traffic figures).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{Registry: s.met.reg, MaxRequestsInFlight: 4, Timeout: 30 * time.Second})
}

// routeLabel names the route of a request for the metrics.
func routeLabel(p string) string {
	switch p {
	case HealthPath:
		return "healthz"
	case ReadyPath:
		return "readyz"
	}
	switch ParseRoute(p).Kind {
	case RouteWellKnown:
		return "well_known"
	case RouteIndex:
		return "index"
	case RouteBundle:
		return "bundle"
	case RouteStatement:
		return "statement"
	case RouteCapability:
		return "capability"
	}
	return "other"
}
