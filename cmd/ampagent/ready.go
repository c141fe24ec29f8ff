package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
)

// ReadyPath answers GET with the agent's readiness (docs/CLI.md §3.4).
const ReadyPath = "/readyz"

// Defaults of the readiness checks.
const (
	defaultExpiryWindow = 24 * time.Hour
	defaultRecheck      = 10 * time.Minute
)

// The /readyz report is the mirror's (at most 50 problems, each with a
// check, a code, a subject where there is one, and a message); what is
// served is its Public form (check, code and the code's fixed message),
// the subjects go to the log only.
type (
	readyProblem = mirror.ReadyProblem
	readyReport  = mirror.ReadyReport
)

// readiness answers /readyz: the store answers and trusts at least one
// publisher key, the store's check finds nothing (re-run when the store's
// generation changes and at least every recheck), every handler program
// is present and executable, and no installed bundle is expired or
// expires within window.
type readiness struct {
	store   *resolver.Store
	now     func() time.Time
	window  time.Duration
	recheck time.Duration

	// ledger, when set, checks a shared idempotency ledger (etcd)
	// answers: at most one probe at a time, and none within
	// ledgerProbeEvery of the last one's end (ledgerDown).
	ledger func() error

	probeMu  sync.Mutex // one ledger probe at a time; guards the fields below
	probed   bool
	probedAt time.Time // when the last probe ended
	probeErr error

	// log gets the full reports (nil: none), each time they change: the
	// /readyz answer carries only the status and the failing checks'
	// codes (mirror.ReadyReport.Public, MIRROR-9).
	log   *slog.Logger
	notes mirror.ReadyLog

	// handlers are the running config's (a reload replaces them).
	handlers atomic.Pointer[map[string]execHandler]

	mu        sync.Mutex // one integrity check at a time; guards the fields below
	checked   bool
	checkedAt time.Time
	checkGen  uint64
	integrity []readyProblem
}

// setHandlers sets the handlers whose programs report checks.
func (r *readiness) setHandlers(h map[string]execHandler) { r.handlers.Store(&h) }

// report runs the checks.
func (r *readiness) report() readyReport {
	rep := readyReport{Generation: r.store.Generation(), Problems: []readyProblem{}}
	bundles, err := r.store.Bundles()
	if err != nil {
		rep.Add(readyProblem{Check: "store", Code: "store_unreadable", Message: "the store cannot be read"})
	}
	integrity, at := r.integrityProblems()
	rep.CheckedAt = at.UTC().Format(time.RFC3339)
	for _, p := range integrity {
		rep.Add(p)
	}
	if keys, err := r.store.TrustList(); err != nil {
		rep.Add(readyProblem{Check: "store", Code: "store_unreadable", Message: "the store's trusted keys cannot be read"})
	} else if len(keys) == 0 {
		rep.Add(readyProblem{Check: "trust", Code: "empty_trust_store", Message: "the store trusts no publisher key: nothing in it can be verified"})
	}
	var handlers map[string]execHandler
	if h := r.handlers.Load(); h != nil {
		handlers = *h
	}
	for _, p := range handlerProblems(handlers) {
		rep.Add(p)
	}
	for _, p := range expiryProblems(bundles, r.now(), r.window) {
		rep.Add(p)
	}
	if r.ledgerDown() {
		rep.Add(readyProblem{Check: "ledger", Code: "ledger_unavailable", Message: "the shared idempotency ledger (etcd) does not answer within its deadline: invocations are refused (5002, retryable)"})
	}
	rep.Status = "ready"
	if len(rep.Problems) > 0 {
		rep.Status = "not_ready"
	}
	return rep
}

// ledgerProbeEvery is how long a probe of the shared ledger answers for
// every /readyz after it (docs/SPEC-DECISIONS.md CLI-61).
const ledgerProbeEvery = time.Second

// ledgerDown reports whether the shared ledger did not answer its last
// probe, probing it again once the last probe is ledgerProbeEvery old
// (or the clock went back). /readyz answers anyone reaching --listen:
// a probe for each request made each anonymous GET an etcd round trip on
// the cluster every node's invocations need, as many at once as the
// listener lets requests in, each up to the ledger's 2 s deadline. Now a
// request waits for the probe in progress, if any, and takes its answer.
func (r *readiness) ledgerDown() bool {
	if r.ledger == nil {
		return false
	}
	r.probeMu.Lock()
	defer r.probeMu.Unlock()
	if now := r.now(); !r.probed || now.Sub(r.probedAt) >= ledgerProbeEvery || now.Before(r.probedAt) {
		r.probeErr = r.ledger()
		r.probed, r.probedAt = true, r.now()
	}
	return r.probeErr != nil
}

// integrityProblems returns the problems of the store's check, running it
// again when the generation changed or the last run is older than recheck.
func (r *readiness) integrityProblems() ([]readyProblem, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gen, now := r.store.Generation(), r.now()
	if r.checked && gen == r.checkGen && now.Sub(r.checkedAt) < r.recheck {
		return r.integrity, r.checkedAt
	}
	out := mirror.StoreCheckProblems(r.store.Check())
	r.checked, r.checkedAt, r.checkGen, r.integrity = true, now, gen, out
	return out, now
}

// handlerProblems checks that every handler program is present and
// executable.
func handlerProblems(handlers map[string]execHandler) []readyProblem {
	var out []readyProblem
	for _, id := range slices.Sorted(maps.Keys(handlers)) {
		if err := checkProgram(handlers[id]); err != nil {
			out = append(out, readyProblem{Check: "handlers", Code: "handler_program_missing", Subject: id, Message: err.Error()})
		}
	}
	return out
}

// programPath is the file runProgram runs for h: the one resolved when
// its config was loaded (resolveHandlers), else lookProgram's.
func programPath(h execHandler) (string, error) {
	if h.path != "" || h.pathErr != nil {
		return h.path, h.pathErr
	}
	return lookProgram(h)
}

// lookProgram finds the program of h, as an absolute path: an absolute
// path as is, a relative path with a separator under h.Dir (itself under
// the agent's working directory, the base of every relative path the
// agent is given; the program runs in h.Dir, so its relative arguments
// are under the same directory as its relative path, CLI-42), a bare name
// looked up in PATH. A name found only through a relative PATH entry
// ("bin", ".") is refused, as
// os/exec refuses to run it (exec.ErrDot): a readiness that found it would
// say ready while every call fails (CLI-38).
func lookProgram(h execHandler) (string, error) {
	p := h.Command[0]
	if !filepath.IsAbs(p) && strings.ContainsRune(p, filepath.Separator) {
		p = filepath.Join(h.Dir, p)
	}
	if !strings.ContainsRune(p, filepath.Separator) {
		found, err := exec.LookPath(p)
		switch {
		case errors.Is(err, exec.ErrDot):
			return "", fmt.Errorf("program %s is in PATH only through a relative directory, which is not searched: give its absolute path", p)
		case err != nil:
			return "", fmt.Errorf("program %s is not in PATH", p)
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("program %s cannot be located", p)
	}
	return abs, nil
}

// checkProgram reports whether the program of h exists, is a regular file
// and is executable by someone (the file's own x bits; the OS decides the
// rest when it runs), and whether its working directory ("dir") is a
// directory: a program that cannot change into it fails at every call
// (CLI-42).
func checkProgram(h execHandler) error {
	p, err := programPath(h)
	if err != nil {
		return err
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("program %s does not exist", p)
	case err != nil:
		return fmt.Errorf("program %s cannot be examined", p)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("program %s is not a regular file", p)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("program %s is not executable", p)
	}
	if h.Dir == "" {
		return nil
	}
	fi, err = os.Stat(h.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("working directory %s does not exist", h.Dir)
	case err != nil:
		return fmt.Errorf("working directory %s cannot be examined", h.Dir)
	case !fi.IsDir():
		return fmt.Errorf("working directory %s is not a directory", h.Dir)
	}
	return nil
}

// expiryProblems reports the bundles expired at now or expiring within
// window.
func expiryProblems(bundles []resolver.Bundle, now time.Time, window time.Duration) []readyProblem {
	var out []readyProblem
	for _, b := range bundles {
		if b.ExpiresAt == "" {
			continue
		}
		exp, err := time.Parse(time.RFC3339, b.ExpiresAt)
		switch {
		case err != nil:
			out = append(out, readyProblem{Check: "expiry", Code: "bundle_expiry_unreadable", Subject: b.BundleID, Message: "the bundle's expiry time does not parse"})
		case !now.Before(exp):
			out = append(out, readyProblem{Check: "expiry", Code: "bundle_expired", Subject: b.BundleID,
				Message: fmt.Sprintf("bundle %s expired at %s: its schemas are no longer served", b.BundleID, b.ExpiresAt)})
		case exp.Sub(now) <= window:
			out = append(out, readyProblem{Check: "expiry", Code: "bundle_expiring", Subject: b.BundleID,
				Message: fmt.Sprintf("bundle %s expires at %s, within %s: import its next version", b.BundleID, b.ExpiresAt, window)})
		}
	}
	return out
}

// ServeHTTP answers GET /readyz: 200 when ready, 503 when not, with the
// public form of the report as JSON either way; the full report goes to
// the log when it changes.
func (r *readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.Header().Set("Content-Security-Policy", mirror.ContentSecurityPolicy) // as every other answer of /readyz (MIRROR-7)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rep := r.report()
	r.notes.Note(r.log, rep)
	mirror.ServeReady(w, rep)
}
