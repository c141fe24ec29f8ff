package transport

import "net/http"

// StatusRecorder is an http.ResponseWriter that remembers the status code
// its handler wrote, for the metrics and log lines of the servers that wrap
// a handler (the agent's and the mirror's). Unwrap keeps
// http.ResponseController working through it, so a binding behind it can
// still set deadlines, flush and close a refused body at once.
type StatusRecorder struct {
	http.ResponseWriter
	status int
}

// Unwrap gives http.ResponseController the connection's writer.
func (r *StatusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// WriteHeader records the first status code and passes it on.
func (r *StatusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written before, as net/http does.
func (r *StatusRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Status is the status code the handler answered: 200 when it wrote
// nothing at all, as net/http answers then.
func (r *StatusRecorder) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
