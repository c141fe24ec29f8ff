package mirror

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/transport"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// ServeHTTP serves the current snapshot (see the package documentation),
// and the mirror's liveness (HealthPath), readiness (ReadyPath) and
// ACDP-0007 document (ACDPWellKnownPath), which answer even when every
// request slot is taken. Every request is counted
// in the metrics (MetricsHandler).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSafetyHeaders(w)
	s.met.http.Serve(w, r, routeLabel(r.URL.Path), http.HandlerFunc(s.route))
}

// ContentSecurityPolicy is sent with every answer of the mirror: nothing
// it serves is a page, so a browser that renders one anyway (the catalog
// shares the mirror's origin, CATALOG-1) runs, loads, frames and submits
// nothing (MIRROR-7).
const ContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"

// setSafetyHeaders sets, before any route runs, the headers of every
// answer whatever its route and status: no MIME sniffing, and a policy
// under which no script runs.
func setSafetyHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
}

// route serves a request of ServeHTTP, counted.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case HealthPath:
		s.serveHealth(w, r)
	case ReadyPath:
		s.serveReady(w, r)
	case ACDPWellKnownPath:
		// Built from checked options, in memory, independent of the
		// snapshot: answered like the health routes.
		s.serveACDP(w, r)
	default:
		s.serveSnapshot(w, r)
	}
}

// serveSnapshot serves the files of the current snapshot.
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	peer := transport.Peer(r.RemoteAddr)
	if s.slots.Enter(peer) != "" {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, CodeOverloaded)
		return
	}
	defer s.slots.Leave(peer, 0)
	// Once the slot is taken, the answer is read at the minimum data
	// rate or cut off (MIRROR-14): a peer reading nothing must not hold
	// its slot for the whole write timeout.
	w = transport.RatedBody(w, r, s.opts.MinDataRate, s.opts.grace)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
		return
	}
	snap := s.current()
	if snap == nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable)
		return
	}
	route := ParseRoute(r.URL.Path)
	switch route.Kind {
	case RouteWellKnown:
		// Moderately stable (ACDP-0007 §3.6), but it carries the generation.
		serveMem(w, r, snap.files[WellKnownPath], "public, max-age=60")
	case RouteIndex:
		serveMem(w, r, snap.files[IndexPath], "no-cache")
	case RouteCapability:
		f := snap.files[CapabilityPath(route.ID, route.File)]
		if f == nil {
			writeError(w, http.StatusNotFound, CodeNotFound)
			return
		}
		serveMem(w, r, f, "no-cache")
	case RouteStatement:
		// Immutable: the path is the hash of the bytes.
		f := snap.files[StatementsPrefix+route.SHA256]
		if f == nil {
			writeError(w, http.StatusNotFound, CodeNotFound)
			return
		}
		serveMem(w, r, f, "public, max-age=31536000, immutable")
	case RouteBundle:
		// A refresh may prune the file of an older snapshot between the
		// lookup and the open: look again in the newest snapshot once.
		for range 2 {
			b := snap.bundles[route.BundleID]
			if b == nil {
				writeError(w, http.StatusNotFound, CodeNotFound)
				return
			}
			f, err := openExported(b)
			if err == nil {
				defer f.Close()
				s.serveBundle(w, r, b, f)
				return
			}
			s.log.Warn("mirror spool file unreadable", "bundle_sha256", b.sha256, "err", err)
			if snap = s.current(); snap == nil {
				break
			}
		}
		writeError(w, http.StatusInternalServerError, CodeInternal)
	default:
		writeError(w, http.StatusNotFound, CodeNotFound)
	}
}

// errNotExported is the cause of a spool file that is not the one the
// mirror exported there.
var errNotExported = errors.New("the spool file is not the one the mirror exported: not served")

// openExported opens the spool file of b when it is still the file export
// wrote there (the same file, by device and inode), never waiting on a
// FIFO: whoever may write the spool folder (a --spool folder of another
// user's, or below one) could otherwise put there, under its name, a link
// (symbolic, or hard) to any file the mirror's user may read and have any
// peer that asks the bundle read it, or hold the request's slot on a FIFO
// for ever (docs/SPEC-DECISIONS.md MIRROR-25).
func openExported(b *bundleFile) (*os.File, error) {
	f, err := os.OpenFile(b.path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || b.file == nil || !os.SameFile(fi, b.file) {
		f.Close()
		return nil, errNotExported
	}
	return f, nil
}

// notModified reports whether If-None-Match matches etag (weak comparison,
// RFC 9110 §13.1.2; "*" matches).
func notModified(r *http.Request, etag string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" || len(inm) > 4096 {
		return false
	}
	// Walked in place: a list of commas costs no copy of its entries.
	for rest, more := inm, true; more; {
		var t string
		t, rest, more = strings.Cut(rest, ",")
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func commonHeaders(w http.ResponseWriter, etag, ctype, cache string) {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cache)
}

func serveMem(w http.ResponseWriter, r *http.Request, f *memFile, cache string) {
	commonHeaders(w, f.etag, f.ctype, cache)
	if notModified(r, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(f.body)
	}
}

// serveBundle serves a bundle file: conditional GET, one byte range (with
// If-Range), HEAD.
func (s *Server) serveBundle(w http.ResponseWriter, r *http.Request, b *bundleFile, f *os.File) {
	commonHeaders(w, b.etag, "application/ampbundle", "no-cache")
	w.Header().Set("Accept-Ranges", "bytes")
	if notModified(r, b.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	start, length, res := int64(0), b.size, RangeIgnore
	if rh := r.Header.Get("Range"); rh != "" {
		if ir := r.Header.Get("If-Range"); ir == "" || ir == b.etag {
			start, length, res = ParseRange(rh, b.size)
		}
	}
	switch res {
	case RangeIgnore:
		start, length = 0, b.size
	case RangeUnsatisfiable:
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(b.size, 10))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, CodeRangeNotSatisfy)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	if res == RangePartial {
		w.Header().Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(start+length-1, 10)+"/"+strconv.FormatInt(b.size, 10))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if r.Method == http.MethodGet {
		io.Copy(w, io.NewSectionReader(f, start, length))
	}
}

// NewHTTPServer returns an http.Server for h with the hardening of the
// agent's server: timeouts on headers, reads, writes and idle connections,
// a 64 KiB header limit, and the server's own error log routed to log.
// writeTimeout bounds one answer (a large bundle on a slow link needs
// more than the default 10 minutes).
func NewHTTPServer(h http.Handler, writeTimeout time.Duration, log *slog.Logger) *http.Server {
	limit.Default(&writeTimeout, 10*time.Minute)
	return amphttp.NewServer(h, writeTimeout, log)
}
