package mirror

import (
	"net/http"
	"strconv"
)

// Error codes of the mirror's error envelope (docs/FORMAT.md, "Mirror
// error envelope"). They are stable: clients may branch on them.
const (
	CodeNotFound         = "not_found"             // 404: no such path, bundle or capability
	CodeMethodNotAllowed = "method_not_allowed"    // 405: only GET and HEAD
	CodeRangeNotSatisfy  = "range_not_satisfiable" // 416: the range starts past the end
	CodeOverloaded       = "overloaded"            // 503: too many requests in flight; retry
	CodeUnavailable      = "unavailable"           // 503: no snapshot of the store yet; retry
	CodeInternal         = "internal_error"        // 500: the mirror failed
)

// messages are the fixed texts of the codes: nothing of the request is
// ever echoed.
var messages = map[string]string{
	CodeNotFound:         "no such resource",
	CodeMethodNotAllowed: "only GET and HEAD are served",
	CodeRangeNotSatisfy:  "the range is not satisfiable",
	CodeOverloaded:       "too many requests in flight; retry shortly",
	CodeUnavailable:      "the store is not available yet; retry shortly",
	CodeInternal:         "the mirror failed",
}

// ErrorContentType is the media type of the error envelope.
const ErrorContentType = "application/json"

// writeError writes the error envelope {"error":{"code","message"}}.
func writeError(w http.ResponseWriter, status int, code string) {
	w.Header().Del("Accept-Ranges")
	writeEnvelope(w, status, ErrorContentType, code, messages[code])
}

// writeEnvelope writes {"error":{"code","message"}} as contentType, never
// cached (code and msg are this package's constants, written unescaped).
func writeEnvelope(w http.ResponseWriter, status int, contentType, code, msg string) {
	body := `{"error":{"code":"` + code + `","message":"` + msg + `"}}` + "\n"
	h := w.Header()
	h.Del("ETag")
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(body))
}
